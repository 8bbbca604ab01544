#!/usr/bin/env bash
# Device call 3 of the session 2026-11-27f (one H100), commit in .device/COMMIT.
# 1. The GPU tests of snicit (the held-rows test over thresholds 30, 10, 2 and small shares).
# 2. Issue 29's table at 65536-1920 for the methods not yet run at that depth: xy, sz, hp,
#    snig unconstrained (one pass each, no warm-up), sz in 8 GiB: the model's predicted peak
#    against the measured one.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
PROPTEST_CASES=8 timeout 170 $W/tests/spdnn-snicit--gpu --include-ignored --test-threads=1 > $R/test-snicit.txt 2>&1
el "tests snicit rc=$? $(grep -E '^test result' $R/test-snicit.txt)"
grep -E 'FAILED|panicked' -A2 $R/test-snicit.txt | head -12
( cd $R && tar czf $OUT/tests.tar.gz test-*.txt && rm -f test-*.txt )
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
PEAK=0 LAYERS=1920 WARMUP=0 REPETITIONS=1 RUNS="xy-none sz-none sz-8GiB hp-none snig-none" \
  END=$(left 585) bash .device/2026-11-26-memory.sh > $OUT/m1920.txt 2>&1
el "m1920 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m1920.txt
