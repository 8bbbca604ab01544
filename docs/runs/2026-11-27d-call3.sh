#!/usr/bin/env bash
# Device call 3 of the session 2026-11-27d (one H100): SNICIT's post-convergence layers
# streamed through two slots (crates/xy/src/stream.rs), planned by the partitioner when the
# layers do not fit beside the rows.
# 1. The GPU tests of the crates touched (snicit, adaptive, xy, bf).
# 2. snicit on 65536-480: unconstrained, in 8 GiB (resident, 9 batches, as before) and in
#    4 GiB (the layers, 4.0 GiB, no longer fit: streamed).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
for t in snicit adaptive xy bf; do
  PROPTEST_CASES=8 timeout 150 $W/tests/spdnn-$t--gpu --include-ignored --test-threads=1 > $OUT/test-$t.txt 2>&1
  el "tests $t rc=$? $(grep -E '^test result' $OUT/test-$t.txt)"
  grep -E 'FAILED|panicked' $OUT/test-$t.txt | head -5
done
grep -E 'snicit' $OUT/test-adaptive.txt | grep -E 'None|Some' | cut -c1-400 | head -4
tar czf $OUT/tests.tar.gz -C $OUT $(cd $OUT && ls test-*.txt) && rm $OUT/test-*.txt
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
PEAK=0 LAYERS=480 RUNS="snicit-none snicit-4GiB snicit-8GiB" END=$(left 560) bash .device/2026-11-26-memory.sh > $OUT/m480.txt 2>&1
el "m480 rc=$?"; grep -E '^\||rc=|rror' $OUT/m480.txt; mv $OUT/memory.tar.gz $OUT/memory-480.tar.gz
