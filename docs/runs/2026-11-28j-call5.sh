#!/usr/bin/env bash
# Device call 5 of the session 2026-11-28j (one H200). Pack: b44ec11 (the landing kernel:
# circulant layers a row a lane, b1afcce). GPU tests: blockdepend (its circulant test now runs
# a 64-wide network a row a lane, bit for bit against the shuffled entries), cuda, CLI; then
# memcheck and racecheck of circulant_items and generated_challenge_networks at the sanitize
# scale. Predicted: all pass (calls 2-3 ran the suites on the same lanes code, without the new
# test case).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -12
timeout 60 $W/tests/spdnn-cuda--gpu --include-ignored --test-threads=2 > $R/tests-cuda.txt 2>&1
el "cuda GPU tests rc=$? $(grep -E '^test result' $R/tests-cuda.txt)"
PROPTEST_CASES=8 timeout 90 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
for t in circulant_items generated_challenge_networks; do for tool in memcheck racecheck; do
  [ $(( $(date +%s) - T0 )) -lt 480 ] || { el "no time for $tool $t"; break; }
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 $t > $R/$tool-$t.txt 2>&1
  el "$tool $t rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-$t.txt | tr '\n' ' ')"
done; done
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
