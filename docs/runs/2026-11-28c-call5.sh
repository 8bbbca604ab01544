#!/usr/bin/env bash
# Device call 5 of the session 2026-11-28c (one H100). Call 4's trace (c4871cb): a layer's
# stage wait ~90 cycles (the copies land in time: 4 slots changed nothing, 0.123-0.127 against
# 0.119-0.128 ms), the barrier ~140, and one warp's sums and epilogue ~3500 cycles at 4 rows
# and ~2100 at 1 row of 64 x 64: a lone warp's issue, 154 instructions a four-input step of
# one row, half of them address arithmetic from the run-time weight stride. Now (this commit)
# the stride is 32 G at compile time: 73 instructions a step. Predicted: a one-row layer ~600
# cycles (the 64-FMA chain ~256, the epilogue, the barrier), four rows ~900; the warps launch
# 9-120 ~0.010-0.012 ms (from 0.033); official 1024-120 ~0.10 ms with the default cuts; cuts
# 4,6 (warps from layer 7, ~46 rows a block) compared. Full GPU tests, racecheck of the
# warps and official tests, ncu durations; 1024-480 and -1920.
. .device/preamble.sh
variants base
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" -A3 $R/tests-blockdepend.txt | cut -c1-600 | head -20
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-new$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-cuts46-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-cuts 4,6
  bd 1024-120-base$i $W/spdnn-base $OFF --warmup 3 --repetitions 30
done
for l in 480 1920; do
  net=$W/g1024-$l.bin
  timeout 90 $W/bin/spdnn generate --neurons 1024 --layers $l --seed 0 --cache $net > $R/gen1024-$l.log 2>&1
  bd 1024-$l-new $W/bin/spdnn --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30
  bd 1024-$l-base $W/spdnn-base --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30
  rm -f $net
done
python3 .device/launches.py $R 'bd-1024-*.json' 2>&1 | tee $R/launches.md
for c in default 4,6; do
  extra=""; [ $c != default ] && extra="--bd-cuts $c"
  timeout 100 ncu --clock-control none --kernel-name regex:bd_chain --launch-skip 6 --launch-count 6 \
    --metrics gpu__time_duration.sum --csv $W/bin/spdnn infer --method blockdepend $OFF $extra --warmup 1 --repetitions 1 > $R/ncu-$c.csv 2> $R/ncu-$c.err
  el "ncu $c rc=$? $(grep gpu__time_duration $R/ncu-$c.csv | awk -F'","' '{printf "%s ", $NF}' | tr -d '"')"
done
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool racecheck $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 official_1024_network narrow_dense_layers_run_a_row_a_warp > $R/racecheck.txt 2>&1
el "racecheck rc=$? $(grep -E 'SUMMARY|^test result' $R/racecheck.txt | tr '\n' ' ')"
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
