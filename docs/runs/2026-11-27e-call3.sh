#!/usr/bin/env bash
# Device call 3 of the session 2026-11-27e (one H100), commit 3b88009:
# 1. The engine's GPU tests again, their log whole (call 2 lost it: too many files).
# 2. ncu on SNICIT's post-convergence kernels at 65536-1920 (the row-major layer and the
#    update, launches well past the threshold): how long each runs on the GPU, against the
#    16.7 µs a layer the events measured.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
timeout 120 $W/tests/spdnn-engine--gpu --include-ignored --test-threads=1 > $OUT/test-engine.txt 2>&1
el "engine rc=$?"; grep -E '^test |panicked|failures|: ' $OUT/test-engine.txt | cut -c1-400 | head -30
NET=$W/n1920.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 1920 --seed 0 --cache $NET > $OUT/generate.log 2>&1
el "generate rc=$?"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 300 $NCU --kernel-name regex:'xy_row_major_layer|snicit_update' --launch-skip 1000 --launch-count 6 \
  --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum,launch__grid_size \
  $W/bin/spdnn infer --method snicit --weights $NET --neurons 65536 --layers 1920 --mnist --warmup 0 --repetitions 1 \
  > $OUT/ncu.txt 2>&1
el "ncu rc=$?"; grep -E 'xy_row|snicit_up|duration|grid_size|dram__bytes|throughput' $OUT/ncu.txt | head -40
