#!/usr/bin/env bash
# Device call 1 of the session 2026-11-27j (one H100): the pack of commit .device/COMMIT
# (46ab0bc, "A": narrow tiles aim at the blocks an SM the compiled kernel's registers allow)
# and three more CLI binaries, each measured in this call on the same GPU:
#   base: d137e93 (three narrow blocks an SM always);
#   B:    A with the dense layers' loop unrolled by 4 (16 weight loads in flight, 78
#         registers in the 1024 set, no spills, still three blocks);
#   D:    B with the row check after each layer taking 32 / group rows a warp (a row the
#         fewest lanes, a power of two, that hold its float4s: two 64-wide rows a warp);
#   C:    A with bd_chain_shared bound to four blocks an SM (__launch_bounds__(256, 4): 64
#         registers, 16 bytes of spills in the 1024 set).
# Predicted:
#   A: 4096-120 0.358 -> ~0.32 ms (27 rows a tile, four blocks an SM; 24 rows took 0.321 in
#      2026-11-27i call 6); 1024-120 unchanged (its set takes 66 registers: three blocks).
#   B: the official 1024's launches 3 and 4 (dense 64-input layers, tiles of 1-3 rows: 8 L2
#      round trips a layer's item becomes 4) 0.052 -> ~0.035 and 0.033 -> ~0.022 ms, 1024-120
#      0.215 -> ~0.19; 4096 unchanged (no dense layers).
#   D: the check was ~21 % of the official 1024's launch 1 instructions (ncu, 2026-11-27i
#      call 2): launch 1 0.10 -> ~0.09 ms, 1024-120 a further ~-10 us; 4096 unchanged
#      (256-wide rows fill a warp).
#   C: 1024 at four blocks an SM: the barrier-bound launches 3-4 gain, launch 1 may lose to
#      the spills; within +-10 %.
# Then ncu source counters of 4096-120's launch 1 under A (where its 0.2 ms go).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
for v in base B C D; do xz -dc .device/spdnn-$v.xz > $W/spdnn-$v; chmod +x $W/spdnn-$v; done
ln -sf $W/bin/spdnn $W/spdnn-A
infer() { # binary name args...
  local bin=$1 name=$2; shift 2
  timeout 120 $W/spdnn-$bin infer --method blockdepend "$@" --json > $R/bd-$bin-$name.json 2> $R/bd-$bin-$name.err
  el "bd-$bin-$name rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-$bin-$name.json | tr -d ' \n')"
}
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
net=$W/g4096.bin
timeout 60 $W/bin/spdnn generate --neurons 4096 --layers 120 --seed 0 --cache $net > $R/gen4096.log 2>&1
for round in 1 2; do
  for v in base A B C D; do
    infer $v 1024-120-r$round $OFF --warmup 3 --repetitions 20
    infer $v 4096-120-r$round --weights $net --neurons 4096 --layers 120 --mnist --warmup 2 --repetitions 5
  done
done
infer A 4096-120-tile24 --weights $net --neurons 4096 --layers 120 --mnist --bd-tile 24 --warmup 2 --repetitions 5
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
NCU=/usr/local/cuda/bin/ncu
timeout 150 $NCU --kernel-name regex:bd_chain --launch-skip 0 --launch-count 1 \
  --section WarpStateStats --section SourceCounters --section SchedulerStats --section LaunchStats \
  --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --export $R/ncu-4096-l1 --force-overwrite \
  $W/spdnn-A infer --method blockdepend --weights $net --neurons 4096 --layers 120 --mnist --warmup 0 --repetitions 1 > $R/ncu-4096-l1.txt 2>&1
el "ncu rc=$?"
$NCU --import $R/ncu-4096-l1.ncu-rep --page source --csv --print-source sass > $R/src-4096-l1.csv 2> $R/src-4096-l1.err
$NCU --import $R/ncu-4096-l1.ncu-rep --page details --print-details all > $R/details-4096-l1.txt 2>&1
el "ncu pages rc=$?"
rm -f $net
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
