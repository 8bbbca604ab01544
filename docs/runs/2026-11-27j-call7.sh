#!/usr/bin/env bash
# Device call 7 of the session 2026-11-27j (one GPU): the pack of commit .device/COMMIT
# (e39be6a, the session's last kernel change, whose GPU tests passed in call 5). The
# sanitizers over it at the sanitize scale: memcheck over blockdepend's official, challenge
# and random tests; racecheck over the official and challenge ones (the grouped row check
# reads the tile and writes tile.keep between the same barriers as before).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
SAN=/usr/local/cuda/bin/compute-sanitizer
export SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2
timeout 100 $SAN --tool memcheck --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 official_1024_network generated_challenge_networks exact_random_networks > $R/memcheck.txt 2>&1
el "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^test result' $R/memcheck.txt | tr '\n' ' ')"
timeout 120 $SAN --tool racecheck --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 official_1024_network generated_challenge_networks > $R/racecheck.txt 2>&1
el "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|^test result' $R/racecheck.txt | tr '\n' ' ')"
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
