#!/usr/bin/env bash
# Device call 3 of the session 2026-11-28j (one H200). Pack: cca47a3 + lanes (call 2's lanes
# variant, uncommitted; the producer change of call 2 measured nothing and is dropped).
# (1) trace: the warps launch with clock64 stamps per layer and warp (printf for layers >= 15,
# warps with rows): the barrier, the slot wait, the warp's own layer, and the time since the
# tile began. Question: where a layer of the last rows goes (~1.5 us a layer for 1-3 rows a
# block; 2026-11-28c's trace said barrier ~230, wait ~700-770, a one-row layer ~1850 cycles).
# (2) cuts 4,8,12 / 4,8,16 / 4,8,20 (the warps launch cut in two): how long the tail launch of
# the last few hundred rows takes on its own. (3) ncu source counters of the new lanes launch.
# (4) cuda and CLI GPU tests on the pack.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants trace
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"

timeout 60 $W/spdnn-trace infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/trace.out 2>&1
el "trace rc=$? lines $(grep -c '^T ' $R/trace.out)"
bd 1024-120-lanes $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
for c in 4,8,12 4,8,16 4,8,20; do
  bd 1024-120-cuts$c $W/bin/spdnn $OFF120 --bd-cuts $c --warmup 3 --repetitions 30
done
ncu_s() { # NAME SKIP ARGS...
  local name=$1 skip=$2; shift 2
  timeout 150 ncu -o $R/k-$name --kernel-name regex:bd_chain --launch-skip $skip --launch-count 1 --section SpeedOfLight --section SchedulerStats \
    --section WarpStateStats --section InstructionStats --section Occupancy --section LaunchStats --section SourceCounters \
    $W/bin/spdnn infer --method blockdepend "$@" --warmup 0 --repetitions 1 > $R/ncu-$name.log 2>&1
  el "ncu $name rc=$?"
  ncu -i $R/k-$name.ncu-rep > $R/ncu-$name.txt 2>&1
  ncu -i $R/k-$name.ncu-rep --page source --csv --print-source sass > $R/ncu-$name-sass.csv 2>&1
  rm -f $R/k-$name.ncu-rep
  grep -E "Duration|Executed Instructions |Issued Warp|No Eligible|Eligible Warps|Registers Per" $R/ncu-$name.txt | head -8
}
ncu_s 1024-l1 0 $OFF120
timeout 60 $W/tests/spdnn-cuda--gpu --include-ignored --test-threads=2 > $R/tests-cuda.txt 2>&1
el "cuda GPU tests rc=$? $(grep -E '^test result' $R/tests-cuda.txt)"
PROPTEST_CASES=8 timeout 90 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
grep '^T ' $R/trace.out | python3 -c "
import sys,collections
rows=[l.split() for l in sys.stdin]
d=collections.defaultdict(list)
for r in rows:
    f={k.rstrip('0123456789-'):int(k[len(k.rstrip('0123456789-')):]) for k in r[1:]}
    d[f['l']].append(f)
for l in sorted(d):
    v=d[l]; n=len(v)
    m=lambda k: sorted(x[k] for x in v)[n//2]
    mx=lambda k: max(x[k] for x in v)
    print(f'layer {l+1}: {n} warp-lines, rows med {m(\"rows\")}, top med {m(\"top\")} max {mx(\"top\")}, bar med {m(\"bar\")}, wait med {m(\"wait\")} max {mx(\"wait\")}, layer med {m(\"layer\")} max {mx(\"layer\")}')
" > $OUT/trace-summary.txt 2>&1; cat $OUT/trace-summary.txt
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
