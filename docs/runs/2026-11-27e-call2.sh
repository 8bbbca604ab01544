#!/usr/bin/env bash
# Device call 2 of the session 2026-11-27e (one H100): cudarc's per-buffer event tracking
# off (Gpu::new; the two weight streams and the copy-rate probe order themselves with
# fences, crates/cuda/src/order.rs). SPDNN_CUDARC_EVENT_TRACKING=1 turns it back on in the
# same binary: the A/B.
# 1. Every GPU test executable at full scale (the change reaches every launch).
# 2. spdnn bench on 1024-120 (official and generated) for blockdepend, snicit, xy and bf,
#    tracking off, then on.
# 3. snicit on 65536-1920 unconstrained, in 8 GiB and in 4 GiB, tracking off; then
#    unconstrained and in 8 GiB with it on.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 230 bash .device/run.sh tests > $OUT/tests.txt 2>&1
el "tests rc=$?"; grep -E 'test executables|FAIL' $OUT/tests.txt | head -20
( cd $OUT && tar czf tests.tar.gz tests.log tests-summary.txt && rm -f tests.log )
for tracking in 0 1; do
  SPDNN_CUDARC_EVENT_TRACKING=$tracking BENCH_TAG=bench-tracking$tracking timeout 150 bash .device/run.sh bench \
    --neurons 1024 --layers 120 --methods blockdepend,snicit,xy,bf --cpu-rows 1000 > $OUT/bench-tracking$tracking.txt 2>&1
  el "bench tracking=$tracking rc=$?"; grep -E '^\|' $OUT/bench-tracking$tracking.txt | head -12
done
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
PEAK=0 LAYERS=1920 RUNS="snicit-none snicit-8GiB snicit-4GiB" END=$(left 480) \
  bash .device/2026-11-26-memory.sh > $OUT/m1920.txt 2>&1
el "m1920 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m1920.txt; mv $OUT/memory.tar.gz $OUT/memory-1920.tar.gz
SPDNN_CUDARC_EVENT_TRACKING=1 PEAK=0 LAYERS=1920 RUNS="snicit-none snicit-8GiB" END=$(left 585) \
  bash .device/2026-11-26-memory.sh > $OUT/m1920-tracking1.txt 2>&1
el "m1920 tracking rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m1920-tracking1.txt; mv $OUT/memory.tar.gz $OUT/memory-1920-tracking1.tar.gz
