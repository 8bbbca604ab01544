#!/usr/bin/env bash
# Device call 4 of the session 2026-11-27d (one H100): issue 29 at 65536-1920. SNICIT in
# 8 GiB and 4 GiB (its post-convergence layers, 16 GiB, stream) and unconstrained; bf
# unconstrained and in 4 GiB (streamed). One warm-up-free pass each (bf unconstrained
# takes about 30 s a pass here).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
WARMUP=${WARMUP:-0} REPETITIONS=${REPETITIONS:-1} PEAK=0 LAYERS=1920 \
  RUNS="${RUNS:-snicit-8GiB snicit-none snicit-4GiB bf-4GiB bf-none}" END=$(left 585) \
  bash .device/2026-11-26-memory.sh > $OUT/m1920.txt 2>&1
el "m1920 rc=$?"; grep -E '^\||rc=|rror' $OUT/m1920.txt; mv $OUT/memory.tar.gz $OUT/memory-1920.tar.gz
