#!/usr/bin/env bash
# Device call 3: every GPU test executable (the refactor of the row flags and examples), the
# reuse examples, the random-network bench at 4096 and 16384 (cusparse, blockdepend), racecheck
# on the straddling tiles, then sz and sz+t4 over the shapes while time is left.
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
  [ $rc -ne 0 ] && grep -E 'FAILED|panicked|held only|unclear|rror' $R/test-$name.log | head -10 | cut -c1-400
}
for t in $W/tests/*; do
  case $(basename $t) in spdnn-cuda--gpu|spdnn-engine--gpu|spdnn-adaptive--gpu) continue;; esac
  while [ "$(jobs -rp | wc -l)" -ge 4 ]; do wait -n; done
  one $t ${PER:-170} &
done
wait
one $W/tests/spdnn-engine--gpu 60
OUT=$R timeout 45 bash .device/run.sh examples > $R/examples.txt 2>&1; el "examples rc=$?"; grep -E 'PASS|FAIL' $R/examples.txt
for n in 4096 16384; do
  left=$(( ${END:-540} - ($(date +%s) - T0) )); [ $left -lt 45 ] && { el "no time for random $n"; continue; }
  BENCH_TAG=random-$n timeout $left bash .device/run.sh bench --network random --fan-in 32 --neurons $n --layers 120 \
    --methods cusparse,blockdepend --repetitions 2 --warmup 1 --no-official > $R/bench-random-$n.log 2>&1
  el "bench random $n rc=$?"; grep -E '^\| ' $OUT/random-$n/*.md 2>/dev/null | head -6; tail -2 $R/bench-random-$n.log
done
timeout 90 /usr/local/cuda/bin/compute-sanitizer --tool racecheck $W/tests/spdnn-blockdepend--gpu --include-ignored \
  --test-threads=1 tiles_straddle > $R/racecheck-straddle.log 2>&1
el "racecheck straddle rc=$?"; grep -E 'SUMMARY|test result|rror' $R/racecheck-straddle.log | head -5
for shape in 1024-480 1024-1920 4096-120 4096-480 4096-1920 16384-120 16384-480 16384-1920 65536-120; do
  left=$(( ${END:-540} - ($(date +%s) - T0) )); [ $left -lt 40 ] && { el "no time for sz $shape"; continue; }
  BENCH_TAG=sz-$shape timeout $left bash .device/run.sh bench --neurons ${shape%-*} --layers ${shape#*-} \
    --methods sz,sz+t4 --repetitions 3 --warmup 1 --no-official > $R/bench-sz-$shape.log 2>&1
  el "sz $shape rc=$?"; grep -E '^\| sz' $OUT/sz-$shape/*.md 2>/dev/null | head -2
done
tar -C $OUT -czf $OUT/call3.tar.gz r $(cd $OUT && ls -d random-* sz-* 2>/dev/null) 2>/dev/null
rm -rf $R $OUT/random-* $OUT/sz-*
el "done"
