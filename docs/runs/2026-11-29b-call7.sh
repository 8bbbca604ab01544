#!/usr/bin/env bash
# Device call 7 of the session 2026-11-29b (one H200). `head`: 2911fe9's kernel (84a44fe's
# code). `chunks`: the working tree: the lanes' layer-1 scatter takes the warp's rows a row
# at a time, 32 nonzeros a chunk, so that every lane of a chunk adds into the chunk's row and
# the walk from chunk to chunk is the same on every lane (no per-lane row walk: a branch and
# a reconvergence barrier a nonzero, ~20 % of the launch's stall samples in call 1).
# Prediction: call 6 put the scatter at ~19 us of the ~37 us launch (no scatter: 17.9 us);
# without the walk the scatter ~30 % shorter: lanes launch ~37 -> ~31-33 us (ncu, clocks
# free), 1024-120 ~4-6 us less by events.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants head chunks
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-head-$i $W/spdnn-head $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-chunks-$i $W/spdnn-chunks $OFF120 --warmup 3 --repetitions 30
done
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts.max,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum
for i in 1 2 3; do for v in head chunks; do
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain_lanes --launch-count 1 --metrics $M \
    $W/spdnn-$v infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-m-$v-$i.log 2>&1
  el "ncu $v: $(grep -E '^\s+(gpu__|sm__|l1tex__|smsp__)' $R/ncu-m-$v-$i.log | tr -s ' ' | tr '\n' ';')"
done; done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
