#!/usr/bin/env bash
# Device call 2 of the session 2026-11-29f (one H200). Pack: 5623689 with the spread launch's
# layer made shorter (kernels-cu/blockdepend.cu, uncommitted; diff beside this call):
# (a) the ranking keeps each live rank's position in shared memory, so a unit's chunk is read
# there instead of ranking the flags a second time (one L2 round trip and two barriers a layer
# fewer); (b) the chunk's rows copied in with cp.async, every copy in flight (was 4 plain loads
# at a time: 3 L2 waits for 7 rows of 4096 floats); (c) the unit's ELL entries, group starts and
# base unit asked of L1 (prefetch.global.L1) while the rows arrive, so an item's ring of 8
# finds them there (it waited on L2 ~4 times for 28 slots). `base` = 5623689's binary.
# Predicted: a spread layer ~8-15 us -> ~5-9. 65536-120 all rows: launch 4 (17-120, spread)
# 0.141 -> ~0.09-0.10 ms; a slab (--rows 15000): launch 4 0.075-0.10 -> ~0.05-0.065; with
# --bd-cuts 4,8,12 the slab's 13-120 spread 0.19-0.24 -> ~0.13-0.16. Launches 1-3 unchanged.
# blockdepend's 37 GPU tests pass (the spread's outputs bit for bit the tiles'); racecheck and
# memcheck of the challenge spread test clean.
. .device/preamble.sh
S=$W/bin/spdnn
variants base
B=$W/spdnn-base
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_TIMEOUT_S=300 PROPTEST_CASES=8 SPDNN_TESTS=spdnn-blockdepend bash .device/run.sh tests > $OUT/tests.txt 2>&1; el "tests rc=$?"
tail -4 $OUT/tests.txt
for tool in racecheck memcheck; do
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 \
    $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=1 spread_launches_agree_with_tiles_on_challenge_networks \
    > $OUT/$tool-spread-challenge.txt 2>&1; el "$tool rc=$?"; tail -3 $OUT/$tool-spread-challenge.txt
done
images=$W/i65536.bin
timeout 100 $S images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
net=$W/g65536-120.bin
timeout 120 $S generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "65536 generated rc=$?"
IN="--weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5"
for round in 1 2; do
  for v in new base; do
    bin=$S; [ $v = base ] && bin=$B
    BD_TIMEOUT=60 bd all-$v-$round $bin $IN
    BD_TIMEOUT=60 bd all-c12-$v-$round $bin $IN --bd-cuts 4,8,12,16
    for s in 0 15000 30000 45000; do
      BD_TIMEOUT=40 bd slab$s-$v-$round $bin $IN --rows 15000 --skip-rows $s
    done
    BD_TIMEOUT=40 bd slab15000-c12-$v-$round $bin $IN --rows 15000 --skip-rows 15000 --bd-cuts 4,8,12
  done
done
rm -f $net $images
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
