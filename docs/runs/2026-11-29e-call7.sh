#!/usr/bin/env bash
# Device call 7 of the session 2026-11-29e (one H200). Pack 7c48363: tiles count a folded
# layer 1's bins from a bitmap input, the tile's words staged in its buffer first (call 6's
# direct loads made launch 1 slower than the columns' scatter: 4096 0.177-0.183 against
# 0.156-0.177 ms, 16384 0.71-0.73 against 0.55, 65536 2.57 against 1.80). The bitmap test and
# its memcheck and racecheck, then the same A/B as call 6.
# Predicted: per 7-row tile at 65536 the staging moves 57 KB (~1.8 us of an SM's share of
# bandwidth, plus one round trip) where the columns are 183 KB, double-buffered under the
# scatter; the counting ~1.5 us and the fold ~2.7 us. Launch 1 at or below the columns' (1.80
# ms at 65536, 0.55 at 16384, 0.16 at 4096); if not, the bins path is reverted.
. .device/preamble.sh
S=$W/bin/spdnn
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
mkdir -p $OUT/bdtest
TESTS_TIMEOUT_S=280 PROPTEST_CASES=8 SPDNN_TESTS=spdnn-blockdepend OUT=$OUT/bdtest bash .device/run.sh tests bitmap_inputs_count_the_folded_bins > $OUT/bdtest.txt 2>&1; el "blockdepend bitmap test rc=$?"
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
