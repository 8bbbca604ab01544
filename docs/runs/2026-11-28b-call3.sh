#!/usr/bin/env bash
# Device call 3 of the session 2026-11-28b (one H100): call 2 measured 4476900's staged tail
# launches at 0.023 / 0.029 / 0.027 ms against 0.021 / 0.032 / 0.027 (prediction ~0.015 /
# ~0.013 / ~0.012 missed). The trace build of 4476900 (trace-mk2.py) says where a staged
# layer's cycles go now, and whether the weights were staged. No prediction (a measurement).
. .device/preamble.sh
variants trace
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 200 $W/spdnn-trace infer --method blockdepend $OFF --warmup 0 --repetitions 1 > $R/trace.txt 2> $R/trace.err
el "trace rc=$? $(grep -c LAYER $R/trace.txt) layer lines"
python3 - <<'PY' $R/trace.txt
import sys, collections
lines = open(sys.argv[1]).read().splitlines()
keys = ('wait','desc','items','sync','issue','retire','gap')
acc = collections.defaultdict(list)
for l in lines:
    if l.startswith('LAYER'):
        d = dict(kv.split('=') for kv in l.split()[1:])
        acc[(int(d['first']), min(int(d['rows']), 8), d['staged'] != '0')].append([int(d[k]) for k in keys])
for key in sorted(acc):
    v = acc[key]; n = len(v)
    med = [sorted(x[i] for x in v)[n // 2] for i in range(len(keys))]
    print(f"first={key[0]} rows={key[1]} weights staged={key[2]} n={n} median cycles {'/'.join(keys)} = {med} sum {sum(med)}")
PY
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
