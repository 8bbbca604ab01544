#!/usr/bin/env bash
# Device call 2 of the session 2026-11-27d (one H100): bf's layer kernel with a block per row
# and output slab (bf.cu) and four inputs in flight per thread (slabs.cuh, BF and SNIG), and
# the plan's cost charging the probe's layer time per layer and batch (plan.rs).
# 1. The GPU tests of the crates these touch (bf, snig, snicit's BF stage, adaptive).
# 2. bf on 65536-120 unconstrained and in 4 GiB, then on 65536-480 the same (issue 29's
#    shape), then snig on 65536-120 unconstrained while time is left.
# 3. ncu of the 21st bf_layer launch unconstrained on 65536-120 (was 22.9 ms at 38f8e9b).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
for t in bf snig snicit adaptive; do
  PROPTEST_CASES=8 timeout 120 $W/tests/spdnn-$t--gpu --include-ignored --test-threads=1 > $OUT/test-$t.log 2>&1
  el "tests $t rc=$? $(grep -E '^test result' $OUT/test-$t.log)"
  grep -E 'FAILED|panicked' $OUT/test-$t.log | head -5
done
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
PEAK=0 LAYERS=120 RUNS="bf-none bf-4GiB" END=$(left 250) bash .device/2026-11-26-memory.sh > $OUT/m120.txt 2>&1
el "m120 rc=$?"; grep -E '^\||rc=' $OUT/m120.txt; mv $OUT/memory.tar.gz $OUT/memory-120.tar.gz
timeout 40 /usr/local/cuda/bin/ncu --cache-control none -k bf_layer --launch-skip 20 --launch-count 1 \
  --metrics gpu__time_duration.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
  $W/bin/spdnn infer --method bf --weights $W/n120.bin --neurons 65536 --layers 120 --mnist \
  --warmup 0 --repetitions 1 --json > $OUT/ncu-none.txt 2>&1
el "ncu rc=$?"; grep -E 'bf_layer|gpu__time|hit_rate|dram__bytes|sm__thr' $OUT/ncu-none.txt | head
PEAK=0 LAYERS=480 RUNS="bf-none bf-4GiB" END=$(left 530) bash .device/2026-11-26-memory.sh > $OUT/m480.txt 2>&1
el "m480 rc=$?"; grep -E '^\||rc=' $OUT/m480.txt; mv $OUT/memory.tar.gz $OUT/memory-480.tar.gz
PEAK=0 LAYERS=120 RUNS="snig-none" END=$(left 585) bash .device/2026-11-26-memory.sh > $OUT/m120-snig.txt 2>&1
el "snig rc=$?"; grep -E '^\||rc=' $OUT/m120-snig.txt; mv $OUT/memory.tar.gz $OUT/memory-120-snig.tar.gz
