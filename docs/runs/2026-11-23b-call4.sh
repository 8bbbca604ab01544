#!/usr/bin/env bash
# Device call 4 (2026-11-23): sz_mma_sum (54b477c), blockdepend exact items + shared opt-in (ea41dbd).
set -u
. .device/preamble.sh
export PROPTEST_CASES=${CASES:-4}
T=$W/tests
( timeout 200 $T/spdnn-sz--gpu --include-ignored --test-threads=2 > $R/sz-tests.log 2>&1; echo "sz rc=$?" >> $R/sz-tests.log ) &
timeout 200 $T/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/bd-tests.log 2>&1; el "bd tests rc=$?"
wait; el "sz tests: $(tail -1 $R/sz-tests.log)"
grep -E '^test result|FAILED|panicked' -A1 $R/bd-tests.log $R/sz-tests.log | cut -c1-400 | head -20
grep -E 'net [ABC]|spill|registers' $R/sz-tests.log | cut -c1-160 | head -12
timeout 60 $W/bin/spdnn classify --network $W/data/nets/B.safetensors --mnist-test --methods cpu,sz,sz+t4 --warmup 2 --repetitions 5 > $R/classify-B.txt 2>&1
el "classify B rc=$?"; tail -3 $R/classify-B.txt
b() { tag=$1; shift; BENCH_TAG=$tag timeout 150 bash .device/run.sh bench "$@" > $R/bench-$tag.log 2>&1
  el "$tag rc=$?"; grep -E '^\| (blockdepend|sz|xy|cusparse) ' $OUT/$tag/*.md 2>/dev/null | head -6; }
b off --neurons 1024 --layers 120 --methods blockdepend,sz,xy --repetitions 20 --warmup 3
b r4096 --network random --fan-in 32 --neurons 4096 --layers 120 --methods blockdepend,cusparse --cpu-rows 2000 --repetitions 2 --warmup 1 --no-official
b r16384 --network random --fan-in 32 --neurons 16384 --layers 120 --methods blockdepend,cusparse --cpu-rows 1000 --repetitions 1 --warmup 1 --no-official
san=/usr/local/cuda/bin/compute-sanitizer
left=$(( ${END:-560} - ($(date +%s) - T0) ))
[ $left -gt 60 ] && { PROPTEST_CASES=1 timeout $(( left - 15 )) $san --tool racecheck $T/spdnn-blockdepend--gpu --include-ignored --test-threads=1 exact_and_predicated > $R/racecheck-bd.log 2>&1
  el "racecheck bd exact items rc=$?"; grep -E 'RACECHECK SUMMARY|test result|hazard' $R/racecheck-bd.log | tail -3; }
tar -C $OUT -czf $OUT/call4.tar.gz r $(cd $OUT && ls -d off r4096 r16384 2>/dev/null) 2>/dev/null; rm -rf $R $OUT/off $OUT/r4096 $OUT/r16384
el done
