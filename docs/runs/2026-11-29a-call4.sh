#!/usr/bin/env bash
# Device call 4 of the session 2026-11-29a (one H200). Pack: c451101 + three changes
# (uncommitted; the pack's binary `new` and tests): plan::WARPS_SPREAD 16 (call 2: 0.070-0.077
# against 0.074-0.081 ms); bd_lanes_circulant compiled for the layer's groups (G) as well as
# its slots, the padding select on the last group only (ncu 2026-11-28j call 3: every chunk
# issued the absent group's loads predicated off, zeroed the sums again, and re-read the
# bound from constant memory an output); the lanes scatter's column loads from an opaque
# pointer (one wide multiply-add an address instead of five instructions). Variant head1:
# c451101's kernel and plan. The waiter (call 3) is not kept.
# Prediction: lanes launch 37.2 -> ~34-35 us (the circulant chunks ~170 -> ~120 instructions,
# ~45 % of the launch's; the scatter's batch ~300 -> ~275); warps launch 27.5 -> ~26;
# 1024-120 ~0.064-0.070 -> ~0.060-0.066 ms.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants head1
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3 4; do
  bd 1024-120-head1-$i $W/spdnn-head1 $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-new-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
done
for v in head1 new; do
  bin=$W/bin/spdnn; [ $v = head1 ] && bin=$W/spdnn-head1
  timeout 150 ncu --clock-control none -o $R/k-$v --kernel-name regex:bd_chain --launch-count 2 --section SpeedOfLight \
    --section InstructionStats $bin infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-$v.log 2>&1
  ncu -i $R/k-$v.ncu-rep > $R/ncu-$v.txt 2>&1; rm -f $R/k-$v.ncu-rep
  el "ncu $v: $(grep -E 'Duration|Executed Instructions  ' $R/ncu-$v.txt | tr -s ' ' | tr '\n' ' ')"
done
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -12
for t in circulant_items narrow_dense_layers_run_a_row_a_warp; do for tool in racecheck memcheck; do
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 $t > $R/$tool-$t.txt 2>&1
  el "$tool $t rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-$t.txt | tr '\n' ' ')"
done; done
for L in 480 1920; do
  net=$W/g1024-$L.bin
  timeout 90 $W/bin/spdnn generate --neurons 1024 --layers $L --seed 0 --cache $net > $R/gen1024-$L.log 2>&1
  bd 1024-$L-head1 $W/spdnn-head1 --weights $net --neurons 1024 --layers $L --mnist --warmup 3 --repetitions 30
  bd 1024-$L-new $W/bin/spdnn --weights $net --neurons 1024 --layers $L --mnist --warmup 3 --repetitions 30
  rm -f $net
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
