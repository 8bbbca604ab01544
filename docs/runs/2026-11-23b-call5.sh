#!/usr/bin/env bash
# Device call 5 (2026-11-23, nvidia-h200-x2): blockdepend 65536-480 on GPU 0, then on GPUs 0,1.
set -u
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > $R/gpus.txt 2>&1; cat $R/gpus.txt
nvidia-smi topo -m > $R/topo.txt 2>&1
for g in 0 0,1; do
  left=$(( ${END:-250} - ($(date +%s) - T0) )); [ $left -lt 40 ] && { el "no time for --gpus $g"; continue; }
  timeout $(( left - 5 )) $W/bin/spdnn infer --method blockdepend --generate-seed 0 --neurons 65536 --layers 480 --mnist \
    --gpus $g --warmup 1 --repetitions 3 > $R/bd-65536-480-gpus-$g.txt 2>&1
  el "--gpus $g rc=$?"; grep -E 'infer|total|median|categor|match|GPU|slab|wall' $R/bd-65536-480-gpus-$g.txt | head -12 | cut -c1-220
done
tar -C $OUT -czf $OUT/call5.tar.gz r; rm -rf $R
el done
# Then, on the same warm machine, two more commands (2026-11-23, ea41dbd):
#   . .device/preamble.sh; for g in 0 0,1; do $W/bin/spdnn infer --method blockdepend --generate-seed 0 \
#     --neurons 65536 --layers 120 --mnist --gpus $g --warmup 1 --repetitions 3; done
#   the same with --method xy and --method snicit.
