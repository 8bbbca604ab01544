#!/usr/bin/env bash
# Device call 5 of 2026-11-27 (one H100, commit 2c9a2bb): racecheck alone on blockdepend's
# split tests, six at a time, to time the exact/predicated parts alone and to see which of
# the straddling-tile row counts end the process (docs/reliability.md, "Results").
. .device/preamble.sh
SANITIZE_TOOLS=racecheck SANITIZE_JOBS=6 SANITIZE_BUDGET_S=330 bash .device/run.sh sanitize \
  tiles_straddle exact_and_predicated_items_agree_16384 exact_and_predicated_items_agree_split_tiles_of_1 \
  > $OUT/san.txt 2>&1
grep -v '^excluded' $OUT/san.txt | head -30
