#!/usr/bin/env bash
# Device call 10 of the session 2026-11-28d (one H200), pack of 7ec352b (kernels 6f22044's):
# the warps launch (layers 7-120 of the official 1024) on its first 256 input rows, so that a
# few blocks carry 1-2 rows each through ~20 layers and the rest exit at once: ncu's source
# counters sampled every 32 cycles then see the busy warps' instructions beside their idle
# warp-mates' barrier. For the open question of "A row a warp": why a one-row 64 x 64 layer
# takes ~1850 cycles of its warp where the dependent chain is ~256. Also the launch's events
# on 256 and on all rows. Predicted: if the sums' shared loads are the limit, their FFMAs
# carry most of the busy warps' samples (short_sb); if the stage copies, the mbarrier wait
# (long_sb); if the biases' global load, the LDG's consumer (long_sb).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist"
bd 1024-120-rows256 $W/bin/spdnn $OFF --rows 256 --warmup 3 --repetitions 30
bd 1024-120-all $W/bin/spdnn $OFF --warmup 3 --repetitions 30
timeout 120 ncu --clock-control none --cache-control none --kernel-name bd_chain_warps --launch-skip 1 --launch-count 1 \
  --section WarpStateStats --section SourceCounters --section LaunchStats --warp-sampling-interval 0 --import-source yes -o $R/warps \
  $W/bin/spdnn infer --method blockdepend $OFF --rows 256 --warmup 1 --repetitions 1 > $R/ncu-warps.log 2>&1
el "ncu warps rc=$?"
ncu --import $R/warps.ncu-rep --page source --csv --print-source sass > $R/warps-sass.csv 2> $R/warps-sass.err
ncu --import $R/warps.ncu-rep --page details --csv > $R/warps-details.csv 2>&1
rm -f $R/warps.ncu-rep
python3 .device/launches.py $R 'bd-*.json' | tee $R/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
