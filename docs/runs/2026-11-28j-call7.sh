#!/usr/bin/env bash
# Device call 7 of the session 2026-11-28j (one H200). Pack: 55fc281. Two trace builds of the
# landing kernel (clock64 stamps as calls 3-4): trace (stages issued by thread 0 right after
# the layer's barrier, as the kernel does) and tracelate (thread 0 issues layer l+2's stage
# after its own warp's layer l). Question: is a one-row layer's sums (~1076 cycles where ~400
# are counted) slowed by the 16 KB bulk copy landing in shared memory during them? If so, the
# sums in tracelate drop toward ~400-600 for warps other than warp 0.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants trace tracelate
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in trace tracelate; do
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
