#!/usr/bin/env bash
# Device call 2 of the session 2026-11-29a (one H200). Pack: 1f29df8 (the warps layer compiled
# whole, the dense quads). Variants: sp16 (plan::WARPS_SPREAD 16 instead of 4: a ~31-row tile
# over 16 warps of 2 rows instead of 8 of 4), traceq (1f29df8's kernel with clock64 stamps
# around each layer's barrier, slot wait and layer, printf from lane 0 of warps with rows,
# layers >= 9).
# Questions and predictions.
# (1) Where a warps layer goes now (traceq): call 1 took ~7 us off the launch; predicted a
#     one-row layer ~1300-1600 cycles (was ~1850-2000 with these stamps, 2026-11-28j call 3),
#     the wait ~285 only where warp 0 waits, the barrier ~50.
# (2) sp16: the first ~6 layers of the longest block take 4 rows a warp (the layer lasts the
#     slowest warp); 2 rows a warp over twice the warps: ~-1..-3 us on the warps launch if its
#     first layers are latency-bound, nothing if they are issue-bound.
# (3) The run's fixed part: the events' 0.071-0.076 ms against ncu's 48 + 34 us at base clocks;
#     ncu without clock control gives the launches at the run's clocks, and nsys (if there)
#     the graph's gaps. Predicted: ~5-8 us outside the two launches (memset node, graph
#     start, the gap between launches).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm,clocks.sm --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants sp16 traceq
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 60 $W/spdnn-traceq infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/trace.out 2>&1
el "trace rc=$? lines $(grep -c '^T ' $R/trace.out)"
grep '^T ' $R/trace.out | python3 -c "
import sys,collections
rows=[l.split() for l in sys.stdin]
d=collections.defaultdict(list)
for r in rows:
    f={k.rstrip('0123456789-'):int(k[len(k.rstrip('0123456789-')):]) for k in r[1:]}
    d[(f['l'],f['rows'])].append(f)
for key in sorted(d):
    v=d[key]; n=len(v)
    m=lambda k: sorted(x[k] for x in v)[n//2]
    mx=lambda k: max(x[k] for x in v)
    print(f'layer {key[0]+1} rows {key[1]}: {n} warp-lines, warps med {m(\"warps\")}, bar med {m(\"bar\")}, wait med {m(\"wait\")} max {mx(\"wait\")}, layer med {m(\"layer\")} max {mx(\"layer\")}')
" > $OUT/trace-summary.txt 2>&1; cat $OUT/trace-summary.txt | head -80
for i in 1 2 3; do
  bd 1024-120-head-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-sp16-$i $W/spdnn-sp16 $OFF120 --warmup 3 --repetitions 30
done
timeout 150 ncu --clock-control none -o $R/k-free --kernel-name regex:bd_chain --launch-count 2 --section SpeedOfLight \
  $W/bin/spdnn infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-free.log 2>&1
el "ncu free rc=$?"
ncu -i $R/k-free.ncu-rep > $R/ncu-free.txt 2>&1; rm -f $R/k-free.ncu-rep
grep -E "bd_chain|Duration|SM Frequency" $R/ncu-free.txt
if command -v nsys > /dev/null; then
  timeout 120 nsys profile -t cuda -o $R/nsys-1024 $W/bin/spdnn infer --method blockdepend $OFF120 --warmup 3 --repetitions 10 > $R/nsys.log 2>&1
  el "nsys rc=$?"
  timeout 60 nsys stats -r cuda_gpu_trace -f csv $R/nsys-1024.nsys-rep > $R/nsys-trace.csv 2>&1
  tail -40 $R/nsys-trace.csv | cut -c1-220
  rm -f $R/nsys-1024.nsys-rep $R/nsys-1024.sqlite
else
  el "no nsys: $(ls /usr/local/cuda/bin | tr '\n' ' ')"
fi
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
