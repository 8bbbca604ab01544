#!/usr/bin/env bash
# Device call 4 of the session 2026-11-28d (one H200), pack of a758d8f (the graph):
# (1) blockdepend's and the CLI's GPU tests on the graph commit (every timed pass of the
#     suites now replays a graph; the new test compares graph and calls bit for bit);
# (2) ncu's source counters of the warps launch (official 1024, layers 9-120) sampled every
#     32 cycles (--sampling-interval 0), for where its busy warp waits (2026-11-28c call 7 had
#     2112 samples, 62 % of them idle warps at the barrier);
# (3) 65536-120 on one GPU and each quarter of its rows alone (--rows 15000 --skip-rows S):
#     what each GPU of four runs, timed on one. Predicted: the quarters ~1.27-1.30 ms each
#     (four H200 ran GPU 0's slab in 1.303 ms, 2026-11-27k call 6), all rows ~4.21.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" -A3 $R/tests-blockdepend.txt | cut -c1-600 | head -20
PROPTEST_CASES=8 timeout 120 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 120 ncu --clock-control none --cache-control none --kernel-name bd_chain_warps --launch-skip 1 --launch-count 1 \
  --section WarpStateStats --section SourceCounters --sampling-interval 0 --import-source yes -o $R/warps \
  $W/bin/spdnn infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/ncu-warps.log 2>&1
el "ncu warps rc=$?"
ncu --import $R/warps.ncu-rep --page source --csv --print-source sass > $R/warps-sass.csv 2> $R/warps-sass.err
ncu --import $R/warps.ncu-rep --page details --csv > $R/warps-details.csv 2>&1
rm -f $R/warps.ncu-rep
net=$W/g65536.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
timeout 120 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $W/i65536.bin > $R/images65536.log 2>&1
el "generated"
IN="--weights $net --neurons 65536 --layers 120 --images $W/i65536.bin --warmup 2 --repetitions 5"
bd 65536-120-all $W/bin/spdnn $IN
for s in 0 15000 30000 45000; do
  bd 65536-120-slab$s $W/bin/spdnn $IN --rows 15000 --skip-rows $s
done
python3 .device/launches.py $R 'bd-65536-*.json' | tee $R/launches.md
rm -f $net $W/i65536.bin
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
