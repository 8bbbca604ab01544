#!/usr/bin/env bash
# Device call 1 of the session 2026-11-27b (one GPU, commit in .device/COMMIT):
# 1. blockdepend's straddling-tile cases of 1, 2 and 7 rows under racecheck, each case alone
#    (three at a time), with the tool's messages and the host memory sampled every 2 s: does
#    the process die of host memory (exit 9 = SIGKILL), or of something in the spread kernel?
#    One case under memcheck for contrast.
# 2. the exact/predicated parts at the sanitize scale under racecheck (the grid cap of
#    bbaa90b: expected about 80 s of racecheck work in all).
# 3. every GPU test at full scale, four executables at a time.
. .device/preamble.sh
free -m | head -2; nproc
( while sleep 2; do echo "$(( $(date +%s) - T0 )) used_mib $(free -m | awk 'NR==2{print $3}') top $(ps -eo rss=,comm= --sort=-rss | head -2 | awk '{printf "%s:%d ", $2, $1/1024}')"; done ) > $OUT/memory.txt 2>&1 &
sampler=$!
export SPDNN_TEST_SCALE=sanitize SPDNN_TEST_ONE_RUN=1 PROPTEST_CASES=1
san=/usr/local/cuda/bin/compute-sanitizer
one() {  # tool rows tile: one case (both spreads) under the tool
  local tool=$1 rows=$2 tile=$3 test=tiles_straddle_the_end_of_1_and_2_rows
  [ "$rows" = 7 ] && test=tiles_straddle_the_end_of_7_rows
  local log=$OUT/straddle-$tool-$rows-$tile.log s=$(date +%s)
  SPDNN_STRADDLE_ONLY=$rows,$tile timeout 150 $san --tool $tool --print-level info \
    $W/tests/spdnn-blockdepend--gpu --include-ignored --exact $test --nocapture \
    --test-threads=1 > $log 2>&1
  echo "$tool $rows,$tile rc=$? $(( $(date +%s) - s )) s, last case: $(grep tiles_straddle: $log | tail -1)"
}
export -f one; export OUT W san
for c in "1 none" "1 1" "1 4" "1 128" "2 none" "2 1" "2 4" "2 128" "7 none" "7 1" "7 4" "7 128"; do
  echo "racecheck $c"; done | xargs -P 3 -L 1 bash -c 'one $0 $1 $2' | sort > $OUT/straddle.txt
one memcheck 1 none >> $OUT/straddle.txt
el "straddle done"; cat $OUT/straddle.txt
for f in $OUT/straddle-racecheck-*.log; do
  grep -q 'terminate successfully' $f && { echo "== $f"; grep -v '^test \|^running' $f | tail -8; }; done
SANITIZE_TOOLS=racecheck SANITIZE_JOBS=5 SANITIZE_BUDGET_S=200 bash .device/run.sh sanitize \
  exact_and_predicated_items_agree > $OUT/exact-racecheck.txt 2>&1
el "exact parts rc=$?"; grep -v '^excluded' $OUT/exact-racecheck.txt | head -14
kill $sampler
sort -k3 -n -r $OUT/memory.txt | head -3
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 230 bash .device/run.sh tests > $OUT/tests.txt 2>&1
el "tests rc=$?"
grep -E '^(PASS|FAIL)|test executables|panicked' $OUT/tests.txt | head -40
tar -C $OUT -czf $OUT/logs.tar.gz --exclude logs.tar.gz . 2>/dev/null
el done
