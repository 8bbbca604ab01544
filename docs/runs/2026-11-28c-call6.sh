#!/usr/bin/env bash
# Device call 6 of the session 2026-11-28c (one H100). Call 5 (bfc220d): exact (34 GPU tests,
# racecheck clean) but the warps launch 9-120 still 0.030-0.034 ms (ncu 31.4 us) although its
# sums lost half their instructions: the sums are not the launch's time. A trace build without
# printf inside the loop (spdnn-trace2, trace2.py beside this script): thread 0 stamps clock64
# after each layer's barrier (with the block's busy warps), after its slot's wait and after its
# own warp's layer into shared memory, and prints after the tile, with the block's start and
# end on the globaltimer. Question: is the launch's time the longest block's layers (the
# stamps), its start (carried rows, first stages), or blocks starting late?
. .device/preamble.sh
variants trace2
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 60 $W/spdnn-trace2 infer --method blockdepend $OFF --warmup 2 --repetitions 3 > $R/trace.txt 2> $R/trace.err
el "trace rc=$? $(grep -c '^B ' $R/trace.txt) block lines"
python3 - $R/trace.txt <<'PY'
import sys
blocks, layers = [], []
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == 'B':
        blocks.append([int(x) for x in f[1:]])
    elif f and f[0] == 'L':
        layers.append([int(x) for x in f[1:]])
# Passes: 132 blocks each (one tile a block); take the last pass.
grid = 132
passes = len(blocks) // grid
last = blocks[-grid:]
g0 = min(b[3] for b in last)
starts = sorted(b[3] - g0 for b in last)
ends = sorted(b[4] - g0 for b in last)
print(f"passes {passes}; block starts 0..{starts[-1]} ns (median {starts[grid // 2]}), ends {ends[0]}..{ends[-1]} ns (median {ends[grid // 2]})")
longest = max(last, key=lambda b: b[4] - g0)
print("longest block", longest[0], "rows", longest[2], "start", longest[3] - g0, "end", longest[4] - g0, "stopped at layer", longest[5])
mine = [l for l in layers if l[0] == longest[0]][-40:]
mine = [l for l in mine if True]
prev = 0
print("layer busy barrier_at wait sums(thread0) | deltas: to barrier, wait, own layer")
for l in mine[-25:]:
    _, layer, busy, bar, wait, done = l
    print(layer, busy, bar, wait, done, "|", bar - prev, wait - bar, done - wait)
    prev = done
PY
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
