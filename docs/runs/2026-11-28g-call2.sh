#!/usr/bin/env bash
# Device call 2 of the session 2026-11-28g (one H200). Pack: dcee881 with variant epi in the working
# tree. Call 1: the quad scatter (a thread's 4 nonzeros one aligned quad) was 11-13 % slower in
# launch 1 (16384 0.946 -> 1.04 ms, 65536 3.77 -> 4.11): a warp's lanes at one step then take
# nonzeros 4 apart, whose outputs (k mod G in the generated layer 1) land 4 words apart: 4-way
# bank conflicts on the ATOMS. Strided lanes keep consecutive inputs on consecutive words.
# epi: an exact item's outputs stored through its gathers' row addresses in a shared tile (add +
# STS a row instead of LDS live, 2 IMAD, STS), and layer 1's per-neuron biases a float4 a load.
# 2026-11-28f's source counters of 16384's launch 1: the items of layers 2-4 ~110 M of 374 M warp
# instructions, an 8-row item of 2 slots ~130 instructions of which the epilogue ~56.
# Predicted: launch 1 -2-5 % at 16384 and 65536 (issue-bound items): 16384-120 0.946 -> ~0.92-0.93,
# 65536-120 3.77 -> ~3.65-3.70, 4096 0.287 -> ~0.28.
# Then ncu source counters of launch 1 at 16384 and 65536 with epi, and blockdepend's GPU tests.
. .device/preamble.sh
variants base epi
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
bin_of() { echo $W/spdnn-$1; }
VS="base epi"
ncu_l1() { # NAME VARIANT ARGS...
  local name=$1 v=$2; shift 2
  timeout 150 ncu -o $R/l1-$name --kernel-name regex:bd_chain --launch-count 1 --section SpeedOfLight --section SchedulerStats \
    --section WarpStateStats --section InstructionStats --section Occupancy --section LaunchStats --section SourceCounters \
    $(bin_of $v) infer --method blockdepend "$@" --warmup 0 --repetitions 1 > $R/ncu-l1-$name.log 2>&1
  el "ncu source $name rc=$?"
  ncu -i $R/l1-$name.ncu-rep > $R/ncu-l1-$name.txt 2>&1
  ncu -i $R/l1-$name.ncu-rep --page source --csv --print-source sass > $R/ncu-l1-$name-sass.csv 2>&1
  rm -f $R/l1-$name.ncu-rep
  grep -E "Duration|Executed Instructions |Issued Warp|No Eligible|Eligible Warps" $R/ncu-l1-$name.txt | head -6
}
for n in 16384 4096; do
  net=$W/g$n-120.bin
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  reps=30; [ $n = 16384 ] && reps=10
  for i in 1 2 3; do for v in $VS; do
    bd $n-120-$v$i $(bin_of $v) --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps
  done; done
  [ $n = 16384 ] && ncu_l1 16384-epi epi --weights $net --neurons $n --layers 120 --mnist
  rm -f $net
done
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in $VS; do bd 1024-120-$v $(bin_of $v) $OFF --warmup 3 --repetitions 30; done
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "tests blockdepend (epi) rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -8
images=$W/i65536.bin
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
net=$W/g65536-120.bin
timeout 150 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "gen 65536 rc=$?"
for i in 1 2; do for v in $VS; do
  bd 65536-120-$v$i $(bin_of $v) --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5
done; done
[ $(( $(date +%s) - T0 )) -lt 430 ] && ncu_l1 65536-epi epi --weights $net --neurons 65536 --layers 120 --images $images
rm -f $net
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
