#!/usr/bin/env bash
# Device call 1 of 2026-11-23c (nvidia-h200-x2, 1d65983), run as written the session before
# as `pending-x2.sh`. It spent its 540 s in the first bench: cusparse takes 92 s a run at
# 65536-120 and the bench gives it four; only the fast methods' one-GPU 65536-120 rows came
# back. Call 2 leaves cusparse out at N = 65536. The plan as written: every GPU method on
# one GPU and on two, on the four shapes, categories compared by the bench (each
# run checks its own rows).
# Copy into .device/ beside preamble.sh after `cargo xtask device-pack` and
# `git rev-parse --short HEAD > .device/COMMIT`; run with command
# `END=560 SHAPES="65536:120 65536:480" bash .device/pending-x2.sh`, carry [".device"],
# kind nvidia-h200-x2. One call does about two shapes; 16384:1920 and 65536:1920 take a call
# each (generation alone is ~150 s at 65536-1920). bf and snig take 12-46 s a run at
# 65536: they are last and get what time is left.
set -u
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > $R/gpus.txt 2>&1
nvidia-smi topo -m > $R/topo.txt 2>&1
for shape in ${SHAPES:-65536:120 65536:480}; do
  n=${shape%:*}; l=${shape#*:}
  for methods in xy,snicit,hp,blockdepend,sz,cusparse bf,snig; do
    for g in 0 0,1; do
      left=$(( ${END:-560} - ($(date +%s) - T0) )); [ $left -lt 60 ] && { el "no time for $n-$l $methods --gpus $g"; continue; }
      tag=x2-$n-$l-${methods%%,*}-g${g/,/}
      BENCH_TAG=$tag timeout $(( left - 20 )) bash .device/run.sh bench --neurons $n --layers $l --methods $methods \
        --gpus $g --repetitions 3 --warmup 1 --no-official > $R/$tag.log 2>&1
      el "$n-$l $methods --gpus $g rc=$?"; grep -hE '^\| [a-z]' $OUT/$tag/*.md 2>/dev/null | grep -v '^| method' | cut -c1-160
    done
  done
done
tar -C $OUT -czf $OUT/pending-x2.tar.gz r $(cd $OUT && ls -d x2-* 2>/dev/null) 2>/dev/null; rm -rf $R $OUT/x2-*
el done
