#!/usr/bin/env bash
# Device call 7 of the session 2026-11-27k (one GPU): the pack of 5c76f0e, the session's final
# code (refactors of banks.rs after 8a4ce37 that keep every layout). Every GPU test
# executable, and random 4096-120 once (predicted ~229 ms, as 8a4ce37 in calls 4-5).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 280 bash .device/run.sh tests > $R/tests.txt 2>&1
el "tests rc=$? $(grep -c '^PASS' $R/tests.txt) passed, $(grep -c '^FAIL' $R/tests.txt) failed"
grep -E '^FAIL' -A12 $R/tests.txt | head -30
cp -r $OUT/tests $R/test-logs 2>/dev/null; rm -rf $OUT/tests
timeout 60 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
bd r4096-120 $W/bin/spdnn --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 3
rm -f $W/r4096.bin
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
