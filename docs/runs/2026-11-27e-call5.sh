#!/usr/bin/env bash
# Device call 5 of the session 2026-11-27e (one H100), commit 8a04873: why a
# post-convergence XY row-major launch with one listed row takes 15 µs. ncu with the
# occupancy, launch, warp-state, scheduler and memory sections on one launch of
# xy_row_major_layer_g16 well past SNICIT's threshold at 65536-1920 (caches flushed, as ncu
# does by default), and one with the caches kept (--cache-control none).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
NET=$W/n1920.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 1920 --seed 0 --cache $NET > /dev/null 2>&1
el "generate rc=$?"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for cache in all none; do
  timeout 200 $NCU --cache-control $cache --kernel-name regex:'xy_row_major_layer' --launch-skip 1000 --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis \
    $W/bin/spdnn infer --method snicit --weights $NET --neurons 65536 --layers 1920 --mnist --warmup 0 --repetitions 1 \
    > $OUT/ncu-cache-$cache.txt 2>&1
  el "ncu cache=$cache rc=$?"
  grep -vE '^\s*$|^==PROF==|^\[' $OUT/ncu-cache-$cache.txt | grep -E 'Duration|Registers|Achieved Occupancy|Theoretical Occupancy|Block Limit|Waves|Stall|Warp Cycles|Issued|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|DRAM Throughput|Compute \(SM\)|Eligible|No Eligible|One or More|Active Warps' | head -40
done
