#!/usr/bin/env bash
# NOTE after the call: the kernels are embedded in the binary (include_str!), so SPDNN_KERNELS_CU
# did not swap them: the "stager" runs here ran the base kernels. Only the base numbers stand;
# call 2 repeats the check with variant binaries.
# Device call 1 of the session 2026-11-28e (one H200), pack of bdfe4c8 (HEAD 26dd78f: docs only
# since). Question: why a layer of the official 1024's warps launch (9/7-120) takes ~2800 cycles
# where its one-row sums are ~300 instructions. The SASS shows that issuing a stage's bulk copy
# (thread 0, warp 0: also the busy warp when a tile has 1-4 rows, since rows go to warps 0-3)
# compiles to MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S before the arrive, even with the proxy fence
# and the release semantics taken out; 2026-11-28c call 6's stamps put thread 0's "wait" at
# ~700-770 cycles every layer, the same at layer 9 (whose copy was issued before the loop).
# Variants (kernels-cu folders, the same binary): stager = the stages issued by warp 15's lane 0
# (no rows until a tile holds more than 60) and no explicit proxy fence; trace and trace-stager
# = thread 0 stamps clock64 after the barrier, after the stage issue, after the slot's wait,
# after its warp's sums and after its layer (trace.py).
# Prediction: if the ~730 cycles are the busy warp's MEMBAR, stager cuts ~700 cycles from each of
# ~21 layers: the warps launch ~31 -> ~24 us and the official 1024-120 ~0.102 -> ~0.095 ms. If
# they are the copy's latency, stager changes nothing and trace-stager's wait stays ~700.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
OFF1920="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 1920 --mnist --truth $W/data/sdgc/neuron1024-l1920-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-base$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  SPDNN_KERNELS_CU=$PWD/.device/kcu-stager bd 1024-120-stager$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
done
python3 .device/launches.py $R 'bd-1024-*.json' 2>&1 | tee $R/launches.md
for v in trace trace-stager; do
  SPDNN_KERNELS_CU=$PWD/.device/kcu-$v timeout 60 $W/bin/spdnn infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/$v.txt 2> $R/$v.err
  el "$v rc=$? $(grep -c '^L ' $R/$v.txt) layer lines"
  python3 .device/trace.py $R/$v.txt > $R/$v-summary.txt 2>&1; head -12 $R/$v-summary.txt
done
for v in base stager; do
  K=$PWD/kernels-cu; [ $v = stager ] && K=$PWD/.device/kcu-stager
  SPDNN_KERNELS_CU=$K timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 8 \
    --metrics gpu__time_duration.sum --csv $W/bin/spdnn infer --method blockdepend $OFF --warmup 1 --repetitions 3 > $R/ncu-$v.csv 2> $R/ncu-$v.err
  el "ncu $v rc=$? $(grep gpu__time_duration $R/ncu-$v.csv | awk -F'","' '{printf "%s:%s ", $5, $NF}' | tr -d '"' | sed 's/bd_chain_//g')"
done
bd 1024-1920-base $W/bin/spdnn $OFF1920 --warmup 3 --repetitions 30
SPDNN_KERNELS_CU=$PWD/.device/kcu-stager bd 1024-1920-stager $W/bin/spdnn $OFF1920 --warmup 3 --repetitions 30
tar -C $OUT -czf $OUT/runs.tar.gz r; cp $R/*summary.txt $R/launches.md $OUT/ 2>/dev/null; rm -rf $R
