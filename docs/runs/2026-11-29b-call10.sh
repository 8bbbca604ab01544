#!/usr/bin/env bash
# Device call 10 of the session 2026-11-29b (one H200). Pack e475dcf (`new`: the folded layer
# 1). Variant `fold16`: the fold's scatter in batches of 16 nonzeros a lane instead of 8 (no
# entries to hold: 128 registers, no spill, offline). ncu of both launches and events,
# interleaved; the engine GPU tests one at a time (call 9 ran them two at a time: both fill
# the GPU's memory, and one failed for it).
# Prediction: a warp's scatter is a chain of batches (plan::LANES_SCATTER_BATCH): 14 -> 7
# batches, the lanes launch ~31 -> ~28-29 us.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants fold16
f=$(ls $W/tests/ | grep -E "^spdnn-engine--" | head -1)
timeout 120 $W/tests/$f --include-ignored --test-threads=1 > $R/tests-engine.txt 2>&1
el "engine GPU tests ($f, one at a time) rc=$? $(grep -E '^test result' $R/tests-engine.txt | tail -1)"
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-new-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-fold16-$i $W/spdnn-fold16 $OFF120 --warmup 3 --repetitions 30
done
M=gpu__time_duration.sum,sm__inst_executed.sum
for i in 1 2 3; do for v in new fold16; do
  bin=$W/spdnn-$v; [ $v = new ] && bin=$W/bin/spdnn
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain_lanes --launch-count 1 --metrics $M \
    $bin infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-m-$v-$i.log 2>&1
  el "ncu $v: $(grep -E '^\s+(gpu__time|sm__inst)' $R/ncu-m-$v-$i.log | tr -s ' ' | tr '\n' ';')"
done; done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
