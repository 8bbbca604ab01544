#!/usr/bin/env bash
# Device call 2 of the session 2026-11-28b (one H100): 4476900 stages each tail layer one ahead
# in shared memory (descriptor, biases, dense weights; cp.async into the tiles' free rows).
# Call 1's trace of d8b7c5e, a 1-row tile of launch 4 (cycles a layer): descriptor 631, items
# 3789 (four weight round trips and the biases' after the sums), barrier 2, retirement 945;
# 6-row tiles of launch 3: items 8428. Floor of a staged 1-row layer: 64 dependent FMAs
# (~260 cycles) plus the shared loads, ~500 for the items, then ~950 retirement and a
# barrier: ~1700 a layer.
# Predicted: launch 4 0.027 -> ~0.012 ms, launch 3 0.032 -> ~0.012-0.015, launch 2 0.021 ->
# ~0.015; official 1024-120 0.155 -> ~0.115 ms; other shapes unchanged (their instances
# compile to the same instructions). Exact: same sums in the same order.
. .device/preamble.sh
variants base
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" $R/tests-blockdepend.txt | head -20
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2; do
  bd 1024-120-new$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-base$i $W/spdnn-base $OFF --warmup 3 --repetitions 30
done
python3 .device/launches.py $R 'bd-1024-120-*.json' 2>&1 | tee $R/launches.md
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool racecheck $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 official_1024_network > $R/racecheck.txt 2>&1
el "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|^test result' $R/racecheck.txt | tr '\n' ' ')"
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool memcheck $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 official_1024_network > $R/memcheck.txt 2>&1
el "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^test result' $R/memcheck.txt | tr '\n' ' ')"
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
