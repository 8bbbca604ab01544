#!/usr/bin/env bash
# Device call 2 of the session 2026-11-27k (one H100). The pack is 7398ed8 (call 1's "new",
# random 4096-120 at 240.9 ms, 1.32x its 182 ms gather floor). Variant:
#   gm: 7398ed8 with the work items ordered group-major (bd_for_items: a group's row blocks
#       consecutive, run by neighbouring warps at about the same time) instead of
#       row-block-major (a group's two blocks of a 14-row split tile ~5 rounds apart).
# Why: a split tile at 4096 (14 rows) runs each group as two items (8 + 6 rows) that each
# read the group's 8 KB of weights; the L1 left beside the 224 KB tile holds a few of them,
# so each tile reads a layer's 1 MB twice from L2: 60000/14 tiles x 2 MB = 8.6 GB a layer,
# 4.5 TB/s at call 1's 1.93 ms a layer, near the L2's rate. Predicted: if the second read
# hits L1, random 4096-120 241 -> ~215-230 ms; the challenge shapes within noise (1024 and
# 4096 run narrow shared tiles whose blocks of a group share L1 either way).
# Then ncu of random 4096-120's launch 2 (layers 5-8, ~8.5 ms) under both: the L2 and
# shared-memory pipes' shares, the stalls.
. .device/preamble.sh
variants gm
ln -sf $W/bin/spdnn $W/spdnn-new
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
timeout 60 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
el "gen random 4096-120 rc=$?"
RND="--weights $W/r4096.bin --neurons 4096 --layers 120 --mnist"
for round in 1 2; do
  for v in new gm; do
    bd $v-r4096-120-r$round $W/spdnn-$v $RND --warmup 1 --repetitions 3
  done
done
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for n in 4096 16384; do
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $W/g$n.bin > $R/gen$n.log 2>&1
done
for round in 1 2; do
  for v in new gm; do
    bd $v-1024-120-r$round $W/spdnn-$v $OFF --warmup 3 --repetitions 30
    bd $v-4096-120-r$round $W/spdnn-$v --weights $W/g4096.bin --neurons 4096 --layers 120 --mnist --warmup 3 --repetitions 30
    bd $v-16384-120-r$round $W/spdnn-$v --weights $W/g16384.bin --neurons 16384 --layers 120 --mnist --warmup 3 --repetitions 10
  done
done
rm -f $W/g4096.bin $W/g16384.bin
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
NCU=/usr/local/cuda/bin/ncu
for v in new gm; do
  timeout 150 $NCU --kernel-name regex:bd_chain --launch-skip 1 --launch-count 1 \
    --section WarpStateStats --section SchedulerStats --section LaunchStats \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --export $R/ncu-$v-r4096-l2 --force-overwrite \
    $W/spdnn-$v infer --method blockdepend $RND --warmup 0 --repetitions 1 > $R/ncu-$v-r4096-l2.txt 2>&1
  el "ncu $v rc=$?"
  $NCU --import $R/ncu-$v-r4096-l2.ncu-rep --page details --print-details all > $R/details-$v-r4096-l2.txt 2>&1
  grep -E "Duration|Throughput|L2 Hit|L1/TEX Hit|Issue Slots Busy|Shared|Bank|No Eligible|Stall" $R/details-$v-r4096-l2.txt | head -40
done
rm -f $W/r4096.bin
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
