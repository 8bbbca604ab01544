#!/usr/bin/env bash
# Pending device call for issue 29 (rewritten at the end of the session 2026-11-27c, whose
# device budget was spent; it was to be that session's call 5). bf's streamed weights in
# 4 GiB took 1.93x its unconstrained time on 65536-480 (call 4 of 2026-11-27c, H200: 19 151 ms
# against 9 942; the plan's transfer floor 1 483 ms), and the layers' own times say where:
# the first 12 layers 1.06-1.44x, every layer from the 13th on 2.0x (19.4 ms a layer summed
# over the 9 batches resident, 38.9 streamed), while the copy of a layer at the probe's rate
# is 0.34 ms of the 4.3 ms a layer and batch take streamed. This asks why: ncu times the
# 21st bf_layer launch (layer 21, batch 1, a permuted layer) on 65536-120, resident and
# streamed in 4 GiB, caches not flushed. ncu serializes the GPU's work: if the kernel alone
# takes the same time in both, what doubles is concurrency (the copy beside the kernel,
# the host's wait for the tuning event and row counts before each layer), else the kernel
# itself. One GPU, about two minutes. Copy beside preamble.sh into .device/.
. .device/preamble.sh
NET=$W/n120.bin
timeout 60 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $NET > $OUT/generate.log 2>&1
el "generate rc=$?"
for b in none 4GiB; do
  mem=(); [ $b != none ] && mem=(--gpu-memory $b)
  timeout 45 /usr/local/cuda/bin/ncu --cache-control none -k bf_layer --launch-skip 20 --launch-count 2 \
    --metrics gpu__time_duration.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum \
    $W/bin/spdnn infer --method bf --weights $NET --neurons 65536 --layers 120 --mnist "${mem[@]}" \
    --warmup 0 --repetitions 1 --json > $OUT/ncu-$b.txt 2>&1
  el "$b rc=$?"
  grep -E 'bf_layer|gpu__time|hit_rate|dram__bytes|"infer_ms"|==ERR|==WARN' $OUT/ncu-$b.txt | head -20
done
