#!/usr/bin/env bash
# Device call 4 of the session 2026-11-27e (one H100), commit 8a04873: the row-major XY
# kernel stages its block's input lists in shared memory; Gpu::new synchronises the device.
# 1. Every GPU test executable at full scale (logs archived: tests.tar.gz).
# 2. snicit on 65536-1920: unconstrained, 8 GiB, 4 GiB; then unconstrained and 8 GiB with
#    cudarc's event tracking on (SPDNN_CUDARC_EVENT_TRACKING=1), the A/B after the change.
# 3. spdnn bench on 1024-120 for snicit and xy, tracking off and on (archived).
# 4. ncu on the row-major kernel and the update at 65536-1920, as in call 3.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 230 bash .device/run.sh tests > $OUT/tests.txt 2>&1
el "tests rc=$?"; grep -E 'test executables|FAIL' $OUT/tests.txt | head -20
( cd $OUT && tar czf tests.tar.gz tests.txt tests.log tests-summary.txt && rm -f tests.log tests.txt )
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
PEAK=0 LAYERS=1920 RUNS="snicit-none snicit-8GiB snicit-4GiB" END=$(left 400) \
  bash .device/2026-11-26-memory.sh > $OUT/m1920.txt 2>&1
el "m1920 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m1920.txt; mv $OUT/memory.tar.gz $OUT/memory-1920.tar.gz
SPDNN_CUDARC_EVENT_TRACKING=1 PEAK=0 LAYERS=1920 RUNS="snicit-none snicit-8GiB" END=$(left 480) \
  bash .device/2026-11-26-memory.sh > $OUT/m1920-tracking1.txt 2>&1
el "m1920 tracking rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m1920-tracking1.txt; mv $OUT/memory.tar.gz $OUT/memory-1920-tracking1.tar.gz
for tracking in 0 1; do
  SPDNN_CUDARC_EVENT_TRACKING=$tracking BENCH_TAG=bench-tracking$tracking timeout 60 bash .device/run.sh bench \
    --neurons 1024 --layers 120 --methods snicit,xy --cpu-rows 1000 > $OUT/bench-tracking$tracking.txt 2>&1
  el "bench tracking=$tracking rc=$?"; grep -E 'ms  matched' $OUT/bench-tracking$tracking.txt
done
( cd $OUT && tar czf bench.tar.gz bench-tracking0 bench-tracking1 && rm -rf bench-tracking0 bench-tracking1 )
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout $(left 590) $NCU --kernel-name regex:'xy_row_major_layer|snicit_update' --launch-skip 1000 --launch-count 4 \
  --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum,launch__grid_size \
  $W/bin/spdnn infer --method snicit --weights $W/n1920.bin --neurons 65536 --layers 1920 --mnist --warmup 0 --repetitions 1 \
  > $OUT/ncu.txt 2>&1
el "ncu rc=$?"; grep -E 'xy_row|snicit_up|duration|dram__bytes|throughput' $OUT/ncu.txt | head -20
