#!/usr/bin/env bash
# Device call 2 of the session 2026-11-27b (one GPU): where racecheck's time goes in
# blockdepend's exact/predicated items parts (181 s to over 200 s each in call 1 although
# the grid cap cut their rows 12x), from `spdnn infer` under racecheck on the same kind of
# problem (random fan-in-32, 2 layers, synthetic input, 8 blocks): compile, preprocessing
# and the run's stages; beside it the straddling-tile tests whole under racecheck with the
# spread grid capped too (host memory sampled).
. .device/preamble.sh
( while sleep 2; do echo "$(( $(date +%s) - T0 )) used_mib $(free -m | awk 'NR==2{print $3}') top $(ps -eo rss=,comm= --sort=-rss | head -2 | awk '{printf "%s:%d ", $2, $1/1024}')"; done ) > $OUT/memory.txt 2>&1 &
sampler=$!
san=/usr/local/cuda/bin/compute-sanitizer
S=$W/bin/spdnn; T=/tmp/nets; mkdir -p $T
for n in 4096 16384; do $S generate --random --neurons $n --layers 2 --fan-in 32 --seed 11 --cache $T/r$n.bin > /dev/null; done
el generated
inf() {  # label tool n rows extra...: spdnn infer under the tool (plain: none)
  local label=$1 tool=$2 n=$3 rows=$4; shift 4; local s=$(date +%s) pre=()
  [ "$tool" != none ] && pre=($san --tool $tool)
  "${pre[@]}" $S infer --method blockdepend --weights $T/r$n.bin --neurons $n --layers 2 \
    --synthetic-seed 11 --rows $rows --bias -0.35 --upper-bound 32 --warmup 0 --repetitions 1 \
    --bd-grid-blocks 8 "$@" > $OUT/inf-$label.log 2>&1
  echo "== $label ($tool, $n, $rows rows, $*): rc=$? $(( $(date +%s) - s )) s"
  grep -E '^(infer|stage|total|compile|matched|  )' $OUT/inf-$label.log | head -14
}
straddle() {  # test: whole under racecheck
  local s=$(date +%s)
  SPDNN_TEST_SCALE=sanitize SPDNN_TEST_ONE_RUN=1 PROPTEST_CASES=1 timeout 200 $san --tool racecheck \
    $W/tests/spdnn-blockdepend--gpu --include-ignored --exact $1 --test-threads=1 > $OUT/$1.log 2>&1
  echo "== $1 racecheck whole: rc=$? $(( $(date +%s) - s )) s; $(grep -E 'RACECHECK SUMMARY|test result' $OUT/$1.log | tr '\n' ' ')"
}
# Plain first (it fills the kernel cache), then racecheck: warm cache, so compile is out.
inf p16-64 none 16384 64
inf p4k-160-t1 none 4096 160 --bd-placement split --bd-tile 1
el "plain done"
( inf r16-64 racecheck 16384 64 > $OUT/a.txt ) &
( inf r16-8 racecheck 16384 8 > $OUT/b.txt ) &
( inf r4k-160-t1 racecheck 4096 160 --bd-placement split --bd-tile 1 > $OUT/c.txt ) &
( inf r4k-40-t1 racecheck 4096 40 --bd-placement split --bd-tile 1 > $OUT/d.txt ) &
( straddle tiles_straddle_the_end_of_1_and_2_rows > $OUT/e.txt ) &
( straddle tiles_straddle_the_end_of_7_rows > $OUT/f.txt ) &
wait
el "racecheck done"
cat $OUT/[a-f].txt
kill $sampler; sort -k3 -n -r $OUT/memory.txt | head -3
inf p16-64-pred none 16384 64 --bd-items predicated
inf r16-64-alone racecheck 16384 64
el done
tar -C $OUT -czf $OUT/logs.tar.gz --exclude logs.tar.gz . 2>/dev/null
# What happened: the bare `wait` above also waited for the memory sampler, so the call ran to
# its 600 s limit after every racecheck run had finished (in 53 s at most); a.txt-f.txt came
# back, the sampler's log and the two runs after `wait` did not. Later scripts wait for
# their runs by PID.
