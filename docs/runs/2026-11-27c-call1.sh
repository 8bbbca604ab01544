#!/usr/bin/env bash
# Device call 1 of the session 2026-11-27c (a four-GPU machine, commit 882b455): issue 28's
# whole sanitizer run in one call (pending-issue28.sh sanitize: adaptive at the sanitize scale
# bare, then every GPU test under racecheck, memcheck, initcheck and synccheck), after the
# GLARE check's sanitize-scale sizes (8674786) and bf's and snig's GLARE tests split in halves
# (518d369); the host memory sampled every 5 s.
T00=$(date +%s)
( while sleep 5; do echo "$(( $(date +%s) - T00 )) used_mib $(free -m | awk 'NR==2{print $3}') top $(ps -eo rss=,comm= --sort=-rss | head -2 | awk '{printf "%s:%d ", $2, $1/1024}')"; done ) > $OUT/memory.txt 2>&1 &
sampler=$!
free -g | head -2; nproc; nvidia-smi -L
END=568 bash .device/pending-issue28.sh sanitize
kill $sampler
echo "host memory, highest samples:"; sort -k3 -n -r $OUT/memory.txt | head -3
