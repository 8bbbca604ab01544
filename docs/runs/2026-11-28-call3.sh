#!/usr/bin/env bash
# Device call 3 of the session 2026-11-28 (one H100): the pack of 5542acb. Launch 1 a row a
# lane at the official 1024 (call 2, c93a24e: launch 1 0.064-0.079 ms against the tiles'
# 0.091-0.105, 1024-120 0.144 against 0.160-0.177; ncu: 19.3 M instructions, 0.50 issued a
# cycle a scheduler, 13.8 warps an SM, 65 us under ncu).
# 5542acb: layer 1's columns a batch ahead (each warp's ~27 batches waited on a DRAM round
# trip each), the layer's slot ranges before its groups and slots unrolled by 2, the checks
# as a min and a max (two instructions an output instead of five), no bias shuffle.
# Predicted: launch 1 ~0.05 ms, 1024-120 ~0.125 ms; ~17 M instructions.
# Then the cuts with lane rows in front: launch 1 over layers 1-6 (2-6 are the scaled ELL
# layers; 7 on are dense), 3 launches instead of 4: --bd-cuts 6,8,16 / 6,16 / 5,8,16 / 4,16.
# Predicted: 6,8,16 within +-5 us of 4,8,16 (launch 1 pays layers 5-6 for every warp with a
# row left, launch 2 loses them); 4,16 and 6,16 save a launch (~4 us) but their launch 2
# runs 8-10 layers in 31-row tiles.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2; do
  bd 1024-120-lanes-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-tiles-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-placement shared
  for cuts in 6,8,16 6,16 5,8,16 4,16; do
    bd 1024-120-cuts${cuts//,/-}-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-cuts $cuts
  done
done
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" $R/tests-blockdepend.txt | head -20
timeout 150 ncu -o $R/lanes --kernel-name bd_chain_lanes --launch-count 1 --section SpeedOfLight --section SchedulerStats \
  --section WarpStateStats --section InstructionStats --section Occupancy --section SourceCounters \
  $W/bin/spdnn infer --method blockdepend $OFF --warmup 0 --repetitions 1 > $R/ncu-lanes.log 2>&1
el "ncu rc=$?"
ncu -i $R/lanes.ncu-rep > $R/ncu-lanes.txt 2>&1
ncu -i $R/lanes.ncu-rep --page source --csv --print-source sass > $R/ncu-lanes-sass.csv 2>&1
el "source page rc=$? $(wc -l < $R/ncu-lanes-sass.csv) lines"
grep -E "Duration|Executed Instructions |Issued Warp|No Eligible|Achieved Active" $R/ncu-lanes.txt | head -10
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
