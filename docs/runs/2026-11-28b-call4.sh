#!/usr/bin/env bash
# Device call 4 of the session 2026-11-28b (one H100): the staged tail (4476900) against
# d8b7c5e, kernel by kernel. Call 3's trace put a staged 1-row layer at ~3900 cycles (5500
# before), yet the stages' events gave launch 4 0.027 ms either way. ncu with the clocks
# left alone: each bd_chain_shared launch's duration and elapsed cycles (the three tail
# launches, after 2 warm-up runs), both binaries.
. .device/preamble.sh
variants base
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in new base; do
  bin=$W/bin/spdnn; [ $v = base ] && bin=$W/spdnn-base
  timeout 200 ncu --clock-control none --kernel-name regex:bd_chain --launch-skip 8 --launch-count 8 \
    --metrics gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__cycles_active.max --csv \
    $bin infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/ncu-$v.csv 2> $R/ncu-$v.err
  el "ncu $v rc=$?"
  grep -E "gpu__time_duration|sm__cycles_elapsed" $R/ncu-$v.csv | awk -F'","' '{print $5, $(NF-3), $(NF-1), $NF}' | cut -c1-160
done
for i in 1 2; do
  bd 1024-120-new$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-base$i $W/spdnn-base $OFF --warmup 3 --repetitions 30
done
python3 .device/launches.py $R 'bd-1024-120-*.json' 2>&1 | tee $R/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
