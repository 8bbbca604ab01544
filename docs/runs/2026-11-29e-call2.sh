#!/usr/bin/env bash
# Device call 2 of the session 2026-11-29e (one H200). Pack 0139091. Whether the graph's
# memset node costs the host a submission: the diagnostic build of call 1 (host times) against
# one whose graph holds only the kernels (nomemset.patch, never committed: SPDNN_NO_MEMSET
# clears the counters in the untimed load instead, a diagnostic only), official 1024-120,
# alternated three times each.
# Predicted: call 1 measured the graph's launch at 16-21 us of host time and the start
# event's record at 6-10; if a memset node is a submission of its own, the launch drops to
# ~10 us and the events by ~8 us (62 -> ~54 us); if not, both stay.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
variants hosttimes nomemset
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  SPDNN_HOST_TIMES=1 bd ht-$i $W/spdnn-hosttimes $OFF --warmup 3 --repetitions 30
  SPDNN_HOST_TIMES=1 SPDNN_NO_MEMSET=1 bd nm-$i $W/spdnn-nomemset $OFF --warmup 3 --repetitions 30
done
for f in $R/bd-*.err; do echo "== $f"; grep host-times $f | tail -30 | awk '{s+=$3; t+=$5; e+=$9; n++} END {printf "start %.1f take %.1f events %.1f us (mean of %d)\n", s/n, t/n, e/n, n}'; done > $OUT/hosttimes.txt
cat $OUT/hosttimes.txt
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
