#!/usr/bin/env bash
# Pending device calls for issue 28 (written 2026-11-26 at the end of a session whose device
# time ran out), on a four-GPU machine (nvidia-h100-x4 or nvidia-h200-x4), one call each:
#
#   call A (fresh machine): END=580 bash .device/pending-issue28.sh bench
#     the large bench of the issue (2026-11-26-bigbench.sh, SECOND=0). Before: 304.0 s on four
#     H200 (fd42fe9, call 11). Since: the slice oracle and the compression side by side
#     (126e436) and the MNIST input with more row pairs at once; expected 250-280 s.
#   call B: END=575 bash .device/pending-issue28.sh sanitize
#     first adaptive's GPU tests at the sanitize scale without a sanitizer (the two fixed in
#     126e436 and 3b226d3 never ran there), then the whole sanitizer run with the defaults:
#     six runs a GPU (call 13's eight were slower), racecheck a run per test with one proptest
#     case and one method run, the lighter tools a run per executable, each run limited by the
#     budget only. Before: call 12, 500 clean runs of 788 in 553 s, 0 findings.
#
# Copy into .device/ beside preamble.sh, 2026-11-26-bigbench.sh and 2026-11-26-sanitize.sh
# after `cargo xtask device-pack --only cuda,adaptive,engine,bf,snig,cusparse,dense,xy,snicit,
# hp,blockdepend,sz,tcchain,cli` and `git rev-parse --short HEAD > .device/COMMIT`; carry
# [".device"]. Copy the results into docs/runs/ and the tables into docs/results.md and
# docs/reliability.md.
set -u
case "${1:-}" in
  bench)
    SECOND=0 bash .device/2026-11-26-bigbench.sh;;
  sanitize)
    . .device/preamble.sh
    SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 CUDA_VISIBLE_DEVICES=0 timeout 120 \
      $W/tests/spdnn-adaptive--gpu --include-ignored --test-threads=1 > $OUT/sanscale-adaptive.log 2>&1
    el "adaptive at sanitize scale rc=$? $(grep '^test result' $OUT/sanscale-adaptive.log)"
    grep -A3 panicked $OUT/sanscale-adaptive.log | head -20
    END=$(( ${END:-575} - ($(date +%s) - T0) )) bash .device/2026-11-26-sanitize.sh;;
  *) echo "usage: pending-issue28.sh bench|sanitize"; exit 2;;
esac
