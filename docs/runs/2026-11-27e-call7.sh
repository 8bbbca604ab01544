#!/usr/bin/env bash
# Device call 7 of the session 2026-11-27e (one H100), commit in .device/COMMIT: the
# row-major sum instantiated for staged and unstaged lists.
# 1. The GPU tests of xy, snicit, engine and cli (logs archived).
# 2. snicit on 65536-1920 (unconstrained, 8 GiB, 4 GiB) and 65536-480 (unconstrained, 8 GiB).
# 3. xy on 65536-480 unconstrained (its row-major layers are this kernel at full tiles).
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
PEAK=0 LAYERS=480 RUNS="snicit-none snicit-8GiB xy-none" END=$(left 560) \
  bash .device/2026-11-26-memory.sh > $OUT/m480.txt 2>&1
el "m480 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m480.txt; mv $OUT/memory.tar.gz $OUT/memory-480.tar.gz
