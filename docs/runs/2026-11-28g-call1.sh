#!/usr/bin/env bash
# Device call 1 of the session 2026-11-28g (one H200). Pack: dcee881 with the quad scatter in the
# working tree (= variant quad). Variants: base (dcee881), quad (a thread's 4 nonzeros one aligned
# quad of staged columns: one 16-byte LDS, the walk mostly not stepping after the first), quadw
# (quad + one same-row check a quad instead of three walks).
# Predicted: launch 1 at 16384/65536 -3-6 % (quad), a further -1-3 % (quadw): 16384-120 0.943 ->
# ~0.91-0.93 ms, 65536-120 3.76 -> ~3.62-3.70; 4096-120 0.285 -> ~0.275; 1024 unchanged (lanes).
. .device/preamble.sh
variants base quad quadw
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
bin_of() { echo $W/spdnn-$1; }
VS="base quad quadw"
for n in 16384 4096; do
  net=$W/g$n-120.bin
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  reps=30; [ $n = 16384 ] && reps=10
  for i in 1 2; do for v in $VS; do
    bd $n-120-$v$i $(bin_of $v) --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps
  done; done
  rm -f $net
done
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in $VS; do bd 1024-120-$v $(bin_of $v) $OFF --warmup 3 --repetitions 30; done
images=$W/i65536.bin
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
net=$W/g65536-120.bin
timeout 150 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "gen 65536 rc=$?"
for i in 1 2; do for v in $VS; do
  bd 65536-120-$v$i $(bin_of $v) --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5
done; done
rm -f $net
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "tests blockdepend (quad) rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -8
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
