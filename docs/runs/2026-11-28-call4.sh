#!/usr/bin/env bash
# Device call 4 of the session 2026-11-28 (one H100): the pack of 3595450 against 5542acb
# (.device/spdnn-base.xz), interleaved. 3595450 adds bd_dense_split: a dense layer over a tile
# of at most 8 live rows splits its inputs over the block's idle warps (the official 1024's
# launches 3 and 4: 64 x 64 dense layers, tiles of 6 and 1 rows, 2 of 8 warps busy, each
# column's 64 weights in four L2 round trips; now a warp a group and a quarter of the
# inputs, 16 loads in one round trip, then one barrier and the parts added).
# Predicted: launch 3 0.032 -> ~0.018 ms, launch 4 0.027 -> ~0.016, 1024-120 ~0.145 -> ~0.12 ms;
# 4096 and wider unchanged (their modules have no dense layer: the same kernels).
# Also: blockdepend's GPU tests, and memcheck and racecheck of the lanes and split paths
# (official 1024 and the narrow-network test at the sanitize scale).
. .device/preamble.sh
variants base
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-new-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-base-$i $W/spdnn-base $OFF --warmup 3 --repetitions 30
  bd 1024-120-new-tiles-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-placement shared
done
net=$W/g4096.bin
timeout 90 $W/bin/spdnn generate --neurons 4096 --layers 120 --seed 0 --cache $net > $R/gen4096.log 2>&1
bd 4096-120-new $W/bin/spdnn --weights $net --neurons 4096 --layers 120 --mnist --warmup 3 --repetitions 30
bd 4096-120-base $W/spdnn-base --weights $net --neurons 4096 --layers 120 --mnist --warmup 3 --repetitions 30
rm -f $net
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" $R/tests-blockdepend.txt | head -20
for tool in memcheck racecheck; do
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 200 compute-sanitizer --tool $tool $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 official_1024_network narrow_networks_run_a_row_a_lane > $R/$tool.txt 2>&1
  el "$tool rc=$? $(grep -E 'ERROR SUMMARY|^test result' $R/$tool.txt | tr '\n' ' ')"
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
