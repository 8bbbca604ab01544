#!/usr/bin/env bash
# Device call 2 of 2026-11-23 (second series, run at bb5132e on an H200), written the session
# before as pending-call2.sh; the sz trained-net test was added before it ran.
# Pending device call 2 (after 2026-11-23b-call1.sh, same pack): sz and sz+t4 on the trained
# nets A-C beside cpu and hp; sz+t4 at 65536-480; racecheck on blockdepend's straddling
# tiles and on hp's exact random suite; an ncu profile of blockdepend on the random
# 16384 network and blockdepend cut after every layer there (issue 12). Run with command
# `END=540 bash .device/2026-11-23b-call2.sh` (preamble.sh beside it), carry [".device"].
set -u
. .device/preamble.sh
export PROPTEST_CASES=2
timeout 120 $W/tests/spdnn-sz--gpu --include-ignored --test-threads=1 --nocapture trained_networks_a_b_c > $R/sz-trained.log 2>&1
el "sz trained rc=$?"; grep -E 'panicked|net [ABC]|FAILED|^test ' -A3 $R/sz-trained.log | cut -c1-400 | head -30
for net in A B C; do
  timeout 90 $W/bin/spdnn classify --network $W/data/nets/$net.safetensors --mnist-test \
    --methods cpu,cpu+compress,hp,sz,sz+t4 --warmup 2 --repetitions 5 > $R/classify-$net.txt 2>&1
  el "classify $net rc=$?"; tail -7 $R/classify-$net.txt
done
left=$(( ${END:-540} - ($(date +%s) - T0) ))
[ $left -gt 200 ] && { BENCH_TAG=szt4-65536-480 timeout $(( left - 150 )) bash .device/run.sh bench --neurons 65536 --layers 480 \
  --methods sz+t4 --repetitions 3 --warmup 1 --no-official > $R/bench-szt4-65536-480.log 2>&1
  el "sz+t4 65536-480 rc=$?"; grep -E '^\| sz' $OUT/szt4-65536-480/*.md; tail -2 $R/bench-szt4-65536-480.log; }
# Issue 12's open bar (random 16384-120, 3.2x cusparse): what limits bd_chain_split_wide
# there (L2 or DRAM weight reads, latency, occupancy). 2000 rows; the profiled launch is the
# second, layers 9-40 (134 MB of weights, as in the full run).
left=$(( ${END:-540} - ($(date +%s) - T0) ))
[ $left -gt 150 ] && { cd $W && timeout 120 /usr/local/cuda/bin/ncu --kernel-name regex:bd_chain --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
  $W/bin/spdnn bench --network random --fan-in 32 --neurons 16384 --layers 40 --rows 2000 --methods blockdepend \
  --bd-cuts 8 --repetitions 1 --warmup 1 --no-official --out $R/ncu-bench > $R/ncu-random-16384.txt 2>&1
  el "ncu random 16384 rc=$?"; grep -E 'Duration|Throughput|Hit Rate|Achieved Occupancy|Registers|Stall|Block Limit' $R/ncu-random-16384.txt | head -30; cd - >/dev/null; }
# Issue 12: are the random nets' weights read from memory rather than L2 because the blocks
# of one launch are spread over many layers (a segment of 64 layers of 4.2 MB at 16384 is
# 269 MB, far above the 50 MB L2)? Cutting after every layer keeps every block on one layer.
# Predicted, if so: 16384 several times faster a layer, 4096 somewhat faster; if not, the
# carries (2 x 64 KB a row and layer) make it slightly slower.
for shape in 4096:120 16384:24; do
  n=${shape%:*}; l=${shape#*:}
  for cuts in default every; do
    left=$(( ${END:-540} - ($(date +%s) - T0) )); [ $left -lt 120 ] && { el "no time for random $n $cuts"; continue; }
    extra=(); [ $cuts = every ] && extra=(--bd-cuts "$(seq -s, 1 $(( l - 1 )))")
    BENCH_TAG=random-$n-$cuts timeout 100 bash .device/run.sh bench --network random --fan-in 32 --neurons $n --layers $l \
      --methods blockdepend "${extra[@]}" --cpu-rows 2000 --repetitions 2 --warmup 1 --no-official > $R/bench-random-$n-$cuts.log 2>&1
    el "random $n-$l cuts $cuts rc=$?"; grep -E '^\| blockdepend' $OUT/random-$n-$cuts/*.md 2>/dev/null | head -2; tail -1 $R/bench-random-$n-$cuts.log
  done
done
san=/usr/local/cuda/bin/compute-sanitizer
left=$(( ${END:-540} - ($(date +%s) - T0) ))
# The one case that ends the process under racecheck (7 rows, tiles of at most 128), alone,
# with the tool's own log and the exit status (docs/reliability.md).
[ $left -gt 60 ] && { SPDNN_STRADDLE_ONLY=7,128 timeout $(( left / 2 )) $san --tool racecheck --log-file $R/racecheck-straddle-tool.log \
  $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=1 --nocapture tiles_straddle > $R/racecheck-straddle.log 2>&1
  el "racecheck straddle 7,128 rc=$?"; tail -5 $R/racecheck-straddle.log | cut -c1-300; tail -8 $R/racecheck-straddle-tool.log | cut -c1-300; }
left=$(( ${END:-540} - ($(date +%s) - T0) ))
[ $left -gt 40 ] && { timeout $(( left - 10 )) $san --tool racecheck $W/tests/spdnn-hp--gpu \
  --include-ignored --test-threads=1 exact_random > $R/racecheck-hp.log 2>&1
  el "racecheck hp rc=$?"; grep -E 'RACECHECK SUMMARY|test result' $R/racecheck-hp.log | tail -4; }
tar -C $OUT -czf $OUT/pending-call2.tar.gz r $(cd $OUT && ls -d szt4-* random-* 2>/dev/null) 2>/dev/null; rm -rf $R $OUT/szt4-* $OUT/random-*
el done
