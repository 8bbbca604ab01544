#!/usr/bin/env bash
# Device call 3 of the session 2026-11-28e (one H200), pack of bdfe4c8. Call 2: stager (stages
# issued by warp 15 instead of the busy warp 0) changed nothing (ncu warps launch 32.3-32.5 us
# against 32.0-34.8); its trace builds could not run (their 5 KB of static shared memory broke
# the host's opt-in, which assumes at most 1680 bytes). trace2: 264 bytes of stamps, thread 0,
# the first 22 layers of each tile: after the barrier, after the slot's wait, after its warp's
# sums, after its layer. Question: of a one-row layer's ~2800 cycles, how many are the sums
# (~300 instructions), the epilogue, the wait and the barrier.
# Prediction (2026-11-28c call 6's stamps): wait ~700, layer ~1850, barrier ~230; if the sums
# are ~1500 of the 1850 they are latency-bound (LDS -> FFMA) and a prefetching loop is the lever.
. .device/preamble.sh
variants trace2
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 100 $W/spdnn-trace2 infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/trace2.txt 2> $R/trace2.err
el "trace2 rc=$? $(grep -c '^L ' $R/trace2.txt) layer lines"
tail -3 $R/trace2.err
python3 .device/trace.py $R/trace2.txt > $R/trace2-summary.txt 2>&1; cat $R/trace2-summary.txt
tar -C $OUT -czf $OUT/runs.tar.gz r; cp $R/*summary.txt $OUT/ 2>/dev/null; rm -rf $R
