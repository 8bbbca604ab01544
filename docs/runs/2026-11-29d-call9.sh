#!/usr/bin/env bash
# Device call 9 of the session 2026-11-29d (one H200). Pack 9e4a547 and variant "hold"
# (a diagnostic build, never committed; its patch beside this call's data): with SPDNN_HOLD
# set, each timed pass is preceded by a 1 GiB memset, so the GPU is busy while the host
# enqueues the start event and the graph, and the events time the GPU's pass alone.
# Calls 7 and 8 ran the official 1024-120 at 0.057-0.064 ms where ncu put its two kernels at
# ~48-50 us; call 6's machine ran it at 0.053-0.059.
# Question: how much of a pass is the host's enqueue on this loan.
# Prediction: with the hold ~0.050-0.052 ms (the kernels and the graph's node gaps), without
# it the machine's level (0.050-0.064).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
nproc > $R/nproc.txt; grep -m1 "model name" /proc/cpuinfo >> $R/nproc.txt
variants hold
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-graph-$i $W/bin/spdnn $OFF --warmup 20 --repetitions 100
  SPDNN_HOLD=1 bd 1024-120-graph-hold-$i $W/spdnn-hold $OFF --warmup 20 --repetitions 100
  bd 1024-120-graph-nohold-$i $W/spdnn-hold $OFF --warmup 20 --repetitions 100
done
SPDNN_HOLD=1 bd 1024-120-calls-hold $W/spdnn-hold $OFF --warmup 20 --repetitions 100 --bd-no-graph
bd 1024-120-calls $W/bin/spdnn $OFF --warmup 20 --repetitions 100 --bd-no-graph
timeout 60 ncu --clock-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 8 --metrics gpu__time_duration.sum \
  $W/bin/spdnn infer --method blockdepend $OFF --warmup 6 --repetitions 1 --bd-no-graph > $R/ncu.log 2>&1
el "ncu: $(grep -E 'bd_chain|gpu__time_duration' $R/ncu.log | awk '/bd_chain/{k=$1} /duration/{print k, $3}' | tr '\n' ';')"
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
