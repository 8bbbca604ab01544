#!/usr/bin/env bash
# Device call 9 of the session 2026-11-28d (one H200), pack of 7ec352b (kernels as bfd7f46's;
# the plan's new default moves launch 1's cut through the layers a row a lane still fits:
# the official 1024 runs lanes 1-6, warps 7-120). blockdepend's and the CLI's GPU tests, then
# the new default against the old default's launches (--bd-cuts 4,8: lanes 1-4, tiles 5-8, warps
# 9-120), three rounds interleaved, and 1024-480 / -1920 once each.
# Predicted: as call 8's --bd-cuts 6 against the default: ~0.099-0.104 ms against
# ~0.106-0.111; every run matched.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt)"
grep -E "FAILED|panicked" -A5 $R/tests-blockdepend.txt | cut -c1-600 | head -20
PROPTEST_CASES=8 timeout 120 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-new$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-old$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-cuts 4,8
done
for l in 480 1920; do
  net=$W/g1024-$l.bin
  timeout 90 $W/bin/spdnn generate --neurons 1024 --layers $l --seed 0 --cache $net > $R/gen1024-$l.log 2>&1
  bd 1024-$l-new $W/bin/spdnn --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30
  bd 1024-$l-old $W/bin/spdnn --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30 --bd-cuts 4,8
  rm -f $net
done
python3 .device/launches.py $R 'bd-*.json' | tee $R/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
