#!/usr/bin/env bash
# Device call 5 of the session 2026-11-27f (one H100), commit in .device/COMMIT: blockdepend's
# GPU tests again after the mixed random chain's first layer was made exact (call 4: the
# scaled and pair runs differed in the last bits there, every other case bit for bit).
. .device/preamble.sh
TESTS_JOBS=1 TESTS_TIMEOUT_S=150 PROPTEST_CASES=8 timeout 170 bash .device/run.sh tests > $R/tests-run.txt 2>&1
el "tests rc=$? $(grep -E '^test executables' $R/tests-run.txt)"
grep -E '^FAIL|panicked' -A3 $R/tests-run.txt | head -10
( cd $OUT && tar czf tests.tar.gz tests.log tests-summary.txt r/tests-run.txt && rm -f tests.log r/tests-run.txt )
