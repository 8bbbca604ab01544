#!/usr/bin/env bash
# Device call 8 of the session 2026-11-29d (one H200). Pack 9e4a547: 28347e8 with the warps
# launch's stages issued by lane 0 of the last warp and the rows' dispatch from one up
# (call 7's stg and asc). Only bd_chain_warps changed. Here the launches under ncu (12), the
# 1024 shapes of the table (three benches each), one bench call by call (--bd-no-graph) beside
# them, every GPU test of the pack and the warps tests' sanitizers.
# Prediction: the warps launch ~25 us (ncu median); the 1024 shapes within the machine's
# level (0.048-0.060 ms); tests and sanitizers pass.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
S=$W/bin/spdnn
timeout 60 ncu --clock-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 12 --metrics gpu__time_duration.sum,sm__inst_executed.sum \
  $S infer --method blockdepend $OFF --warmup 6 --repetitions 1 --bd-no-graph > $R/ncu-new.log 2>&1
el "ncu: $(grep -E 'bd_chain|gpu__time_duration' $R/ncu-new.log | awk '/bd_chain/{k=$1} /duration/{print k, $3}' | tr '\n' ';')"
for i in 1 2 3; do bd 1024-120-$i $S $OFF --warmup 3 --repetitions 30; done
for l in 480 1920; do
  net=$W/g1024-$l.bin
  timeout 90 $W/bin/spdnn generate --neurons 1024 --layers $l --seed 0 --cache $net > $R/gen1024-$l.log 2>&1
  for i in 1 2 3; do bd 1024-$l-$i $S --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30; done
  rm -f $net
done
bd 1024-120-calls $S $OFF --warmup 3 --repetitions 30 --bd-no-graph
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -20
for t in cli cuda engine; do f=$(ls $W/tests/ | grep -E "^spdnn-$t--" | head -1)
  PROPTEST_CASES=8 timeout 120 $W/tests/$f --include-ignored --test-threads=1 > $R/tests-$t.txt 2>&1
  el "$t GPU tests ($f) rc=$? $(grep -E '^test result' $R/tests-$t.txt | tail -1)"
done
for t in narrow_dense_layers_run_a_row_a_warp generated_challenge_networks; do for tool in memcheck racecheck; do
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 $t > $R/$tool-$t.txt 2>&1
  el "$tool $t rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-$t.txt | tr '\n' ' ')"
done; done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
