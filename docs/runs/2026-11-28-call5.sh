#!/usr/bin/env bash
# Device call 5 of the session 2026-11-28 (one H100): where the official 1024's tail launches
# go. 5542acb (.device/spdnn-base.xz; 1d7766e has the same kernels). Launches 3 (layers
# 9-16, 2127 rows in 6-row tiles) and 4 (layers 17-120, 71 rows in 1-row tiles) take ~0.031
# and ~0.027 ms: 3.9 and 2.5 us a layer, and splitting the dense layers' inputs over the idle
# warps (one L2 round trip for the weights instead of four, 3595450) changed neither (call 4).
# ncu of launches 2-4 (bd_chain_shared) with the stall reasons a source line; no prediction
# (a profile).
. .device/preamble.sh
variants base
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 200 ncu -o $R/tail --kernel-name bd_chain_shared --launch-count 3 --section SpeedOfLight --section SchedulerStats \
  --section WarpStateStats --section LaunchStats --section Occupancy --section SourceCounters \
  $W/spdnn-base infer --method blockdepend $OFF --warmup 0 --repetitions 1 > $R/ncu-tail.log 2>&1
el "ncu rc=$?"
ncu -i $R/tail.ncu-rep > $R/ncu-tail.txt 2>&1
for id in 0 1 2; do
  ncu -i $R/tail.ncu-rep --page source --csv --print-source sass --launch-skip $id --launch-count 1 > $R/tail-sass-$id.csv 2>&1
done
ncu -i $R/tail.ncu-rep --page raw --csv --metrics gpu__time_duration.sum,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_membar_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__inst_executed.sum,sm__cycles_active.avg > $R/tail-raw.csv 2>&1
grep -E "Duration|Executed Ipc|Issued Warp|No Eligible|Achieved Active|Grid Size|Warp Cycles Per Issued" $R/ncu-tail.txt
cat $R/tail-raw.csv | cut -c1-400
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
