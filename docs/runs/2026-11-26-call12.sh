#!/usr/bin/env bash
# Device call 12 of 2026-11-26 (four GPUs, 64 cores), issue 28: the whole sanitizer run in one
# call, spread over the four GPUs (docs/runs/2026-11-26-sanitize.sh: one run per tool and
# test, six a GPU, each on the least busy GPU), at the sanitize scale with the depth cap
# (40 layers). Beside it at the start, without a sanitizer, the three tests that failed at the
# sanitize scale in call 11 (adaptive's bf_batched… and blockdepend_peak…, cli's tsv test),
# for their messages.
# Expected: the 2026-11-26 run on one GPU finished 85 of 788 runs; four GPUs give four times
# the GPU, the depth cap cuts the launches of every 120-layer generated network to a third.
set -u
. .device/preamble.sh
( export SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 CUDA_VISIBLE_DEVICES=3
  for t in adaptive cli; do timeout 120 $W/tests/spdnn-$t--gpu --include-ignored --test-threads=1 > $OUT/sanscale-$t.log 2>&1; echo "$t rc=$?" >> $OUT/sanscale-$t.log; done ) &
END=575 bash .device/2026-11-26-sanitize.sh
wait
for t in adaptive cli; do grep -E "panicked|FAILED|rc=|Error|error" -A4 $OUT/sanscale-$t.log 2>/dev/null | head -40; done
