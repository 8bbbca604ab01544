#!/usr/bin/env bash
# Device call 9 of the session 2026-11-28 (one H100): after the read of the diff, 37f3e73
# shares bd_walk_to and one bd_first_output between the tiles' and the lanes' layer 1 (the
# tile and spread instances compile to the same SASS; the lanes instance to the same
# instructions in other registers), d8b7c5e one lanes_block_floats in the plan. blockdepend's
# GPU tests, racecheck of the lanes and official tests at the sanitize scale, and the
# official 1024-120 once (expected as call 6: ~0.15 ms, 1812 categories).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" $R/tests-blockdepend.txt | head -20
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 120 compute-sanitizer --tool racecheck $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 official_1024_network narrow_networks_run_a_row_a_lane > $R/racecheck.txt 2>&1
el "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|^test result' $R/racecheck.txt | tr '\n' ' ')"
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd 1024-120 $W/bin/spdnn $OFF --warmup 3 --repetitions 30
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
