#!/usr/bin/env bash
# Device call 1 of the session 2026-11-29e (one H200). Pack 0139091: the planner's upload
# figure for a binary batch (MemoryModel::binary_input). adaptive's GPU tests (failed on
# b5af65d: blockdepend_peak_is_its_model predicted 1 070 411 against 780 743 measured) and
# blockdepend's, then a diagnostic build (hosttimes.patch, never committed) that prints the
# host's time in each call of a timed pass (the start event's record, the pass's enqueue,
# the stop event's record and wait) beside the events' time: official 1024-120, graph and
# call by call.
# Predicted: adaptive passes, blockdepend_peak_is_its_model's prediction equal to the
# measured peak (within the 10 %); blockdepend 37 pass. Host times: if the graph's launch
# takes ~20 us of host time on a slow loan, the enqueue is the host's call; if it takes a few
# and the events still add ~20 us, the submission's latency.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
variants hosttimes
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2; do SPDNN_HOST_TIMES=1 bd ht-graph-$i $W/spdnn-hosttimes $OFF --warmup 3 --repetitions 30; done
SPDNN_HOST_TIMES=1 bd ht-calls $W/spdnn-hosttimes $OFF --warmup 3 --repetitions 30 --bd-no-graph
for f in $R/bd-ht-*.err; do echo "== $f"; grep host-times $f | tail -12; done > $OUT/hosttimes.txt
el "host times done"
mkdir -p $OUT/adaptive $OUT/blockdepend
TESTS_TIMEOUT_S=300 PROPTEST_CASES=8 SPDNN_TESTS=spdnn-adaptive OUT=$OUT/adaptive bash .device/run.sh tests > $OUT/adaptive.txt 2>&1; el "adaptive rc=$?"
TESTS_TIMEOUT_S=300 PROPTEST_CASES=8 SPDNN_TESTS=spdnn-blockdepend OUT=$OUT/blockdepend bash .device/run.sh tests > $OUT/blockdepend.txt 2>&1; el "blockdepend rc=$?"
grep -h "blockdepend" $OUT/adaptive/tests.log | head -20 > $OUT/adaptive-blockdepend-lines.txt
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
