#!/usr/bin/env bash
# Device call 13 of 2026-11-26 (four GPUs, 64 cores), issue 28, the whole sanitizer run again
# after call 12 (512 of 788 runs in 553 s, 0 findings; 8 racecheck timeouts, 4 failed):
# - fixed: adaptive's probe fits its head (fewer layers) into a budget that holds little more
#   than two streamed layers, and the peak test halves only the budget above one row's need
#   (call 12's two adaptive failures at sanitize scale);
# - cut: the official subset at sanitize scale is 32 images (5 truth rows), not 128;
#   racecheck runs one proptest case a suite; 32 runs at a time (8 a GPU; 64 cores, 512 GiB);
#   each run may take the whole budget (the longest start first).
# First, at full scale without a sanitizer, the adaptive and cli GPU tests (the probe change).
# Expected: the racecheck runs of call 12 that took 200-300 s about halve (official rows / 4,
# random cases / 2); the light tools' 276 skipped runs are short (most < 10 s).
set -u
. .device/preamble.sh
( export CUDA_VISIBLE_DEVICES=3
  for t in adaptive cli; do timeout 100 $W/tests/spdnn-$t--gpu --include-ignored --test-threads=1 > $OUT/full-$t.log 2>&1
    echo "$t rc=$?" >> $OUT/full-$t.log; done ) &
full=$!
wait $full
for t in adaptive cli; do el "full scale: $(grep -E '^test result|rc=' $OUT/full-$t.log | tr '\n' ' ')"; grep -E "panicked" -A3 $OUT/full-$t.log | head -12; done
SANITIZE_JOBS=32 SANITIZE_TIMEOUT_S=600 END=${END:-560} bash .device/2026-11-26-sanitize.sh
