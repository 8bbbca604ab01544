#!/usr/bin/env bash
# Device call 4 of the session 2026-11-29b (one H200). Pack aadadf0 (84a44fe's kernels) is
# `base`; `bal150` and `gap` as in call 3, where neither moved the lanes launch (ncu, clocks
# free: base 35.7-37.6 us, bal150 36.7-37.3, gap 35.6-36.3) although call 2's trace had put
# the slowest warp of the balanced split ~3 us earlier. Question: is the launch bound per SM
# (the busiest SM's L1 work, its active cycles) or by something every SM shares? Per-SM
# rollups (min / avg / max over the 132 SMs) of active cycles, L1 wavefronts and
# instructions, for the lanes launch of each binary, twice.
# Prediction: base's busiest SM has ~12 % more L1 wavefronts than bal150's (512 against 455
# rows); if its active cycles are the duration, bal150's max SM should be ~11 % lower and the
# duration is bound elsewhere.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants bal150 gap
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
M=gpu__time_duration.sum,sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.max
M=$M,l1tex__data_pipe_lsu_wavefronts.min,l1tex__data_pipe_lsu_wavefronts.avg,l1tex__data_pipe_lsu_wavefronts.max
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
M=$M,sm__inst_executed.min,sm__inst_executed.avg,sm__inst_executed.max,sm__warps_launched.min,sm__warps_launched.max
M=$M,l1tex__throughput.avg.pct_of_peak_sustained_active,l1tex__throughput.max.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu.sum
M=$M,smsp__average_warp_latency_per_inst_issued.ratio,l1tex__lsuin_requests.sum,l1tex__lsu_writeback_active.max,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum
for i in 1 2; do for v in base bal150 gap; do
  bin=$W/spdnn-$v; [ $v = base ] && bin=$W/bin/spdnn
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain_lanes --launch-count 1 --metrics $M \
    $bin infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-m-$v-$i.log 2>&1
  el "ncu $v rc=$?"
  grep -E '^\s+(gpu__|sm__|l1tex__|smsp__)' $R/ncu-m-$v-$i.log | tr -s ' '
done; done
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
