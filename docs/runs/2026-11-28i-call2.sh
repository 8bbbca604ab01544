#!/usr/bin/env bash
# Device call 2 of the session 2026-11-28i (one H200). Pack: e16b863's binaries (the kernels are read
# at run time from SPDNN_KERNELS_CU): "range" = the working tree's kernels-cu (bd_retire's row check
# as a range: a lane's largest and least output, 8 instructions a float4 where the flags took ~22),
# "base" = .device/kc-base (HEAD 6f4f27f's kernels-cu, the same .cu as e16b863).
# Call 1's ncu source counters of 4096: bd_retire is ~25 % of launch 1's warp instructions (the loop
# after layers 2-4 12 M of 86.8 M, the check after layer 1 ~9 M), ~35 % of launch 2's, ~10 % of
# launch 3's; launch 1 issues 0.69 a scheduler-cycle (mostly issue-bound).
# Predicted: launch 1 -10 % instructions -> ~-5 % time (0.172 -> ~0.163), launch 2 0.029 -> ~0.026,
# launch 3 -1-2 %: 4096-120 0.240 -> ~0.228 ms; 16384 and 65536 -2-4 %; 1024 unchanged (lanes and
# warps check in their own code).
# (Written after the call: this A/B measured nothing. SPDNN_KERNELS_CU serves the kernel-table
# checks only; the binaries embed their kernels with include_str!, so both sides and the tests ran
# e16b863's kernel: the range variant's runs loaded the base's PTX from the cache. Call 3 repeats
# it with two binaries.)
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
KB=$PWD/.device/kc-base; KR=$PWD/kernels-cu
ab() { # NAME ROUNDS ARGS...
  local name=$1 rounds=$2; shift 2
  for i in $(seq $rounds); do
    SPDNN_KERNELS_CU=$KB bd $name-base$i $W/bin/spdnn "$@"
    SPDNN_KERNELS_CU=$KR bd $name-range$i $W/bin/spdnn "$@"
  done
}
for n in 4096 16384; do
  net=$W/g$n-120.bin
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  reps=30; rounds=3; [ $n = 16384 ] && { reps=10; rounds=2; }
  ab $n-120 $rounds --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps
  rm -f $net
done
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
ab 1024-120 2 $OFF --warmup 3 --repetitions 30
timeout 60 $W/tests/spdnn-cuda--gpu --include-ignored --test-threads=2 > $R/tests-cuda.txt 2>&1
el "cuda GPU tests rc=$? $(grep -E '^test result' $R/tests-cuda.txt)"
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -8
PROPTEST_CASES=8 timeout 60 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
images=$W/i65536.bin
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
net=$W/g65536-120.bin
timeout 150 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "gen 65536 rc=$?"
ab 65536-120 2 --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5
rm -f $net
for t in generated_challenge_networks; do for tool in memcheck racecheck; do
  [ $(( $(date +%s) - T0 )) -lt 470 ] || { el "no time for $tool $t"; break; }
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 $t > $R/$tool-$t.txt 2>&1
  el "$tool $t rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-$t.txt | tr '\n' ' ')"
done; done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
