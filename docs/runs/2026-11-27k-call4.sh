#!/usr/bin/env bash
# Device call 4 of the session 2026-11-27k (one H100): the pack of 8a4ce37 (the banks' slot
# order kept up to date entry by entry and its second rule run only where the first is more
# than 3 % above the least: the same wavefronts as d298460 by the layout's count, 1.019 a
# slot on random 4096, 1.000-1.018 on the challenge layers; slot choices may differ).
# 1. Every GPU test executable on 8a4ce37; memcheck over blockdepend's official, challenge
#    and random tests at the sanitize scale (the kernel is e39be6a's; the layouts are new).
# 2. Random 4096-120: new (7398ed8, 240.9 ms in call 1) against final (the pack),
#    interleaved, twice each. Predicted: final as d298460 in call 3, ~231 ms (1.27x).
# 3. The official 1024-120, 4096-120 and 16384-120 with the pack (predicted as call 3:
#    ~0.18, ~0.32, ~1.07 ms).
# 4. The preparation time the banks cost: 16384-1920 once under base (0ab8523; 9.8 s of
#    preprocessing in 2026-11-27j call 5) and final (d298460 took 47.7 s in call 3; the
#    layout on two cores here went 3.0 -> 1.5 s at 16384-120, the greedy 0.66 s): predicted
#    final ~12-15 s.
. .device/preamble.sh
variants new base
ln -sf $W/bin/spdnn $W/spdnn-final
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
nproc > $R/nproc.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 280 bash .device/run.sh tests > $R/tests.txt 2>&1
el "tests rc=$? $(grep -c '^PASS' $R/tests.txt) passed, $(grep -c '^FAIL' $R/tests.txt) failed"
grep -E '^FAIL' -A12 $R/tests.txt | head -30
cp -r $OUT/tests $R/test-logs 2>/dev/null; rm -rf $OUT/tests
SAN=/usr/local/cuda/bin/compute-sanitizer
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 100 $SAN --tool memcheck --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 official_1024_network generated_challenge_networks exact_random_networks > $R/memcheck.txt 2>&1
el "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^test result' $R/memcheck.txt | tr '\n' ' ')"
timeout 60 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
for round in 1 2; do
  for v in new final; do
    bd $v-r4096-120-r$round $W/spdnn-$v --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 3
  done
done
rm -f $W/r4096.bin
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd final-1024-120 $W/spdnn-final $OFF --warmup 3 --repetitions 30
for n in 4096 16384; do
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $W/g$n.bin > $R/gen$n.log 2>&1
  bd final-$n-120 $W/spdnn-final --weights $W/g$n.bin --neurons $n --layers 120 --mnist --warmup 3 --repetitions 30
  rm -f $W/g$n.bin
done
timeout 120 $W/bin/spdnn generate --neurons 16384 --layers 1920 --seed 0 --cache $W/g16384-1920.bin > $R/gen16384-1920.log 2>&1
el "gen 16384-1920 rc=$?"
for v in base final; do
  bd $v-16384-1920 $W/spdnn-$v --weights $W/g16384-1920.bin --neurons 16384 --layers 1920 --mnist --warmup 1 --repetitions 3
  el "$v 16384-1920 preprocessing $(grep -E '"preprocessing_ms"' $R/bd-$v-16384-1920.json | tr -d ' \n')"
done
rm -f $W/g16384-1920.bin
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
