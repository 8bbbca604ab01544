#!/usr/bin/env bash
# Device call 1 of the session 2026-11-29d (one H200). Pack 25602cb, variant "trace" (the
# warps launch stamps clock64 per layer and warp: after the block barrier, after the slot's
# wait, after the warp's layer; thread 0 prints them for block 0's tile and for tiles that
# ran 14+ layers). Question: where a layer of the warps launch goes now (25-29 us for the
# official 1024's layers 7-28: ~2773 rows at layer 7, ~71 at 16, 2 from 22 to 28).
# Prediction: the heavy layers (7-12, 4 rows a warp, 5-6 warps) ~1500-2000 cycles each, the
# one-row tail layers ~800-1200 cycles, of which the sums ~350 and the slot wait small.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants trace
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 120 $W/spdnn-trace infer --method blockdepend $OFF120 --warmup 2 --repetitions 1 --bd-no-graph > $R/trace.txt 2> $R/trace.err; el "trace rc=$?"
grep -c "^TR " $R/trace.txt
for i in 1 2; do bd 1024-120-$i $W/bin/spdnn $OFF120 --warmup 50 --repetitions 100; done
timeout 120 ncu --clock-control none --kernel-name regex:bd_chain_warps --launch-skip 2 --launch-count 1 \
  --metrics gpu__time_duration.sum,sm__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum \
  $W/bin/spdnn infer --method blockdepend $OFF120 --warmup 2 --repetitions 1 --bd-no-graph > $R/ncu-warps.log 2>&1; el "ncu rc=$?"
grep -E "bd_chain|duration|inst_executed|wavefronts|pct|cycles_active|conflicts" $R/ncu-warps.log | head -20
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
