#!/usr/bin/env bash
# Device call 5 of the session 2026-11-27j (one H100): the pack of commit .device/COMMIT
# (e39be6a, the session's last kernel change: the row check's constant stride for rows that
# take a warp).
# 1. Every GPU test executable (every method against the CPU reference, random networks too).
# 2. The 12-shape table on this commit, every shape in this one call: the official 1024-120
#    against its truth, generated 1024 at 480 and 1920 layers, 4096, 16384 and 65536 at 120,
#    480 and 1920 (seed 0, MNIST-recipe rows), random 4096-120 (fan-in 32).
#    Predicted from calls 3-4: 1024 ~0.19 ms, 4096 ~0.32, 16384 ~1.09-1.10, 65536 ~4.26 at
#    every depth (call 4's F), random ~288 ms.
. .device/preamble.sh
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 280 bash .device/run.sh tests > $R/tests.txt 2>&1
el "tests rc=$? $(grep -c '^PASS' $R/tests.txt) passed, $(grep -c '^FAIL' $R/tests.txt) failed"
grep -E '^FAIL' -A12 $R/tests.txt | head -30
cp -r $OUT/tests $R/test-logs 2>/dev/null; rm -rf $OUT/tests
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
infer() { # name args...
  local name=$1; shift
  local left=$(( 590 - ($(date +%s) - T0) ))
  [ $left -gt 20 ] || { el "no time for $name"; return; }
  timeout $(( left - 10 )) $W/bin/spdnn infer --method blockdepend "$@" --json > $R/bd-$name.json 2> $R/bd-$name.err
  el "bd-$name rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-$name.json | tr -d ' \n')"
}
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
infer 1024-120 $OFF --warmup 3 --repetitions 30
for n in 1024 4096 16384; do
  for l in 120 480 1920; do
    [ $n = 1024 ] && [ $l = 120 ] && continue
    net=$W/g$n-$l.bin
    timeout 90 $W/bin/spdnn generate --neurons $n --layers $l --seed 0 --cache $net > $R/gen$n-$l.log 2>&1
    reps=30; [ $n = 16384 ] && reps=10
    infer $n-$l --weights $net --neurons $n --layers $l --mnist --warmup 3 --repetitions $reps
    rm -f $net
  done
done
timeout 40 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
infer r4096-120 --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 3
rm -f $W/r4096.bin
images=$W/i65536.bin
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
for l in 120 480 1920; do
  net=$W/g65536-$l.bin
  left=$(( 590 - ($(date +%s) - T0) ))
  [ $left -gt 60 ] || { el "no time for 65536-$l"; break; }
  timeout $(( left - 30 )) $W/bin/spdnn generate --neurons 65536 --layers $l --seed 0 --cache $net > $R/gen65536-$l.log 2>&1
  el "gen 65536-$l rc=$?"
  infer 65536-$l --weights $net --neurons 65536 --layers $l --images $images --warmup 2 --repetitions 5
  rm -f $net
done
rm -f $images
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
