#!/usr/bin/env bash
# Device call 8 of 2026-11-26 (one H100), after every merge of the session: every GPU test
# executable at full scale (PROPTEST_CASES=8, four at a time), then auto against blockdepend
# and snicit on 16384-1920 (60000 MNIST-recipe rows, generated with seed 0; the bench's JSON).
. .device/preamble.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > $R/gpu.txt; el "$(cat $R/gpu.txt)"
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 240 bash .device/run.sh tests > $R/tests-run.txt 2>&1
el "tests rc=$?"; cat $OUT/tests-summary.txt; grep -hE "^test .*FAILED|panicked at" $OUT/tests.log | head -20
cp $OUT/tests-summary.txt $R/
left=$(( 570 - ($(date +%s) - T0) ))
BENCH_TAG=n16384-1920 timeout $(( left - 10 )) bash .device/run.sh bench --no-official --neurons 16384 --layers 1920 \
  --methods auto,blockdepend,snicit --warmup 1 --repetitions 3 --cpu-rows 1 > $R/n16384-1920.log 2>&1
el "n16384-1920 rc=$?"; grep -hE '^\| [a-z]' $OUT/n16384-1920/*.md 2>/dev/null | grep -v '^| method' | cut -c1-200
grep -E "chose" $R/n16384-1920.log | head -2 | cut -c1-250; tail -3 $R/n16384-1920.log
tar -C $OUT -czf $OUT/call8.tar.gz r $(cd $OUT && ls -d n16384-1920 2>/dev/null); rm -rf $R $OUT/n16384-1920
el done
