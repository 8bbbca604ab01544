#!/usr/bin/env bash
# Device call 7 of the session 2026-11-28 (one H100): every GPU test executable on the pack of
# 1d7766e (the final kernels), then memcheck and racecheck of blockdepend's official 1024,
# narrow-network (a row a lane), challenge and random tests at the sanitize scale.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 280 bash .device/run.sh tests > $R/tests.txt 2>&1
el "tests rc=$?"
grep -E "^(PASS|FAIL)" $R/tests.txt
for tool in memcheck racecheck; do
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool $tool $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 official_1024_network narrow_networks_run_a_row_a_lane generated_challenge_networks \
    exact_random_networks > $R/$tool.txt 2>&1
  el "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^test result' $R/$tool.txt | tr '\n' ' ')"
done
cp -r $OUT/tests $R/ 2>/dev/null
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R $OUT/tests
