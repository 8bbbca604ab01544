#!/usr/bin/env bash
# Device call 4 of the session 2026-11-29c (one H200). Pack d02c2d2: a lanes pitch of 36, so
# that the circulant layers, the fold and the bitmap's bins read and write 4 rows at once (16
# bytes). Variant p63: 63f89ac (pitch 33, bitmap with the 13-instruction transposition).
# Call 3 profiled 63f89ac's lanes launch: 11.41 M instructions, 25.3-25.9 us (ncu, clocks
# free); the circulant layers 52 % of its instructions (3192 a warp), the fold 16 % (989).
# Prediction: the circulant layers' loads and stores / 4 (~640 + ~320 -> ~240 a warp of the
# 3192) and the fold's: the lanes launch ~11.4 -> ~9.8 M instructions, ~25.5 -> ~22-23 us;
# the official 1024-120 ~3 us less by events. Tests and sanitizers pass (the lanes test and
# the bitmap test compare the lanes with the tiles bit for bit).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants p63
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-p63-$i $W/spdnn-p63 $OFF120 --warmup 3 --repetitions 100
  bd 1024-120-new-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 100
done
M=gpu__time_duration.sum,sm__cycles_active.max,sm__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
for i in 1 2; do for v in p63 new; do
  bin=$W/spdnn-$v; [ $v = new ] && bin=$W/bin/spdnn
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain --launch-count 2 --metrics $M \
    $bin infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-m-$v-$i.log 2>&1
  el "ncu $v: $(grep -E '^\s+(gpu__time|sm__inst|l1tex)' $R/ncu-m-$v-$i.log | tr -s ' ' | tr '\n' ';')"
done; done
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -20
for t in bitmap_inputs_count_the_folded_bins narrow_networks_run_a_row_a_lane generated_challenge_networks; do for tool in memcheck racecheck; do
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 $t > $R/$tool-$t.txt 2>&1
  el "$tool $t rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-$t.txt | tr '\n' ' ')"
done; done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
