#!/usr/bin/env bash
# Device call 7 of the session 2026-11-28d (one H200), pack of bfd7f46: the graph against
# call by call (--bd-no-graph) on the other challenge sizes at 120 layers, interleaved.
# Predicted: each shape ~20-40 us less with the graph (one graph launch instead of the
# memset and 4-6 launches, the GPU waiting on launch 1's enqueue); 4096-120 ~0.30 -> ~0.28 ms,
# 16384-120 ~1.07 -> ~1.04.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
for n in 4096 16384; do
  net=$W/g$n.bin
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  reps=30; [ $n = 16384 ] && reps=10
  for i in 1 2; do
    bd $n-120-graph$i $W/bin/spdnn --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps
    bd $n-120-calls$i $W/bin/spdnn --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps --bd-no-graph
  done
  rm -f $net
done
python3 .device/launches.py $R 'bd-*.json' | tee $R/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
