#!/usr/bin/env bash
# Device call 2 of the session 2026-11-28c (one H100). Call 1 (f33aad4) found bd_chain_warps
# exact on the official 1024 but its launch (layers 9-120) at 0.066-0.074 ms, slower than the
# two launches it replaced (0.059): its sums ran every group and row slot predicated off
# (BD_WARPS_GROUPS x BD_WARPS_ROWS = 16 chains a k-step issued, ~1300 instructions a warp and
# layer; 16 warps an SM: ~5400 issue cycles a layer, about what was measured). Now
# bd_warps_sums<G, R> for the live rows and groups only (~270 a warp at one row of 64 x 64),
# and thread 0 loads each stage's descriptor a layer ahead (no copy waits on another).
# Predicted: ~17 rows a block at layer 9 -> ~1100 issue cycles a layer (4 warps a scheduler x
# ~270), falling to ~300-400 as rows die; ~19 layers -> launch 3 ~0.010-0.015 ms; official
# 1024-120 ~0.11 ms against base ~0.155. The GPU tests (the warps test now bit for bit on
# two-nonzero inputs), sanitizers (synccheck with room for the mbarriers).
. .device/preamble.sh
variants base
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" -A3 $R/tests-blockdepend.txt | cut -c1-600 | head -20
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-new$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-base$i $W/spdnn-base $OFF --warmup 3 --repetitions 30
done
for i in 1 2; do
  bd 1024-120-cuts46-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-cuts 4,6
done
python3 .device/launches.py $R 'bd-1024-*.json' 2>&1 | tee $R/launches.md
timeout 100 ncu --clock-control none --kernel-name regex:bd_chain --launch-skip 6 --launch-count 6 \
  --metrics gpu__time_duration.sum --csv $W/bin/spdnn infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/ncu-new.csv 2> $R/ncu-new.err
el "ncu new rc=$? $(grep gpu__time_duration $R/ncu-new.csv | awk -F'","' '{printf "%s ", $NF}' | tr -d '"')"
timeout 100 ncu --clock-control none --kernel-name bd_chain_warps --launch-skip 1 --launch-count 1 --set full \
  -o $R/warps $W/bin/spdnn infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/ncu-warps.log 2>&1
el "ncu warps profile rc=$?"
for tool in racecheck synccheck memcheck; do
  extra=""; [ $tool = synccheck ] && extra="--num-cuda-barriers 4096"
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool $tool $extra $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 official_1024_network narrow_dense_layers_run_a_row_a_warp > $R/$tool.txt 2>&1
  el "$tool rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool.txt | tr '\n' ' ')"
done
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
