#!/usr/bin/env bash
# Device call 3 of the session 2026-11-29b (one H200). Pack aadadf0 (84a44fe's kernels) is
# `base`. Variants: `bal150` (the working tree: call 2's split of the input rows over the
# warps, plan::LANES_ROW_WEIGHT 48 -> 150, so that light rows rarely need a second round:
# 93 warps took one at 48); `gap` (bal150, and the lanes' layer-1 sums kept with a gap of 16
# floats before column 32, so that outputs m and m + 32 of one row fall on banks 16 apart:
# the official layer 1 sends input k to outputs k and k - 1 mod 64, and the scatter's
# shared atomics took 4.2 wavefronts each (call 1); the conversion moves the sums to the
# usual places, four columns at a time).
# Prediction (bal150): slowest warp ~67 000 -> ~50 000 cycles on the trace's costs, lanes
# launch ~36 -> ~30 us (ncu), 1024-120 -6 us. (gap): the atomics' wavefronts 4.3 -> 3.1 on
# the official input (offline count), ~13 % of the scatter's L1 wavefronts, lanes launch a
# further ~1-2 us.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants bal150 gap
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-base-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-bal150-$i $W/spdnn-bal150 $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-gap-$i $W/spdnn-gap $OFF120 --warmup 3 --repetitions 30
done
for i in 1 2 3; do for v in base bal150 gap; do
  bin=$W/spdnn-$v; [ $v = base ] && bin=$W/bin/spdnn
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain --launch-count 2 --section SpeedOfLight \
    $bin infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-dur-$v-$i.log 2>&1
  el "ncu $v: $(grep -E 'Duration|L1/TEX Cache' $R/ncu-dur-$v-$i.log | tr -s ' ' | tr '\n' ' ')"
done; done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
