#!/usr/bin/env bash
# Device call 3 of the session 2026-11-27g (one H100, ecdb6f0): this file as written in
# 2026-11-27f (pending-2026-11-27f.sh), run as `PART=cusparse480 bash .device/pending-2026-11-27f.sh`.
# The pass did not end in the 565 s the call had left (rc 124): cusparse at 480 layers takes
# more than a device call on an H100 (call 4 ran it over 6000 rows instead).
# Pending device calls (written at the end of the session 2026-11-27f, whose device budget was
# spent): the rest of issue 29's table of predicted against measured peaks, one GPU.
#   PART=snig: snig on 65536-1920 unconstrained (one pass; about 3 minutes with the network's
#     generation), and in 8 GiB (refused before allocating: its layers alone are about 33 GB).
#   PART=cusparse480: cusparse on 65536-480 unconstrained (one pass, about 6 minutes at its
#     65536-120 rate of 91.6 s a pass on an H200).
#   PART=cusparse120: cusparse on 65536-120 in 8 GiB and unconstrained (one pass each, about
#     5 minutes; the call the session 2026-11-27e left pending).
# cusparse at 1920 layers (a pass about 24 minutes) does not fit a device call of 10 minutes.
# Copy beside preamble.sh and 2026-11-26-memory.sh into .device/ (after `cargo xtask
# device-pack` and `git rev-parse --short HEAD > .device/COMMIT`); carry [".device"]; run
# `PART=snig bash .device/pending-2026-11-27f.sh` (one PART a call).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
left() { echo $(( ${1} - ($(date +%s) - T0) )); }
case "${PART:-snig}" in
  snig) layers=1920 runs="snig-none snig-8GiB" ;;
  cusparse480) layers=480 runs="cusparse-none" ;;
  cusparse120) layers=120 runs="cusparse-8GiB cusparse-none" ;;
  *) echo "unknown PART ${PART}"; exit 2 ;;
esac
WARMUP=0 REPETITIONS=1 PEAK=0 LAYERS=$layers RUNS="$runs" END=$(left 585) \
  bash .device/2026-11-26-memory.sh > $OUT/m$layers.txt 2>&1
el "m$layers rc=$?"; grep -E '^\||rc=|rror|no time' $OUT/m$layers.txt
mv $OUT/memory.tar.gz $OUT/memory-$layers.tar.gz
