#!/usr/bin/env bash
# Device call 10 of the session 2026-11-27h (one H100), commit in .device/COMMIT: every GPU
# test executable on the session's last commit. Since b5321c6 (call 9: blockdepend's and the
# engine's tests) only the review's mends: the plan's layer-1 rule folded into the general
# choice, the scatters' row walk as one helper (every instance's .text byte for byte the
# same offline), CommonBase in the layout (the same forms).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 280 bash .device/run.sh tests > $R/tests-run.txt 2>&1
el "tests rc=$? $(grep -E '^test executables' $R/tests-run.txt)"
grep -E '^FAIL|panicked' -A3 $R/tests-run.txt | head -10
( cd $OUT && tar czf tests.tar.gz tests.log tests-summary.txt r/tests-run.txt 2>/dev/null; rm -f tests.log r/tests-run.txt )
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 60 $W/bin/spdnn infer --method blockdepend $OFF --warmup 3 --repetitions 20 --json > $R/bd-1024-120.json 2> $R/bd-1024-120.err
el "bd-1024-120 rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-1024-120.json | tr -d ' \n')"
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
