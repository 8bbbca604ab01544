#!/usr/bin/env bash
# Device call 4 of 2026-11-27 (one H100, commit 2c9a2bb): adaptive at the sanitize scale (plain),
# then every GPU test at full scale, four executables at a time.
. .device/preamble.sh
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 CUDA_VISIBLE_DEVICES=0 timeout 100 \
  $W/tests/spdnn-adaptive--gpu --include-ignored --test-threads=1 > $OUT/sanscale-adaptive.log 2>&1
el "adaptive at sanitize scale rc=$? $(grep '^test result' $OUT/sanscale-adaptive.log)"
grep -A3 panicked $OUT/sanscale-adaptive.log | head -12
grep -E '^blockdepend' $OUT/sanscale-adaptive.log | cut -c1-200
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 220 bash .device/run.sh tests > $OUT/tests.txt 2>&1
el "tests rc=$?"
grep -E '^(PASS|FAIL)|test executables|panicked' $OUT/tests.txt | head -40
el done
