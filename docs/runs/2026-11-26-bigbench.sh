#!/usr/bin/env bash
# Device call of 2026-11-26 (issue 28, "large benches in minutes"; branch bigbench): the bench
# of the issue,
#   spdnn bench --no-official --neurons 65536 --layers 120,1920 --methods blockdepend,snicit
#               --gpu-counts 1,2,4
# on the GPUs the machine has (the counts among 1, 2, 4 it sees: 1,2 on two GPUs, 1 on one),
# then the same bench again in the same call, which finds the truths the first one stored
# (data/cache/truth/) and the MNIST input it made (data/cache/). Goal: the first bench in
# <= 300 s on four GPUs (issue 28); the log says where the time went, one timestamped line as
# each phase starts and ends (generate, input, truth: oracle, compress, oracle; each run;
# write). The table at the end: the phases of each pass, then the runs (infer_ms, total_ms,
# compile_ms, matched).
#
# Before: on four H100s the same bench did not finish in 560 s (snicit at 65536-1920 never ran)
# and its log said nothing. Predicted now (docs/results.md, "Large benches in minutes"): on
# four GPUs (64 cores) ~45 s for 65536-120 and 2-3 min for 65536-1920 (most of it the
# compressed oracle over 60000 rows on the CPU); on two GPUs (32 cores) 4-5 min; the second
# bench ~1.5 min. blockdepend compresses, and snicit prepares its XY network, once for every
# GPU and count instead of once per GPU and count.
#
# Copy into .device/ beside preamble.sh after `cargo xtask device-pack` and
# `git rev-parse --short HEAD > .device/COMMIT`; carry [".device"]; any kind with 1, 2 or 4
# GPUs: `END=580 bash .device/2026-11-26-bigbench.sh`. SECOND=0 skips the second bench.
set -u
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > $R/gpus.txt 2>&1
gpus=$(grep -c . $R/gpus.txt)
counts=1; [ "$gpus" -ge 2 ] && counts=1,2; [ "$gpus" -ge 4 ] && counts=1,2,4
el "$gpus GPUs ($(head -1 $R/gpus.txt)), counts $counts, $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, disk $(df -h /tmp | awk 'NR==2 {print $4}') free"
bench() {  # tag: the bench, its stderr a log (not a terminal)
  local tag=$1 left=$(( ${END:-580} - ($(date +%s) - T0) ))
  [ $left -lt 60 ] && { el "no time for $tag"; return 1; }
  BENCH_TAG=$tag timeout $(( left - 10 )) bash .device/run.sh bench --no-official --neurons 65536 \
    --layers 120,1920 --methods blockdepend,snicit --gpu-counts $counts > $R/$tag.out 2> $R/$tag.log
  local rc=$?
  el "$tag rc=$rc"
  # The phases that took a second or more, and the runs.
  grep -E '^\[[0-9.]+ s\] .*(done in|stopped after)' $R/$tag.log \
    | awk '{ for (i = 1; i <= NF; i++) if ($i == "in" || $i == "after") { if ($(i+1) + 0 >= 1) print; break } }' \
    | cut -c1-220
  grep -hE '^\| (blockdepend|snicit)|^- scaling' $OUT/$tag/*.md 2>/dev/null | cut -c1-220
  [ $rc -ne 0 ] && tail -5 $R/$tag.log
  return 0
}
bench bigbench-first
[ "${SECOND:-1}" = 1 ] && bench bigbench-second
du -sh $SPDNN_DATA/cache/* 2>/dev/null | sed 's/^/cache: /'
tar -C $OUT -czf $OUT/bigbench.tar.gz r $(cd $OUT && ls -d bigbench-* 2>/dev/null) 2>/dev/null
rm -rf $R $OUT/bigbench-*
el done
