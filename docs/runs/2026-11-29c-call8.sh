#!/usr/bin/env bash
# Device call 8 of the session 2026-11-29c (one H200). Pack d1aed57: the circulant layers and
# the fold share one chunk loop (bd_lanes_columns). Variant k616: 61601bc's kernel (calls 6-7).
# The tile, warps and spread instances' SASS is identical in both (disassembled offline), so
# call 7's 4096, 16384, 65536 and random rows stand; here the lanes launch under ncu, A/B, the
# 1024 shapes of the table again (three benches each), blockdepend's and the CLI's GPU tests
# and the lanes tests' sanitizers.
# Prediction: the same lanes launch within the spread (22.3-23.1 us, 9.53 M instructions:
# the same operations, 16-48 more static instructions); tests and sanitizers pass.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants k616
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
M=gpu__time_duration.sum,sm__cycles_active.max,sm__inst_executed.sum
for i in 1 2; do for v in k616 new; do
  bin=$W/spdnn-$v; [ $v = new ] && bin=$W/bin/spdnn
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain --launch-count 2 --metrics $M \
    $bin infer --method blockdepend $OFF --warmup 0 --repetitions 1 > $R/ncu-m-$v-$i.log 2>&1
  el "ncu $v: $(grep -E '^\s+(gpu__time|sm__inst)' $R/ncu-m-$v-$i.log | tr -s ' ' | tr '\n' ';')"
done; done
S=$W/bin/spdnn
for i in 1 2 3; do bd 1024-120-$i $S $OFF --warmup 3 --repetitions 30; done
for l in 480 1920; do
  net=$W/g1024-$l.bin
  timeout 90 $W/bin/spdnn generate --neurons 1024 --layers $l --seed 0 --cache $net > $R/gen1024-$l.log 2>&1
  for i in 1 2 3; do bd 1024-$l-$i $S --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30; done
  rm -f $net
done
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -20
f=$(ls $W/tests/ | grep -E "^spdnn-cli--" | head -1)
PROPTEST_CASES=8 timeout 120 $W/tests/$f --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests ($f) rc=$? $(grep -E '^test result' $R/tests-cli.txt | tail -1)"
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
