#!/usr/bin/env bash
# Device call 1 of the session 2026-11-28j (one H200). Pack: cca47a3. Variants: indep (the warps
# launch without block barriers or staged slots: each warp runs its own rows' layers, weights
# read with __ldg through L1), indeppf (the same, each warp prefetching layer l+1's weight lines
# into L1 while it runs layer l).
# Floor/prediction: the official 1024's warps launch (layers 7-120, ~21 busy layers) took ~33 us
# (events) / 45.6 us (ncu); per layer ~2800 cycles on the longest-lived block: barrier ~230, slot
# wait ~700-770, own warp ~1850. Its work floor is ~21 chains of 64 dependent FMAs (~256 cycles
# each), ~3 us. Predicted: indep removes barrier + slot wait where L1 hides the weights: later
# layers (1-3 rows an SM) ~800-1000 cycles; early layers (14-45 rows an SM) throughput-bound
# ~1500-2000: warps launch ~15-20 us, 1024-120 0.096 -> ~0.080 ms; indeppf a little better if
# first touches of a layer miss L1 (~600-800 cycles L2 each layer).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants indep indeppf
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
  bd 1024-120-base$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-indep$i $W/spdnn-indep $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-indeppf$i $W/spdnn-indeppf $OFF120 --warmup 3 --repetitions 30
done
for v in base indep indeppf; do
  bin=$W/spdnn-$v; [ $v = base ] && bin=$W/bin/spdnn
  ncu_k 1024-l2-$v $bin 1 $OFF120
done
for L in 480 1920; do
  net=$W/g1024-$L.bin
  timeout 90 $W/bin/spdnn generate --neurons 1024 --layers $L --seed 0 --cache $net > $R/gen1024-$L.log 2>&1
  for v in base indeppf; do
    bin=$W/spdnn-$v; [ $v = base ] && bin=$W/bin/spdnn
    bd 1024-$L-$v $bin --weights $net --neurons 1024 --layers $L --mnist --warmup 3 --repetitions 30
  done
  rm -f $net
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
