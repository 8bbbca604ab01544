#!/usr/bin/env bash
# Device call 2 of the session 2026-11-29c (one H200). Pack f452205. Call 1: the bitmap took
# the lanes launch's DRAM reads 25.8 -> 7.8 MB and its instructions 13.94 -> 13.18 M, but its
# time only 31.9-32.2 -> 31.3 us (ncu, clocks free); events 0.061-0.065 -> 0.057-0.060 ms. So
# the counting of layer 1 was not what the launch waited on once folded. Where it waits:
# the lanes launch (bitmap) with source counters and warp states, its SASS with stall samples
# per instruction, for the kernel's steady pass (launch 3 of the process: warm-up then run).
# Prediction: none of the parts has most of the samples; the circulant layers' chunks (shared
# loads and their dependent multiply-adds) and the fold the largest share, the bins < 10 %.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 200 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain_lanes --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SourceCounters --section SchedulerStats --section LaunchStats --section Occupancy \
  --import-source yes -o $R/lanes $W/bin/spdnn infer --method blockdepend $OFF120 --warmup 1 --repetitions 1 --bd-no-graph > $R/ncu-lanes.log 2>&1
el "ncu lanes rc=$?"
ncu --import $R/lanes.ncu-rep --page source --csv --print-source sass > $R/lanes-sass.csv 2> $R/lanes-sass.err
ncu --import $R/lanes.ncu-rep --page details --csv > $R/lanes-details.csv 2>&1
el "exported $(wc -l < $R/lanes-sass.csv) sass lines"
grep -E "Duration|Issue Slots Busy|Achieved Occupancy|No Eligible|Warp Cycles Per Issued" $R/lanes-details.csv | head -12
rm -f $R/lanes.ncu-rep
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
