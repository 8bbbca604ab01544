#!/usr/bin/env bash
# Device call 5 of the session 2026-11-28h (one H200). Pack: b38cb4d, the landing code: circulant
# items (c7c12c9's kernel), the last default cut at 24 where layers 9-24 run tiles (6021547), the
# prefetch of 2a1defe reverted. Call 4's table ran this code (its variant nopf); its GPU tests ran
# on c7c12c9 (call 1: old cuts) and with the prefetch (call 3: new cuts). Here: the GPU tests of the
# cuda, blockdepend and CLI crates on exactly this code, memcheck and racecheck of
# generated_challenge_networks and circulant_items_agree_with_their_gathers at the sanitize scale,
# and the 4096 row of the table again on this loan (predicted 0.236-0.244 ms: calls 2-4).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
timeout 60 $W/tests/spdnn-cuda--gpu --include-ignored --test-threads=2 > $R/tests-cuda.txt 2>&1
el "cuda GPU tests rc=$? $(grep -E '^test result' $R/tests-cuda.txt)"
PROPTEST_CASES=8 timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "blockdepend GPU tests rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -8
PROPTEST_CASES=8 timeout 60 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
for t in generated_challenge_networks circulant_items; do for tool in memcheck racecheck; do
  [ $(( $(date +%s) - T0 )) -lt 420 ] || { el "no time for $tool $t"; break; }
  SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 $t > $R/$tool-$t.txt 2>&1
  el "$tool $t rc=$? $(grep -E 'SUMMARY|^test result' $R/$tool-$t.txt | tr '\n' ' ')"
done; done
for l in 120 480 1920; do
  net=$W/g4096-$l.bin
  timeout 60 $W/bin/spdnn generate --neurons 4096 --layers $l --seed 0 --cache $net > $R/gen4096-$l.log 2>&1
  bd 4096-$l $W/bin/spdnn --weights $net --neurons 4096 --layers $l --mnist --warmup 3 --repetitions 30
  rm -f $net
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
