#!/usr/bin/env bash
# Ran as call 1 of the session 2026-11-27d (docs/runs/2026-11-27d-call1.sh; results in
# docs/adaptive.md, "the batches' cost found and mended").
# Pending device call for issue 29 (written at the end of the session 2026-11-27c, whose
# device budget was spent). bf's streamed weights in 4 GiB took 1.93x its unconstrained time
# on 65536-480 (call 4 of 2026-11-27c, H200: 19 151 ms against 9 942; the plan's transfer
# floor 1 483 ms). The layers' own times (layer_ms, summed over the 9 batches): the first 12
# layers 1.06-1.44x, every layer from the 13th on 2.0x (19.4 ms resident, 38.9 streamed),
# about 1-2.2 ms more a layer and batch whatever the layer's work, while the copy of a layer
# at the probe's rate is 0.34 ms. This asks why, on 65536-120 (layers 13-120 are permuted
# too; generated in seconds), in two steps; one GPU, about three minutes.
# 1. Streaming apart from batching, no new flag needed: bf unconstrained (1 batch,
#    resident), in 34 GiB and in 4 GiB. At 120 layers the packed layers are 2 100 MiB and the
#    rows about 33 000 MiB (0.55 MiB a row, from the 480-layer runs' peak less their layers):
#    34 GiB (34 816 MiB) holds every row beside two streaming buffers but not beside every
#    layer, so the planner streams in one batch (or, if its cost model says so, keeps the
#    layers resident in two batches: the plan line says which); 4 GiB streams in about 9.
#    none against 34 GiB is streaming alone; 34 GiB against 4 GiB is batching alone.
# 2. ncu times the 21st bf_layer launch (layer 21 of the first batch, a permuted layer)
#    unconstrained and in 34 GiB, the same rows, caches not flushed. ncu serializes the
#    GPU's work: if the kernel alone takes the same time in both, what costs is what runs
#    beside it or between the launches (the copy into the other buffer; the host waiting,
#    before each layer and batch, for the tuning event and two row counts), else the
#    kernel itself.
# Copy beside preamble.sh and 2026-11-26-memory.sh into .device/ (after `cargo xtask
# device-pack` and `git rev-parse --short HEAD > .device/COMMIT`); carry [".device"].
. .device/preamble.sh
NET=$W/n120.bin
PEAK=0 LAYERS=120 RUNS="bf-none bf-34GiB bf-4GiB" END=$(( ${END:-150} - ($(date +%s) - T0) )) \
  bash .device/2026-11-26-memory.sh
for b in none 34GiB; do
  mem=(); [ $b != none ] && mem=(--gpu-memory $b)
  timeout 45 /usr/local/cuda/bin/ncu --cache-control none -k bf_layer --launch-skip 20 --launch-count 2 \
    --metrics gpu__time_duration.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum \
    $W/bin/spdnn infer --method bf --weights $NET --neurons 65536 --layers 120 --mnist "${mem[@]}" \
    --warmup 0 --repetitions 1 --json > $OUT/ncu-$b.txt 2>&1
  el "ncu $b rc=$?"
  grep -E 'bf_layer|gpu__time|hit_rate|dram__bytes|"infer_ms"|==ERR|==WARN' $OUT/ncu-$b.txt | head -20
done
