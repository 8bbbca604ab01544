#!/usr/bin/env bash
# Device call 3 of the session 2026-11-28h (a four-H200 machine, GPU 0 unless said). Pack: 1fb7980
# = circulant items (c7c12c9), the last default cut at 24 where layers 9-24 run tiles, and the L1
# prefetch of each layer's descriptor and group starts (or circulant table); variant nopf is the
# same without the prefetch (the kernel of the commit before).
# Why the prefetch: a tile's layer waited after its barrier on three L2 round trips in a row (its
# descriptor, its group starts or table, its first entries); in the launches after the first
# (4096's 9-24: ~3000 rows, one wave of 6-row tiles, 16 layers one after another, 0.061 ms) that
# latency is the launch. Predicted: ~0.4-0.6 us a layer of those launches: 4096-120 ~0.240 ->
# ~0.230 ms, 16384-120 -1 %, 65536 within its spread; 1024 unchanged (lanes and warps).
# Then the GPU tests on this pack and memcheck/racecheck of generated_challenge_networks.
. .device/preamble.sh
variants nopf
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
bin_of() { [ $1 = pf ] && echo $W/bin/spdnn || echo $W/spdnn-$1; }
for n in 4096 16384; do
  net=$W/g$n-120.bin
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  reps=30; k=3; [ $n = 16384 ] && { reps=10; k=2; }
  for i in $(seq $k); do for v in pf nopf; do
    bd $n-120-$v$i $(bin_of $v) --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps
  done; done
  rm -f $net
done
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2; do for v in pf nopf; do bd 1024-120-$v$i $(bin_of $v) $OFF --warmup 3 --repetitions 30; done; done
timeout 60 $W/tests/spdnn-cuda--gpu --include-ignored --test-threads=2 > $R/tests-cuda.txt 2>&1
el "cuda GPU tests rc=$? $(grep -E '^test result' $R/tests-cuda.txt)"
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -8
PROPTEST_CASES=8 timeout 60 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
for tool in memcheck racecheck; do
  [ $(( $(date +%s) - T0 )) -lt 480 ] || { el "no time for $tool"; break; }
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 generated_challenge_networks > $R/$tool.txt 2>&1
  el "$tool generated_challenge_networks rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool.txt | tr '\n' ' ')"
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
