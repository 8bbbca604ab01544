#!/usr/bin/env bash
# Device call 1 of the session 2026-11-27f (one H100), commit in .device/COMMIT: SNICIT's rows
# held back across batches (DeviceRun::holds_back/finish in method::drive).
# 1. The GPU tests of snicit, cuda, adaptive, engine (logs archived in tests.tar.gz).
# 2. snicit on 65536-480: unconstrained, 8 GiB, 4 GiB, and 4 GiB with --no-hold-back (A/B).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
for t in snicit cuda adaptive engine; do
  PROPTEST_CASES=8 timeout 170 $W/tests/spdnn-$t--gpu --include-ignored --test-threads=1 > $R/test-$t.txt 2>&1
  el "tests $t rc=$? $(grep -E '^test result' $R/test-$t.txt)"
  grep -E 'FAILED|panicked' $R/test-$t.txt | head -8
done
( cd $R && tar czf $OUT/tests.tar.gz test-*.txt && rm -f test-*.txt )
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
PEAK=0 LAYERS=480 RUNS="snicit-none snicit-8GiB snicit-4GiB" END=$(left 500) \
  bash .device/2026-11-26-memory.sh > $OUT/m480.txt 2>&1
el "m480 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m480.txt
# The A/B: the same 4 GiB run with each batch's own post-convergence pass.
mkdir -p $R
timeout $(left 590) $W/bin/spdnn infer --method snicit --weights $W/n480.bin --neurons 65536 \
  --layers 480 --mnist --gpu-memory 4GiB --warmup 1 --repetitions 3 --json --no-hold-back \
  > $R/snicit-4GiB-alone.json 2> $R/snicit-4GiB-alone.err
el "alone rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/snicit-4GiB-alone.json | tr -d ' \n')"
( cd $R && tar czf $OUT/alone.tar.gz snicit-4GiB-alone.* )
