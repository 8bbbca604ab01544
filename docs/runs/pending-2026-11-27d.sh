#!/usr/bin/env bash
# Pending device call (written at the end of the session 2026-11-27d, whose device budget was
# spent), for a four-GPU machine (`nvidia-h100-x4` or `nvidia-h200-x4`), about 9 minutes:
# 1. The sanitizers and the full-scale GPU tests after the kernel changes of 647522a (bf.cu: a
#    block per row and output slab, the row flags cleared by bf_compact_rows; slabs.cuh: four
#    inputs in flight per thread, BF and SNIG) and SNICIT's streamed layers (8d30e66): the
#    GPU tests passed at full scale on 8d30e66, the sanitizers last ran on 3e6fdd1.
# 2. Issue 29's last method table at 65536: cusparse did not finish one pass of 65536-480 in
#    280 s (call 5), so 65536-120, unconstrained and in 8 GiB, one pass each.
# Copy beside preamble.sh and 2026-11-26-memory.sh into .device/ (after `cargo xtask
# device-pack` and `git rev-parse --short HEAD > .device/COMMIT`); carry [".device"].
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 SANITIZE_BUDGET_S=420 timeout 470 bash .device/run.sh verify \
  > $OUT/verify.txt 2>&1
el "verify rc=$?"; tail -30 $OUT/verify.txt
( cd $OUT && tar czf verify.tar.gz verify-*.txt 2>/dev/null )
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
WARMUP=0 REPETITIONS=1 PEAK=0 LAYERS=120 RUNS="cusparse-none cusparse-8GiB" END=$(left 585) \
  bash .device/2026-11-26-memory.sh > $OUT/m120.txt 2>&1
el "m120 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m120.txt; mv $OUT/memory.tar.gz $OUT/memory-120.tar.gz
