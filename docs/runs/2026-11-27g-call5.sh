#!/usr/bin/env bash
# Device call 5 of the session 2026-11-27g (one H100, e374ff8, the machine of call 4 still
# warm): issue 29's blockdepend rows at 65536-1920 again on the kernels compiled for the
# chain's layer formats, unconstrained and in 1 GiB (1 warm-up, median of 3).
. .device/preamble.sh >/dev/null
PEAK=0 LAYERS=1920 WARMUP=1 REPETITIONS=3 RUNS="blockdepend-none blockdepend-1GiB" END=280 \
  bash .device/2026-11-26-memory.sh > $OUT/m1920.txt 2>&1
echo rc=$?; grep -E '^\||rc=|rror|no time' $OUT/m1920.txt
mv $OUT/memory.tar.gz $OUT/memory-1920.tar.gz; rm -rf $OUT/r
