#!/usr/bin/env bash
# Device call 8 of the session 2026-11-28e (one H200), pack of f79e7e5: the lanes' layer-1
# scatter in batches of 8 (plan::LANES_SCATTER_BATCH), the lanes kernel for 4 blocks an SM.
# The GPU tests of the three crates; memcheck, racecheck and synccheck of the lanes test at
# sanitize scale; then the official 1024-120 three times and the generated 1024-480 / -1920,
# each against the same binary with the scatter as before is not possible in one pack, so
# against call 7's base numbers (0.096-0.099 ms).
# Predicted: all pass, clean; official 1024-120 ~0.091-0.093 ms (call 7's sb), 1812 categories.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
timeout 60 $W/tests/spdnn-cuda--gpu --include-ignored --test-threads=2 > $R/tests-cuda.txt 2>&1
el "cuda GPU tests rc=$? $(grep -E '^test result' $R/tests-cuda.txt)"
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" -A5 $R/tests-blockdepend.txt | cut -c1-600 | head -20
PROPTEST_CASES=8 timeout 60 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
for tool in memcheck racecheck synccheck; do
  extra=""; [ $tool = synccheck ] && extra="--num-cuda-barriers 4096"
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 100 compute-sanitizer --tool $tool $extra $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 narrow_networks_run_a_row_a_lane > $R/$tool.txt 2>&1
  el "$tool rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool.txt | tr '\n' ' ')"
done
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do bd 1024-120-$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30; done
for l in 480 1920; do
  net=$W/g1024-$l.bin
  timeout 90 $W/bin/spdnn generate --neurons 1024 --layers $l --seed 0 --cache $net > $R/gen1024-$l.log 2>&1
  bd 1024-$l $W/bin/spdnn --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30
done
python3 .device/launches.py $R 'bd-*.json' | tee $R/launches.md
timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 8 \
  --metrics gpu__time_duration.sum --csv $W/bin/spdnn infer --method blockdepend $OFF --warmup 1 --repetitions 3 > $R/ncu.csv 2> $R/ncu.err
el "ncu rc=$? $(grep gpu__time_duration $R/ncu.csv | awk -F'","' '{printf "%s:%s ", $5, $NF}' | tr -d '"' | sed 's/bd_chain_//g')"
tar -C $OUT -czf $OUT/runs.tar.gz r; cp $R/launches.md $OUT/; rm -rf $R
