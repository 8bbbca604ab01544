#!/usr/bin/env bash
# Device call 8 of the session 2026-11-28c (one H100): the landing kernel (bfc220d; later
# commits change docs only). The CLI's GPU tests, memcheck and synccheck of the warps and
# official tests (blockdepend's whole GPU suite and racecheck ran on bfc220d in call 5), the
# three N = 1024 depths against the base (3f2f580) in the same call for the table, and
# 4096-120, whose plan has no warps launch (its layers are ELL): expected as before (~0.33 ms).
# Predicted from calls 2-7: 1024-120 ~0.12-0.13 ms against base ~0.14-0.16; 480 and 1920
# the same within the spread (rows are done by layer 27 at every depth).
. .device/preamble.sh
variants base
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
PROPTEST_CASES=8 timeout 120 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
for tool in synccheck memcheck; do
  extra=""; [ $tool = synccheck ] && extra="--num-cuda-barriers 4096"
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool $tool $extra $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 official_1024_network narrow_dense_layers_run_a_row_a_warp > $R/$tool.txt 2>&1
  el "$tool rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool.txt | tr '\n' ' ')"
done
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-new$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-base$i $W/spdnn-base $OFF --warmup 3 --repetitions 30
done
for l in 480 1920; do
  net=$W/g1024-$l.bin
  timeout 90 $W/bin/spdnn generate --neurons 1024 --layers $l --seed 0 --cache $net > $R/gen1024-$l.log 2>&1
  for i in 1 2; do
    bd 1024-$l-new$i $W/bin/spdnn --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30
    bd 1024-$l-base$i $W/spdnn-base --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30
  done
  rm -f $net
done
net=$W/g4096.bin
timeout 120 $W/bin/spdnn generate --neurons 4096 --layers 120 --seed 0 --cache $net > $R/gen4096.log 2>&1
bd 4096-120-new $W/bin/spdnn --weights $net --neurons 4096 --layers 120 --mnist --warmup 3 --repetitions 30
bd 4096-120-base $W/spdnn-base --weights $net --neurons 4096 --layers 120 --mnist --warmup 3 --repetitions 30
rm -f $net
python3 .device/launches.py $R 'bd-*.json' 2>&1 | tee $R/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
