#!/usr/bin/env bash
# Device call 4 of the session 2026-11-28e (one H200), pack of bdfe4c8. Call 3's stamps (trace2,
# thread 0, median cycles): a layer where thread 0's warp sums one row takes 3162 cycles: the
# stage issue and slot wait ~705, the sums 1431 (~290 instructions: each FFMA waits on the LDS
# issued a few instructions before), the epilogue ~584, the barrier ~344; with 4 rows the sums
# are 1714-2500. The wait is ~690 even when thread 0's warp has no row.
# Variants (binaries, blockdepend.cu patched):
#   pipe  = the sums of one row of two groups (the official 1024's one-row layers) with the loads
#           three steps (12 inputs) ahead in registers (only that instance: others spilled);
#   early = pipe + warp 15's lane 0 issues the stages and waits for the NEXT layer's slot before
#           it arrives at the layer's barrier, so no other warp waits on an mbarrier;
#   trace-early = early with call 3's stamps.
# Prediction: pipe takes a one-row layer's sums 1431 -> ~500 cycles: ~12 such layers of the
# longest block, the warps launch 33 -> ~27 us. early takes the ~700 wait off every layer if it
# is the mbarrier's own latency (then the warps launch ~27 -> ~20 us); if it is the copy's
# latency, early changes nothing.
. .device/preamble.sh
variants pipe early trace-early
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 100 $W/spdnn-trace-early infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/trace-early.txt 2> $R/trace-early.err
el "trace-early rc=$? $(grep -c '^L ' $R/trace-early.txt) layer lines"
python3 .device/trace.py $R/trace-early.txt > $R/trace-early-summary.txt 2>&1; head -8 $R/trace-early-summary.txt
for v in pipe early; do timeout 100 $W/spdnn-$v infer --method blockdepend $OFF --warmup 0 --repetitions 1 > /dev/null 2>&1; done
for i in 1 2 3; do
  bd 1024-120-base$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-pipe$i $W/spdnn-pipe $OFF --warmup 3 --repetitions 30
  bd 1024-120-early$i $W/spdnn-early $OFF --warmup 3 --repetitions 30
done
python3 .device/launches.py $R 'bd-1024-*.json' 2>&1 | tee $R/launches.md
for v in base pipe early; do
  bin=$W/bin/spdnn; [ $v != base ] && bin=$W/spdnn-$v
  timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 8 \
    --metrics gpu__time_duration.sum --csv $bin infer --method blockdepend $OFF --warmup 1 --repetitions 3 > $R/ncu-$v.csv 2> $R/ncu-$v.err
  el "ncu $v rc=$? $(grep gpu__time_duration $R/ncu-$v.csv | awk -F'","' '{printf "%s:%s ", $5, $NF}' | tr -d '"' | sed 's/bd_chain_//g')"
done
tar -C $OUT -czf $OUT/runs.tar.gz r; cp $R/*summary.txt $R/launches.md $OUT/ 2>/dev/null; rm -rf $R
