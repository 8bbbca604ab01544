#!/usr/bin/env bash
# Device call 2 of the session 2026-11-28d (one H200): call 1 found the official 1024-120 at
# 0.104 ms (0.102-0.110) when a 2 GiB memset keeps the GPU busy before each timed region,
# against 0.13-0.14 without: ~30 us of each pass is the GPU waiting. `diag2` is call 1's hold switch (not its reuse one)
# plus SPDNN_DIAG_HOST=1, which prints the host's microseconds: the start event's record and
# run() (from the start event: after the memset, after each launch), and the events' time.
# (The patch that builds diag2 from c050fde: diag.patch beside this call's data.)
# Holds of 1, 64 and 256 MiB (~0.5, ~20, ~80 us of memset) say how long the gap is.
# Predicted: run() takes ~30 us of host time before launch 1 is enqueued (a hold of 64 MiB
# hides part of it, 256 all); if the host's run() is short, the GPU itself is slow to start
# after idling and even the 1 MiB hold helps.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants diag2
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
export SPDNN_DIAG_HOST=1
for i in 1 2; do
  bd 1024-plain$i $W/spdnn-diag2 $OFF --warmup 3 --repetitions 20
  for mb in 1 64 256; do
    SPDNN_DIAG_HOLD_MB=$mb bd 1024-hold$mb-$i $W/spdnn-diag2 $OFF --warmup 3 --repetitions 20
  done
done
for f in $R/bd-1024-*-1.err $R/bd-1024-plain1.err; do echo "== $f"; grep diag $f | tail -8; done
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
