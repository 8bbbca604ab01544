#!/usr/bin/env bash
# Device call 1 of the session 2026-11-29c (one H200). Pack f452205: a binary batch loaded as
# a bitmap where the lanes fold layer 1 (bd_lanes_bins_bitmap: 32 words of a row transposed
# across the warp, one popc a bin) against the same binary with --bd-no-bitmap (e475dcf's
# folded scatter of the columns). The official 1024-120 by events, interleaved; the lanes
# launch under ncu; blockdepend's GPU tests; memcheck and racecheck of the new test
# bitmap_inputs_count_the_folded_bins; the CLI, cuda and engine GPU tests.
# Floor of the bitmap's read: 60000 x 128 B = 7.7 MB / 4.25 TB/s = 1.8 us (the columns: 25.5
# MB, 6.0 us). Prediction: the folded scatter was ~12-14 us of the lanes launch's 30.4-32.3
# (2026-11-29b calls 6 and 9); counting the bins from the bitmap is ~40 warp instructions a
# row (1280 a warp of 32 rows, one round trip for its 4 KB), so the lanes launch ~31 -> ~20-23
# us and the official 1024-120 ~0.060-0.065 -> ~0.050-0.055 ms. Tests and sanitizers pass.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-columns-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30 --bd-no-bitmap
  bd 1024-120-bitmap-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
done
grep -h '"input"' $R/bd-1024-120-*-1.json
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts.max,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum
for i in 1 2; do for v in columns bitmap; do
  flag=""; [ $v = columns ] && flag=--bd-no-bitmap
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain --launch-count 2 --metrics $M \
    $W/bin/spdnn infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 $flag > $R/ncu-m-$v-$i.log 2>&1
  el "ncu $v: $(grep -E '^\s+(gpu__time|sm__inst|dram__bytes)' $R/ncu-m-$v-$i.log | tr -s ' ' | tr '\n' ';')"
done; done
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -20
for tool in memcheck racecheck; do
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 bitmap_inputs_count_the_folded_bins > $R/$tool-bitmap.txt 2>&1
  el "$tool bitmap_inputs_count_the_folded_bins rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-bitmap.txt | tr '\n' ' ')"
done
for t in cli; do
  f=$(ls $W/tests/ | grep -E "^spdnn-$t--" | head -1)
  PROPTEST_CASES=8 timeout 120 $W/tests/$f --include-ignored --test-threads=2 > $R/tests-$t.txt 2>&1
  el "$t GPU tests ($f) rc=$? $(grep -E '^test result' $R/tests-$t.txt | tail -1)"
done
for t in cuda engine; do f=$(ls $W/tests/ | grep -E "^spdnn-$t--" | head -1)
PROPTEST_CASES=8 timeout 120 $W/tests/$f --include-ignored --test-threads=1 > $R/tests-$t.txt 2>&1
el "$t GPU tests ($f) rc=$? $(grep -E '^test result' $R/tests-$t.txt | tail -1)"; done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
