#!/usr/bin/env bash
# Device call 9 of the session 2026-11-28j (one H200). Pack: e9fc586, every crate (the landing
# code; its kernel differs from b1afcce's only by e9fc586's mend: a table entry loaded once a
# slot, the row range through bd_lane_range). Every GPU test executable (every method against
# the CPU reference, random networks included; PROPTEST_CASES=8, four at a time), then memcheck
# and racecheck of blockdepend's circulant_items (its 64-wide case runs a row a lane) and
# generated_challenge_networks at the sanitize scale, and the official 1024-120 once.
# Predicted: all pass; 1024-120 ~0.077-0.085 ms.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=240 PROPTEST_CASES=8 timeout 300 bash .device/run.sh tests > $R/tests.txt 2>&1
el "tests rc=$?"
grep -E "^(PASS|FAIL)" $R/tests.txt
cat $OUT/tests/*.result > $OUT/tests-summary.txt 2>/dev/null; cat $OUT/tests-summary.txt  # came back empty: the summary lines are in r/tests.txt; tests-summary.txt here was written from them afterwards
for t in circulant_items generated_challenge_networks; do for tool in memcheck racecheck; do
  [ $(( $(date +%s) - T0 )) -lt 470 ] || { el "no time for $tool $t"; break; }
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 $t > $R/$tool-$t.txt 2>&1
  el "$tool $t rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-$t.txt | tr '\n' ' ')"
done; done
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd 1024-120 $W/bin/spdnn $OFF --warmup 3 --repetitions 30
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
