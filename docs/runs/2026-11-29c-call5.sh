#!/usr/bin/env bash
# Device call 5 of the session 2026-11-29c (one H200). Pack d02c2d2, variant p63 (63f89ac's
# pitch 33), as call 4. Call 4's events did not show the lanes launch's 3 us (ncu): within a
# bench of 100 passes the official 1024-120 drifted between ~50-53 and ~57-64 us in runs of
# tens of passes, whatever the binary. Here each bench warms 200 passes and times 200, three
# times interleaved; then the lanes launch's source profile on d02c2d2.
# Prediction: after 200 passes of warm-up the medians sit near the low level (~0.050-0.053
# ms), d02c2d2 ~2-3 us under p63.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants p63
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-p63-$i $W/spdnn-p63 $OFF120 --warmup 200 --repetitions 200
  bd 1024-120-new-$i $W/bin/spdnn $OFF120 --warmup 200 --repetitions 200
done
timeout 200 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain_lanes --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SourceCounters --section SchedulerStats --section Occupancy \
  --import-source yes -o $R/lanes $W/bin/spdnn infer --method blockdepend $OFF120 --warmup 1 --repetitions 1 --bd-no-graph > $R/ncu-lanes.log 2>&1
ncu --import $R/lanes.ncu-rep --page source --csv --print-source sass > $R/lanes-sass.csv 2> $R/lanes-sass.err
ncu --import $R/lanes.ncu-rep --page details --csv > $R/lanes-details.csv 2>&1
rm -f $R/lanes.ncu-rep; el "profiled"
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
