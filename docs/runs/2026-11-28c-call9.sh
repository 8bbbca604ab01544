#!/usr/bin/env bash
# Device call 9 of the session 2026-11-28c (one H100): the landing commit. Its kernels are
# bfc220d's instruction for instruction (c4d7849, c298f95 and a1726a1 change comments and move
# code into shared helpers; all 55 CUBINs of `--example registers --dump` are byte for byte the
# same), so this is the GPU tests on the commit itself: blockdepend's and the CLI's, and the
# official 1024-120 once (expected ~0.12-0.14 ms, 1812 categories).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" -A3 $R/tests-blockdepend.txt | cut -c1-600 | head -20
PROPTEST_CASES=8 timeout 120 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd 1024-120 $W/bin/spdnn $OFF --warmup 3 --repetitions 30
python3 .device/launches.py $R 'bd-*.json' 2>&1 | tee $R/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
