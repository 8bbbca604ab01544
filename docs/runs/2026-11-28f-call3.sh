#!/usr/bin/env bash
# Device call 3 of the session 2026-11-28f (one H200), pack of 8ac0cd6: layer 1's tile scatter
# without a branch a nonzero (a nonzero past the chunk adds 0 to word `lane` of its row, distinct
# banks), and the lanes' scatter's spare entries likewise. Variant binaries: base (the pack of
# 8c20921, today's landing kernels) and leanp (call 2: the spare nonzeros' adds behind a branch).
# Call 2: leanp took 16384-120 1.042 -> 0.964 ms (launch 1 707 -> 626 us under ncu), 65536-120
# 4.204 -> 3.937, 4096-120 0.299 -> 0.290.
# Predicted: 8ac0cd6 at or below leanp on the tile shapes (its scatter has no BSSY/BRA/BSYNC an
# entry: ~6 instructions fewer a nonzero of ~30); at 1024 the lanes' last batch no longer puts
# ~2/3 of a warp's lanes on one word: launch 1 ~50 -> ~47 us, the official 1024 -3 us.
# Then the GPU tests of blockdepend and the CLI on 8ac0cd6.
. .device/preamble.sh
variants base leanp
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
left() { echo $(( 575 - ($(date +%s) - T0) )); }
bin_of() { [ $1 = new ] && echo $W/bin/spdnn || echo $W/spdnn-$1; }
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do for v in base new; do
  bd 1024-120-$v$i $(bin_of $v) $OFF --warmup 3 --repetitions 30
done; done
for v in base new; do
  timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 8 \
    --metrics gpu__time_duration.sum --csv $(bin_of $v) infer --method blockdepend $OFF --warmup 1 --repetitions 3 > $R/ncu-1024-$v.csv 2> $R/ncu-1024-$v.err
  el "ncu 1024 $v rc=$? $(grep gpu__time_duration $R/ncu-1024-$v.csv | awk -F'","' '{printf "%s ", $NF}' | tr -d '"')"
done
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" $R/tests-blockdepend.txt | head -20
timeout 120 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt | tr '\n' ' ')"
for n in 16384 4096; do
  net=$W/g$n-120.bin
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  reps=30; [ $n = 16384 ] && reps=10
  for i in 1 2; do for v in base leanp new; do
    bd $n-120-$v$i $(bin_of $v) --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps
  done; done
  rm -f $net
done
images=$W/i65536.bin
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
net=$W/g65536-120.bin
timeout $(( $(left) - 90 )) $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "gen 65536 rc=$?"
for run in new1 base1 leanp1 new2; do
  v=${run%?}
  [ $(left) -gt 30 ] || { el "no time for 65536 $run"; break; }
  BD_TIMEOUT=$(( $(left) - 10 )) bd 65536-120-$run $(bin_of $v) --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
