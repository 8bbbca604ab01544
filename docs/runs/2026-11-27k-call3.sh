#!/usr/bin/env bash
# Device call 3 of the session 2026-11-27k (one H100): the pack of d298460 (the banks with
# broadcasts: random 4096 fan-in 32 at 1.02 wavefronts a slot by the layout's count, 1.12 in
# 7398ed8; the compressed challenge layers' slot orders changed too, none permuted).
# 1. Every GPU test executable on d298460.
# 2. Random 4096-120: new (7398ed8, call 1: 240.9 ms) against new2 (the pack), interleaved,
#    twice each. Predicted from calls 1-2 (the time moved about half as much as the
#    wavefronts, the L1's LSU data pipe at 78 %): -9 % wavefronts, 241 -> ~228-232 ms.
# 3. The 12-shape table on d298460, every shape in this call (as 2026-11-27j call 5):
#    predicted as e39be6a within noise: 1024 ~0.17-0.19 ms, 4096 ~0.32-0.33, 16384
#    ~1.07-1.09, 65536 ~4.25-4.27 (the challenge layers' gathers are not what binds them).
. .device/preamble.sh
variants new
ln -sf $W/bin/spdnn $W/spdnn-new2
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 280 bash .device/run.sh tests > $R/tests.txt 2>&1
el "tests rc=$? $(grep -c '^PASS' $R/tests.txt) passed, $(grep -c '^FAIL' $R/tests.txt) failed"
grep -E '^FAIL' -A12 $R/tests.txt | head -30
cp -r $OUT/tests $R/test-logs 2>/dev/null; rm -rf $OUT/tests
timeout 60 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
el "gen random 4096-120 rc=$?"
for round in 1 2; do
  for v in new new2; do
    bd $v-r4096-120-r$round $W/spdnn-$v --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 3
  done
done
rm -f $W/r4096.bin
left() { echo $(( 590 - ($(date +%s) - T0) )); }
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd 1024-120 $W/bin/spdnn $OFF --warmup 3 --repetitions 30
for n in 1024 4096 16384; do
  for l in 120 480 1920; do
    [ $n = 1024 ] && [ $l = 120 ] && continue
    net=$W/g$n-$l.bin
    timeout 90 $W/bin/spdnn generate --neurons $n --layers $l --seed 0 --cache $net > $R/gen$n-$l.log 2>&1
    reps=30; [ $n = 16384 ] && reps=10
    bd $n-$l $W/bin/spdnn --weights $net --neurons $n --layers $l --mnist --warmup 3 --repetitions $reps
    rm -f $net
  done
done
images=$W/i65536.bin
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
for l in 120 480 1920; do
  net=$W/g65536-$l.bin
  [ $(left) -gt 60 ] || { el "no time for 65536-$l"; break; }
  timeout $(( $(left) - 30 )) $W/bin/spdnn generate --neurons 65536 --layers $l --seed 0 --cache $net > $R/gen65536-$l.log 2>&1
  el "gen 65536-$l rc=$?"
  BD_TIMEOUT=$(( $(left) - 10 )) bd 65536-$l $W/bin/spdnn --weights $net --neurons 65536 --layers $l --images $images --warmup 2 --repetitions 5
  rm -f $net
done
rm -f $images
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
