#!/usr/bin/env bash
# Device call 7 of the session 2026-11-28b (one H100): the landing commit, whose kernel is
# d8b7c5e's again (b27c44d reverted the staged tails): blockdepend's and the CLI's GPU tests,
# racecheck of the official and narrow tests, the official 1024-120 once (expected as
# d8b7c5e: ~0.14-0.17 ms on this session's machines, 1812 categories).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" $R/tests-blockdepend.txt | head -20
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool racecheck $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 official_1024_network narrow_networks_run_a_row_a_lane > $R/racecheck.txt 2>&1
el "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|^test result' $R/racecheck.txt | tr '\n' ' ')"
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd 1024-120 $W/bin/spdnn $OFF --warmup 3 --repetitions 30
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
