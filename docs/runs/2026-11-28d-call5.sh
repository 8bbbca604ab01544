#!/usr/bin/env bash
# Device call 5 of the session 2026-11-28d (one H200), pack of c869a81: tiles that shrink in
# the last wave of a launch of several waves (BD_TILE_GUIDE). Binaries: bin/spdnn (guide 2:
# ⌈left / (2 · blocks)⌉ rows a take once less than a wave is left), spdnn-g1 (⌈left / blocks⌉)
# and spdnn-g0 (whole tiles to the end: a758d8f's kernels). The .cu is the same file; the
# guide comes from the binary.
# Call 4 timed each quarter of 65536-120's rows alone (what a GPU of four runs): 1.266, 1.270,
# 1.212, 1.215 ms, launch 1 0.80-0.84 against a quarter of one GPU's 2.986 (0.746), launch 2
# 0.16-0.19 against 0.155: 2143 and 570 tiles of 7 rows over 132 blocks, 16.2 and 4.3 waves.
# Predicted: guide 2 takes launch 1 of a quarter to ~0.76-0.78 and launch 2 to ~0.16, the
# quarters to ~1.17-1.20 ms; one GPU's 65536-120 ~4.17-4.20 (65 and 16.6 waves lose less);
# 4096-120 (launch 1 in 4.2 waves) the same or a little less; the official 1024 unchanged (its
# launches are one wave); random 4096-120 unchanged (NVRTC gave the split instance of pairs
# 64 registers instead of 48: checked here).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants g0 g1
cp $W/bin/spdnn $W/spdnn-g2
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" -A3 $R/tests-blockdepend.txt | cut -c1-600 | head -20
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in g0 g2; do bd 1024-120-$v $W/spdnn-$v $OFF --warmup 3 --repetitions 30; done
timeout 60 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
for v in g0 g2; do bd r4096-120-$v $W/spdnn-$v --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 5; done
rm -f $W/r4096.bin
timeout 90 $W/bin/spdnn generate --neurons 4096 --layers 120 --seed 0 --cache $W/g4096.bin > $R/gen4096.log 2>&1
for v in g0 g1 g2; do bd 4096-120-$v $W/spdnn-$v --weights $W/g4096.bin --neurons 4096 --layers 120 --mnist --warmup 3 --repetitions 30; done
rm -f $W/g4096.bin
net=$W/g65536.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
timeout 120 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $W/i65536.bin > $R/images65536.log 2>&1
el "generated"
IN="--weights $net --neurons 65536 --layers 120 --images $W/i65536.bin --warmup 2 --repetitions 5"
for v in g0 g1 g2; do
  bd 65536-120-all-$v $W/spdnn-$v $IN
  for s in 0 15000; do bd 65536-120-slab$s-$v $W/spdnn-$v $IN --rows 15000 --skip-rows $s; done
done
python3 .device/launches.py $R 'bd-*.json' | tee $R/launches.md
rm -f $net $W/i65536.bin
timeout 120 ncu --clock-control none --cache-control none --kernel-name bd_chain_warps --launch-skip 1 --launch-count 1 \
  --section WarpStateStats --section SourceCounters --warp-sampling-interval 0 --import-source yes -o $R/warps \
  $W/bin/spdnn infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/ncu-warps.log 2>&1
el "ncu warps rc=$?"
ncu --import $R/warps.ncu-rep --page source --csv --print-source sass > $R/warps-sass.csv 2> $R/warps-sass.err
rm -f $R/warps.ncu-rep
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
