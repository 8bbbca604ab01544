#!/usr/bin/env bash
# Device call 5 of the session 2026-11-28b (one H100): 9fc267e stages a tail layer with one
# thread's bulk copies (TMA, an mbarrier a slot) instead of every thread's cp.async, whose
# issue took a 1-row tile's thread 0 ~1100 of ~3900 cycles a layer (call 3).
# Predicted: a 1-row layer ~2600 cycles; launch 4 0.026 -> ~0.018 ms, launch 3 0.029-0.032 ->
# ~0.022, launch 2 as d8b7c5e (~0.021); official 1024-120 ~0.12 ms against d8b7c5e's ~0.14 in
# the same call. Exact (the same sums in the same order); GPU tests and both sanitizers.
. .device/preamble.sh
variants base
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" $R/tests-blockdepend.txt | head -20
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-new$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-base$i $W/spdnn-base $OFF --warmup 3 --repetitions 30
done
python3 .device/launches.py $R 'bd-1024-120-*.json' 2>&1 | tee $R/launches.md
for v in new base; do
  bin=$W/bin/spdnn; [ $v = base ] && bin=$W/spdnn-base
  timeout 200 ncu --clock-control none --kernel-name regex:bd_chain --launch-skip 8 --launch-count 8 \
    --metrics gpu__time_duration.sum --csv $bin infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/ncu-$v.csv 2> $R/ncu-$v.err
  el "ncu $v rc=$? $(grep gpu__time_duration $R/ncu-$v.csv | awk -F'","' '{printf "%s ", $NF}' | tr -d '"')"
done
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool racecheck $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 official_1024_network > $R/racecheck.txt 2>&1
el "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|^test result' $R/racecheck.txt | tr '\n' ' ')"
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool memcheck $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 official_1024_network > $R/memcheck.txt 2>&1
el "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^test result' $R/memcheck.txt | tr '\n' ' ')"
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
