#!/usr/bin/env bash
# Device call 4 of the session 2026-11-28i (one H200). Pack: 6f4f27f + range + defer (uncommitted);
# variants: base (6f4f27f's kernel), range (call 3's: bd_retire's check as a range), defer = the
# pack's binary (range, and a tile skips its row check after a layer when the next layer of the
# launch runs circulant items: 4096's launch 1 checks after layer 4 only, not after 1, 2, 3;
# launch 2 after 8 only).
# Call 3: range took 65536-120 2.843 -> 2.623 ms, 16384 0.792 -> 0.750, 4096 0.232-0.242 ->
# 0.235-0.239 (ncu launch 1 171.4 -> 169.4 us, 86.8 -> 83.8 M instructions).
# Predicted for defer at 4096: launch 1 checks 183 k rows -> 26 k, computes 41 k more row-layers
# of 2-slot circulant items (about a check's work a row) and drops 6 barriers a tile: launch 1
# ~-4 % (0.172 -> ~0.165), launch 2 (5-8) 0.029 -> ~0.026; 4096-120 ~0.228. 16384 and 65536
# similar launch-1 gains (~-3 %).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants base range
ncu_k() { # NAME BIN SKIP ARGS...
  local name=$1 bin=$2 skip=$3; shift 3
  timeout 150 ncu -o $R/k-$name --kernel-name regex:bd_chain --launch-skip $skip --launch-count 1 --section SpeedOfLight \
    --section InstructionStats --section SchedulerStats $bin infer --method blockdepend "$@" --warmup 0 --repetitions 1 > $R/ncu-$name.log 2>&1
  el "ncu $name rc=$?"
  ncu -i $R/k-$name.ncu-rep > $R/ncu-$name.txt 2>&1
  rm -f $R/k-$name.ncu-rep
  grep -E "Duration|Executed Instructions |Issued Warp" $R/ncu-$name.txt | head -3
}
abc() { # NAME ROUNDS ARGS...
  local name=$1 rounds=$2; shift 2
  for i in $(seq $rounds); do
    bd $name-base$i $W/spdnn-base "$@"
    bd $name-range$i $W/spdnn-range "$@"
    bd $name-defer$i $W/bin/spdnn "$@"
  done
}
net=$W/g4096-120.bin
timeout 90 $W/bin/spdnn generate --neurons 4096 --layers 120 --seed 0 --cache $net > $R/gen4096.log 2>&1
abc 4096-120 3 --weights $net --neurons 4096 --layers 120 --mnist --warmup 3 --repetitions 30
for v in range defer; do for k in 0 1; do
  bin=$W/spdnn-range; [ $v = defer ] && bin=$W/bin/spdnn
  ncu_k 4096-l$((k+1))-$v $bin $k --weights $net --neurons 4096 --layers 120 --mnist
done; done
rm -f $net
net=$W/g16384-120.bin
timeout 90 $W/bin/spdnn generate --neurons 16384 --layers 120 --seed 0 --cache $net > $R/gen16384.log 2>&1
abc 16384-120 2 --weights $net --neurons 16384 --layers 120 --mnist --warmup 3 --repetitions 10
rm -f $net
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd 1024-120-defer $W/bin/spdnn $OFF --warmup 3 --repetitions 30
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -8
timeout 60 $W/tests/spdnn-cuda--gpu --include-ignored --test-threads=2 > $R/tests-cuda.txt 2>&1
el "cuda GPU tests rc=$? $(grep -E '^test result' $R/tests-cuda.txt)"
PROPTEST_CASES=8 timeout 60 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
for t in circulant_items generated_challenge_networks; do for tool in memcheck racecheck; do
  [ $(( $(date +%s) - T0 )) -lt 420 ] || { el "no time for $tool $t"; break; }
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 $t > $R/$tool-$t.txt 2>&1
  el "$tool $t rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-$t.txt | tr '\n' ' ')"
done; done
images=$W/i65536.bin
if [ $(( $(date +%s) - T0 )) -lt 440 ]; then
  timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
  net=$W/g65536-120.bin
  timeout 150 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
  el "65536 inputs and network rc=$?"
  for v in range defer; do
    bin=$W/spdnn-range; [ $v = defer ] && bin=$W/bin/spdnn
    [ $(( $(date +%s) - T0 )) -lt 560 ] && BD_TIMEOUT=30 bd 65536-120-$v $bin --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5
  done
fi
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
