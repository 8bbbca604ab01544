#!/usr/bin/env bash
# Device call 1 of the session 2026-11-27e (one H100): XY layers of one weight value kept as
# that value alone (value_step 0) and the row-major kernel's input loop unrolled by four.
# 1. The GPU tests of xy and snicit (grouped random networks now mix layers of one value).
# 2. snicit on 65536-1920 unconstrained, in 8 GiB and in 4 GiB (the layers, about 1 GB now,
#    stay resident), and xy unconstrained; then snicit on 65536-480 unconstrained and in 8 GiB.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
for t in xy snicit; do
  PROPTEST_CASES=8 timeout 150 $W/tests/spdnn-$t--gpu --include-ignored --test-threads=1 > $OUT/test-$t.txt 2>&1
  el "tests $t rc=$? $(grep -E '^test result' $OUT/test-$t.txt)"
  grep -E 'FAILED|panicked' $OUT/test-$t.txt | head -5
done
tar czf $OUT/tests.tar.gz -C $OUT $(cd $OUT && ls test-*.txt) && rm $OUT/test-*.txt
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
PEAK=0 LAYERS=1920 RUNS="snicit-none snicit-8GiB snicit-4GiB xy-none" END=$(left 480) \
  bash .device/2026-11-26-memory.sh > $OUT/m1920.txt 2>&1
el "m1920 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m1920.txt; mv $OUT/memory.tar.gz $OUT/memory-1920.tar.gz
PEAK=0 LAYERS=480 RUNS="snicit-none snicit-8GiB" END=$(left 585) \
  bash .device/2026-11-26-memory.sh > $OUT/m480.txt 2>&1
el "m480 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m480.txt; mv $OUT/memory.tar.gz $OUT/memory-480.tar.gz
