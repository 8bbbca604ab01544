#!/usr/bin/env bash
# Device call 6 of the session 2026-11-29e (one H200). Pack 43f137d: tiles count a folded
# layer 1's bins from a bitmap input (bd_tile_bins_layer). (1) blockdepend's GPU tests (the
# bitmap test now runs the tiles from the bitmap, bit for bit against the lanes and the
# columns); (2) 4096, 16384 and 65536-120 with the bitmap (default) against the columns
# (--bd-no-bitmap, the scatter as before), alternated.
# Floors and prediction: 4096's launch 1 read 100 MB of columns (23.8 us at 4.25 TB/s) and
# ran 0.155 ms of a 0.209 span (call 3), bound by the shared-memory pipe (call 5: L1 74 %);
# the bitmap is 31 MB (7.5 us) and the bins take ~3x fewer shared wavefronts than the
# scatter's atomics. Predicted: 4096 launch 1 ~0.11 ms, span ~0.17 (from 0.209); 16384 launch
# 1 ~0.40 (from 0.53); 65536 launch 1 ~1.3 (from 1.78), if the bins' loads keep up.
. .device/preamble.sh
S=$W/bin/spdnn
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
mkdir -p $OUT/bdtest
TESTS_TIMEOUT_S=280 PROPTEST_CASES=8 SPDNN_TESTS=spdnn-blockdepend OUT=$OUT/bdtest bash .device/run.sh tests > $OUT/bdtest.txt 2>&1; el "blockdepend tests rc=$?"
tail -4 $OUT/bdtest.txt
grep -E "FAILED|panicked" -A4 $OUT/bdtest/tests.log 2>/dev/null | cut -c1-400 | head -30
for tool in memcheck racecheck; do
  t=bitmap_inputs_count_the_folded_bins
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 $t > $R/$tool-$t.txt 2>&1
  el "$tool $t rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-$t.txt | tr '\n' ' ')"
done
for n in 4096 16384; do
  net=$W/g$n-120.bin
  timeout 90 $S generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  reps=30; [ $n = 16384 ] && reps=10
  for i in 1 2; do
    bd $n-120-bitmap-$i $S --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps
    bd $n-120-columns-$i $S --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps --bd-no-bitmap
  done
  rm -f $net
done
images=$W/i65536.bin
timeout 100 $S images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
net=$W/g65536-120.bin
timeout 120 $S generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "65536 generated rc=$?"
IN="--weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5"
BD_TIMEOUT=60 bd 65536-120-bitmap $S $IN
BD_TIMEOUT=60 bd 65536-120-columns $S $IN --bd-no-bitmap
rm -f $net $images
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
