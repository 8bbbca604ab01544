#!/usr/bin/env bash
# Device call 5 of the session 2026-11-28e (one H200), pack of bdfe4c8. Call 4: pipe (loads three
# steps ahead for one-row sums) made those sums slower (2670 cycles against 1431) and the warps
# launch 39.4-40.3 us against 32.3-33.8; early (warp 15 waits for the next slot before the
# barrier) took thread 0's wait from ~705 to ~184 cycles but the barrier grew by the same: the
# slot's copy really lands ~700 cycles after a layer starts, though issued two layers (~6000
# cycles) before, and eight slots (2026-11-28c call 7) barely helped: one thread's bulk copies
# look throughput-bound (16 KB a layer in ~3000 cycles), not latency-bound.
# Variant async: every thread copies its 32 bytes of a stage with cp.async (16 bytes each), one
# commit group a stage; each thread waits for its own copies of a slot (wait_group) before the
# layer's barrier, which publishes them. No mbarrier, no bulk copy.
# Prediction: the ~700-cycle wait goes from every layer: the warps launch ~33 -> ~26 us, the
# official 1024-120 ~0.094 -> ~0.087 ms. If the copies are DRAM latency instead, nothing changes.
. .device/preamble.sh
variants async
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 100 $W/spdnn-async infer --method blockdepend $OFF --warmup 0 --repetitions 1 > /dev/null 2>&1
for i in 1 2 3; do
  bd 1024-120-base$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-async$i $W/spdnn-async $OFF --warmup 3 --repetitions 30
done
python3 .device/launches.py $R 'bd-1024-*.json' 2>&1 | tee $R/launches.md
for v in base async; do
  bin=$W/bin/spdnn; [ $v != base ] && bin=$W/spdnn-$v
  timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 8 \
    --metrics gpu__time_duration.sum --csv $bin infer --method blockdepend $OFF --warmup 1 --repetitions 3 > $R/ncu-$v.csv 2> $R/ncu-$v.err
  el "ncu $v rc=$? $(grep gpu__time_duration $R/ncu-$v.csv | awk -F'","' '{printf "%s:%s ", $5, $NF}' | tr -d '"' | sed 's/bd_chain_//g')"
done
tar -C $OUT -czf $OUT/runs.tar.gz r; cp $R/launches.md $OUT/ 2>/dev/null; rm -rf $R
