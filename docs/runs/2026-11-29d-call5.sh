#!/usr/bin/env bash
# Device call 5 of the session 2026-11-29d (one H200). Pack 25602cb and the unroll of the
# warps launch's sums (bd_warps_sums' `#pragma unroll`, 4 in the pack): u8r1 (8 steps for
# one row, 4 for more), u8 (8), u16 (16: a 64-input layer in one body); wait1 as call 4.
# Call 4 found the warps launch the length of one tile's chain of 21 layers (two blocks an
# SM, four, or one waiter moved nothing), so only a layer's latency counts. Call 3 put a
# one-row layer's sums at ~8.7 cycles an input (4 for its chains); with 4 steps a body the
# loads of a body wait for its multiply-adds before they issue.
# Prediction: one-row sums ~690 -> ~450 cycles (u8r1, u8) or ~350 (u16), the 15 tail layers
# of the critical tile ~4000-5000 cycles shorter: the warps launch (ncu, 25-27 us) -2 us
# for u8r1, -2.5 for u8 and u16 (their 4-row layers hide more of the loads too).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants u8r1 u8 u16 wait1
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in base u8r1 u8 u16 wait1 base u16; do
  bin=$W/spdnn-$v; [ $v = base ] && bin=$W/bin/spdnn
  timeout 60 ncu --clock-control none --kernel-name regex:bd_chain_warps --launch-skip 2 --launch-count 6 --metrics gpu__time_duration.sum,sm__inst_executed.sum \
    $bin infer --method blockdepend $OFF120 --warmup 6 --repetitions 1 --bd-no-graph > $R/ncu-$v.log 2>&1
  el "ncu $v: $(grep -E 'gpu__time_duration' $R/ncu-$v.log | awk '{print $3}' | tr '\n' ' ')"
done
for i in 1 2 3; do
  bd 1024-120-base-$i $W/bin/spdnn $OFF120 --warmup 50 --repetitions 100
  for v in u8 u16; do bd 1024-120-$v-$i $W/spdnn-$v $OFF120 --warmup 50 --repetitions 100; done
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
