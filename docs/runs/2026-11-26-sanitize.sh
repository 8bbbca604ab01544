#!/usr/bin/env bash
# Device call of 2026-11-26 (one GPU, 16 cores): the whole sanitizer run in one call (issue 28).
# Every test of the 13 GPU test executables under racecheck, memcheck, initcheck and synccheck,
# at the sanitize scale (SPDNN_TEST_SCALE=sanitize, crates/gputest/src/scale.rs):
# `bash .device/run.sh sanitize`, one run per tool and test, nproc at a time, the longest
# expected first, every run within 300 s and all within what the call has left. The engine's
# two memory_exhausted tests are excluded (docs/reliability.md says why).
# Pack: cargo xtask device-pack --only cuda,adaptive,engine,bf,snig,cusparse,dense,xy,snicit,hp,blockdepend,sz,tcchain
# Goal: 0 findings, 0 failed, 0 timed out, 0 skipped. Out: sanitize.tar.gz (the summary, the
# table, every run's log and result line, the expected-time queue).
. .device/preamble.sh
if ls data/nets/*.safetensors >/dev/null 2>&1; then
  mkdir -p $W/data/nets && cp data/nets/*.safetensors $W/data/nets/
fi
el "gpu $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader) cores $(nproc) nets $(ls $W/data/nets 2>/dev/null | tr '\n' ' ')"
# run.sh kills a run at most 10 s after the budget; 20 s are left for that and the archive.
budget=$(( ${END:-570} - ($(date +%s) - T0) - 20 ))
SANITIZE_BUDGET_S=$budget bash .device/run.sh sanitize > $R/sanitize.txt 2>&1
el "sanitize rc=$? (budget $budget s)"
# The summary: the lines per tool and every run that was not clean, then the exclusions.
grep -vE '^excluded' $R/sanitize.txt | head -80
grep -E '^excluded' $R/sanitize.txt
cp $OUT/sanitize-table.md $OUT/gpu.txt $R/ 2>/dev/null
tar -C $OUT -czf $OUT/sanitize.tar.gz r sanitize; rm -rf $R $OUT/sanitize
el done
