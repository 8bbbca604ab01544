#!/usr/bin/env bash
# Device call 8 of the session 2026-11-27e, on four GPUs (`nvidia-h100-x4` or
# `nvidia-h200-x4`), commit in .device/COMMIT (a0ec17d: the last kernel change):
# 1. `run.sh verify`: every GPU test executable at full scale on the last GPU and the whole
#    sanitizer run (racecheck, memcheck, initcheck, synccheck at the sanitize scale) on the
#    others, after this session's kernel and stream changes (value_step, the row-major
#    kernel's staging and row slots, event tracking off with fences).
# 2. Beside it, once the tests are done (tests-summary.txt written), on the last GPU: issue 29's
#    cusparse table at 65536-120, unconstrained and in 8 GiB, one pass each.
# Results: verify.tar.gz (the verify outputs and the sanitizer table), memory-120.tar.gz.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
last=$(( $(nvidia-smi -L | grep -c '^GPU') - 1 ))
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
( for i in $(seq 60); do [ -s $OUT/tests-summary.txt ] && break; sleep 5; done
  CUDA_VISIBLE_DEVICES=$last WARMUP=0 REPETITIONS=1 PEAK=0 LAYERS=120 RUNS="cusparse-none cusparse-8GiB" \
    END=$(left 570) bash .device/2026-11-26-memory.sh > $OUT/m120.txt 2>&1
  echo "m120 rc=$?" >> $OUT/m120.txt ) &
side=$!
TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 SANITIZE_BUDGET_S=400 timeout 450 bash .device/run.sh verify \
  > $OUT/verify.txt 2>&1
el "verify rc=$?"; tail -25 $OUT/verify.txt
wait $side
grep -E '^\||rc=|rror|no time' $OUT/m120.txt
mv $OUT/memory.tar.gz $OUT/memory-120.tar.gz 2>/dev/null
cd $OUT && tar czf verify.tar.gz verify*.txt tests-summary.txt sanitize-table.md gpu.txt 2>/dev/null
rm -rf $OUT/sanitize $OUT/tests.log $OUT/tests $OUT/verify-*.txt $OUT/tests-summary.txt $OUT/sanitize-table.md $OUT/r
ls $OUT
