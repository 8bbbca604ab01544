#!/usr/bin/env bash
# Device call 5 of 2026-11-23d (nvidia-h200-x2): four GPUs' slabs timed on two. A run on K
# GPUs gives GPU i the rows slab(i) of 60000 (15000 each for K = 4) and the GPUs share
# nothing, so `--gpus 0,1 --rows 30000` times the slabs of GPUs 0 and 1 of a four-GPU run and
# `--skip-rows 30000 --rows 30000` those of GPUs 2 and 3: the four-GPU time is the slower of
# the two. blockdepend at 65536-120 with the spread on (auto) and off, the categories of the
# two halves against one GPU's over all rows; then 65536-1920 with the bench on 1 and 2 GPUs.
. .device/preamble.sh
run() {  # tag spread args...
  local tag=$1 spread=$2; shift 2
  local left=$(( ${END:-560} - ($(date +%s) - T0) )); [ $left -lt 40 ] && { el "no time $tag"; return; }
  timeout $(( left - 5 )) $W/bin/spdnn infer --method blockdepend --bd-spread $spread --generate-seed 0 \
    --neurons 65536 --layers ${LAYERS:-120} --mnist --warmup 2 --repetitions 5 --json \
    --categories-out $R/$tag.tsv "$@" > $R/$tag.json 2> $R/$tag.err
  el "$tag rc=$? $(grep -E '"infer_ms"|"categories"' $R/$tag.json | tr -d ' \n') $(grep -A1 '"rows_carried"' $R/$tag.json | tr -d ' \n')"
}
for spread in auto off; do
  run one-$spread $spread --gpus 0
  run q01-$spread $spread --gpus 0,1 --rows 30000
  run q23-$spread $spread --gpus 0,1 --skip-rows 30000 --rows 30000
  { cat $R/q01-$spread.tsv; awk '{print $1 + 30000}' $R/q23-$spread.tsv; } > $R/q-$spread.tsv
  cmp -s $R/q-$spread.tsv $R/one-auto.tsv && el "four slabs ($spread): categories equal one GPU's" || el "four slabs ($spread): DIFFER"
done
LAYERS=480 run one480-auto auto --gpus 0
LAYERS=480 run q01-480-auto auto --gpus 0,1 --rows 30000
LAYERS=480 run q23-480-auto auto --gpus 0,1 --skip-rows 30000 --rows 30000
left=$(( ${END:-560} - ($(date +%s) - T0) ))
if [ $left -gt 200 ]; then
  BENCH_TAG=bench65-1920 timeout $(( left - 15 )) bash .device/run.sh bench --no-official --neurons 65536 \
    --layers 1920 --methods blockdepend --gpu-counts 1,2 --warmup 1 --repetitions 3 --cpu-rows 1 \
    --no-compressed-truth > $R/bench65-1920.log 2>&1
  el "bench65-1920 rc=$?"; grep -hE '^(\| [a-z]|- scaling)' $OUT/bench65-1920/*.md 2>/dev/null | grep -v '^| method' | cut -c1-220
  tail -3 $R/bench65-1920.log
else el "no time for bench65-1920 ($left s)"; fi
# What time is left: memcheck on the spread test (the spread instances' first sanitizer run).
left=$(( ${END:-560} - ($(date +%s) - T0) ))
if [ $left -gt 60 ]; then
  CUDA_VISIBLE_DEVICES=0 timeout $(( left - 10 )) /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
    $W/tests/spdnn-blockdepend--gpu --include-ignored --nocapture spread_launches_agree > $R/memcheck-spread.log 2>&1
  el "memcheck spread rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/memcheck-spread.log | tr '\n' ' ')"
fi
tar -C $OUT -czf $OUT/call5.tar.gz r $(cd $OUT && ls -d bench65-* 2>/dev/null); rm -rf $R $OUT/bench65-*
el done
