#!/usr/bin/env bash
# Device call 2 of the session 2026-11-27j (one H100): the pack of commit .device/COMMIT
# ("H": call 1's B and D kernels, narrow tiles of whole items, four blocks an SM where the
# registers allow) against "E": H with TILE_WAVES = 1 (a launch's device tile
# ceil(rows / blocks) instead of ceil(rows / (2 blocks)), at most the plan's tile), each
# measured in this call on the same GPU.
# Predicted:
#   H: official 1024-120 ~0.185 ms (call 1's D: 0.176 / 0.196); 4096-120 ~0.33 (call 1's 24-row
#      tiles: 0.329); 4096 at 480 and 1920 layers as at 120; 16384-120 ~1.09 (unchanged: wide
#      tiles, no dense layers).
#   E: launches whose tile the plan does not clamp run one tile a block instead of two in a
#      row, and their tiles are latency-bound (an item of 6 rows costs about one of 3): 4096's
#      launch 3 (2976 rows, 3 -> 6 rows a tile) 0.070 -> ~0.045 ms; the official 1024's
#      launch 3 (2127 rows) 0.037 -> ~0.025; 16384's launch 3 0.143 -> ~0.10. Launch 1 the
#      same everywhere (its tile is the plan's). Risk: rows die at different layers and one
#      wave cannot rebalance them.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
xz -dc .device/spdnn-E.xz > $W/spdnn-E; chmod +x $W/spdnn-E
ln -sf $W/bin/spdnn $W/spdnn-H
infer() { # binary name args...
  local bin=$1 name=$2; shift 2
  timeout 120 $W/spdnn-$bin infer --method blockdepend "$@" --json > $R/bd-$bin-$name.json 2> $R/bd-$bin-$name.err
  el "bd-$bin-$name rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-$bin-$name.json | tr -d ' \n')"
}
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
net=$W/g4096.bin
timeout 60 $W/bin/spdnn generate --neurons 4096 --layers 120 --seed 0 --cache $net > $R/gen4096.log 2>&1
for round in 1 2; do
  for v in H E; do
    infer $v 1024-120-r$round $OFF --warmup 3 --repetitions 20
    infer $v 4096-120-r$round --weights $net --neurons 4096 --layers 120 --mnist --warmup 2 --repetitions 5
  done
done
rm -f $net
for l in 480 1920; do
  net=$W/g4096-$l.bin
  timeout 90 $W/bin/spdnn generate --neurons 4096 --layers $l --seed 0 --cache $net > $R/gen4096-$l.log 2>&1
  for v in H E; do infer $v 4096-$l --weights $net --neurons 4096 --layers $l --mnist --warmup 2 --repetitions 5; done
  rm -f $net
done
net=$W/g16384.bin
timeout 60 $W/bin/spdnn generate --neurons 16384 --layers 120 --seed 0 --cache $net > $R/gen16384.log 2>&1
for v in H E H E; do infer $v 16384-120-$(date +%s) --weights $net --neurons 16384 --layers 120 --mnist --warmup 2 --repetitions 5; done
rm -f $net
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
