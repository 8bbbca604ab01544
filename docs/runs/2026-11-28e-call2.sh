#!/usr/bin/env bash
# Device call 2 of the session 2026-11-28e (one H200), pack of bdfe4c8 (HEAD 26dd78f: docs only
# since). Call 1 meant to run kernel variants through SPDNN_KERNELS_CU, but the kernels are
# embedded in the binary (include_str!), so its "stager" runs were the base kernels again (its
# base numbers stand: official 1024-120 0.092-0.096 ms; ncu lanes 56 us, warps 32.5-34.5 us).
# Here the variants are binaries (spdnn-V: the pack's code with blockdepend.cu patched).
# Question: why a layer of the warps launch (7-120) takes ~2800 cycles where its one-row sums
# are ~300 instructions. The SASS shows that issuing a stage's bulk copy (thread 0, warp 0: also
# the busy warp when a tile has 1-4 rows) compiles to MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S before
# the arrive; 2026-11-28c call 6's stamps put thread 0's "wait" at ~700-770 cycles every layer.
# stager = the stages issued by warp 15's lane 0 and no explicit proxy fence; trace and
# trace-stager = thread 0 stamps clock64 after the barrier, after the stage issue, after the
# slot's wait, after its warp's sums, after its layer (trace.py).
# Prediction: if the ~730 cycles are the busy warp's MEMBAR, stager cuts ~700 cycles from each of
# ~21 layers: the warps launch ~33 -> ~26 us, the official 1024-120 ~0.094 -> ~0.087 ms. If they
# are the copy's latency, stager changes nothing and trace-stager's wait stays ~700.
. .device/preamble.sh
variants stager trace trace-stager
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in trace trace-stager; do
  timeout 100 $W/spdnn-$v infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/$v.txt 2> $R/$v.err
  el "$v rc=$? $(grep -c '^L ' $R/$v.txt) layer lines $(grep compile $R/$v.txt)"
  python3 .device/trace.py $R/$v.txt > $R/$v-summary.txt 2>&1; head -12 $R/$v-summary.txt
done
for i in 1 2 3; do
  bd 1024-120-base$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-stager$i $W/spdnn-stager $OFF --warmup 3 --repetitions 30
done
python3 .device/launches.py $R 'bd-1024-*.json' 2>&1 | tee $R/launches.md
for v in base stager; do
  bin=$W/bin/spdnn; [ $v = stager ] && bin=$W/spdnn-stager
  timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 8 \
    --metrics gpu__time_duration.sum --csv $bin infer --method blockdepend $OFF --warmup 1 --repetitions 3 > $R/ncu-$v.csv 2> $R/ncu-$v.err
  el "ncu $v rc=$? $(grep gpu__time_duration $R/ncu-$v.csv | awk -F'","' '{printf "%s:%s ", $5, $NF}' | tr -d '"' | sed 's/bd_chain_//g')"
done
tar -C $OUT -czf $OUT/runs.tar.gz r; cp $R/*summary.txt $R/launches.md $OUT/ 2>/dev/null; rm -rf $R
