#!/usr/bin/env bash
# Device call 5 of 2026-11-26 (one H100), after the adaptive test fixes and the train merge
# (d11f378+): the GPU tests of adaptive (the peak tests of every method), the CLI (infer
# --biases --upper-bound with every method that takes them) and the engine, then issue 29's
# table (docs/runs/2026-11-26-memory.sh) in the time left.
START=$(date +%s)
TESTS_JOBS=3 TESTS_TIMEOUT_S=150 PROPTEST_CASES=8 timeout 170 bash .device/run.sh tests > $OUT/tests-run.txt 2>&1
echo "[$(( $(date +%s) - START )) s] tests rc=$?"
cat $OUT/tests-summary.txt
grep -hE "^test .*FAILED|panicked at|predicted .* measured|spmm workspace" $OUT/tests.log | cut -c1-250 | head -40
END=$(( 575 - ($(date +%s) - START) )) bash docs/runs/2026-11-26-memory.sh
