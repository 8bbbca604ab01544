#!/usr/bin/env bash
# Device call 2 of the session 2026-11-29b (one H200). Pack aadadf0 (84a44fe's kernels) is
# `base`. Variants: `bal` (the working tree: a lanes launch from layer 1 splits the input's
# rows over all its warps by weighted nonzeros, plan::LANES_ROW_WEIGHT = 48, instead of 32
# rows a warp from a queue; circulant chunks stop at the warp's rows); `ent` (bal, and the
# layer-1 entries table, 8 KB, staged in each block's shared memory: the scatter's entry
# loads were ~8.6 L1 tag requests each, L1/TEX 71 % busy, call 1); `tracebal` (bal with
# call 1's stamps).
# Prediction (bal): the slowest warp ~67 000 -> ~51 000 cycles (7400 fixed + 4 chunks of
# ~3700 + ~3000 nonzeros at ~9.5 cycles), the lanes launch ~36 -> ~28 us (ncu), 1024-120
# ~0.076 -> ~0.068 ms on this loan's level. (ent): the scatter's ~9.5 cycles a nonzero on a
# full SM -> ~7-8, lanes launch a further ~2-4 us.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants bal ent tracebal
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-base-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-bal-$i $W/spdnn-bal $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-ent-$i $W/spdnn-ent $OFF120 --warmup 3 --repetitions 30
done
timeout 120 $W/spdnn-tracebal infer --method blockdepend $OFF120 --warmup 1 --repetitions 1 > $R/trace.out 2> $R/trace.err
el "trace rc=$? lines $(grep -c '^L ' $R/trace.out)"
for v in base bal ent base bal ent; do
  bin=$W/spdnn-$v; [ $v = base ] && bin=$W/bin/spdnn
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain --launch-count 2 --section SpeedOfLight \
    $bin infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-dur-$v.log 2>&1
  el "ncu $v: $(grep -E 'Duration|L1/TEX Cache' $R/ncu-dur-$v.log | tr -s ' ' | tr '\n' ' ')"
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
