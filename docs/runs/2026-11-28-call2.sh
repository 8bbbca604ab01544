#!/usr/bin/env bash
# Device call 2 of the session 2026-11-28 (one H100): the pack of c93a24e, launch 1 a row a
# lane (bd_chain_lanes) where its rows are narrow and its layers ELL: the official 1024's
# launch 1 (layers 1-4, 64-wide compressed rows, scaled ELL).
# Call 1 (d511c4d) was exact but slower than the tiles: launch 1 0.165-0.184 ms against
# 0.116-0.119. Its ncu: 32.9 M warp instructions (not the ~11 M counted), 0.35 issued a cycle
# a scheduler, 8.3 warps an SM of 12 possible, 440 k local-memory requests (the scatter's
# batch waited on each column's load before the next, and reloaded spilled values). Two
# rounds of warps: 1875 warps of rows over 396 x 4 resident.
# c93a24e: one buffer a warp (the sums in registers), 96 registers, no spills, five blocks
# an SM (20 warps, 2640 resident: one round); the scatter issues the batch's loads first.
# Predicted: ~15-20 M instructions, ~0.5 issued a cycle a scheduler, launch 1 ~0.05-0.07 ms,
# 1024-120 ~0.12-0.14 ms; categories 1812.
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
  --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis --section Occupancy --section SourceCounters \
  $W/bin/spdnn infer --method blockdepend $OFF --warmup 0 --repetitions 1 > $R/ncu-lanes.txt 2>&1
el "ncu rc=$?"
grep -E "Duration|Executed Instructions |Issued Warp|No Eligible|Achieved Occupancy|Achieved Active|Local Memory|Block Limit Sh|Block Limit Reg|Branch Instructions|Divergent" $R/ncu-lanes.txt | head -30
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
