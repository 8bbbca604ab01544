#!/usr/bin/env bash
# Device call 1 of the session 2026-11-27d (one GPU, commit 38f8e9b): the pending issue-29
# call (bf on 65536-120 unconstrained, in 34 GiB and in 4 GiB; ncu of one permuted bf_layer
# resident and streamed), then every GPU test at full scale on the commits not yet run on a
# GPU (c0c5f2d's hp move, cf5bd55's verify mode, 38f8e9b's snicit test helper).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
END=220 bash .device/pending-issue29.sh > $OUT/issue29.txt 2>&1
el "issue29 rc=$?"; tail -30 $OUT/issue29.txt
( cd $OUT && tar czf memory.tar.gz r && rm -rf r )
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 220 bash .device/run.sh tests > $OUT/tests.txt 2>&1
el "tests rc=$?"
grep -E '^(PASS|FAIL)|test executables|panicked' $OUT/tests.txt | head -40; cat $OUT/tests-summary.txt
