#!/usr/bin/env bash
# Device call 1 of the session 2026-11-29f (one H200). Pack 5623689 (HEAD): (1) every crate's
# GPU tests (TESTS_JOBS=4, PROPTEST_CASES=8), adaptive's first run on 5623689 (its planner's
# upload figure read from the model); (2) where a GPU of four loses its time at 65536-120
# (`--rows 15000 --skip-rows S`): the cuts swept on the slowest slab (15000) and a fast one
# (30000) and all rows: default 4,8,16; 4,8,12 (launch 3 the circulant layers 9-12 only,
# launch 4 from the first ELL layer 13); 4,8,12,16; 4,8,12,20; 4,6,8,12.
# Predicted: 14 of 14 pass. Cuts: 4,8,12 on a slab ~0.77 ms (launch 3 ~0.05, launch 4 spread
# with ~430 rows ~0.12) against 0.83-0.85; on all rows slower (launch 4's ~1700 rows in
# tiles through layers 13-26); 4,8,12,16 between.
. .device/preamble.sh
S=$W/bin/spdnn
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=300 PROPTEST_CASES=8 bash .device/run.sh tests > $OUT/tests.txt 2>&1; el "tests rc=$?"
tail -20 $OUT/tests.txt
images=$W/i65536.bin
timeout 100 $S images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
net=$W/g65536-120.bin
timeout 120 $S generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "65536 generated rc=$?"
IN="--weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5"
for cuts in 4,8,16 4,8,12 4,8,12,16 4,8,12,20 4,6,8,12; do
  c=${cuts//,/-}
  BD_TIMEOUT=60 bd all-c$c $S $IN --bd-cuts $cuts
  for s in 15000 30000; do
    BD_TIMEOUT=40 bd slab$s-c$c $S $IN --rows 15000 --skip-rows $s --bd-cuts $cuts
  done
done
rm -f $net $images
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
