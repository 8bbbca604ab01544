#!/usr/bin/env bash
# Device call 3 of the session 2026-11-27j (one H100): the pack of commit .device/COMMIT, the
# session's last kernel and plan change (365b992: call 1's dense loop and grouped row check,
# narrow tiles of whole items at the blocks the registers allow, one wave of tiles).
# 1. Every GPU test executable (every method against the CPU reference, random networks too).
# 2. The measurements the docs quote (more repetitions than before at 1024 and 4096: a single
#    profiled pass gives the launch times, the medians of the timed passes the totals):
#    the official 1024-120 against its truth; generated 1024 and 4096 at 120, 480 and 1920
#    layers, 16384-120, 65536-120 (seed 0, MNIST-recipe rows); random 4096-120 (fan-in 32).
#    Predicted from calls 1-2: 1024-120 ~0.18 ms, 4096 ~0.33 at every depth, 16384-120 ~1.10,
#    65536-120 ~4.25 (its launches' tiles are the plan's: unchanged), random ~288 ms (its
#    split wide instance went from 76 to 78 registers with the grouped check).
# 3. With the time left: memcheck over blockdepend's official, challenge and random tests at
#    the sanitize scale (the grouped row check), then racecheck over the official one.
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
infer 1024-120 $OFF --warmup 3 --repetitions 30
for n in 1024 4096; do
  for l in 120 480 1920; do
    net=$W/g$n-$l.bin
    timeout 90 $W/bin/spdnn generate --neurons $n --layers $l --seed 0 --cache $net > $R/gen$n-$l.log 2>&1
    [ $n = 1024 ] && [ $l = 120 ] && { rm -f $net; continue; }
    infer $n-$l --weights $net --neurons $n --layers $l --mnist --warmup 3 --repetitions 30
    rm -f $net
  done
done
net=$W/g16384.bin
timeout 60 $W/bin/spdnn generate --neurons 16384 --layers 120 --seed 0 --cache $net > $R/gen16384.log 2>&1
infer 16384-120 --weights $net --neurons 16384 --layers 120 --mnist --warmup 2 --repetitions 10
rm -f $net
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
left=$(( 585 - ($(date +%s) - T0) ))
[ $left -gt 40 ] && { timeout $(( left - 10 )) $SAN --tool memcheck --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 official_1024_network generated_challenge_networks exact_random_networks > $R/memcheck.txt 2>&1
  el "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^test result' $R/memcheck.txt | tr '\n' ' ')"; }
left=$(( 585 - ($(date +%s) - T0) ))
[ $left -gt 40 ] && { timeout $(( left - 10 )) $SAN --tool racecheck --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 official_1024_network > $R/racecheck.txt 2>&1
  el "racecheck rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^test result' $R/racecheck.txt | tr '\n' ' ')"; }
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
