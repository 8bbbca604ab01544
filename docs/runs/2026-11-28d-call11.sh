#!/usr/bin/env bash
# Device call 11 of the session 2026-11-28d (one H200), pack of bdfe4c8: the mends after
# reading the diff. bd_chain_warps_loop derives the stages in flight at a tile's stop instead
# of carrying issued_end (a kernel change, the same waits); load's two tails are one; the
# cuda crate's whole-device synchronisations go through one guarded helper. The GPU tests of
# the three crates, racecheck and synccheck of the warps test at sanitize scale, and the
# official 1024-120 once. Predicted: all pass, clean, ~0.10 ms, 1812 categories.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
timeout 60 $W/tests/spdnn-cuda--gpu --include-ignored --test-threads=2 > $R/tests-cuda.txt 2>&1
el "cuda GPU tests rc=$? $(grep -E '^test result' $R/tests-cuda.txt)"
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" -A5 $R/tests-blockdepend.txt | cut -c1-600 | head -20
PROPTEST_CASES=8 timeout 60 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 60 compute-sanitizer --tool racecheck $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 narrow_dense_layers_run_a_row_a_warp > $R/racecheck.txt 2>&1
el "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|^test result' $R/racecheck.txt | tr '\n' ' ')"
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 60 compute-sanitizer --tool synccheck --num-cuda-barriers 4096 $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 narrow_dense_layers_run_a_row_a_warp > $R/synccheck.txt 2>&1
el "synccheck rc=$? $(grep -E 'ERROR SUMMARY|^test result' $R/synccheck.txt | tr '\n' ' ')"
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd 1024-120 $W/bin/spdnn $OFF --warmup 3 --repetitions 30
python3 .device/launches.py $R 'bd-*.json' | tee $R/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
