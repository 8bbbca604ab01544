#!/usr/bin/env bash
# Device call 2 of the session 2026-11-29d (one H200). Pack 25602cb, variant "trace" (the
# warps launch stamps clock64 per layer and warp: after the block barrier, after the slot's
# wait, after the warp's layer; thread 0 prints them (stamps in a module global: call 1's shared array broke the opt-in, whose static size is bd_chain_shared's) for block 0's tile and for tiles that
# ran 14+ layers). Question: where a layer of the warps launch goes now (25-29 us for the
# official 1024's layers 7-28: ~2773 rows at layer 7, ~71 at 16, 2 from 22 to 28).
# Prediction: the heavy layers (7-12, 4 rows a warp, 5-6 warps) ~1500-2000 cycles each, the
# one-row tail layers ~800-1200 cycles, of which the sums ~350 and the slot wait small.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
variants trace
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 120 $W/spdnn-trace infer --method blockdepend $OFF120 --warmup 2 --repetitions 1 --bd-no-graph > $R/trace.txt 2> $R/trace.err; el "trace rc=$?"
grep -c "^TR " $R/trace.txt
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
