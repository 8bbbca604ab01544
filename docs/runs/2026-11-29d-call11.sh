#!/usr/bin/env bash
# Device call 11 of the session 2026-11-29d (one H200). Full pack of b5af65d: every GPU test
# executable of every crate (every method against the CPU reference, random networks
# included), four at a time, after the session's last kernel change (9e4a547's SASS; b5af65d
# changes only names and comments in the kernel, its SASS identical, disassembled offline).
# Prediction: all pass.
. .device/preamble.sh
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 225 bash .device/run.sh tests > $R/tests.txt 2>&1
el "tests rc=$?"
grep -E "^(PASS|FAIL)" $R/tests.txt > $OUT/tests-summary.txt
cat $OUT/tests/*.result >> $OUT/tests-summary.txt 2>/dev/null
cat $OUT/tests-summary.txt
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
