#!/usr/bin/env bash
# Device call 4 of the session 2026-11-28f (one H200), pack of d0ce612. Variant binaries: base (the
# pack of 8c20921), spare (8ac0cd6: layer 1's scatter without a branch a nonzero), items (8ac0cd6
# and the work items walked without a division an item). d0ce612 = items and a carried tile's
# rows copied into shared memory with cp.async.
# Call 3: spare took 16384-120 1.043 -> 0.967-0.970 ms and 65536-120 4.212 -> 3.939. Call 2's
# profile of 65536's launch 2 (layers 5-8, 0.62 ms): ~21 % of its instructions are each item's
# division and dispatch, ~12 % of its stall samples the carried rows' copy (one float4 a thread a
# round trip).
# Predicted: items -2-4 % on every tile launch (the items are ~20-40 % of their instructions, the
# division ~25 of ~100-150 an item); the copy a further -5-8 % of launches 2-4 at 65536 (launch
# 2 0.62 -> ~0.56 ms): 65536-120 ~3.94 -> ~3.80, 16384-120 ~0.97 -> ~0.94, 4096 ~0.29 -> ~0.28.
# Then the GPU tests of blockdepend and the CLI on d0ce612.
. .device/preamble.sh
variants base spare items
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
left() { echo $(( 575 - ($(date +%s) - T0) )); }
bin_of() { [ $1 = new ] && echo $W/bin/spdnn || echo $W/spdnn-$1; }
VS="base spare items new"
for n in 16384 4096; do
  net=$W/g$n-120.bin
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  reps=30; [ $n = 16384 ] && reps=10
  for i in 1 2; do for v in $VS; do
    bd $n-120-$v$i $(bin_of $v) --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps
  done; done
  rm -f $net
done
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2; do for v in spare new; do
  bd 1024-120-$v$i $(bin_of $v) $OFF --warmup 3 --repetitions 30
done; done
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" $R/tests-blockdepend.txt | head -20
timeout 120 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt | tr '\n' ' ')"
images=$W/i65536.bin
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
net=$W/g65536-120.bin
timeout $(( $(left) - 90 )) $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "gen 65536 rc=$?"
for run in new1 spare1 items1 base1 new2; do
  v=${run%?}
  [ $(left) -gt 30 ] || { el "no time for 65536 $run"; break; }
  BD_TIMEOUT=$(( $(left) - 10 )) bd 65536-120-$run $(bin_of $v) --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
