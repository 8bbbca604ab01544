#!/usr/bin/env bash
# Device call 3 of the session 2026-11-28c (one H100). Call 2 (9eb7c9a): bd_chain_warps exact,
# the official 1024-120 0.123-0.134 ms against base 0.137-0.154 (same call), cuts 4,6
# 0.112-0.114; the warps launch (9-120) 0.034 ms, ncu 33.9 us, against ~0.010-0.015
# predicted. Why (counted after): a warp reads the layer's whole 64 x 64 matrix from shared
# memory (128 wavefronts) for its rows, one row a warp: 17 rows a block at layer 9 ->
# ~2200 wavefronts a layer, ~1.1 us at 1 wavefront a cycle, rows per block falling slowly
# (no rebalancing). Now (this commit) rows go 4 a warp once there are more than 4: at 17 rows
# 5 warps, ~640 weight wavefronts + 272 for the rows' float4s; issue ~700-1000 cycles a layer.
# Predicted: the warps launch 9-120 ~0.015-0.020 ms (from 0.034); with cuts 4,6 the launch
# 7-120 (~46 rows a block, 12 warps of 4) ~0.025 ms (from 0.040); official 1024-120 ~0.11 ms
# with the default cuts, ~0.10 with 4,6. ncu details of the warps launch. Racecheck with the
# warps test's grids capped at sanitize scale.
. .device/preamble.sh
variants base
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" -A3 $R/tests-blockdepend.txt | cut -c1-600 | head -20
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-new$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-cuts46-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-cuts 4,6
  bd 1024-120-base$i $W/spdnn-base $OFF --warmup 3 --repetitions 30
done
python3 .device/launches.py $R 'bd-1024-*.json' 2>&1 | tee $R/launches.md
for c in default 4,6; do
  extra=""; [ $c != default ] && extra="--bd-cuts $c"
  timeout 100 ncu --clock-control none --kernel-name regex:bd_chain --launch-skip 6 --launch-count 6 \
    --metrics gpu__time_duration.sum --csv $W/bin/spdnn infer --method blockdepend $OFF $extra --warmup 1 --repetitions 1 > $R/ncu-$c.csv 2> $R/ncu-$c.err
  el "ncu $c rc=$? $(grep gpu__time_duration $R/ncu-$c.csv | awk -F'","' '{printf "%s ", $NF}' | tr -d '"')"
done
timeout 100 ncu --clock-control none --kernel-name bd_chain_warps --launch-skip 1 --launch-count 1 --set full --import-source yes \
  -o $R/warps $W/bin/spdnn infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/ncu-warps.log 2>&1
el "ncu warps profile rc=$?"
ncu --import $R/warps.ncu-rep --page details > $R/warps-details.txt 2>&1
grep -E "Duration|Issued Ipc|Shared.*Wavefronts|Bank|Warp Cycles Per Issued|Stall|Registers|Achieved Occupancy|Elapsed Cycles" $R/warps-details.txt | head -40
for tool in racecheck synccheck memcheck; do
  extra=""; [ $tool = synccheck ] && extra="--num-cuda-barriers 4096"
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool $tool $extra $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 official_1024_network narrow_dense_layers_run_a_row_a_warp > $R/$tool.txt 2>&1
  el "$tool rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool.txt | tr '\n' ' ')"
done
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
