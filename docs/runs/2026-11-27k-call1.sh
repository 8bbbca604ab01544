#!/usr/bin/env bash
# Device call 1 of the session 2026-11-27k (one H100): the pack of commit .device/COMMIT
# (7398ed8: the ELL gathers' banks, crate::banks).
# 1. Every GPU test executable on 7398ed8 (the layout of every ELL layer changed: slots by
#    matchings, outputs permuted within their groups).
# 2. Random 4096-120 (fan-in 32), three binaries interleaved, twice each:
#      base:  0ab8523 (the greedy slot order, 1.62 wavefronts a slot by the layout's count);
#      match: 7398ed8 with the permutation off (REORDER_FROM = inf): 1.40;
#      new:   the pack (7398ed8): 1.12.
#    The floor of docs/results.md: 182 ms at 1.62 wavefronts, 113 ms conflict-free; the
#    gathers ran at ~64 % of the shared-memory pipe. Predicted if the time follows the
#    wavefronts at the same share: base ~286 ms, match ~250, new ~200; other limits (the
#    weights from L2 ~50 ms, the issue slots ~93 ms at 100 %) may keep new at 210-230.
# 3. The challenge shapes base against new (the compressed layers are reordered too: 4096's
#    layout 1.33 -> 1.03 wavefronts a slot, 16384's 1.44 -> 1.11; 1024's layers are dense
#    and unchanged): official 1024-120, 4096-120, 16384-120, interleaved, twice each.
#    Predicted: 1024 the same; 4096 and 16384 the same within 2 % (their launches wait on
#    instructions and latency, not on the gathers' wavefronts) or slightly faster.
. .device/preamble.sh
variants base match
ln -sf $W/bin/spdnn $W/spdnn-new
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 280 bash .device/run.sh tests > $R/tests.txt 2>&1
el "tests rc=$? $(grep -c '^PASS' $R/tests.txt) passed, $(grep -c '^FAIL' $R/tests.txt) failed"
grep -E '^FAIL' -A12 $R/tests.txt | head -30
cp -r $OUT/tests $R/test-logs 2>/dev/null; rm -rf $OUT/tests
timeout 60 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
el "gen random 4096-120 rc=$?"
for round in 1 2; do
  for v in base match new; do
    bd $v-r4096-120-r$round $W/spdnn-$v --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 3
  done
done
rm -f $W/r4096.bin
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for n in 4096 16384; do
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $W/g$n.bin > $R/gen$n.log 2>&1
done
for round in 1 2; do
  for v in base new; do
    bd $v-1024-120-r$round $W/spdnn-$v $OFF --warmup 3 --repetitions 30
    bd $v-4096-120-r$round $W/spdnn-$v --weights $W/g4096.bin --neurons 4096 --layers 120 --mnist --warmup 3 --repetitions 30
    bd $v-16384-120-r$round $W/spdnn-$v --weights $W/g16384.bin --neurons 16384 --layers 120 --mnist --warmup 3 --repetitions 10
  done
done
rm -f $W/g4096.bin $W/g16384.bin
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
