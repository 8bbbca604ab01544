#!/usr/bin/env bash
# Device call 4 of 2026-11-23d (nvidia-h200-x2): blockdepend's spread tail as its own
# cooperative kernel after the tiles. GPU 1: the whole blockdepend GPU suite in the
# background. GPU 0: the spread test alone, then 65536-120 with `spdnn infer` (spread off
# and auto, one GPU then two), the official 1024-120 against its truth, then the bench of
# blockdepend at 65536-120 and 65536-480 on 1 and 2 GPUs against the compressed oracle.
. .device/preamble.sh
T=$W/tests/spdnn-blockdepend--gpu
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader > $R/gpus.txt
( CUDA_VISIBLE_DEVICES=1 PROPTEST_CASES=32 timeout 300 $T --include-ignored --test-threads=2 \
    > $R/bd-tests.log 2>&1; echo "suite rc=$?" >> $R/bd-tests.log ) &
suite=$!
CUDA_VISIBLE_DEVICES=0 timeout 150 $T --include-ignored --nocapture spread_launches_agree \
  > $R/spread-test.log 2>&1
el "spread test rc=$? $(grep -E 'test result|panicked' $R/spread-test.log | head -3)"
infer() {  # tag gpus spread neurons layers
  local left=$(( ${END:-560} - ($(date +%s) - T0) )); [ $left -lt 50 ] && { el "no time $1"; return; }
  timeout $(( left - 10 )) $W/bin/spdnn infer --method blockdepend --gpus $2 --bd-spread $3 \
    --generate-seed 0 --neurons $4 --layers $5 --mnist --warmup 2 --repetitions 5 --json \
    --categories-out $R/$1.tsv > $R/$1.json 2> $R/$1.err
  local rc=$?
  el "$1 rc=$rc $(grep -E '"infer_ms"|"categories"' $R/$1.json | tr -d ' \n') \
$(grep -A1 -E '"(spread_rows|rows_carried)"' $R/$1.json | tr -d ' \n') \
$(cmp -s $R/$1.tsv $R/${1%%-*}-g0-off.tsv && echo same-as-g0-off || echo DIFFERS-from-g0-off)"
  grep -A1 -E '"launch [0-9]+\+?"' $R/$1.json | tr -d ' \n'; echo
  [ $rc = 0 ] || tail -3 $R/$1.err
}
infer n65-g0-off 0 off 65536 120
infer n65-g0-auto 0 auto 65536 120
infer n65-g01-auto 0,1 auto 65536 120
infer n65-g01-off 0,1 off 65536 120
wait $suite
el "$(tail -1 $R/bd-tests.log) $(grep -E '^test result' $R/bd-tests.log | tr '\n' ' ')"
grep -E 'FAILED|panicked' $R/bd-tests.log | head -10
official=$W/data/sdgc/neuron1024.tar.gz truth=$W/data/sdgc/neuron1024-l120-categories.tsv
timeout 60 $W/bin/spdnn infer --method blockdepend --gpus 0 --weights $official --neurons 1024 \
  --layers 120 --mnist --truth $truth --warmup 3 --repetitions 20 > $R/official.log 2>&1
el "official rc=$? $(grep -E '^(infer|matched|categories)' $R/official.log | tr -s ' ' | tr '\n' ';')"
for l in 120 480; do
  left=$(( ${END:-560} - ($(date +%s) - T0) ))
  if [ $left -gt 150 ]; then
    BENCH_TAG=bench65-$l timeout $(( left - 15 )) bash .device/run.sh bench --no-official --neurons 65536 \
      --layers $l --methods blockdepend --gpu-counts 1,2 --warmup 1 --repetitions 5 > $R/bench65-$l.log 2>&1
    el "bench65-$l rc=$?"; grep -hE '^(\| [a-z]|- scaling)' $OUT/bench65-$l/*.md 2>/dev/null | grep -v '^| method' | cut -c1-220
  else el "no time for bench65-$l ($left s)"; fi
done
# Whether spreading pays at N = 16384 too (auto leaves its 0.17 MB layers to the tiles).
infer n16-g0-off 0 off 16384 120
infer n16-g0-always 0 always 16384 120
tar -C $OUT -czf $OUT/call4.tar.gz r $(cd $OUT && ls -d bench65-* 2>/dev/null); rm -rf $R $OUT/bench65-*
el done
