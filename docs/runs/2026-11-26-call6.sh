#!/usr/bin/env bash
# Device call 6 of 2026-11-26 (one H100): issue 26's benchmark, part 2: auto against the best
# methods on random 4096-120 (fan-in 32), 4096-480 and 65536-120 (60000 MNIST-recipe rows,
# generated with seed 0), each bench's own JSON kept. The candidates beside auto are the
# methods nearest blockdepend on these shapes in earlier results (docs/results.md).
. .device/preamble.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > $R/gpu.txt; el "$(cat $R/gpu.txt)"
bench() {  # tag seconds args...
  local tag=$1 secs=$2; shift 2
  local left=$(( 565 - ($(date +%s) - T0) )); [ $left -lt 40 ] && { el "no time for $tag"; return; }
  [ $secs -gt $left ] && secs=$left
  BENCH_TAG=$tag timeout $(( secs - 5 )) bash .device/run.sh bench --no-official --warmup 1 --repetitions 3 \
    --cpu-rows 1 "$@" > $R/$tag.log 2>&1
  el "$tag rc=$?"; grep -hE '^\| [a-z]' $OUT/$tag/*.md 2>/dev/null | grep -v '^| method' | cut -c1-200
  grep -E "chose" $R/$tag.log | head -2 | cut -c1-250
}
bench random4096 200 --network random --fan-in 32 --neurons 4096 --layers 120 --methods auto,blockdepend,hp,sz,cusparse
bench n4096-480 150 --neurons 4096 --layers 480 --methods auto,blockdepend,snicit,sz
bench n65536-120 200 --neurons 65536 --layers 120 --methods auto,blockdepend,snicit
tar -C $OUT -czf $OUT/call6.tar.gz r $(cd $OUT && ls -d random4096 n4096-480 n65536-120 2>/dev/null); rm -rf $R $OUT/random4096 $OUT/n4096-480 $OUT/n65536-120
el done
