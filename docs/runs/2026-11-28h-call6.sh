#!/usr/bin/env bash
# Device call 6 of the session 2026-11-28h (one H200). Pack: the landing commit, after call 5's
# b38cb4d: ad63a43 (a circulant layer has no more outputs than inputs: host only; every network
# the GPU ran keeps its circulant layers) and the test refactors after it. The GPU tests of the
# blockdepend, cuda and CLI crates on it; predicted: all pass, as on b38cb4d.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
timeout 40 $W/tests/spdnn-cuda--gpu --include-ignored --test-threads=2 > $R/tests-cuda.txt 2>&1
el "cuda GPU tests rc=$? $(grep -E '^test result' $R/tests-cuda.txt)"
PROPTEST_CASES=8 timeout 150 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -8
PROPTEST_CASES=8 timeout 30 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
