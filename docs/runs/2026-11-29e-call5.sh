#!/usr/bin/env bash
# Device call 5 of the session 2026-11-29e (one H200). Pack 103e4b5, this session's last
# code: (1) ncu's speed of light, memory and warp-state sections for 4096-120's launch 1
# (layers 1-4 in 24-row shared tiles: 0.155 of the 0.209 ms span in call 3), for where its
# time goes (the input is 100 MB of binary CSR, 23.8 us at 4.25 TB/s); (2) every crate's GPU
# tests (TESTS_JOBS=4, PROPTEST_CASES=8), every method against the CPU reference after this
# session's changes (the planner's upload figure, the graph's span).
# Predicted: 14 of 14 test executables pass; launch 1 neither at DRAM bandwidth (~0.65 TB/s
# of input) nor at the SMs' issue rate: latency-bound on its shared atomics or staging.
. .device/preamble.sh
S=$W/bin/spdnn
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
net=$W/g4096-120.bin
timeout 60 $S generate --neurons 4096 --layers 120 --seed 0 --cache $net > $R/gen4096.log 2>&1
timeout 150 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain_shared --launch-skip 4 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
  $S infer --method blockdepend --weights $net --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 1 > $OUT/ncu-4096-launch1.txt 2>&1
el "ncu rc=$?"
rm -f $net
TESTS_JOBS=4 TESTS_TIMEOUT_S=300 PROPTEST_CASES=8 bash .device/run.sh tests > $OUT/tests.txt 2>&1; el "tests rc=$?"
tail -20 $OUT/tests.txt
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
