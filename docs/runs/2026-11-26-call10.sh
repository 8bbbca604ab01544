#!/usr/bin/env bash
# Device call 10 of 2026-11-26 (one H100), after the XY cache cap and `auto` as the default
# method: every GPU test executable (PROPTEST_CASES=8, four at a time) while 65536-1920 is
# generated; `spdnn infer` and `spdnn classify` with no method named (auto: what it chose);
# then issue 29's table at 65536-1920 (docs/runs/2026-11-26-memory.sh: blockdepend
# unconstrained and in 1 GiB, snicit unconstrained and in 8 GiB, then blockdepend 4 GiB and bf
# streamed in 4 GiB while time is left).
# Before: 65536-480 only (call 5): predicted = measured, blockdepend 1 GiB 1.28×, snicit
# 8 GiB 1.35×. Expected at 1920: the same ratios (the batches are bound by the rows' state,
# not by the layers: blockdepend's per-row state and snicit's two buffers do not grow with L;
# the layers' own bytes grow 4×, so snicit's 8 GiB leaves fewer rows a batch).
. .device/preamble.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > $R/gpu.txt; el "$(cat $R/gpu.txt)"
( TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 230 bash .device/run.sh tests > $R/tests-run.txt 2>&1
  echo "tests rc=$?" >> $R/tests-run.txt ) &
tests=$!
timeout 300 $W/bin/spdnn generate --neurons 65536 --layers 1920 --seed 0 --cache $W/n1920.bin > $R/generate.log 2>&1
el "generate rc=$? $(ls -l $W/n1920.bin 2>/dev/null | awk '{print $5}') bytes"
wait $tests
el "$(tail -1 $R/tests-run.txt)"; cat $OUT/tests-summary.txt; grep -hE "^test .*FAILED|panicked at" $OUT/tests.log | head -20
cp $OUT/tests-summary.txt $R/
# The default method: auto on the official 1024-120 and on net A.
$W/bin/spdnn infer --layers 120 --weights $W/data/sdgc/neuron1024.tar.gz --mnist \
  --truth $W/data/sdgc/neuron1024-l120-categories.tsv > $R/infer-default.txt 2>&1
el "infer (no --method) rc=$?"; grep -E "^method|chose|matched" $R/infer-default.txt | cut -c1-200
$W/bin/spdnn classify --network $W/data/nets/A.safetensors --mnist-test > $R/classify-default.txt 2>&1
el "classify (no --methods) rc=$?"; tail -3 $R/classify-default.txt | cut -c1-200
END=$(( 575 - ($(date +%s) - T0) )) LAYERS=1920 PEAK=0 \
  RUNS="blockdepend-none blockdepend-1GiB snicit-none snicit-8GiB blockdepend-4GiB bf-4GiB" \
  bash .device/2026-11-26-memory.sh
