#!/usr/bin/env bash
# Device call 6 of the session 2026-11-27g (one H100), commit in .device/COMMIT, the last of
# the session's device time: blockdepend's GPU tests after its slot loop and format dispatch
# were written once (kernel change without a change of instructions but register names in
# three of four format sets, offline), and one timing of the generated 1024-120 and of
# random 4096-120 (fan-in 32, pairs: the set whose instructions moved) against call 4.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=1 TESTS_TIMEOUT_S=150 PROPTEST_CASES=8 timeout 160 bash .device/run.sh tests > $R/tests-run.txt 2>&1
el "tests rc=$? $(grep -E '^test executables' $R/tests-run.txt)"
grep -E '^FAIL|panicked' -A3 $R/tests-run.txt | head -10
( cd $OUT && tar czf tests.tar.gz tests.log tests-summary.txt r/tests-run.txt && rm -f tests.log r/tests-run.txt )
timeout 30 $W/bin/spdnn generate --neurons 1024 --layers 120 --seed 0 --cache $W/ab1024.bin > $R/gen1024.log 2>&1
timeout 30 $W/bin/spdnn infer --method blockdepend --weights $W/ab1024.bin --neurons 1024 --layers 120 --mnist \
  --warmup 2 --repetitions 5 --json > $R/bd-1024-120.json 2> $R/bd-1024-120.err
el "bd-1024-120 rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/bd-1024-120.json | tr -d ' \n')"
timeout 40 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/gen4096.log 2>&1
timeout 60 $W/bin/spdnn infer --method blockdepend --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist \
  --warmup 1 --repetitions 3 --json > $R/bd-r4096-120.json 2> $R/bd-r4096-120.err
el "bd-r4096-120 rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/bd-r4096-120.json | tr -d ' \n')"
timeout 60 $W/bin/spdnn infer --method blockdepend --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist \
  --bd-kernel-formats every --warmup 1 --repetitions 3 --json > $R/bd-r4096-120-every.json 2> $R/bd-r4096-120-every.err
el "bd-r4096-120-every rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/bd-r4096-120-every.json | tr -d ' \n')"
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
