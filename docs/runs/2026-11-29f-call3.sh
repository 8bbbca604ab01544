#!/usr/bin/env bash
# Device call 3 of the session 2026-11-29f (one H200). A diagnostic build (trace.patch beside
# this call, never committed: 5623689's kernels with clock64 stamps in bd_spread, thread 0 of
# the first and the last block, printed after the launch) of where a spread launch's layer goes:
# the ranking of the flags, the unit's take, the chunk's copy-in, the items, the slice's write,
# the grid barrier. Call 2's changes to the first three (one ranking, cp.async, L1 prefetch of
# the entries) moved nothing, so the time is elsewhere.
# Predicted: at all rows' launch 4 (452 rows: 65 chunks x 2 slices, 64 groups x 2 row items =
# 128 items over 24 warps a unit) the items ~60-70 % of a layer's ~25 000 cycles; the barrier
# ~3000; on the slab (fewer rows, more slices) the items less, the barrier and ranking more.
. .device/preamble.sh
S=$W/bin/spdnn
variants trace
T=$W/spdnn-trace
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
images=$W/i65536.bin
timeout 100 $S images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
net=$W/g65536-120.bin
timeout 120 $S generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "65536 generated rc=$?"
IN="--weights $net --neurons 65536 --layers 120 --images $images --warmup 1 --repetitions 2"
timeout 60 $T infer --method blockdepend $IN > $OUT/trace-all.txt 2>&1; el "all rc=$?"
timeout 60 $T infer --method blockdepend $IN --rows 15000 --skip-rows 15000 > $OUT/trace-slab15000.txt 2>&1; el "slab rc=$?"
timeout 60 $T infer --method blockdepend $IN --rows 15000 --skip-rows 15000 --bd-cuts 4,8,12 > $OUT/trace-slab15000-c12.txt 2>&1; el "slab c12 rc=$?"
rm -f $net $images
for f in $OUT/trace-*.txt; do echo "== $f"; grep -c spread-trace $f; grep -v spread-trace $f | tail -5; done
grep spread-trace $OUT/trace-all.txt | tail -40
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
