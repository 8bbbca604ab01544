#!/usr/bin/env bash
# Device call 3 of the session 2026-11-27b (one H100, commit b9b244c): every GPU test at full
# scale after RunSpec::profiled_only, four executables at a time. (A first try for a
# four-GPU machine before it got none started.)
. .device/preamble.sh
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 230 bash .device/run.sh tests > $OUT/tests.txt 2>&1
el "tests rc=$?"
grep -E '^(PASS|FAIL)|test executables|panicked' $OUT/tests.txt | head -40; cat $OUT/tests-summary.txt
