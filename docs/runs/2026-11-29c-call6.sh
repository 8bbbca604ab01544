#!/usr/bin/env bash
# Device call 6 of the session 2026-11-29c (one H200). Pack 61601bc: d02c2d2 (pitch 36) and
# a padding column's bias -inf in the circulant layers and the fold (no select an output).
# Variant p63 (63f89ac, pitch 33). The lanes and warps launches under ncu and the official
# 1024-120 by events, interleaved; then every GPU test executable of the pack (blockdepend,
# CLI, cuda, engine) and the sanitizers of the lanes tests, generated_challenge_networks and
# circulant_items: the candidate final kernel.
# Prediction: lanes launch ~23.3 (d02c2d2, call 4) -> ~22.5-23 us, ~9.55 M instructions
# (224 fewer a warp); tests and sanitizers pass.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants p63
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
M=gpu__time_duration.sum,sm__cycles_active.max,sm__inst_executed.sum
for i in 1 2; do for v in p63 new; do
  bin=$W/spdnn-$v; [ $v = new ] && bin=$W/bin/spdnn
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain --launch-count 2 --metrics $M \
    $bin infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-m-$v-$i.log 2>&1
  el "ncu $v: $(grep -E '^\s+(gpu__time|sm__inst)' $R/ncu-m-$v-$i.log | tr -s ' ' | tr '\n' ';')"
done; done
for i in 1 2 3; do
  bd 1024-120-p63-$i $W/spdnn-p63 $OFF120 --warmup 3 --repetitions 100
  bd 1024-120-new-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 100
done
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -20
f=$(ls $W/tests/ | grep -E "^spdnn-cli--" | head -1)
PROPTEST_CASES=8 timeout 120 $W/tests/$f --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests ($f) rc=$? $(grep -E '^test result' $R/tests-cli.txt | tail -1)"
for t in cuda engine; do f=$(ls $W/tests/ | grep -E "^spdnn-$t--" | head -1)
  PROPTEST_CASES=8 timeout 120 $W/tests/$f --include-ignored --test-threads=1 > $R/tests-$t.txt 2>&1
  el "$t GPU tests ($f) rc=$? $(grep -E '^test result' $R/tests-$t.txt | tail -1)"; done
for t in bitmap_inputs_count_the_folded_bins narrow_networks_run_a_row_a_lane generated_challenge_networks; do for tool in memcheck racecheck; do
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 $t > $R/$tool-$t.txt 2>&1
  el "$tool $t rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-$t.txt | tr '\n' ' ')"
done; done
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 circulant_items > $R/memcheck-circulant_items.txt 2>&1
el "memcheck circulant_items rc=$? $(grep -E 'SUMMARY|^test result' $R/memcheck-circulant_items.txt | tr '\n' ' ')"
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
