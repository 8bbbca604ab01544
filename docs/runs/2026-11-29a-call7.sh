#!/usr/bin/env bash
# Device call 7 of the session 2026-11-29a (one H200). Pack: 84a44fe's kernel (the pack of calls
# 5-6: every crate). Variant prodwait: the waiter of call 3 (lane 0 of the last warp waits on
# each stage's mbarrier a layer ahead) and the same thread issuing the stages (with thread 0
# issuing them, warp 0 - which holds a tile's first rows, so the last row of a one-row tile -
# runs the fence and the bulk copy's issue before its own layer: ~675 cycles of warp 0's slot
# wait against ~210 when it staged after its layer, 2026-11-28j call 7).
# Prediction: if warp 0's staging is on the one-row layers' path, the warps launch 25.8-27.5 ->
# ~23-24 us (ncu, clocks free); if not, no change (as the waiter alone in call 3 and the
# producer alone in 2026-11-28j call 2).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
variants prodwait
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in head prodwait head prodwait; do
  bin=$W/bin/spdnn; [ $v = prodwait ] && bin=$W/spdnn-prodwait
  timeout 150 ncu --clock-control none -o $R/k-$v --kernel-name regex:bd_chain_warps --launch-count 1 --section SpeedOfLight \
    $bin infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-$v.log 2>&1
  ncu -i $R/k-$v.ncu-rep > $R/ncu-$v.txt 2>&1; rm -f $R/k-$v.ncu-rep
  el "ncu $v: $(grep -E 'Duration' $R/ncu-$v.txt | tr -s ' ' | tr '\n' ' ')"
done
for i in 1 2 3; do
  bd 1024-120-head-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-prodwait-$i $W/spdnn-prodwait $OFF120 --warmup 3 --repetitions 30
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
