#!/usr/bin/env bash
# Device call 8 of the session 2026-11-29a (one H200). Pack: 84a44fe's kernel (calls 5-7).
# Variants ch16, ch32: plan::LANES_CIRCULANT_CHUNK 16 and 32 instead of 8 (the rows a lanes
# warp sums at once in a circulant layer). Since 84a44fe compiles the layer for its groups,
# 16 and 32 rows spill nothing at 128 registers (offline registers; 32 spilled 72-80 bytes
# before): 2 or 1 chunk a layer instead of 4, each with more independent loads and fused
# multiply-adds in flight.
# Prediction: the lanes launch is one warp's chain of latencies, ~35 % of it the circulant
# layers; twice or four times the work between the chunks' __syncwarp: 36.7 -> ~33-35 us (ncu,
# clocks free) if the chunks' latency is what the chain waits on, no change if not.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
variants ch16 ch32
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in head ch16 ch32 head ch16 ch32; do
  bin=$W/bin/spdnn; [ $v != head ] && bin=$W/spdnn-$v
  timeout 150 ncu --clock-control none -o $R/k-$v --kernel-name regex:bd_chain_lanes --launch-count 1 --section SpeedOfLight \
    $bin infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-$v.log 2>&1
  ncu -i $R/k-$v.ncu-rep > $R/ncu-$v.txt 2>&1; rm -f $R/k-$v.ncu-rep
  el "ncu $v: $(grep -E 'Duration' $R/ncu-$v.txt | tr -s ' ' | tr '\n' ' ')"
done
for i in 1 2 3; do
  for v in head ch16 ch32; do
    bin=$W/bin/spdnn; [ $v != head ] && bin=$W/spdnn-$v
    bd 1024-120-$v-$i $bin $OFF120 --warmup 3 --repetitions 30
  done
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
