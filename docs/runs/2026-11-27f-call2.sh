#!/usr/bin/env bash
# Device call 2 of the session 2026-11-27f (one H100), commit in .device/COMMIT: held rows
# whose centroid equals a held centroid share its slot (snicit_match_held).
# 1. The GPU tests of snicit (logs archived in tests.tar.gz).
# 2. snicit on 65536-480: unconstrained, 8 GiB, 4 GiB; on 65536-1920: unconstrained, 8 GiB,
#    4 GiB, and 4 GiB with --no-hold-back (A/B, one pass).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
for t in snicit; do
  PROPTEST_CASES=8 timeout 170 $W/tests/spdnn-$t--gpu --include-ignored --test-threads=1 > $R/test-$t.txt 2>&1
  el "tests $t rc=$? $(grep -E '^test result' $R/test-$t.txt)"
  grep -E 'FAILED|panicked' $R/test-$t.txt | head -8
done
( cd $R && tar czf $OUT/tests.tar.gz test-*.txt && rm -f test-*.txt )
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
PEAK=0 LAYERS=480 RUNS="snicit-none snicit-8GiB snicit-4GiB" END=$(left 200) \
  bash .device/2026-11-26-memory.sh > $OUT/m480.txt 2>&1
el "m480 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m480.txt; mv $OUT/memory.tar.gz $OUT/memory-480.tar.gz
rm -f $W/n480.bin
PEAK=0 LAYERS=1920 RUNS="snicit-none snicit-8GiB snicit-4GiB" END=$(left 520) \
  bash .device/2026-11-26-memory.sh > $OUT/m1920.txt 2>&1
el "m1920 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m1920.txt; mv $OUT/memory.tar.gz $OUT/memory-1920.tar.gz
mkdir -p $R
timeout $(left 590) $W/bin/spdnn infer --method snicit --weights $W/n1920.bin --neurons 65536 \
  --layers 1920 --mnist --gpu-memory 4GiB --warmup 0 --repetitions 1 --json --no-hold-back \
  > $R/snicit-4GiB-alone.json 2> $R/snicit-4GiB-alone.err
el "alone rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/snicit-4GiB-alone.json | tr -d ' \n')"
( cd $R && tar czf $OUT/alone.tar.gz snicit-4GiB-alone.* && rm -f snicit-4GiB-alone.* )
