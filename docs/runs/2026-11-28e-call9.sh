#!/usr/bin/env bash
# Device call 9 of the session 2026-11-28e (one H200), pack of f79e7e5 (lanes scatter batches of
# 8; call 8: official 1024-120 0.085-0.089 ms, ncu launch 1 48.8-50.5 us).
# Variant pf: each lanes warp first requests every 128-byte line of its rows' nonzeros into L2
# (prefetch.global.L2, ~3-4 a lane), so that its ~14 batches wait on L2 instead of DRAM.
# Prediction: each batch's round trip ~1 us -> ~0.4 us: launch 1 ~49 -> ~42 us, the official
# 1024-120 ~0.086 -> ~0.080 ms. If the batches are bound by their instructions, nothing.
. .device/preamble.sh
variants pf
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 100 $W/spdnn-pf infer --method blockdepend $OFF --warmup 0 --repetitions 1 > /dev/null 2>&1
for i in 1 2 3; do
  bd 1024-120-base$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-pf$i $W/spdnn-pf $OFF --warmup 3 --repetitions 30
done
python3 .device/launches.py $R 'bd-1024-*.json' 2>&1 | tee $R/launches.md
for v in base pf; do
  bin=$W/bin/spdnn; [ $v != base ] && bin=$W/spdnn-$v
  timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 8 \
    --metrics gpu__time_duration.sum --csv $bin infer --method blockdepend $OFF --warmup 1 --repetitions 3 > $R/ncu-$v.csv 2> $R/ncu-$v.err
  el "ncu $v rc=$? $(grep gpu__time_duration $R/ncu-$v.csv | awk -F'","' '{printf "%s:%s ", $5, $NF}' | tr -d '"' | sed 's/bd_chain_//g')"
done
tar -C $OUT -czf $OUT/runs.tar.gz r; cp $R/launches.md $OUT/ 2>/dev/null; rm -rf $R
