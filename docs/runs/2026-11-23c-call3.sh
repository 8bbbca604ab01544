#!/usr/bin/env bash
# Device call 3 of 2026-11-23c (nvidia-h200-x2, f495c62), one command: 65536-480 with
# `spdnn infer` (the network generated once, then loaded from the cache), blockdepend on one
# GPU, then every fast method on two, each run's categories compared with blockdepend's on
# one GPU. (Call 2's two-GPU bench of this shape ran out of time during sz.)
. .device/preamble.sh
for spec in blockdepend:0 blockdepend:0,1 snicit:0,1 xy:0,1 sz:0,1 hp:0,1; do
  m=${spec%:*}; g=${spec#*:}
  left=$((330 - ($(date +%s) - T0))); [ $left -lt 40 ] && { el "no time $spec"; continue; }
  timeout $((left-5)) $W/bin/spdnn infer --method $m --gpus $g --generate-seed 0 --neurons 65536 \
    --layers 480 --mnist --warmup 1 --repetitions 3 --categories-out $R/$m-$g.tsv > $R/$m-$g.log 2>&1
  el "$spec rc=$? $(grep -E '^infer' $R/$m-$g.log) $(cmp -s $R/$m-$g.tsv $R/blockdepend-0.tsv && echo same-as-bd-g0 || echo DIFFERS) $(wc -l < $R/$m-$g.tsv)"
done
tar -C $OUT -czf $OUT/call3.tar.gz r; rm -rf $R
