#!/usr/bin/env bash
# Device call 1 of the session 2026-11-28 (one H100): the pack of d511c4d, launch 1 a row a
# lane (bd_chain_lanes) where its rows are narrow and its layers ELL: the official 1024's
# launch 1 (layers 1-4, 64-wide compressed rows, scaled ELL).
# Floor of that launch: the input's 25.5 MB once at 3.0 TB/s, 8.5 us. Instructions counted
# on paper (docs/blockdepend.md, "A row a lane"): ~5900 warp instructions a warp of 32 rows
# against ~22000 for the tiles' 32 rows (41 M for launch 1, session i's ncu), so about 11 M.
# Predicted: launch 1 0.09-0.12 -> ~0.03-0.04 ms; 1024-120 0.18 -> ~0.10-0.12 ms, the tail
# launches unchanged; categories identical (1812, the official truth).
# Also: blockdepend's GPU tests (the new narrow_networks_run_a_row_a_lane among them), the
# A/B against --bd-placement shared (the tiles, as before) interleaved, ncu of launch 1.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2; do
  bd 1024-120-lanes-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-tiles-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-placement shared
done
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" $R/tests-blockdepend.txt | head -20
for l in 480 1920; do
  net=$W/g1024-$l.bin
  timeout 90 $W/bin/spdnn generate --neurons 1024 --layers $l --seed 0 --cache $net > $R/gen1024-$l.log 2>&1
  bd 1024-$l-lanes $W/bin/spdnn --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30
  bd 1024-$l-tiles $W/bin/spdnn --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30 --bd-placement shared
  rm -f $net
done
timeout 120 ncu --kernel-name bd_chain_lanes --launch-count 1 --section SpeedOfLight --section SchedulerStats \
  --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis --section Occupancy \
  $W/bin/spdnn infer --method blockdepend $OFF --warmup 0 --repetitions 1 > $R/ncu-lanes.txt 2>&1
el "ncu rc=$?"
grep -E "Duration|Executed Instructions |Issue Slots Busy|Issued Warp|No Eligible|Achieved Occupancy|Registers Per|Memory Throughput|Shared Memory Configuration|Block Limit" $R/ncu-lanes.txt | head -30
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
