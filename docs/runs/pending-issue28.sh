#!/usr/bin/env bash
# Pending device calls for issue 28 (rewritten 2026-11-27 at the end of a session whose device
# time ran out). What is left of the issue is the whole sanitizer run in one call: 0 findings,
# 0 timeouts. The large bench is done (228 s on four H100s, 2026-11-27 call 1: docs/results.md).
#
#   call A: END=575 bash .device/pending-issue28.sh sanitize
#     on a four-GPU machine (nvidia-h100-x4 or nvidia-h200-x4; an eight-GPU one where lent):
#     adaptive's GPU tests at the sanitize scale without a tool (they passed there on 2c9a2bb),
#     then the whole run with the defaults (six runs a GPU, racecheck a run per test, the
#     lighter tools a run per executable, the queue by xtask/src/sanitize-expected.txt).
#     Before: 2026-11-27 call 2, every test ran, 0 findings, four racecheck runs still going at
#     545 s (blockdepend's exact/predicated items ~20 min of racecheck work, since cut about
#     15x by the grid cap; tcchain's challenge networks; bf's and snig's GLARE random
#     networks), blockdepend's tiles_straddle at 1, 2 and 7 rows ending with exit 9.
#   call B (any one GPU, ~2 min): bash .device/pending-issue28.sh straddle
#     which case of blockdepend's tiles_straddle at 1, 2 and 7 rows ends the process under
#     racecheck (each case alone, named with --nocapture, the tool's own messages kept), and
#     the same cases under memcheck for contrast.
#   call C (any one GPU): bash .device/run.sh tests, if a kernel or library change follows.
#
# Copy into .device/ beside preamble.sh and 2026-11-26-sanitize.sh after `cargo xtask
# device-pack --only cuda,adaptive,engine,bf,snig,cusparse,dense,xy,snicit,hp,blockdepend,sz,
# tcchain,cli` and `git rev-parse --short HEAD > .device/COMMIT`; carry [".device"]. Copy the
# results into docs/runs/ and the tables into docs/reliability.md.
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
  straddle)
    . .device/preamble.sh
    export SPDNN_TEST_SCALE=sanitize SPDNN_TEST_ONE_RUN=1
    san=/usr/local/cuda/bin/compute-sanitizer
    one() {  # tool rows tile test: one case, both spreads, under the tool
      local tool=$1 case=$2,$3 log=$OUT/straddle-$1-$2-$3.log
      SPDNN_STRADDLE_ONLY=$case timeout 150 $san --tool $tool --print-level info \
        $W/tests/spdnn-blockdepend--gpu --include-ignored --exact $4 --nocapture \
        --test-threads=1 > $log 2>&1
      echo "$tool $case rc=$? last case: $(grep tiles_straddle: $log | tail -1)" >> $OUT/straddle.txt
    }
    for rows in 1 2; do for tile in none 1 4 128; do
      one racecheck $rows $tile tiles_straddle_the_end_of_1_and_2_rows & done; done
    for tile in none 1 4 128; do one racecheck 7 $tile tiles_straddle_the_end_of_7_rows & done
    wait
    one memcheck 1 none tiles_straddle_the_end_of_1_and_2_rows
    sort $OUT/straddle.txt
    for f in $OUT/straddle-racecheck-*.log; do grep -q 'terminate successfully' $f && tail -6 $f; done
    el done;;
  *) echo "usage: pending-issue28.sh sanitize|straddle|bench"; exit 2;;
esac
