#!/usr/bin/env bash
# Device call 6 of the session 2026-11-27e (one H100), commit 20b710c: the row-major XY kernel
# sums over as many row slots as its tile has rows.
# 1. The GPU tests of xy, snicit, engine and cli (the kernel's users; logs archived).
# 2. snicit on 65536-1920: unconstrained, 8 GiB, 4 GiB; 65536-480 unconstrained and 8 GiB.
# 3. bench 1024-120 for snicit and xy (archived), and ncu on the post-convergence kernels.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
for t in xy snicit engine cli; do
  PROPTEST_CASES=8 timeout 150 $W/tests/spdnn-$t--gpu --include-ignored --test-threads=1 > $R/test-$t.txt 2>&1
  el "tests $t rc=$? $(grep -E '^test result' $R/test-$t.txt)"
  grep -E 'FAILED|panicked' $R/test-$t.txt | head -5
done
( cd $R && tar czf $OUT/tests.tar.gz test-*.txt && rm -f test-*.txt )
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
PEAK=0 LAYERS=1920 RUNS="snicit-none snicit-8GiB snicit-4GiB" END=$(left 400) \
  bash .device/2026-11-26-memory.sh > $OUT/m1920.txt 2>&1
el "m1920 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m1920.txt; mv $OUT/memory.tar.gz $OUT/memory-1920.tar.gz
PEAK=0 LAYERS=480 RUNS="snicit-none snicit-8GiB" END=$(left 470) \
  bash .device/2026-11-26-memory.sh > $OUT/m480.txt 2>&1
el "m480 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m480.txt; mv $OUT/memory.tar.gz $OUT/memory-480.tar.gz
mkdir -p $R/x
BENCH_TAG=bench timeout 60 bash .device/run.sh bench --neurons 1024 --layers 120 --methods snicit,xy --cpu-rows 1000 > $R/x/bench.txt 2>&1
el "bench rc=$?"; grep -E 'ms  matched' $R/x/bench.txt; mv $OUT/bench $R/x/ 2>/dev/null
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout $(left 585) $NCU --kernel-name regex:'xy_row_major_layer|snicit_update' --launch-skip 1000 --launch-count 2 \
  --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum \
  $W/bin/spdnn infer --method snicit --weights $W/n1920.bin --neurons 65536 --layers 1920 --mnist --warmup 0 --repetitions 1 \
  > $R/x/ncu.txt 2>&1
el "ncu rc=$?"; grep -E 'xy_row|snicit_up|duration|dram__bytes|throughput' $R/x/ncu.txt | head -12
tar czf $OUT/extra.tar.gz -C $R x; rm -rf $R
