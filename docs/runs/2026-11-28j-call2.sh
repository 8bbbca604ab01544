#!/usr/bin/env bash
# Device call 2 of the session 2026-11-28j (one H200). Pack: cca47a3 + lanes + producer
# (uncommitted). Variants: base2 (cca47a3's kernel), lanes (a row a lane: circulant layers
# with the roles turned, lane j computing output column 32g+j of all 32 rows: one LDS + one
# FFMA a multiply-add instead of two shuffles more; checks after the launch's last layer only;
# the bias branch out of the output loop), prod15 (the warps launch's stages issued by lane 0
# of the last warp instead of thread 0, whose warp carries rows), and the pack's binary (both).
# Call 1: warps launches without barriers, weights through L1, were slower (34 -> 40-49 us).
# Prediction. Lanes launch (ncu 62.8 us, 22.2 M warp instructions on e16b863): the sums of
# layers 2-6 ~26 % of instructions -> half; the outputs' epilogue ~22 % -> ~9 % (4 instructions
# an output instead of ~10): ~-25 % instructions, launch 1 ~-8..-12 us. Warps launch: if the
# ~700-cycle slot wait a layer (2026-11-28c trace) was warp 0's staging, ~-20 % of ~34 us.
# 1024-120: 0.101 (call 1) -> ~0.085 ms.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants base2 lanes prod15
ncu_k() { # NAME BIN SKIP ARGS...
  local name=$1 bin=$2 skip=$3; shift 3
  timeout 150 ncu -o $R/k-$name --kernel-name regex:bd_chain --launch-skip $skip --launch-count 1 --section SpeedOfLight \
    --section InstructionStats --section SchedulerStats --section WarpStateStats $bin infer --method blockdepend "$@" --warmup 0 --repetitions 1 > $R/ncu-$name.log 2>&1
  el "ncu $name rc=$?"
  ncu -i $R/k-$name.ncu-rep > $R/ncu-$name.txt 2>&1
  rm -f $R/k-$name.ncu-rep
  grep -E "Duration|Executed Instructions |Issued Warp" $R/ncu-$name.txt | head -3
}
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-base2-$i $W/spdnn-base2 $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-lanes-$i $W/spdnn-lanes $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-prod15-$i $W/spdnn-prod15 $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-both-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
done
for k in 0 1; do
  ncu_k 1024-l$((k+1))-base2 $W/spdnn-base2 $k $OFF120
  ncu_k 1024-l$((k+1))-both $W/bin/spdnn $k $OFF120
done
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -12
for L in 480 1920; do
  net=$W/g1024-$L.bin
  timeout 90 $W/bin/spdnn generate --neurons 1024 --layers $L --seed 0 --cache $net > $R/gen1024-$L.log 2>&1
  bd 1024-$L-base2 $W/spdnn-base2 --weights $net --neurons 1024 --layers $L --mnist --warmup 3 --repetitions 30
  bd 1024-$L-both $W/bin/spdnn --weights $net --neurons 1024 --layers $L --mnist --warmup 3 --repetitions 30
  rm -f $net
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
