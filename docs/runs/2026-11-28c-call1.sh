#!/usr/bin/env bash
# Device call 1 of the session 2026-11-28c (one H100): bd_chain_warps (a row a warp, the
# layers' dense weights staged two ahead by bulk copies) for the launches after the first of
# narrow dense layers; by default the official 1024's layers 9-16 and 17-120 run as one such
# launch. GPU tests of blockdepend (with the new test and two new variants) and the CLI,
# racecheck / synccheck / memcheck of the new test and the official test, then the official
# 1024-120 against the landing binary (base, 3f2f580) interleaved, 1024-480 / -1920, cuts
# 4,6 (warps from layer 7) and ncu durations.
# Floor of the part replaced: layers 9-27 of 2127 -> 2 rows, 64 x 64 dense: ~19 layers of
# latency. Predicted: one layer of a 16-warp block with 1-2 rows a warp ~500-800 cycles (64
# dependent FMAs from shared memory, one barrier, two ballots), ~0.3-0.45 us; launch 3
# (9-120) ~0.010-0.015 ms against base launches 3 + 4 = 0.032 + 0.027; official 1024-120
# 0.155 -> ~0.11 ms. Cuts 4,6: launch 2 (5-6, 12005 rows) shorter, launch 3 starts with ~6000
# rows (3 a warp): predicted within +-5 us of the default.
. .device/preamble.sh
variants base
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" $R/tests-blockdepend.txt | head -20
PROPTEST_CASES=8 timeout 120 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
grep -E "FAILED|panicked" $R/tests-cli.txt | head -20
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-new$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-base$i $W/spdnn-base $OFF --warmup 3 --repetitions 30
done
for i in 1 2; do
  bd 1024-120-cuts46-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-cuts 4,6
done
bd 1024-120-newshared $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-placement shared
for l in 480 1920; do
  net=$W/g1024-$l.bin
  timeout 90 $W/bin/spdnn generate --neurons 1024 --layers $l --seed 0 --cache $net > $R/gen1024-$l.log 2>&1
  bd 1024-$l-new $W/bin/spdnn --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30
  bd 1024-$l-base $W/spdnn-base --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30
  rm -f $net
done
python3 .device/launches.py $R 'bd-1024-*.json' 2>&1 | tee $R/launches.md
timeout 100 ncu --clock-control none --kernel-name regex:bd_chain --launch-skip 6 --launch-count 6 \
  --metrics gpu__time_duration.sum --csv $W/bin/spdnn infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/ncu-new.csv 2> $R/ncu-new.err
el "ncu new rc=$? $(grep gpu__time_duration $R/ncu-new.csv | awk -F'","' '{printf "%s ", $NF}' | tr -d '"')"
for tool in racecheck synccheck memcheck; do
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool $tool $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 official_1024_network narrow_dense_layers_run_a_row_a_warp > $R/$tool.txt 2>&1
  el "$tool rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool.txt | tr '\n' ' ')"
done
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
