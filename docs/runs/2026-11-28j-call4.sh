#!/usr/bin/env bash
# Device call 4 of the session 2026-11-28j (one H200). Pack: call 3's (cca47a3 + lanes).
# (1) trace: call 3's trace with stamps inside the warp's layer: setup (live rows, biases),
# the sums, the __syncwarp, the rest (outputs, votes, states). Call 3: a one-row layer of the
# last rows ~1850-2000 cycles, the slot wait ~280, the barrier ~50. Counted: the sums' loop
# (R=1, G=2) ~72 instructions an iteration of 4 steps, 4 iterations.
# (2) u1: the pack's kernel with the sums' k loop not unrolled (#pragma unroll 1; 115
# registers): if the one-row layer's time is instruction fetch (the launch holds ~117 KB of
# code), less code should not be slower.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants trace u1
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 60 $W/spdnn-trace infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/trace.out 2>&1
el "trace rc=$? lines $(grep -c '^T ' $R/trace.out)"
for i in 1 2 3; do
  bd 1024-120-lanes-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-u1-$i $W/spdnn-u1 $OFF120 --warmup 3 --repetitions 30
done
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
    print(f'layer {key[0]+1} rows {key[1]}: {n} warp-lines; med bar {m(\"bar\")} wait {m(\"wait\")} layer {m(\"layer\")} = setup {m(\"setup\")} sums {m(\"sums\")} sync {m(\"sync\")} tail {m(\"tail\")}')
" > $OUT/trace-summary.txt 2>&1; cat $OUT/trace-summary.txt
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
