#!/usr/bin/env bash
# Device call 7 of the session 2026-11-28e (one H200), pack of bdfe4c8. Call 6: launch 1 (a row a
# lane, layers 1-6) takes 55.9 us on 60000 rows, 54.6 on 30000 and 49-54 on 15000 (3.5 warps of
# rows an SM): one warp's chain sets it, not the SM's issue (52 % issue-active at 60000). Of that
# chain the scatter is 27 batches of 4 nonzeros a lane, each batch's columns loaded one batch
# ahead: ~27 dependent DRAM round trips. The L2 prefetch of the warps launch's weights changed
# nothing (33.6-34.0 us against 32.0-34.8).
# Variants: sb = the lanes' scatter in batches of 8 (13-14 round trips), the lanes kernel bound to
# 4 blocks an SM (128 registers; 2112 warps on 132 SMs still hold 1875 in one round);
# sb16 = batches of 16 (64 bytes of spills).
# Prediction: if the round trips are ~0.7 us each, sb takes launch 1 ~56 -> ~46 us and the
# official 1024-120 ~0.095 -> ~0.085 ms; sb16 a further ~4 us unless its spills cost it.
. .device/preamble.sh
variants sb sb16
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in sb sb16; do timeout 100 $W/spdnn-$v infer --method blockdepend $OFF --warmup 0 --repetitions 1 > /dev/null 2>&1; done
for i in 1 2 3; do
  bd 1024-120-base$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-sb$i $W/spdnn-sb $OFF --warmup 3 --repetitions 30
  bd 1024-120-sb16-$i $W/spdnn-sb16 $OFF --warmup 3 --repetitions 30
done
python3 .device/launches.py $R 'bd-1024-*.json' 2>&1 | tee $R/launches.md
for v in base sb sb16; do
  bin=$W/bin/spdnn; [ $v != base ] && bin=$W/spdnn-$v
  timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 8 \
    --metrics gpu__time_duration.sum --csv $bin infer --method blockdepend $OFF --warmup 1 --repetitions 3 > $R/ncu-$v.csv 2> $R/ncu-$v.err
  el "ncu $v rc=$? $(grep gpu__time_duration $R/ncu-$v.csv | awk -F'","' '{printf "%s:%s ", $5, $NF}' | tr -d '"' | sed 's/bd_chain_//g')"
done
tar -C $OUT -czf $OUT/runs.tar.gz r; cp $R/launches.md $OUT/ 2>/dev/null; rm -rf $R
