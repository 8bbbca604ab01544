#!/usr/bin/env bash
# Device call 5 of the session 2026-11-27b (one GPU):
# 1. the four GLARE random tests of bf and snig under racecheck at the sanitize scale, four
#    at a time (the longest runs of call 4: 474-528 s at six a GPU), now that the GLARE check
#    runs each problem once: how long they take.
# 2. issue 29: bf on 65536-480 unconstrained and in 4 GiB (weights streamed), the plan's
#    transfer floor beside the time (2026-11-26-memory.sh with PEAK=0).
. .device/preamble.sh
san=/usr/local/cuda/bin/compute-sanitizer
glare() {  # executable test
  local s=$(date +%s)
  SPDNN_TEST_SCALE=sanitize SPDNN_TEST_ONE_RUN=1 PROPTEST_CASES=1 timeout 290 $san --tool racecheck \
    --error-exitcode 86 $W/tests/spdnn-$1--gpu --include-ignored --exact $2 --test-threads=1 > $OUT/$1-$2.log 2>&1
  echo "racecheck $1 $2: rc=$? $(( $(date +%s) - s )) s; $(grep -E 'RACECHECK SUMMARY|test result' $OUT/$1-$2.log | tr '\n' ' ')"
}
pids=()
glare bf glare_random_networks > $OUT/g1.txt & pids+=($!)
glare bf glare_random_networks_in_slabs_7_wide > $OUT/g2.txt & pids+=($!)
glare snig glare_random_networks > $OUT/g3.txt & pids+=($!)
glare snig glare_random_networks_without_a_graph > $OUT/g4.txt & pids+=($!)
wait "${pids[@]}"
el "glare racecheck done"; cat $OUT/g[1-4].txt
PEAK=0 LAYERS=480 RUNS="bf-none bf-4GiB" END=$(( 580 - ($(date +%s) - T0) )) bash .device/2026-11-26-memory.sh
for f in $R/bf-*.json; do echo "== $f"; grep -E '"(infer_ms|total_ms|matched)"' $f | head -4
  grep -oE '"(batch|batches|transfer_floor_ms|transfer_ms_per_mib|layer_ms|predicted_bytes|measured_peak)": *[0-9.e+-]+' $f | sort -u | tr '\n' ' '; echo; done
cat $R/table.md 2>/dev/null
tar -C $OUT -czf $OUT/logs.tar.gz --exclude logs.tar.gz . 2>/dev/null
# What happened (commit 8a8016c): the call got 362 s, what was left of the session's device
# time. The four GLARE tests, four at a time on one H100, were all still running at 290 s;
# the network was generated and the bf runs were cut off by the limit (no result).
