#!/usr/bin/env bash
# Device call 1 of the session 2026-11-28h (one H200). Pack: c7c12c9, circulant items.
# The generated networks' compressed layers 2-8 (4096), 2-10 (16384), 2-12 (65536) are circulant:
# output c = x[c] + x[c + 2^(l-1)] (the halving layer x[c]). The host proves it and the shared tiles
# run them a lane four outputs: per row and slot one 16-byte LDS (two 8-byte ones at offset 2 mod
# 4), 4 FFMA, one 16-byte STS, where an exact item spent ~130 instructions for 8 rows x 2 slots of
# one output (~8 a multiply-add; ~3.5 now). The (group, row) pairs are spread evenly over the warps.
# Floor of those layers: nothing (a few KB of tables; the rows stay in shared memory).
# Predicted: 4096-120 0.265 -> ~0.235-0.245 ms (launch 1 -10-15 %, launch 2 -20 %); 16384-120
# 0.91 -> ~0.80-0.85; 65536-120 3.68 -> ~3.2-3.4 (launch 1 items ~40 % of its instructions);
# official 1024 unchanged (lanes and warps run no tiles' items). --bd-items gathers is the kernel
# before, in the same binary: A/B interleaved.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
timeout 120 $W/tests/spdnn-blockdepend--gpu circulant_items --include-ignored > $R/tests-circulant.txt 2>&1
el "test circulant rc=$? $(grep -E '^test result' $R/tests-circulant.txt | tail -1)"
grep -E 'panicked|FAILED' -A4 $R/tests-circulant.txt | head -12
for n in 4096 16384; do
  net=$W/g$n-120.bin
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  reps=30; [ $n = 16384 ] && reps=10
  for i in 1 2 3; do
    bd $n-120-circ$i $W/bin/spdnn --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps
    bd $n-120-gath$i $W/bin/spdnn --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps --bd-items gathers
  done
  bd $n-120-circ-cuts24 $W/bin/spdnn --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps --bd-cuts 4,8,24
  rm -f $net
done
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd 1024-120-circ $W/bin/spdnn $OFF --warmup 3 --repetitions 30
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "tests blockdepend rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -8
for tool in memcheck racecheck; do
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 \
    $W/tests/spdnn-blockdepend--gpu circulant_items --include-ignored > $R/san-$tool.txt 2>&1
  el "$tool circulant rc=$? $(grep -E '^test result|ERROR SUMMARY|RACECHECK SUMMARY' $R/san-$tool.txt | tail -2 | tr '\n' ' ')"
done
images=$W/i65536.bin
if [ $(( $(date +%s) - T0 )) -lt 330 ]; then
  timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
  el "65536 inputs rc=$?"
  net=$W/g65536-120.bin
  timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
  el "gen 65536 rc=$?"
  for v in circ gath; do
    [ $(( $(date +%s) - T0 )) -lt 540 ] || break
    extra=""; [ $v = gath ] && extra="--bd-items gathers"
    BD_TIMEOUT=40 bd 65536-120-$v $W/bin/spdnn --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5 $extra
  done
fi
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
