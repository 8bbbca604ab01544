#!/usr/bin/env bash
# Pending device calls for issue 19 (written 2026-11-23 at 35302c2): GPU scaling with
# `spdnn bench --gpu-counts`, one network, input and truth per shape for every GPU count,
# then MPI with one rank per GPU against the threaded run. Copy into .device/ beside
# preamble.sh after `cargo xtask device-pack` (it packs spdnn-mpi when mpicc is here) and
# `git rev-parse --short HEAD > .device/COMMIT`; carry [".device"].
#
# What one call costs (2026-11-23c, nvidia-h200-x2): generating and checking 65536-120 takes
# about 150 s before the first method runs, 65536-480 about 160 s; each method's first run
# at 65536-480 prepares for ~30 s (blockdepend's compression), so keep to the fast methods
# and one shape per call at N = 65536. cusparse (92 s a run at 65536-120) is not worth a
# call; bf and snig take 3 s (120) to 46 s (1920) a run: give them their own call.
#
#   x4, call 1: COUNTS=1,2,4 SHAPES="65536:120" MPI_NP=4 END=560 bash .device/pending-scaling.sh
#   x4, call 2: COUNTS=1,2,4 SHAPES="65536:480" END=560 bash .device/pending-scaling.sh
#   x4, call 3: COUNTS=1,2,4 SHAPES="16384:1920" METHODS=blockdepend,snicit,xy,sz,hp ...
#   x2 or x4:   COUNTS=1,2[,4] SHAPES="65536:1920" METHODS=blockdepend TRUTH_ROWS=1 ...
#   x2 or x4:   SHAPES="65536:120" METHODS=bf,snig REPS=1 ...
# TRUTH_ROWS=R checks only the first R rows against the f64 oracle (no compressed oracle);
# the scaling line still says whether every count found the same categories.
set -u
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > $R/gpus.txt 2>&1
nvidia-smi topo -m > $R/topo.txt 2>&1
methods=${METHODS:-blockdepend,snicit,xy,sz,hp}
truth=(); [ -n "${TRUTH_ROWS:-}" ] && truth=(--cpu-rows "$TRUTH_ROWS" --no-compressed-truth)
for shape in ${SHAPES:-65536:120}; do
  n=${shape%:*}; l=${shape#*:}; tag=scaling-$n-$l
  left=$(( ${END:-560} - ($(date +%s) - T0) )); [ $left -lt 60 ] && { el "no time for $tag"; continue; }
  BENCH_TAG=$tag timeout $(( left - 15 )) bash .device/run.sh bench --no-official --neurons $n \
    --layers $l --methods $methods --gpu-counts ${COUNTS:-1,2} --warmup ${WARMUP:-1} \
    --repetitions ${REPS:-3} "${truth[@]}" > $R/$tag.log 2>&1
  el "$tag rc=$?"; grep -hE '^(\| [a-z]|- scaling)' $OUT/$tag/*.md 2>/dev/null | grep -v '^| method' | cut -c1-200
done
if [ -n "${MPI_NP:-}" ]; then
  # MPI, one rank per GPU, against the threaded run on the same GPUs (first shape, blockdepend).
  shape=${SHAPES%% *}; n=${shape%:*}; l=${shape#*:}
  gpus=$(seq -s, 0 $(( MPI_NP - 1 )))
  for mode in threads mpi; do
    left=$(( ${END:-560} - ($(date +%s) - T0) )); [ $left -lt 45 ] && { el "no time for $mode"; continue; }
    args=(infer --method blockdepend --generate-seed 0 --neurons $n --layers $l --mnist --warmup 1
          --repetitions 3 --categories-out $R/$mode.tsv)
    if [ $mode = threads ]; then
      timeout $(( left - 10 )) $W/bin/spdnn "${args[@]}" --gpus $gpus > $R/$mode.log 2>&1
    else
      NP=$MPI_NP timeout $(( left - 10 )) bash .device/run.sh mpi "${args[@]}" > $R/$mode.log 2>&1
    fi
    el "$mode rc=$?"; grep -E '^(infer|ranks|rank gpus|categories)' $R/$mode.log
  done
  cmp -s $R/threads.tsv $R/mpi.tsv && el "MPI and threads: identical categories" || el "MPI and threads DIFFER"
fi
tar -C $OUT -czf $OUT/scaling.tar.gz r $(cd $OUT && ls -d scaling-* 2>/dev/null) 2>/dev/null; rm -rf $R $OUT/scaling-*
el done
