#!/usr/bin/env bash
# Device call 4 of the session 2026-11-28c (one H100). Call 3 (328048a): rows 4 a warp changed
# nothing (the warps launch 9-120 0.033-0.034 ms, ncu 34.6 us, 67k cycles at 1.98 GHz: ~3500
# cycles a layer over the ~19 layers the longest-lived block runs, against ~700-1500 counted
# for the sums). So the sums are not what a layer waits on. This call measures where a layer's
# cycles go: a build whose thread 0 prints, per layer, the cycles of the stage's issue, of the
# wait for the layer's slot, of its own warp's sums and epilogue, and of the barrier after
# (the slowest warp), with the block's busy warps (spdnn-trace; clock64 + printf, 48 bytes of
# local memory, so upper bounds). Hypothesis: the wait for the slot (the bulk copies' latency
# with two layers in flight) is most of it; a build with 4 slots (three layers in flight,
# spdnn-slots4) tests it: predicted the warps launch ~0.020 ms if so, unchanged if not.
# Racecheck of the warps test after c4871cb's __syncwarp (call 3 found the copy-out hazard).
. .device/preamble.sh
variants base trace slots4
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 60 $W/spdnn-trace infer --method blockdepend $OFF --warmup 0 --repetitions 1 > $R/trace.txt 2> $R/trace.err
el "trace rc=$? $(grep -c '^W ' $R/trace.txt) layer lines"
for i in 1 2; do
  bd 1024-120-new$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-slots4-$i $W/spdnn-slots4 $OFF --warmup 3 --repetitions 30
  bd 1024-120-base$i $W/spdnn-base $OFF --warmup 3 --repetitions 30
done
python3 .device/launches.py $R 'bd-1024-*.json' 2>&1 | tee $R/launches.md
python3 - $R/trace.txt <<'PY'
import sys, collections
lines = [l.split() for l in open(sys.argv[1]) if l.startswith(('W ', 'S '))]
# The first pass only: the first 132 start lines and the layer lines before the next pass.
starts = [l for l in lines if l[0] == 'S']
print('blocks', len(starts), 'start cycles median', sorted(int(l[3]) for l in starts[:132])[66], 'rows/warp', collections.Counter(l[4] for l in starts[:132]))
layers = collections.defaultdict(list)
seen = set()
for l in lines:
    if l[0] != 'W':
        continue
    key = (l[1], l[2])
    if key in seen:
        break
    seen.add(key)
    layers[int(l[2])].append([int(x) for x in l[3:]])
print('layer blocks busywarps(max) issue wait sums barrier (medians; max of the sum)')
for layer in sorted(layers):
    v = layers[layer]
    med = lambda i: sorted(x[i] for x in v)[len(v) // 2]
    tot = max(x[1] + x[2] + x[3] + x[4] for x in v)
    print(layer + 1, len(v), max(x[0] for x in v), med(1), med(2), med(3), med(4), tot)
PY
SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2 timeout 150 compute-sanitizer --tool racecheck $W/tests/spdnn-blockdepend--gpu \
  --include-ignored --test-threads=1 official_1024_network narrow_dense_layers_run_a_row_a_warp > $R/racecheck.txt 2>&1
el "racecheck rc=$? $(grep -E 'SUMMARY|^test result' $R/racecheck.txt | tr '\n' ' ')"
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
