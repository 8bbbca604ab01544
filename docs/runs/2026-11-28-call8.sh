#!/usr/bin/env bash
# Device call 8 of the session 2026-11-28 (one H100): blockdepend's GPU tests on 0a9a35d, the
# session's last code: 93237b2 changed tests only (one in_halves helper for the two tests
# that run input values 1/2, 1, 3/2) after call 7 ran every executable on 1d7766e.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked|narrow_networks|scaled_ell_layers" $R/tests-blockdepend.txt | head -20
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
