#!/usr/bin/env bash
# Pending device calls for issue 28 (rewritten at the end of the second session of 2026-11-27,
# whose device time ran out). What is left of the issue is the whole sanitizer run in one call
# with 0 timeouts: call 4 of that session (c612ee4, four H100s) had 248 of 249 runs clean and
# 0 findings; bf's GLARE random test under racecheck was still running at 528 s (the GLARE
# check's dense all-saturating problems, cut at the sanitize scale since, 8674786).
#
#   call A (any one GPU, up to 10 min, first): bash .device/pending-issue28.sh glare
#     bf's and snig's eight GLARE tests (each check split into a random and a saturating
#     half) under racecheck, four at a time in two waves, with --nocapture (each phase of
#     the check is named with its start): do they end well inside 290 s now?
#   call B: END=575 bash .device/pending-issue28.sh sanitize
#     on a four-GPU machine (nvidia-h100-x4 or nvidia-h200-x4; an eight-GPU one where lent):
#     adaptive's GPU tests at the sanitize scale without a tool, then the whole run with the
#     defaults (six runs a GPU, racecheck a run per test, the lighter tools a run per
#     executable, the queue by xtask/src/sanitize-expected.txt).
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
  glare)
    . .device/preamble.sh
    export SPDNN_TEST_SCALE=sanitize SPDNN_TEST_ONE_RUN=1 PROPTEST_CASES=1
    san=/usr/local/cuda/bin/compute-sanitizer
    one() {  # executable test: under racecheck, its phases on stderr
      local s=$(date +%s) log=$OUT/glare-$1-$2.log
      timeout 280 $san --tool racecheck --error-exitcode 86 $W/tests/spdnn-$1--gpu \
        --include-ignored --exact $2 --nocapture --test-threads=1 > $log 2>&1
      echo "racecheck $1 $2: rc=$? $(( $(date +%s) - s )) s; $(grep -E 'RACECHECK SUMMARY|test result' $log | tr '\n' ' ')"
      grep '^glare \[' $log
    }
    i=0
    for wave in "bf:glare_random_networks bf:glare_saturating_networks snig:glare_random_networks_without_a_graph snig:glare_saturating_networks_without_a_graph" \
                "bf:glare_random_networks_in_slabs_7_wide bf:glare_saturating_networks_in_slabs_7_wide snig:glare_random_networks snig:glare_saturating_networks"; do
      pids=()
      for t in $wave; do i=$((i + 1)); one ${t%%:*} ${t#*:} > $OUT/g$i.txt & pids+=($!); done
      wait "${pids[@]}"
    done
    cat $OUT/g[1-8].txt
    el done;;
  *) echo "usage: pending-issue28.sh sanitize|glare|bench"; exit 2;;
esac
