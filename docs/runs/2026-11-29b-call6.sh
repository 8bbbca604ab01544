#!/usr/bin/env bash
# Device call 6 of the session 2026-11-29b (one H200). Ablations of the lanes launch
# (timing only: their layer-1 outputs are wrong, so only the lanes launch's own duration is
# read): `head` is 2911fe9's kernel (84a44fe's code); `nosc` skips layer 1's scatter (the
# starts are loaded, the zeroed sums converted); `nocirc` skips layers 2-6. ncu of the lanes
# launch, clocks free, each twice, interleaved.
# Question: how much of the launch each part is, launch-wide (call 1's trace put the scatter
# at ~57 % of a warp's cycles and layers 2-6 at ~28 %; calls 3-5 found the launch bound
# neither by the busiest SM's L1 wavefronts nor by balance).
# Prediction: nosc ~36 -> ~16-18 us, nocirc ~36 -> ~26-28 us.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants head nosc nocirc
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts.max,smsp__issue_active.avg.pct_of_peak_sustained_active
for i in 1 2; do for v in head nosc nocirc; do
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain_lanes --launch-count 1 --metrics $M \
    $W/spdnn-$v infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-m-$v-$i.log 2>&1
  el "ncu $v: $(grep -E '^\s+(gpu__|sm__|l1tex__|smsp__)' $R/ncu-m-$v-$i.log | tr -s ' ' | tr '\n' ';')"
done; done
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
