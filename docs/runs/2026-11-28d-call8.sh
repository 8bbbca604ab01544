#!/usr/bin/env bash
# Device call 8 of the session 2026-11-28d (one H200), pack of bfd7f46 (the graph): the
# official 1024-120's cuts again, now that the graph took the host's ~30 us and most of the
# runs' spread away (2026-11-28 call 3 found cuts 6,8,16 / 6,16 / 5,8,16 / 4,16 within a
# spread of +-15 us). Layers 1-6 are scaled ELL (a row a lane fits them), 7-120 dense (a row a
# warp). Configurations, each 3 warm-ups and 30 runs, three rounds interleaved:
#   default (4,8,16: lanes 1-4, tiles 5-8, warps 9-120),
#   6 (lanes 1-6, warps 7-120), 6,16 (lanes 1-6, warps 7-16, warps 17-120 merged),
#   4,6 with --bd-placement lanes (lanes 1-4, lanes 5-6, warps 7-120).
# Predicted: launch 2 (0.019 ms) and one boundary go; lanes 1-6 costs launch 1 two scaled
# layers of ~1400 instructions a warp (~+5-8 us), the warps launch gains layers 7-8 of
# ~7000 rows (~+3-5 us): 6 ~0.095-0.100 ms against the default's ~0.104.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-default$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-cuts6-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-cuts 6
  bd 1024-120-cuts6-16-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-cuts 6,16
  bd 1024-120-cuts4-6-lanes$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-cuts 4,6 --bd-placement lanes
done
python3 .device/launches.py $R 'bd-*.json' | tee $R/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
