#!/usr/bin/env bash
# Device call 4 of the session 2026-11-27f (one H100), commit in .device/COMMIT: the last of
# the session's device budget.
# 1. Every GPU test executable (`run.sh tests`, four at a time, each within 200 s): SNICIT's
#    held rows, the drive's finish step under every method, blockdepend's scaled ELL layers.
# 2. blockdepend on 65536-1920 unconstrained and in 1 GiB (the scaled layers: 0.45 GiB
#    expected, about 8 batches), then on 65536-480 the same, while time is left.
. .device/preamble.sh
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 280 bash .device/run.sh tests > $R/tests-run.txt 2>&1
el "tests rc=$? $(grep -E '^test executables' $R/tests-run.txt)"
grep -E '^FAIL|panicked' $R/tests-run.txt | head -10
( cd $OUT && tar czf tests.tar.gz tests.log tests-summary.txt r/tests-run.txt && rm -f tests.log r/tests-run.txt )
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
PEAK=0 LAYERS=1920 WARMUP=1 REPETITIONS=3 RUNS="blockdepend-none blockdepend-1GiB" END=$(left 450) \
  bash .device/2026-11-26-memory.sh > $OUT/m1920.txt 2>&1
el "m1920 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m1920.txt; mv $OUT/memory.tar.gz $OUT/memory-1920.tar.gz
rm -f $W/n1920.bin
PEAK=0 LAYERS=480 WARMUP=1 REPETITIONS=3 RUNS="blockdepend-none blockdepend-1GiB" END=$(left 575) \
  bash .device/2026-11-26-memory.sh > $OUT/m480.txt 2>&1
el "m480 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m480.txt; mv $OUT/memory.tar.gz $OUT/memory-480.tar.gz
