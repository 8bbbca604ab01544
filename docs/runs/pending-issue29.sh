#!/usr/bin/env bash
# Pending device call for issue 29 (written 2026-11-27, second session; its device time ran
# out before this ran): bf on 65536-480 unconstrained and in 4 GiB with its weights
# streamed, the plan's transfer floor (Plan::transfer_floor_ms, 8674786) beside the times:
# the issue asks the streamed run within 1.5x of the larger of the unconstrained time and
# that floor. One H100, about 4 minutes (the generation ~10 s, the MNIST input ~20 s a run,
# bf about 12 s a pass). Copy beside preamble.sh and 2026-11-26-memory.sh into .device/.
PEAK=0 LAYERS=480 RUNS="bf-none bf-4GiB" END=${END:-500} bash .device/2026-11-26-memory.sh
. .device/preamble.sh >/dev/null
for f in $OUT/r/bf-*.json; do echo "== $f"; grep -E '"(infer_ms|total_ms|matched)"' $f | head -4
  grep -oE '"(batch|batches|transfer_floor_ms|transfer_ms_per_mib|predicted_bytes|measured_peak)": *[0-9.e+-]+' $f | sort -u | tr '\n' ' '; echo; done
