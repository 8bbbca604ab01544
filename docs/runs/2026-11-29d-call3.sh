#!/usr/bin/env bash
# Device call 3 of the session 2026-11-29d (one H200). Pack 25602cb, variant "trace2": call
# 2's stamps (after the block barrier, after the slot's wait, after the warp's layer) plus
# three: before the barrier (pre), before and after bd_warps_sums (s0, s1), and the layer's
# in_width. Call 2 found a one-row tail layer of the official 1024 at ~1600 cycles: ~375 from
# the layer's end to the barrier's exit, ~215 waiting for the slot, ~1010 in the layer.
# Question: how the ~1010 split between the sums and the rest, and what the ~375 is.
# Prediction: the sums ~550-650 at 64 inputs (~9 cycles an input), the epilogue ~200, the
# barrier itself ~300 of the gap.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants trace2
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 120 $W/spdnn-trace2 infer --method blockdepend $OFF120 --warmup 2 --repetitions 1 --bd-no-graph > $R/trace.txt 2> $R/trace.err; el "trace rc=$?"
grep -c "^TR " $R/trace.txt
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
