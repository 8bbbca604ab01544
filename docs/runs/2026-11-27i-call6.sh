#!/usr/bin/env bash
# Device call 6 of the session 2026-11-27i (one H100): the pack of commit .device/COMMIT, the
# session's last kernel change.
# 1. Every GPU test executable (every method against the CPU reference, random networks too).
# 2. The measurements the docs quote: the official 1024-120 against its truth (3 warm-ups,
#    20 runs); generated 4096-120, 16384-120, 65536-120 (seed 0, MNIST-recipe rows; 2 and 5);
#    1024 and 4096 at 480 and 1920 layers; random 4096-120 (fan-in 32; 1 and 3). 4096-120
#    also with at most 24 and 16 rows a tile (more blocks an SM: an exploration).
#    Predicted from call 5: 1024-120 ~0.216 ms, 4096-120 ~0.375, 16384-120 ~1.09, 65536-120
#    ~4.30, random 4096 ~282 ms; the deep shapes as their 120-layer ones (4 launches each).
# 3. If time is left: memcheck over blockdepend's official, challenge and random tests at the
#    sanitize scale (the ring's loads and the row walk).
. .device/preamble.sh
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 280 bash .device/run.sh tests > $R/tests.txt 2>&1
el "tests rc=$? $(grep -c '^PASS' $R/tests.txt) passed, $(grep -c '^FAIL' $R/tests.txt) failed"
grep -E '^FAIL' -A12 $R/tests.txt | head -30
cp -r $OUT/tests $R/test-logs 2>/dev/null; rm -rf $OUT/tests
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
infer() { # name args...
  local name=$1; shift
  timeout 120 $W/bin/spdnn infer --method blockdepend "$@" --json > $R/bd-$name.json 2> $R/bd-$name.err
  el "bd-$name rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-$name.json | tr -d ' \n')"
}
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
infer 1024-120 $OFF --warmup 3 --repetitions 20
for n in 4096 16384; do
  net=$W/g$n.bin
  timeout 60 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  infer $n-120 --weights $net --neurons $n --layers 120 --mnist --warmup 2 --repetitions 5
  if [ $n = 4096 ]; then
    for t in 24 16; do infer $n-120-tile$t --weights $net --neurons $n --layers 120 --mnist --bd-tile $t --warmup 2 --repetitions 5; done
  fi
  rm -f $net
done
for n in 1024 4096; do
  for l in 480 1920; do
    [ $(( 420 - ($(date +%s) - T0) )) -gt 30 ] || break
    net=$W/g$n-$l.bin
    timeout 90 $W/bin/spdnn generate --neurons $n --layers $l --seed 0 --cache $net > $R/gen$n-$l.log 2>&1
    infer $n-$l --weights $net --neurons $n --layers $l --mnist --warmup 2 --repetitions 5
    rm -f $net
  done
done
timeout 40 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
infer r4096-120 --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 3
rm -f $W/r4096.bin
net=$W/g65536.bin images=$W/i65536.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
infer 65536-120 --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5
rm -f $net $images
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
SAN=/usr/local/cuda/bin/compute-sanitizer
export SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2
left=$(( 580 - ($(date +%s) - T0) ))
[ $left -gt 40 ] && { timeout $(( left - 10 )) $SAN --tool memcheck --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 official_1024_network generated_challenge_networks exact_random_networks > $R/memcheck.txt 2>&1
  el "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^test result' $R/memcheck.txt | tr '\n' ' ')"; }
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
