#!/usr/bin/env bash
# Device call 1 of the session 2026-11-29a (one H200). Pack: 9729127 + the warps launch's
# layer compiled whole and the dense quads (uncommitted; the pack's binary is `quads`).
# Variants: base0 (9729127's kernel), templ (bd_warps_layer<G, R>: setup, sums and epilogue
# compiled for the warp's groups and rows, no branch or reconvergence barrier a group and row
# slot; warps without rows skip the slot's mbarrier wait), and the pack's binary (templ + the
# dense layers stored in quads of inputs: a step's four weights of a lane one 16-byte load, 3
# shared loads a step of a one-row, two-group layer instead of 9).
# Floor and prediction. The warps launch (layers 7-27 of the official 1024, ~34 us by events)
# is a chain of ~21 layers of the longest-lived block: ~6 at 4 rows a warp (~4800 cycles) and
# ~15 at 1-2 rows (~2300: barrier 50, slot wait ~285, setup ~300, sums ~1076, epilogue ~550,
# 2026-11-28j calls 3-4); its work is ~70 M multiply-adds (~2 us at the fp32 rate).
# templ: setup ~300 -> ~150, epilogue ~550 -> ~200, the wait ~285 -> ~100: a one-row layer
# ~2300 -> ~1650 cycles, the launch ~34 -> ~26 us; 1024-120 ~0.077-0.085 -> ~0.070-0.077 ms.
# quads: the one-row sums ~1076 -> ~800 (call 8's timing-only trace4v), the launch -> ~23 us.
# The tiles read the quads as four scalar loads (dense tiles, --bd-placement shared): no change.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants base0 templ
ncu_k() { # NAME BIN SKIP ARGS...
  local name=$1 bin=$2 skip=$3; shift 3
  timeout 150 ncu -o $R/k-$name --kernel-name regex:bd_chain --launch-skip $skip --launch-count 1 --section SpeedOfLight \
    --section InstructionStats --section SchedulerStats --section WarpStateStats $bin infer --method blockdepend "$@" --warmup 0 --repetitions 1 > $R/ncu-$name.log 2>&1
  el "ncu $name rc=$?"
  ncu -i $R/k-$name.ncu-rep > $R/ncu-$name.txt 2>&1
  rm -f $R/k-$name.ncu-rep
  grep -E "Duration|Executed Instructions |Issued Warp" $R/ncu-$name.txt | head -3
}
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -12
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-base0-$i $W/spdnn-base0 $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-templ-$i $W/spdnn-templ $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-quads-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
done
bd 1024-120-shared-base0 $W/spdnn-base0 $OFF120 --bd-placement shared --warmup 3 --repetitions 30
bd 1024-120-shared-quads $W/bin/spdnn $OFF120 --bd-placement shared --warmup 3 --repetitions 30
ncu_k 1024-l2-base0 $W/spdnn-base0 1 $OFF120
ncu_k 1024-l2-templ $W/spdnn-templ 1 $OFF120
ncu_k 1024-l2-quads $W/bin/spdnn 1 $OFF120
for L in 1920; do
  net=$W/g1024-$L.bin
  timeout 90 $W/bin/spdnn generate --neurons 1024 --layers $L --seed 0 --cache $net > $R/gen1024-$L.log 2>&1
  bd 1024-$L-base0 $W/spdnn-base0 --weights $net --neurons 1024 --layers $L --mnist --warmup 3 --repetitions 30
  bd 1024-$L-quads $W/bin/spdnn --weights $net --neurons 1024 --layers $L --mnist --warmup 3 --repetitions 30
  rm -f $net
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
