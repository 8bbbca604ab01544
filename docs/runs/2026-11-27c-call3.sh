#!/usr/bin/env bash
# Device call 3 of the session 2026-11-27c (a four-GPU machine, commit 3e6fdd1, the last
# library change of the session): issue 28's whole sanitizer run again after the fix of call
# 1's one failure (the last Gpu handle waits for its compile workers), on GPUs 0-2 (seven runs
# a GPU), and beside it every GPU test at full scale on GPU 3 (four executables at a time;
# call 2's copy of them was lost with its output when that call ran past its limit).
. .device/preamble.sh
( CUDA_VISIBLE_DEVICES=3 TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 240 \
    bash .device/run.sh tests > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $OUT/tests.txt ) &
tests=$!
SANITIZE_GPUS=3 SANITIZE_JOBS=21 END=$(( 545 - ($(date +%s) - T0) )) \
  bash .device/2026-11-26-sanitize.sh > $OUT/sanitize-call.txt 2>&1
el "sanitize done"
wait $tests
el "tests done"
grep -E '^(FAIL)|test executables|panicked' $OUT/tests.txt | head -20; cat $OUT/tests-summary.txt
cat $OUT/sanitize-call.txt | head -60
mkdir -p $OUT/keep && mv $OUT/tests.txt $OUT/tests-summary.txt $OUT/tests.log $OUT/sanitize-call.txt $OUT/keep/ 2>/dev/null
tar -C $OUT -czf $OUT/tests.tar.gz keep && rm -rf $OUT/keep
ls $OUT
