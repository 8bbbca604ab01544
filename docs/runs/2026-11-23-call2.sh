#!/usr/bin/env bash
# Device call 2: the sz, engine and adaptive tests and the trained-net tests; the default
# methods on 1024-120 with figures; nets A-C classified; 65536-1920 in a 16 GiB budget;
# the sanitizers on a subset. Everything that comes back is packed into $OUT/call2.tar.gz.
set -u
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
W=/tmp/spdnn-device
R=$OUT/r; mkdir -p $R
el "commit $(cat .device/COMMIT)"
bash .device/run.sh spdnn methods > $R/methods.txt 2>&1; el "unpacked rc=$?"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib:/usr/local/cuda/targets/x86_64-linux/lib
export SPDNN_DATA=$W/data SPDNN_PTX_CACHE=$W/ptx SPDNN_KERNELS_CU=$PWD/kernels-cu PROPTEST_CASES=4
one() {
  local t=$1 limit=$2 name; name=$(basename $t); shift 2
  timeout $limit $W/tests/$t --include-ignored --test-threads=1 "$@" > $R/test-$name.log 2>&1
  local rc=$?
  el "$name $* rc=$rc $(grep -E '^test result' $R/test-$name.log | tail -1)"
  [ $rc -ne 0 ] && grep -E 'FAILED|panicked|held only|unclear|rror' $R/test-$name.log | head -12 | cut -c1-400
}
one spdnn-sz--gpu 120 &
one spdnn-bf--gpu 60 trained &
one spdnn-snig--gpu 60 trained &
one spdnn-cusparse--gpu 60 trained &
wait
one spdnn-adaptive--gpu 60
one spdnn-engine--gpu 60
OUT=$R timeout 45 bash .device/run.sh examples > $R/examples.txt 2>&1; el "examples rc=$?"; grep -E 'PASS|FAIL' $R/examples.txt
BENCH_TAG=default timeout 110 bash .device/run.sh bench --neurons 1024 --layers 120 \
  --methods bf,snig,cusparse,xy,snicit,hp,blockdepend,sz,sz+t4 --repetitions 5 --warmup 2 > $R/bench-default.log 2>&1
el "bench default rc=$?"; grep -E '^\| ' $OUT/default/*.md 2>/dev/null | head -24; tail -2 $R/bench-default.log
for net in A B C; do
  [ -f $W/data/nets/$net.safetensors ] || { el "no net $net"; continue; }
  timeout 40 $W/bin/spdnn classify --network $W/data/nets/$net.safetensors --mnist-test \
    --methods cpu,bf,snig,cusparse --warmup 2 --repetitions 5 > $R/classify-$net.txt 2>&1
  el "classify $net rc=$?"; tail -8 $R/classify-$net.txt
done
timeout ${BUDGET_S:-150} $W/bin/spdnn infer --method blockdepend --generate-seed 0 --neurons 65536 --layers 1920 --mnist \
   --gpu-memory 16GiB --warmup 1 --repetitions 3 > $R/bd-65536-1920-16GiB.txt 2>&1
el "16GiB rc=$?"; tail -22 $R/bd-65536-1920-16GiB.txt
left=$(( ${END:-440} - ($(date +%s) - T0) ))
if [ $left -gt 60 ]; then
  SANITIZE_BUDGET_S=$left SANITIZE_TIMEOUT_S=$left SANITIZE_JOBS=6 SANITIZE_CASES=1 \
    SANITIZE_TOOLS="memcheck racecheck initcheck synccheck" \
    bash .device/run.sh sanitize exact_random_networks > $R/sanitize.txt 2>&1
  el "sanitize rc=$?"; head -40 $R/sanitize.txt
fi
cp -r $OUT/sanitize $R/ 2>/dev/null
for p in $(grep -l "mma.sync" -r $W/ptx 2>/dev/null | head -4); do
  /usr/local/cuda/bin/ptxas -arch=sm_90 $p -o /tmp/sz.cubin 2>>$R/sass.txt && \
    { echo "== $p"; /usr/local/cuda/bin/cuobjdump -sass /tmp/sz.cubin | grep -oE '(HMMA|HGMMA)[.A-Z0-9]*' | sort | uniq -c; } >> $R/sass.txt
done; el "sass"; cat $R/sass.txt 2>/dev/null | head -12
tar -C $OUT -czf $OUT/call2.tar.gz r default 2>/dev/null; rm -rf $R $OUT/default $OUT/sanitize
el "done"
