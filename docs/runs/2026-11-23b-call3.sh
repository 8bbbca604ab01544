#!/usr/bin/env bash
# Device call 3 (2026-11-23): sz's per-MMA sums (966bbe4) and blockdepend's exact items (ffe4811).
set -u
. .device/preamble.sh
export PROPTEST_CASES=${CASES:-4}
T=$W/tests
( timeout 200 $T/spdnn-sz--gpu --include-ignored --test-threads=2 > $R/sz-tests.log 2>&1; echo "sz rc=$?" >> $R/sz-tests.log ) &
timeout 200 $T/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/bd-tests.log 2>&1; el "bd tests rc=$?"
wait; el "sz tests: $(tail -1 $R/sz-tests.log)"
grep -E '^test result|FAILED|panicked' $R/bd-tests.log $R/sz-tests.log | cut -c1-300 | head -20
grep -E 'exact_and_predicated|net [ABC]' $R/bd-tests.log $R/sz-tests.log | cut -c1-200 | head
for net in A B C; do
  timeout 60 $W/bin/spdnn classify --network $W/data/nets/$net.safetensors --mnist-test \
    --methods cpu,hp,sz,sz+t4 --warmup 2 --repetitions 5 > $R/classify-$net.txt 2>&1
  el "classify $net rc=$?"; tail -4 $R/classify-$net.txt
done
b() { tag=$1; shift; BENCH_TAG=$tag timeout 120 bash .device/run.sh bench "$@" > $R/bench-$tag.log 2>&1
  el "$tag rc=$?"; grep -E '^\| (blockdepend|sz|xy) ' $OUT/$tag/*.md 2>/dev/null | head -4; grep -E 'items|launches' $R/bench-$tag.log | head -2 | cut -c1-250; }
b off-auto --neurons 1024 --layers 120 --methods blockdepend,sz --repetitions 20 --warmup 3
b off-pred --neurons 1024 --layers 120 --methods blockdepend --bd-items predicated --repetitions 20 --warmup 3
for shape in 16384:24 4096:120; do n=${shape%:*}; l=${shape#*:}
  b r$n-$l-auto --network random --fan-in 32 --neurons $n --layers $l --methods blockdepend --cpu-rows 2000 --repetitions 2 --warmup 1 --no-official
  b r$n-$l-pred --network random --fan-in 32 --neurons $n --layers $l --methods blockdepend --bd-items predicated --cpu-rows 2000 --repetitions 2 --warmup 1 --no-official
done
left=$(( ${END:-560} - ($(date +%s) - T0) ))
[ $left -gt 150 ] && b r16384-120-auto --network random --fan-in 32 --neurons 16384 --layers 120 --methods blockdepend --cpu-rows 1000 --repetitions 2 --warmup 1 --no-official
san=/usr/local/cuda/bin/compute-sanitizer
left=$(( ${END:-560} - ($(date +%s) - T0) ))
[ $left -gt 60 ] && { PROPTEST_CASES=1 timeout $(( left - 20 )) $san --tool memcheck $T/spdnn-blockdepend--gpu --include-ignored --test-threads=1 exact_and_predicated > $R/memcheck-bd.log 2>&1
  el "memcheck bd exact items rc=$?"; grep -E 'ERROR SUMMARY|test result' $R/memcheck-bd.log | tail -3; }
tar -C $OUT -czf $OUT/call3.tar.gz r $(cd $OUT && ls -d off-* r1* r4* 2>/dev/null) 2>/dev/null; rm -rf $R $OUT/off-* $OUT/r1* $OUT/r4*
el done
