#!/usr/bin/env bash
# Device call 2 of the session 2026-11-28h (one H200). Pack: c7c12c9 (call 1's), knobs only.
# Call 1: circulant items took 4096-120 0.280 -> 0.257 ms, 16384-120 0.920 -> 0.805, 65536-120
# 3.726 -> 2.838 (launch 1 2.598 -> 2.009, launch 2 0.553 -> 0.319); with --bd-cuts 4,8,24 4096
# ran 0.247, 16384 0.796. Layers 2-8 (4096), 2-10 (16384), 2-12 (65536) are circulant and now
# cheap in a tile; the layers after them hold ~30 slots an output. Where to cut is open again:
# this call times a grid of cuts on each N (two runs each, interleaved).
# Predicted: the best last cut is 24 at 4096 and 16384 (every row finished by then, no tail
# launch of 1-row tiles); a first cut after the circulant run (8, 10, 12) saves a launch's
# carried rows where the circulant layers are cheap: 4096 ~0.240, 16384 ~0.78.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
grid() { # N REPS CUTS...
  local n=$1 reps=$2; shift 2
  local net=$W/g$n-120.bin
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  for i in 1 2; do for c in "$@"; do
    local knob=""; [ $c = default ] || knob="--bd-cuts $c"
    bd $n-120-c$c-$i $W/bin/spdnn --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps $knob
  done; done
  rm -f $net
}
grid 4096 30 default 4,8,24 8,24 8,16 4,8,20 6,12,24 8,12,24 4,8,12,24 4,6,8,24
grid 16384 10 default 4,8,24 8,24 4,10,24 10,24 4,8,12,24 6,10,24
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd 1024-120 $W/bin/spdnn $OFF --warmup 3 --repetitions 30
images=$W/i65536.bin
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
net=$W/g65536-120.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "gen 65536 rc=$?"
for c in default 4,12,16 4,8,24 4,12,24 8,16 6,12,20; do
  [ $(( $(date +%s) - T0 )) -lt 530 ] || break
  knob=""; [ $c = default ] || knob="--bd-cuts $c"
  BD_TIMEOUT=40 bd 65536-120-c$c $W/bin/spdnn --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5 $knob
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
