#!/usr/bin/env bash
# Device call 4: the GPU tests of xy, snicit, hp and blockdepend after per-neuron biases;
# nets A-C classified by every method that takes them; blockdepend 65536-480 with and
# without an 8 GiB budget; racecheck on the straddling tiles with the cases named.
set -u
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
W=/tmp/spdnn-device
R=$OUT/r; mkdir -p $R
el "commit $(cat .device/COMMIT)"
bash .device/run.sh spdnn methods > $R/methods.txt 2>&1; el "unpacked rc=$?"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib:/usr/local/cuda/targets/x86_64-linux/lib
export SPDNN_DATA=$W/data SPDNN_PTX_CACHE=$W/ptx SPDNN_KERNELS_CU=$PWD/kernels-cu PROPTEST_CASES=${CASES:-4}
one() {
  local t=$1 limit=$2 name; name=$(basename $t); shift 2
  timeout $limit $t --include-ignored --test-threads=1 "$@" > $R/test-$name.log 2>&1
  local rc=$?
  el "$name rc=$rc $(grep -E '^test result' $R/test-$name.log | tail -1)"
  [ $rc -ne 0 ] && grep -E 'FAILED|panicked|rror' $R/test-$name.log | head -10 | cut -c1-400
}
for t in xy snicit hp blockdepend; do one $W/tests/spdnn-$t--gpu ${PER:-150} & done
wait
one $W/tests/spdnn-bf--gpu 60 trained
for net in A B C; do
  th=10; [ $net = C ] && th=6
  timeout 60 $W/bin/spdnn classify --network $W/data/nets/$net.safetensors --mnist-test \
    --methods cpu,bf,snig,cusparse,xy,hp,snicit,blockdepend --threshold $th --warmup 2 --repetitions 5 > $R/classify-$net.txt 2>&1
  el "classify $net rc=$?"; tail -9 $R/classify-$net.txt
done
for net in A B C; do
  th=10; [ $net = C ] && th=6
  for eps in 0.01 0.05; do
    timeout 30 $W/bin/spdnn classify --network $W/data/nets/$net.safetensors --mnist-test \
      --methods snicit --threshold $th --prune $eps --warmup 1 --repetitions 3 > $R/classify-$net-prune-$eps.txt 2>&1
    el "classify $net prune $eps rc=$?"; grep -E '^snicit' $R/classify-$net-prune-$eps.txt
  done
done
for budget in none 8GiB; do
  left=$(( ${END:-540} - ($(date +%s) - T0) )); [ $left -lt 60 ] && { el "no time for 65536-480 $budget"; continue; }
  extra=""; [ $budget != none ] && extra="--gpu-memory $budget"
  timeout $left $W/bin/spdnn infer --method blockdepend --generate-seed 0 --neurons 65536 --layers 480 --mnist \
    $extra --warmup 1 --repetitions 3 > $R/bd-65536-480-$budget.txt 2>&1
  el "65536-480 $budget rc=$?"; grep -E '^(categories|infer|plan|total|wall)' $R/bd-65536-480-$budget.txt
done
left=$(( ${END:-540} - ($(date +%s) - T0) ))
[ $left -gt 90 ] && { BENCH_TAG=sz-65536-480 timeout $(( left - 30 )) bash .device/run.sh bench --neurons 65536 --layers 480 \
  --methods sz --repetitions 3 --warmup 1 --no-official > $R/bench-sz-65536-480.log 2>&1
  el "sz 65536-480 rc=$?"; grep -E '^\| sz' $OUT/sz-65536-480/*.md; tail -2 $R/bench-sz-65536-480.log; }
left=$(( ${END:-540} - ($(date +%s) - T0) ))
[ $left -gt 30 ] && { timeout $left /usr/local/cuda/bin/compute-sanitizer --tool racecheck $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 --nocapture tiles_straddle > $R/racecheck-straddle.log 2>&1
  el "racecheck straddle rc=$?"; tail -6 $R/racecheck-straddle.log | cut -c1-300; }
left=$(( ${END:-540} - ($(date +%s) - T0) ))
[ $left -gt 150 ] && { BENCH_TAG=sz-65536-1920 timeout $left bash .device/run.sh bench --neurons 65536 --layers 1920 \
  --methods sz --repetitions 3 --warmup 1 --no-official > $R/bench-sz-65536-1920.log 2>&1
  el "sz 65536-1920 rc=$?"; grep -E '^\| sz' $OUT/sz-65536-1920/*.md; tail -2 $R/bench-sz-65536-1920.log; }
tar -C $OUT -czf $OUT/call4.tar.gz r $(cd $OUT && ls -d sz-* 2>/dev/null) 2>/dev/null; rm -rf $R $OUT/sz-*
el "done"
