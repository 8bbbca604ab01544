#!/usr/bin/env bash
# Device call 1 of 2026-11-23d (nvidia-h200-x2): blockdepend's spread tail (8d1728f).
# GPU 1: the whole blockdepend GPU suite in the background. GPU 0: the spread test alone
# first, then 65536-120 with `spdnn infer` on one GPU with the spread off and on, then on
# two GPUs (after the suite, so that GPU 1 is free), then the official 1024-120 against its
# truth with the spread auto (narrow rows: unchanged) and always.
. .device/preamble.sh
T=$W/tests/spdnn-blockdepend--gpu
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader > $R/gpus.txt
( CUDA_VISIBLE_DEVICES=1 PROPTEST_CASES=32 timeout 400 $T --include-ignored --test-threads=2 \
    > $R/bd-tests.log 2>&1; echo "suite rc=$?" >> $R/bd-tests.log ) &
suite=$!
CUDA_VISIBLE_DEVICES=0 timeout 150 $T --include-ignored --nocapture spread_launches_agree \
  > $R/spread-test.log 2>&1
el "spread test rc=$? $(grep -E 'test result|panicked' $R/spread-test.log | head -3)"
infer65() {  # tag gpus spread
  local left=$(( ${END:-560} - ($(date +%s) - T0) )); [ $left -lt 50 ] && { el "no time $1"; return; }
  timeout $(( left - 10 )) $W/bin/spdnn infer --method blockdepend --gpus $2 --bd-spread $3 \
    --generate-seed 0 --neurons 65536 --layers 120 --mnist --warmup 2 --repetitions 5 --json \
    --categories-out $R/$1.tsv > $R/$1.json 2> $R/$1.err
  el "$1 rc=$? $(grep -E '"infer_ms"|"categories"' $R/$1.json | tr -d ' \n') \
$(grep -A1 -E '"(spread_rows|rows_carried)"' $R/$1.json | tr -d ' \n') \
$(cmp -s $R/$1.tsv $R/g0-off.tsv && echo same-as-g0-off || echo DIFFERS-from-g0-off)"
  grep -E '"launch [0-9]+\+?"' $R/$1.json | tr -d ' \n'; echo
}
infer65 g0-off 0 off
infer65 g0-auto 0 auto
wait $suite
el "$(tail -1 $R/bd-tests.log) $(grep -E '^test result' $R/bd-tests.log | tr '\n' ' ')"
grep -E 'FAILED|panicked' $R/bd-tests.log | head -10
infer65 g01-auto 0,1 auto
infer65 g01-off 0,1 off
official=$W/data/sdgc/neuron1024.tar.gz truth=$W/data/sdgc/neuron1024-l120-categories.tsv
for spread in auto always; do
  left=$(( ${END:-560} - ($(date +%s) - T0) )); [ $left -lt 30 ] && { el "no time official $spread"; continue; }
  timeout $(( left - 5 )) $W/bin/spdnn infer --method blockdepend --gpus 0 --bd-spread $spread \
    --weights $official --neurons 1024 --layers 120 --mnist --truth $truth --warmup 3 \
    --repetitions 20 > $R/official-$spread.log 2>&1
  el "official $spread rc=$? $(grep -E '^(infer|matched|categories)' $R/official-$spread.log | tr -s ' ' | tr '\n' ';')"
done
tar -C $OUT -czf $OUT/call1.tar.gz r; rm -rf $R
el done
