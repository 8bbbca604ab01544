#!/usr/bin/env bash
# Device call 5 of the session 2026-11-29f (one H200). Pack of the review's commit (COMMIT):
# BdRun's span state in one Option<ReplaySpans>, host code only. blockdepend's GPU tests, among
# them a_graph_replays_the_launches_enqueued_one_by_one (one span read a replay) and every
# method variant against the CPU reference (random networks included).
# Predicted: 37 of 37 pass.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_TIMEOUT_S=300 PROPTEST_CASES=8 SPDNN_TESTS=spdnn-blockdepend bash .device/run.sh tests > $OUT/tests.txt 2>&1; el "tests rc=$?"
tail -4 $OUT/tests.txt
rm -rf $R
