#!/usr/bin/env bash
# Pending device call (written at the end of the session 2026-11-27e, whose device budget was
# spent), one GPU, about 5 minutes: the rest of issue 29's cusparse table at 65536-120,
# in 8 GiB (one pass; its unconstrained pass took 91.6 s on an H200 in call 8, so run the
# unconstrained one beside it on the same card for the ratio). cusparse at 480 and 1920
# layers takes about 6 and 24 minutes a pass at that rate: a call each, or not at all.
# Copy beside preamble.sh and 2026-11-26-memory.sh into .device/ (after `cargo xtask
# device-pack` and `git rev-parse --short HEAD > .device/COMMIT`); carry [".device"].
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
WARMUP=0 REPETITIONS=1 PEAK=0 LAYERS=120 RUNS="cusparse-8GiB cusparse-none" END=$(left 585) \
  bash .device/2026-11-26-memory.sh > $OUT/m120.txt 2>&1
el "m120 rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m120.txt; mv $OUT/memory.tar.gz $OUT/memory-120.tar.gz
