#!/usr/bin/env bash
# Device call 8 of the session 2026-11-29e (one H200). Pack of the session's final code
# (103e4b5's; the pack's commit in COMMIT). What each GPU of four runs at 65536-120, timed on
# one (--rows 15000 --skip-rows S), with the spread launches (default) and without
# (--bd-spread off), and all rows both ways. Call 4 found launch 3's spread (855-897 rows, just
# under its 924) at 0.20-0.21 ms where two waves of 7-row tiles (1012-1067 rows) took
# 0.15-0.17.
# Predicted: without the spread, slabs 30000 and 45000's launch 3 ~0.13-0.15 ms (one wave of
# tiles), their launch 4 (95-107 rows, 14-16 tiles for 104 layers) slower than the spread's
# 0.075; the slowest slab (15000, tiles already in launch 3) no faster, so the ratio not above
# call 4's 3.05x.
. .device/preamble.sh
S=$W/bin/spdnn
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
images=$W/i65536.bin
timeout 100 $S images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
net=$W/g65536-120.bin
timeout 120 $S generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "65536 generated rc=$?"
IN="--weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5"
BD_TIMEOUT=60 bd 65536-120-all $S $IN
BD_TIMEOUT=60 bd 65536-120-all-off $S $IN --bd-spread off
for s in 0 15000 30000 45000; do
  BD_TIMEOUT=40 bd 65536-120-slab$s $S $IN --rows 15000 --skip-rows $s
  BD_TIMEOUT=40 bd 65536-120-slab$s-off $S $IN --rows 15000 --skip-rows $s --bd-spread off
done
rm -f $net $images
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
