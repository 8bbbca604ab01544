#!/usr/bin/env bash
# Device call 1 of 2026-11-23 (second series, run at bb5132e on an H200): every GPU test
# executable, four at a time, and the reuse examples. Written the session before as pending-call1.sh.
# Pending device call 1 (written 2026-11-23, to be run by the
# next session with a device budget): every GPU test executable, four at a time, and the
# reuse examples. What it checks had not run on a GPU when written: sz's per-neuron-bias
# kernels (8eb4dd3), Gpu::upload_nonempty / attribute_count and rows::in_position_order in
# blockdepend, hp, sz and xy (6468d8c, ef20bd3), check_bad_problems in hp and sz (8d2b822),
# the MNIST-recipe rows in check_challenge and the prune and adaptive tests (5dc930c,
# 1ee7915). Copy into .device/ after `cargo xtask device-pack` and
# `git rev-parse --short HEAD > .device/COMMIT`; run with command
# `END=540 bash .device/2026-11-23b-call1.sh`, carry [".device"].
set -u
. .device/preamble.sh
TESTS_JOBS=4 TESTS_TIMEOUT_S=${PER:-300} PROPTEST_CASES=${CASES:-4} bash .device/run.sh tests > $OUT/tests-run.txt 2>&1
el "tests rc=$?"; grep -E '^(FAIL|test executables)' $OUT/tests-run.txt; cat $OUT/tests-summary.txt
grep -E 'panicked at|^test .* FAILED' $OUT/tests.log | head -20 | cut -c1-300
left=$(( ${END:-540} - ($(date +%s) - T0) ))
[ $left -gt 40 ] && { timeout $left bash .device/run.sh examples > $OUT/examples.txt 2>&1; el "examples rc=$?"; cat $OUT/examples.txt | cut -c1-200; }
gzip -f $OUT/tests.log
el done
