#!/usr/bin/env bash
# Device call 3 of the session 2026-11-29e (one H200). Pack 7609f8d: blockdepend's graph
# records its own span (GraphSpan, the detail graph_span_ms). The test of the graph
# (a_graph_replays_the_launches_enqueued_one_by_one, which now reads the spans) and cuda's
# GPU tests; then the official 1024-120 alternated with call 1's build (0139091, its host-time
# print off) three times each: the two event nodes' cost in the bench's events; then the 1024
# and 4096 shapes and random 4096-120 with the span beside the events.
# Predicted: the tests pass; the span 0.049-0.050 ms (call 9-10's hold); the event nodes cost
# at most ~1 us of the events (0.056-0.064 on this loan's calls 1-2); 4096 ~0.225 ms, the
# span a few us below; random ~218 ms.
. .device/preamble.sh
S=$W/bin/spdnn
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
mkdir -p $OUT/bdtest $OUT/cudatest
TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 SPDNN_TESTS=spdnn-blockdepend OUT=$OUT/bdtest bash .device/run.sh tests a_graph_replays_the_launches_enqueued_one_by_one > $OUT/bdtest.txt 2>&1; el "blockdepend graph test rc=$?"
TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 SPDNN_TESTS=spdnn-cuda OUT=$OUT/cudatest bash .device/run.sh tests > $OUT/cudatest.txt 2>&1; el "cuda tests rc=$?"
variants hosttimes
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-$i $S $OFF --warmup 3 --repetitions 30
  bd 1024-120-before-$i $W/spdnn-hosttimes $OFF --warmup 3 --repetitions 30
done
for n in 1024 4096; do
  for l in 120 480 1920; do
    [ $n = 1024 ] && [ $l = 120 ] && continue
    net=$W/g$n-$l.bin
    timeout 90 $W/bin/spdnn generate --neurons $n --layers $l --seed 0 --cache $net > $R/gen$n-$l.log 2>&1
    runs="1"; [ $n = 1024 ] && runs="1 2"
    for i in $runs; do bd $n-$l-$i $S --weights $net --neurons $n --layers $l --mnist --warmup 3 --repetitions 30; done
    rm -f $net
  done
done
timeout 60 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
bd r4096-120 $S --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 5
rm -f $W/r4096.bin
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tail -3 $OUT/bdtest.txt $OUT/cudatest.txt
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
