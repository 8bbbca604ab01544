#!/usr/bin/env bash
# Device call 8 of the session 2026-11-28j (one H200). Pack: 55fc281. Two trace builds (call 7's
# stamps) whose sums read the weights differently, for timing only (their values are wrong,
# so rows die elsewhere; only the per-layer cycles of one-row warps are compared with call 7):
# trace1ld: one shared load a group and step (the other three weights derived from it by a
# multiply), 3 loads a step instead of 9; trace4v: one 16-byte load a group and step (a lane
# the step's 4 weights of a column, as a k-interleaved layout would store them).
# Question (call 7: the stage's copy is not what slows the sums): is a one-row layer's sums
# (~265 cycles an iteration of 4 steps, ~72 instructions, 36 of them shared loads) bound by
# the number of shared loads? If so, both drop toward ~100-150 an iteration.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants trace1ld trace4v
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in trace1ld trace4v; do
  timeout 60 $W/spdnn-$v infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/$v.out 2>&1
  el "$v rc=$? lines $(grep -c '^T ' $R/$v.out) $(grep -E 'categories|matched' $R/$v.out | tr '\n' ' ' | cut -c1-120)"
  grep '^T ' $R/$v.out | python3 -c "
import sys,collections
rows=[l.split() for l in sys.stdin]
d=collections.defaultdict(list)
for r in rows:
    f={k.rstrip('0123456789-'):int(k[len(k.rstrip('0123456789-')):]) for k in r[1:]}
    d[(f['l'],f['rows'],f['w']==0)].append(f)
for key in sorted(d):
    v=d[key]; n=len(v)
    m=lambda k: sorted(x[k] for x in v)[n//2]
    print(f'layer {key[0]+1} rows {key[1]} warp0 {key[2]}: {n} lines; med bar {m(\"bar\")} wait {m(\"wait\")} layer {m(\"layer\")} = setup {m(\"setup\")} sums {m(\"sums\")} sync {m(\"sync\")} tail {m(\"tail\")}')
" > $OUT/trace-summary-$v.txt 2>&1; head -30 $OUT/trace-summary-$v.txt
done
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
