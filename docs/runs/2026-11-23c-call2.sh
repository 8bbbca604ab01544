#!/usr/bin/env bash
# Device call 2 of 2026-11-23c (nvidia-h200-x2, f495c62): issue 19's scaling runs at
# N = 65536, one bench per (shape, GPUs) so the network and its truth load once each; every
# method's categories are checked against the compressed oracle on every row. cusparse is
# left out at 65536 (92 s a run on one GPU); bf and snig run once after one warm-up.
# Call 1 (pending-x2.sh) lost its time to cusparse's four runs; its one-GPU 65536-120 rows
# of the fast methods are kept. MPI: one rank per GPU (`run.sh mpi`, the pack's MPI build)
# against the threaded --gpus 0,1 run, categories written and compared.
set -u
. .device/preamble.sh
bench() { # tag, then bench arguments
  local tag=$1; shift
  local left=$(( ${END:-540} - ($(date +%s) - T0) ))
  [ $left -lt 45 ] && { el "no time for $tag"; return; }
  BENCH_TAG=$tag timeout $(( left - 10 )) bash .device/run.sh bench --no-official "$@" > $R/$tag.log 2>&1
  el "$tag rc=$?"; grep -hE '^\| [a-z]' $OUT/$tag/*.md 2>/dev/null | grep -v '^| method' | cut -c1-150
}
fast=xy,snicit,hp,blockdepend,sz
bench c2-65536-120-fast-g01 --neurons 65536 --layers 120 --methods $fast --gpus 0,1 --warmup 1 --repetitions 3
infer() { # tag, then infer arguments (65536-120 from the cache the bench filled)
  local tag=$1; shift
  local left=$(( ${END:-540} - ($(date +%s) - T0) ))
  [ $left -lt 45 ] && { el "no time for $tag"; return; }
  timeout $(( left - 10 )) "$@" --generate-seed 0 --neurons 65536 --layers 120 --mnist \
    --warmup 1 --repetitions 3 --categories-out $R/$tag.tsv > $R/$tag.log 2>&1
  el "$tag rc=$? $(wc -l < $R/$tag.tsv 2>/dev/null) categories"
  grep -E '^(infer|total|ranks|rank gpus|plan|wall)' $R/$tag.log | cut -c1-160
}
for m in blockdepend xy; do
  infer threads-$m $W/bin/spdnn infer --method $m --gpus 0,1
  NP=2 infer mpi2-$m bash .device/run.sh mpi infer --method $m
  cmp -s $R/threads-$m.tsv $R/mpi2-$m.tsv && el "$m: MPI and threads identical" || el "$m: MPI and threads DIFFER"
done
bench c2-65536-480-fast-g0 --neurons 65536 --layers 480 --methods $fast --gpus 0 --warmup 1 --repetitions 3
bench c2-65536-480-fast-g01 --neurons 65536 --layers 480 --methods $fast --gpus 0,1 --warmup 1 --repetitions 3
bench c2-65536-120-bfsnig-g0 --neurons 65536 --layers 120 --methods bf,snig --gpus 0 --warmup 1 --repetitions 1
bench c2-65536-120-bfsnig-g01 --neurons 65536 --layers 120 --methods bf,snig --gpus 0,1 --warmup 1 --repetitions 1
tar -C $OUT -czf $OUT/call2.tar.gz r $(cd $OUT && ls -d c2-* 2>/dev/null) 2>/dev/null; rm -rf $R $OUT/c2-*
el done
