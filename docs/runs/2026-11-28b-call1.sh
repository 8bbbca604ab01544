#!/usr/bin/env bash
# Device call 1 of the session 2026-11-28b (one H100): where a tail layer's time goes. The
# pack is d8b7c5e; spdnn-trace is d8b7c5e with kernels-cu/blockdepend.cu rewritten by
# trace-mk.py (clock64 at each layer's top, after its descriptor, after the items, after the
# barrier, after the retirement; printf at the tile's end). Official 1024-120, one run. No
# prediction for the trace (a measurement): the question is which of the four parts holds
# the ~3500-6000 cycles a layer of launches 3 and 4 (1-6 row tiles, 64 x 64 dense layers).
. .device/preamble.sh
variants trace
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 200 $W/spdnn-trace infer --method blockdepend $OFF --warmup 0 --repetitions 1 > $R/trace.txt 2> $R/trace.err
el "trace rc=$? $(grep -c LAYER $R/trace.txt) layer lines"
bd 1024-120 $W/bin/spdnn $OFF --warmup 3 --repetitions 20
python3 - <<'PY' $R/trace.txt
import sys, re, collections
lines = open(sys.argv[1]).read().splitlines()
acc = collections.defaultdict(list)
for l in lines:
    if l.startswith('LAYER'):
        d = dict(kv.split('=') for kv in l.split()[1:])
        acc[(int(d['first']), int(d['rows']) if int(d['rows']) < 8 else 8)].append([int(d[k]) for k in ('desc','items','sync','retire','gap')])
for key in sorted(acc):
    v = acc[key]; n = len(v)
    med = [sorted(x[i] for x in v)[n // 2] for i in range(5)]
    print(f"first={key[0]} rows={key[1]} n={n} median cycles desc/items/sync/retire/gap = {med}")
tiles = [dict(kv.split('=') for kv in l.split()[1:]) for l in lines if l.startswith('TILE')]
for f in sorted({t['first'] for t in tiles}):
    ts = [t for t in tiles if t['first'] == f]
    g0 = min(int(t['g0']) for t in ts); g1 = max(int(t['g1']) for t in ts)
    print(f"launch first={f}: {len(ts)} tiles, {(g1 - g0) / 1000:.1f} us from first tile start to last tile end; load median {sorted(int(t['load']) for t in ts)[len(ts)//2]} fin median {sorted(int(t['fin']) for t in ts)[len(ts)//2]}")
PY
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
