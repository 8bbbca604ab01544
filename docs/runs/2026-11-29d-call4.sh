#!/usr/bin/env bash
# Device call 4 of the session 2026-11-29d (one H200). Pack 25602cb and four variants of the
# warps launch (each patch beside this call's data):
#   b2    two blocks of 256 threads an SM (WARPS_THREADS 256, WARPS_BLOCKS_PER_SM 2) instead
#         of one of 512: calls 2-3 found a layer's fixed part (barrier ~150, slot wait
#         ~215-350, setup ~320, epilogue ~100-450, loop ~220) about as long as its sums, all
#         in series on one block; two blocks overlap one's fixed part with the other's sums;
#   b4    four blocks of 128 threads an SM;
#   wait1 one thread (lane 0 of the last warp, the one least often with rows) waits for each
#         layer's stage before the block barrier, instead of every warp with rows after it;
#   b2w   b2 and wait1.
# Prediction: the warps launch (ncu, 25.4 us in call 1) b2 ~20 us, b4 ~19, wait1 ~23, b2w
# ~18; the official 1024-120 by as much (events, three rounds interleaved).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants b2 b4 wait1 b2w
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-base-$i $W/bin/spdnn $OFF120 --warmup 50 --repetitions 100
  for v in b2 b4 wait1 b2w; do bd 1024-120-$v-$i $W/spdnn-$v $OFF120 --warmup 50 --repetitions 100; done
done
for v in base b2 b4 wait1 b2w; do
  bin=$W/spdnn-$v; [ $v = base ] && bin=$W/bin/spdnn
  timeout 60 ncu --clock-control none --kernel-name regex:bd_chain_warps --launch-skip 2 --launch-count 3 --metrics gpu__time_duration.sum,sm__inst_executed.sum \
    $bin infer --method blockdepend $OFF120 --warmup 3 --repetitions 1 --bd-no-graph > $R/ncu-$v.log 2>&1
  el "ncu $v: $(grep -E 'gpu__time_duration' $R/ncu-$v.log | awk '{print $3}' | tr '\n' ' ')"
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
