#!/usr/bin/env bash
# Device call 4 of the session 2026-11-29f (one H200). Call 3's stamps (clock64 in bd_spread,
# trace.patch) on call 2's spread change (spread.patch beside call 2): `trace` = 5623689 +
# stamps, `sptrace` = + spread.patch, `sptracenopf` = + spread.patch without the L1 prefetch.
# All rows of 65536-120 (launch 4, layers 17-120, spreads 452 rows), two rounds alternated.
# Predicted: the take ~3000 -> ~300 cycles a layer (the ranking's map); the copy of 7 rows
# ~6500 -> ~3000 (cp.async, all in flight); the items of the deep layers (1-6 items a unit,
# ~5500 cycles) ~2500 with the prefetch if prefetch.global.L1 fills L1 for the items'
# ld.global.nc, the same as nopf if it does not.
. .device/preamble.sh
S=$W/bin/spdnn
variants trace sptrace sptracenopf
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
images=$W/i65536.bin
timeout 100 $S images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
net=$W/g65536-120.bin
timeout 120 $S generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "65536 generated rc=$?"
IN="--weights $net --neurons 65536 --layers 120 --images $images --warmup 1 --repetitions 2"
for round in 1 2; do
  for v in trace sptrace sptracenopf; do
    timeout 60 $W/spdnn-$v infer --method blockdepend $IN > $OUT/$v-all-$round.txt 2>&1; el "$v $round rc=$?"
  done
done
rm -f $net $images
for f in $OUT/*-all-2.txt; do echo "== $f"; grep "spread-trace b=0" $f | tail -10 | sed 's/spread-trace b=0 first=16 //'; done
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
