#!/usr/bin/env bash
# Issue 28's device calls (the name kept: docs/reliability.md and docs/results.md cite runs
# made with it). The last item, the whole sanitizer run in one call with 0 findings
# and 0 timeouts, was met in call 3 of the session 2026-11-27c (commit 3e6fdd1, three of four
# H200s, 253 of 253 runs clean in 354 s; docs/runs/2026-11-27c-call3.sh).
#
#   bench:    the 65536 bench (blockdepend and snicit, 120 and 1920 layers, 1, 2 and
#             4 GPUs) on a four-GPU machine.
#   sanitize: adaptive's GPU tests at the sanitize scale without a tool, then the whole run
#             with the defaults (six runs a GPU, racecheck a run per test, the lighter tools
#             a run per executable, the queue by xtask/src/sanitize-expected.txt); END is the
#             seconds the call may take.
#   glare:    bf's and snig's eight GLARE tests under racecheck, four at a time, each check's
#             phases named on stderr.
#
# Copy into .device/ beside preamble.sh and 2026-11-26-sanitize.sh after `cargo xtask
# device-pack --only cuda,adaptive,engine,bf,snig,cusparse,dense,xy,snicit,hp,blockdepend,sz,
# tcchain,cli` and `git rev-parse --short HEAD > .device/COMMIT`; carry [".device"].
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
