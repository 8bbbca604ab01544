#!/usr/bin/env bash
# Device call 9 of the session 2026-11-29b (one H200). Pack e475dcf: the lanes fold layer 1
# when its rows repeat with the period of its outputs (the official 1024's do: output c =
# bins[c] + bins[c + 1]), one shared atomic a nonzero and no entry load. Variant `head`:
# 2911fe9's kernel (84a44fe's code). The blockdepend, CLI, cuda and engine GPU tests;
# memcheck and racecheck of the lanes test (the challenge network folds there, bit for bit
# against the tiles), generated_challenge_networks and memcheck of circulant_items; the
# lanes launch under ncu and the official 1024-120 by events, head and new interleaved.
# Prediction: tests and sanitizers pass; the lanes launch ~37 -> ~29-30 us (call 8's
# timing-only fold 28.6-29.2, plus the fold's outputs: about one circulant layer's chunks);
# 1024-120 ~7-8 us less by events.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants head
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-head-$i $W/spdnn-head $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-new-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
done
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts.max,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum
for i in 1 2 3; do for v in head new; do
  bin=$W/spdnn-$v; [ $v = new ] && bin=$W/bin/spdnn
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain --launch-count 2 --metrics $M \
    $bin infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-m-$v-$i.log 2>&1
  el "ncu $v: $(grep -E '^\s+(gpu__time|sm__inst|l1tex__data_pipe_lsu_wavefronts_mem)' $R/ncu-m-$v-$i.log | tr -s ' ' | tr '\n' ';')"
done; done
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -12
for t in cli cuda engine; do
  f=$(ls $W/tests/ | grep -E "^spdnn-$t--" | head -1)
  PROPTEST_CASES=8 timeout 120 $W/tests/$f --include-ignored --test-threads=2 > $R/tests-$t.txt 2>&1
  el "$t GPU tests ($f) rc=$? $(grep -E '^test result' $R/tests-$t.txt | tail -1)"
done
for t in narrow_networks_run_a_row_a_lane generated_challenge_networks; do for tool in racecheck memcheck; do
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 $t > $R/$tool-$t.txt 2>&1
  el "$tool $t rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-$t.txt | tr '\n' ' ')"
done; done
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 circulant_items > $R/memcheck-circulant_items.txt 2>&1
el "memcheck circulant_items rc=$? $(grep -E 'SUMMARY|^test result' $R/memcheck-circulant_items.txt | tr '\n' ' ')"
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
