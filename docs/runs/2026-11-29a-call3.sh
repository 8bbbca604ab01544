#!/usr/bin/env bash
# Device call 3 of the session 2026-11-29a (one H200). Pack: c451101 + the waiter
# (uncommitted; the pack's binary and tests): one thread (lane 0 of the last warp) waits on
# each stage's mbarrier a layer ahead, after its own warp's layer; warps with rows no longer
# wait. Variant head1: c451101's kernel.
# (1) The graph's cost outside its kernels (.device/micro/graph.cu, nvcc): call 2 measured
#     the two launches at 37.7 + 25.8 us (ncu, clocks free) against 74-81 us by events.
#     Predicted: a memset node + two kernels ~6-10 us over the kernels' 63 us when the host's
#     submission is not hidden, ~3-5 us when it is; PDL takes ~1-2 us off.
# (2) The waiter: call 2's trace put ~305 cycles a layer in the slot's wait of the one warp
#     with rows; predicted the warps launch -0.1 us a layer of ~21: 25.8 -> ~22-23 us (ncu),
#     if the stages land within a layer (if not, the waiter delays the barrier instead).
# (3) The waiter's kernel: blockdepend's GPU tests, racecheck/memcheck/synccheck of the warps
#     test (narrow_dense_layers_run_a_row_a_warp) at the sanitize scale.
# The microbenchmark is beside this script (2026-11-29a-call3/graph.cu), sent as .device/micro/graph.cu.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants head1
nvcc -O2 -arch=sm_90 -o $W/graph .device/micro/graph.cu > $R/micro-build.txt 2>&1; el "micro build rc=$?"
timeout 60 $W/graph > $R/micro.txt 2>&1; el "micro rc=$?"; cat $R/micro.txt
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-head1-$i $W/spdnn-head1 $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-waiter-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
done
for v in head1 waiter; do
  bin=$W/bin/spdnn; [ $v = head1 ] && bin=$W/spdnn-head1
  timeout 150 ncu --clock-control none -o $R/k-$v --kernel-name regex:bd_chain --launch-count 2 --section SpeedOfLight \
    $bin infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-$v.log 2>&1
  ncu -i $R/k-$v.ncu-rep > $R/ncu-$v.txt 2>&1; rm -f $R/k-$v.ncu-rep
  el "ncu $v: $(grep -E 'Duration' $R/ncu-$v.txt | tr -s ' ' | tr '\n' ' ')"
done
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -12
for tool in racecheck memcheck synccheck; do
  extra=""; [ $tool = synccheck ] && extra="--num-cuda-barriers 4096"
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool $tool $extra --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 narrow_dense_layers_run_a_row_a_warp > $R/$tool-warps.txt 2>&1
  el "$tool warps rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-warps.txt | tr '\n' ' ')"
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
