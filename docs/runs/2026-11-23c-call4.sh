#!/usr/bin/env bash
# Device call 4 of 2026-11-23c (nvidia-h200-x2, f495c62), one command: 16384-1920 with
# `spdnn infer` (the network generated once, then loaded from the cache): blockdepend, snicit
# and xy on one GPU and on two, each run's categories compared with blockdepend's on one GPU.
# The device time left (248 s) allowed no more.
. .device/preamble.sh
for spec in blockdepend:0 blockdepend:0,1 snicit:0 snicit:0,1 xy:0 xy:0,1; do
  m=${spec%:*}; g=${spec#*:}
  left=$((165 - ($(date +%s) - T0))); [ $left -lt 25 ] && { el "no time $spec"; continue; }
  timeout $((left-3)) $W/bin/spdnn infer --method $m --gpus $g --generate-seed 0 --neurons 16384 \
    --layers 1920 --mnist --warmup 1 --repetitions 3 --categories-out $R/$m-$g.tsv > $R/$m-$g.log 2>&1
  el "$spec rc=$? $(grep -E '^infer' $R/$m-$g.log) $(cmp -s $R/$m-$g.tsv $R/blockdepend-0.tsv && echo same-as-bd-g0 || echo DIFFERS) $(wc -l < $R/$m-$g.tsv)"
done
tar -C $OUT -czf $OUT/call4.tar.gz r; rm -rf $R
