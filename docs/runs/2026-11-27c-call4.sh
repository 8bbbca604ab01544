#!/usr/bin/env bash
# Device call 4 of the session 2026-11-27c (the four-H200 machine of call 3, still warm; one
# GPU used; commit 3e6fdd1): issue 29's pending bf runs (pending-issue29.sh: 65536-480,
# unconstrained and in 4 GiB with its weights streamed, the plan's transfer floor in the JSON).
# Output: call4.txt and memory.tar.gz (the JSON, categories and logs of both runs).
export END=230; timeout 270 bash .device/pending-issue29.sh > $OUT/call4.txt 2>&1; tail -40 $OUT/call4.txt
