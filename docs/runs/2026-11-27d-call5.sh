#!/usr/bin/env bash
# Device call 5 of the session 2026-11-27d (one H100, commit 8d30e66, the last kernel and
# method change): every GPU test executable at full scale, then issue 29's per-method table
# for the methods not yet measured at N = 65536 in a budget (snig, cusparse, sz on
# 65536-480, unconstrained and in 8 GiB; one pass each) while time is left.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 230 bash .device/run.sh tests > $OUT/tests.txt 2>&1
el "tests rc=$?"
grep -E '^(PASS|FAIL)|test executables|panicked' $OUT/tests.txt | head -40; cat $OUT/tests-summary.txt
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
WARMUP=0 REPETITIONS=1 PEAK=0 LAYERS=480 RUNS="snig-none snig-8GiB sz-none sz-8GiB cusparse-none cusparse-8GiB" \
  END=$(left 585) bash .device/2026-11-26-memory.sh > $OUT/m480.txt 2>&1
el "m480 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m480.txt; mv $OUT/memory.tar.gz $OUT/memory-480.tar.gz
