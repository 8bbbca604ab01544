#!/usr/bin/env bash
# Device call 3 of the session 2026-11-29c (one H200). Pack 63f89ac: the bitmap's
# transposition in 13 instructions a row (byte permutes, funnel shifts, bit selects) and its
# rows 8 at a time in a rolled loop (f452205: ~40 a row, 32 rows unrolled, 33 % of the lanes
# launch's instructions and 36 % of its stall samples in call 2). A/B against --bd-no-bitmap
# (the folded scatter of the columns) on the same binary, interleaved.
# Prediction: the bins ~2300 -> ~800 instructions a warp: the lanes launch 13.18 -> ~10.3 M
# instructions and 31.3 -> ~26-27 us (ncu, clocks free); the official 1024-120 ~0.054 ms by
# events against ~0.061 with the columns. Tests and sanitizers of the bitmap test pass.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-columns-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30 --bd-no-bitmap
  bd 1024-120-bitmap-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
done
M=gpu__time_duration.sum,sm__cycles_active.max,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
for i in 1 2; do for v in columns bitmap; do
  flag=""; [ $v = columns ] && flag=--bd-no-bitmap
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain --launch-count 2 --metrics $M \
    $W/bin/spdnn infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 $flag > $R/ncu-m-$v-$i.log 2>&1
  el "ncu $v: $(grep -E '^\s+(gpu__time|sm__inst)' $R/ncu-m-$v-$i.log | tr -s ' ' | tr '\n' ';')"
done; done
timeout 200 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain_lanes --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SourceCounters --section SchedulerStats --section Occupancy \
  --import-source yes -o $R/lanes $W/bin/spdnn infer --method blockdepend $OFF120 --warmup 1 --repetitions 1 --bd-no-graph > $R/ncu-lanes.log 2>&1
ncu --import $R/lanes.ncu-rep --page source --csv --print-source sass > $R/lanes-sass.csv 2> $R/lanes-sass.err
ncu --import $R/lanes.ncu-rep --page details --csv > $R/lanes-details.csv 2>&1
rm -f $R/lanes.ncu-rep; el "profiled"
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -20
for tool in memcheck racecheck; do
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 bitmap_inputs_count_the_folded_bins > $R/$tool-bitmap.txt 2>&1
  el "$tool bitmap_inputs_count_the_folded_bins rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-bitmap.txt | tr '\n' ' ')"
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
