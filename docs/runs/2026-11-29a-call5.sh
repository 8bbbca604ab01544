#!/usr/bin/env bash
# Device call 5 of the session 2026-11-29a (one H200). Pack: every crate at the final kernel
# (84a44fe's blockdepend.cu and layout: the warps layer compiled whole, dense quads, circulant
# groups, the column pointer; WARPS_SPREAD 4). Every GPU test executable (every method
# against the CPU reference, random networks included; PROPTEST_CASES=8, four at a time),
# then memcheck and racecheck of blockdepend's circulant_items, the warps test and
# generated_challenge_networks at the sanitize scale, and the official 1024-120 once.
# Predicted: all pass; 1024-120 ~0.064-0.078 ms (calls 3-4's spread).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=240 PROPTEST_CASES=8 timeout 300 bash .device/run.sh tests > $R/tests.txt 2>&1
el "tests rc=$?"
grep -E "^(PASS|FAIL)|test result" $R/tests.txt | tail -40 > $OUT/tests-summary.txt; cat $OUT/tests-summary.txt
for t in narrow_dense_layers_run_a_row_a_warp generated_challenge_networks circulant_items; do for tool in memcheck racecheck; do
  [ $(( $(date +%s) - T0 )) -lt 520 ] || { el "no time for $tool $t"; break; }
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 $t > $R/$tool-$t.txt 2>&1
  el "$tool $t rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-$t.txt | tr '\n' ' ')"
done; done
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd 1024-120 $W/bin/spdnn $OFF --warmup 3 --repetitions 30
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
