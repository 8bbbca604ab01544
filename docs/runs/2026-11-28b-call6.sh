#!/usr/bin/env bash
# Device call 6 of the session 2026-11-28b (one H100): the final kernels (93416e0: tail
# tiles of at most 8 rows staged with bulk copies; launch 2's 31-row tiles as d8b7c5e).
# Predicted against d8b7c5e in the same call: launch 2 as d8b7c5e (~0.020 ms), launch 3
# ~0.0295 (0.031), launch 4 ~0.022 (0.026); 1024-120 about 5 us less than d8b7c5e, within the
# spread of launch 1 (0.072-0.095 ms in call 5 for the same code). Exact. GPU tests of
# blockdepend and the CLI, racecheck and memcheck of the official and narrow tests, 1024-480
# and -1920 (generated, seed 0) both binaries.
. .device/preamble.sh
variants base
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" $R/tests-blockdepend.txt | head -20
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
grep -E "FAILED|panicked" $R/tests-cli.txt | head -20
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-new$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
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
for v in new base; do
  bin=$W/bin/spdnn; [ $v = base ] && bin=$W/spdnn-base
  timeout 200 ncu --clock-control none --kernel-name regex:bd_chain --launch-skip 8 --launch-count 8 \
    --metrics gpu__time_duration.sum --csv $bin infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/ncu-$v.csv 2> $R/ncu-$v.err
  el "ncu $v rc=$? $(grep gpu__time_duration $R/ncu-$v.csv | awk -F'","' '{printf "%s ", $NF}' | tr -d '"')"
done
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool racecheck $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 official_1024_network narrow_networks_run_a_row_a_lane > $R/racecheck.txt 2>&1
el "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|^test result' $R/racecheck.txt | tr '\n' ' ')"
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool memcheck $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 official_1024_network narrow_networks_run_a_row_a_lane > $R/memcheck.txt 2>&1
el "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^test result' $R/memcheck.txt | tr '\n' ' ')"
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
