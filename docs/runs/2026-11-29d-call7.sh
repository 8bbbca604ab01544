#!/usr/bin/env bash
# Device call 7 of the session 2026-11-29d (one H200). Pack 28347e8 (base) and variants of its
# warps launch (patches beside this call's data):
#   stg  the stages issued by lane 0 of the last warp, not thread 0: calls 3 and 6 saw a
#        one-row layer's wait at ~730 cycles when the row sat in warp 0 against ~347 in
#        other warps (the stage's MEMBAR.ALL.CTA); warp 0 holds 4 rows of every heavy layer;
#   r16  one row's sums sixteen steps a body (a 64-input layer in one body);
#   asc  the rows' dispatch from 1 up (the tail's one-row layers take the first branch);
#   all  the three; allt: all with call 3's stamps.
# 2026-11-29a call 7 tried stg with a waiter and saw nothing beside the launch's 25-28 us
# spread; here 12 launches a binary, twice, interleaved, and the stamps.
# Prediction: stg -0.5..-1.5 us (warp 0's heavy layers), r16 -0.5, asc -0.2, all -1..-2 us;
# allt: one-row 64-input sums ~480 cycles, warp 0's wait ~350.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants stg r16 asc all allt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2; do for v in base stg r16 asc all; do
  bin=$W/spdnn-$v; [ $v = base ] && bin=$W/bin/spdnn
  timeout 60 ncu --clock-control none --kernel-name regex:bd_chain_warps --launch-skip 2 --launch-count 12 --metrics gpu__time_duration.sum \
    $bin infer --method blockdepend $OFF --warmup 12 --repetitions 1 --bd-no-graph > $R/ncu-$v-$i.log 2>&1
  el "ncu $v: $(grep -E 'gpu__time_duration' $R/ncu-$v-$i.log | awk '{print $3}' | sort -n | tr '\n' ' ')"
done; done
for i in 1 2 3; do for v in base all; do
  bin=$W/spdnn-$v; [ $v = base ] && bin=$W/bin/spdnn
  bd 1024-120-$v-$i $bin $OFF --warmup 50 --repetitions 100
done; done
timeout 120 $W/spdnn-allt infer --method blockdepend $OFF --warmup 2 --repetitions 1 --bd-no-graph > $R/trace.txt 2> $R/trace.err; el "trace rc=$?"
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
