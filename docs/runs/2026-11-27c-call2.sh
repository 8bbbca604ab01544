#!/usr/bin/env bash
# Device call 2 of the session 2026-11-27c (one GPU, commit in .device/COMMIT):
# 1. every GPU test at full scale (four executables at a time), after the last library
#    change (the last Gpu handle waits for its compile workers; method::drive's one timed-run
#    closure, 882b455);
# 2. meanwhile, call 1's one failure reproduced: bf's bad_problems_are_errors under racecheck
#    with an empty kernel cache each time (its kernels asked for ahead are still compiling
#    when the refused run returns), eight times, two at a time;
# 3. issue 29 (pending-issue29.sh, then more of the per-method table): 65536-480, bf
#    unconstrained and streamed in 4 GiB beside the plan's transfer floor, and the peak of
#    snig, cusparse and sz unconstrained.
. .device/preamble.sh
san=/usr/local/cuda/bin/compute-sanitizer
( for i in 1 2 3 4 5 6 7 8; do
    cache=$(mktemp -d)
    s=$(date +%s)
    SPDNN_PTX_CACHE=$cache SPDNN_TEST_SCALE=sanitize timeout 120 $san --tool racecheck --error-exitcode 86 \
      $W/tests/spdnn-bf--gpu --include-ignored --exact bad_problems_are_errors --test-threads=1 > $OUT/bad-$i.log 2>&1
    echo "bad_problems_are_errors run $i: rc=$? $(( $(date +%s) - s )) s $(grep -E 'test result|RACECHECK SUMMARY|did.?n.t terminate' $OUT/bad-$i.log | tr '\n' ' ')"
    rm -rf $cache
  done > $OUT/bad-problems.txt 2>&1 ) &
repro=$!
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 230 bash .device/run.sh tests > $OUT/tests.txt 2>&1
el "tests rc=$?"
grep -E '^(PASS|FAIL)|test executables|panicked' $OUT/tests.txt | head -40; cat $OUT/tests-summary.txt
wait $repro; cat $OUT/bad-problems.txt
# (The bug that ran this call past its 600 s: the memory script sources preamble.sh again,
# which restarts T0, so END=550 counted from the end of the tests; it must be what is left:
# END=$(( 550 - ($(date +%s) - T0) )).)
PEAK=0 LAYERS=480 RUNS="bf-none bf-4GiB snig-none cusparse-none sz-none" END=${END:-550} bash .device/2026-11-26-memory.sh
mkdir -p $OUT/x && tar -C $OUT/x -xzf $OUT/memory.tar.gz
for f in $OUT/x/r/*.json; do echo "== $f"; grep -E '"(infer_ms|total_ms|matched)"' $f | head -4
  grep -oE '"(batch|batches|transfer_floor_ms|transfer_ms_per_mib|predicted_bytes|measured_peak)": *[0-9.e+-]+' $f | sort -u | tr '\n' ' '; echo; done
rm -rf $OUT/x
el done
