#!/usr/bin/env bash
# Device call 1 of the session 2026-11-27i (one H100): three builds of the CLI (the kernel
# source is embedded in the binary; .device/spdnn-<variant>.xz, stripped):
#   old:   the pack's, commit .device/COMMIT;
#   a8d2:  the exact items keep a ring of loads in flight: 8 ELL entries (4 pairs) and 2
#          dense steps of 4 weights (BD_ITEM_AHEAD 8, BD_DENSE_AHEAD 2);
#   a16d4: the same with 16 entries and 4 dense steps.
# Why: after layer 8 the generated networks' layers hold ~31 slots an output (layers 2-8:
# 2), and the tail launches run tiles of ~4 rows (device_tile: rows / (blocks * 2)). An item
# of 4 rows unrolled by 2 slots waits for an L2 round trip every 2 slots: 16 a layer, each
# ~0.3-0.5 us, about 3-4 us a layer a tile, 8 layers and two waves: the 0.103 ms of 4096's
# launch 3 (layers 9-16). Predicted: launch 3 at 4096 0.103 -> ~0.04 ms, launch 4 0.055 ->
# ~0.03, 4096-120 0.448 -> ~0.36 ms; 16384-120 and 65536-120 0.1-0.3 ms less; the official
# 1024 (dense layers, 8 weights in flight already) a few us. a16d4 about like a8d2.
# Also: 16384 with --bd-spread off (its later layers now pass the spread threshold), random
# 4096-120, and ncu of 4096's launch 3 under old and a8d2 (stall reasons).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cp $W/bin/spdnn $W/spdnn-old
for v in a8d2 a16d4; do xz -dc .device/spdnn-$v.xz > $W/spdnn-$v && chmod +x $W/spdnn-$v; done
infer() { # variant name args...
  local variant=$1 name=$2; shift 2
  timeout 120 $W/spdnn-$variant infer --method blockdepend "$@" --json \
    > $R/bd-$name-$variant.json 2> $R/bd-$name-$variant.err
  el "bd-$name-$variant rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-$name-$variant.json | tr -d ' \n')"
}
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in old a8d2 a16d4; do infer $v 1024-120 $OFF --warmup 3 --repetitions 20; done
net=$W/g4096.bin
timeout 60 $W/bin/spdnn generate --neurons 4096 --layers 120 --seed 0 --cache $net > $R/gen4096.log 2>&1
for v in old a8d2 a16d4; do infer $v 4096-120 --weights $net --neurons 4096 --layers 120 --mnist --warmup 2 --repetitions 5; done
NCU=/usr/local/cuda/bin/ncu
for v in old a8d2; do
  timeout 90 $NCU --kernel-name regex:bd_chain --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
    $W/spdnn-$v infer --method blockdepend --weights $net --neurons 4096 --layers 120 --mnist --warmup 0 --repetitions 1 \
    > $R/ncu-4096-l3-$v.txt 2>&1
  el "ncu 4096 launch 3 $v rc=$?"
  grep -E 'bd_chain|Duration|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Stall' $R/ncu-4096-l3-$v.txt | head -16
done
rm -f $net
net=$W/g16384.bin
timeout 60 $W/bin/spdnn generate --neurons 16384 --layers 120 --seed 0 --cache $net > $R/gen16384.log 2>&1
for v in old a8d2 a16d4; do infer $v 16384-120 --weights $net --neurons 16384 --layers 120 --mnist --warmup 2 --repetitions 5; done
for v in old a8d2; do infer $v 16384-120-spreadoff --weights $net --neurons 16384 --layers 120 --mnist --bd-spread off --warmup 2 --repetitions 5; done
rm -f $net
timeout 40 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
for v in old a8d2 a16d4; do infer $v r4096-120 --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 3; done
rm -f $W/r4096.bin
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
left=$(( 540 - ($(date +%s) - T0) ))
if [ $left -gt 150 ]; then
  net=$W/g65536.bin images=$W/i65536.bin
  timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
  timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
  el "65536 inputs rc=$?"
  for v in old a8d2 a16d4; do
    [ $(( 570 - ($(date +%s) - T0) )) -gt 35 ] || break
    infer $v 65536-120 --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5
  done
  rm -f $net $images
  python3 .device/launches.py $R 'bd-65536*.json' | tee -a $OUT/launches.md
fi
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
