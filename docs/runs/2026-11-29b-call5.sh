#!/usr/bin/env bash
# Device call 5 of the session 2026-11-29b (one H200). Pack 9d44ade: the lanes' layer-1 sums
# with a gap of 16 floats before column 32 (plan::LANE_GAP), on 2911fe9's kernel (without
# the balanced split of calls 2-4, which did not move the launch). Variant `head`: 2911fe9's
# kernel (84a44fe's code). blockdepend's GPU tests; memcheck and racecheck of the lanes test,
# circulant_items and generated_challenge_networks; ncu of the lanes launch, head and new
# interleaved three times with the per-SM rollups of call 4; events interleaved.
# Prediction: tests and sanitizers pass; the atomics' wavefronts 1.73 M -> 1.24 M, the
# busiest SM's L1 wavefronts ~50 k -> ~46 k, the lanes launch ~36.5 -> ~35.5 us (call 3-4's
# gap on the balanced split: 35.6-36.4 against 36.4-37.3).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants head
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -12
for t in narrow_networks_run_a_row_a_lane circulant_items generated_challenge_networks; do for tool in racecheck memcheck; do
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 $t > $R/$tool-$t.txt 2>&1
  el "$tool $t rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-$t.txt | tr '\n' ' ')"
done; done
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-head-$i $W/spdnn-head $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-new-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
done
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,l1tex__data_pipe_lsu_wavefronts.avg,l1tex__data_pipe_lsu_wavefronts.max
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__inst_executed.sum
for i in 1 2 3; do for v in head new; do
  bin=$W/spdnn-$v; [ $v = new ] && bin=$W/bin/spdnn
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain_lanes --launch-count 1 --metrics $M \
    $bin infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-m-$v-$i.log 2>&1
  el "ncu $v: $(grep -E '^\s+(gpu__|sm__|l1tex__)' $R/ncu-m-$v-$i.log | tr -s ' ' | tr '\n' ';')"
done; done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
