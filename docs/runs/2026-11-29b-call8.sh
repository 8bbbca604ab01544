#!/usr/bin/env bash
# Device call 8 of the session 2026-11-29b (one H200). Timing only: `fold` is 2911fe9's kernel
# whose binary scaled scatter adds 1 at column k mod 64 of the row (one shared atomic a
# nonzero, no entry load) in place of the entries' two: what layer 1 would cost if it were
# folded (the official layer 1's rows repeat with period 64: input k feeds outputs k and k - 1
# mod 64, so output m = bins[m] + bins[m + 1] with bins[j] the row's nonzeros k = j mod 64).
# Its outputs are wrong (the bins are converted as if they were the outputs); only the lanes
# launch's duration is read. `head`: 2911fe9's kernel.
# Prediction: the scatter (~19 us of the launch, call 6) loses its entry loads (~28 % of the
# launch's L1 wavefronts) and half its atomics, and each nonzero's chain one load: lanes
# launch ~37 -> ~29-31 us.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants head fold
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts.max,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum
for i in 1 2 3; do for v in head fold; do
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain_lanes --launch-count 1 --metrics $M \
    $W/spdnn-$v infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-m-$v-$i.log 2>&1
  el "ncu $v: $(grep -E '^\s+(gpu__|sm__|l1tex__|smsp__)' $R/ncu-m-$v-$i.log | tr -s ' ' | tr '\n' ';')"
done; done
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
