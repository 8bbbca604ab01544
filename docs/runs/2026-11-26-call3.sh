#!/usr/bin/env bash
# Device call 3 of 2026-11-26 (one H100), after merging the cold-start work (a module per
# kernel, CUBIN, compiled ahead): the cold-start table on the official 1024-120 for every
# method (docs/runs/2026-11-26-coldstart.sh: cold / warm / ptx, within 330 s), then every
# GPU test executable (PROPTEST_CASES=8, four at a time) in the time left.
START=$(date +%s)
END=330 METHODS="bf snig cusparse dense xy snicit hp sz sz+t4 blockdepend tcchain" \
  bash docs/runs/2026-11-26-coldstart.sh
left=$(( 585 - ($(date +%s) - START) ))
echo "[$(( $(date +%s) - START )) s] tests with $left s left"
TESTS_JOBS=4 TESTS_TIMEOUT_S=$(( left - 20 )) PROPTEST_CASES=8 timeout $(( left - 5 )) \
  bash .device/run.sh tests > $OUT/tests-run.txt 2>&1
echo "[$(( $(date +%s) - START )) s] tests rc=$?"
cat $OUT/tests-summary.txt 2>/dev/null
grep -hE "^test .*FAILED|panicked at" $OUT/tests.log 2>/dev/null | head -20
