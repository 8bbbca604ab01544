#!/usr/bin/env bash
# Device call 7 of the session 2026-11-28c (one H100). Call 6's stamps (trace2, bfc220d): every
# layer of a long-lived block waits ~700-770 cycles for its slot (the copy issued two layers
# earlier, ~5000 cycles before, has not landed), twice 13600 and 45000 cycles; its own warp's
# layer takes ~1850 cycles at one row and ~3300-4100 at four, where ~400-900 were counted; the
# barrier ~230. Two checks: (1) 8 slots (seven layers in flight; spdnn-slots8, 144 KB a block
# at 64 wide): if the copies' latency is the wait, it goes and the launch drops by ~15-30 %;
# (2) ncu's source view of the warps kernel (stall reasons by instruction) for the ~1850
# cycles. Base for the same call: the pack (bfc220d).
. .device/preamble.sh
variants slots8
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-new$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-slots8-$i $W/spdnn-slots8 $OFF --warmup 3 --repetitions 30
done
python3 .device/launches.py $R 'bd-1024-*.json' 2>&1 | tee $R/launches.md
for v in new slots8; do
  bin=$W/bin/spdnn; [ $v = slots8 ] && bin=$W/spdnn-slots8
  timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 6 --launch-count 6 \
    --metrics gpu__time_duration.sum --csv $bin infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/ncu-$v.csv 2> $R/ncu-$v.err
  el "ncu $v (caches kept) rc=$? $(grep gpu__time_duration $R/ncu-$v.csv | awk -F'","' '{printf "%s ", $NF}' | tr -d '"')"
done
timeout 120 ncu --clock-control none --cache-control none --kernel-name bd_chain_warps --launch-skip 1 --launch-count 1 \
  --section WarpStateStats --section SourceCounters --import-source yes -o $R/warps $W/bin/spdnn infer --method blockdepend $OFF --warmup 1 --repetitions 1 > $R/ncu-warps.log 2>&1
el "ncu warps rc=$?"
ncu --import $R/warps.ncu-rep --page source --csv --print-source sass > $R/warps-sass.csv 2> $R/warps-sass.err
el "source page rc=$? $(wc -l < $R/warps-sass.csv) lines"
python3 - $R/warps-sass.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = rows[0]
print(head[:12])
col = next((i for i, h in enumerate(head) if 'Warp Stall Sampling (All' in h), None)
src = next((i for i, h in enumerate(head) if h.lower() in ('source', 'sass')), 1)
if col is None:
    print('no stall column'); sys.exit()
def num(x):
    try: return float(x.replace(',', ''))
    except: return 0.0
body = [r for r in rows[1:] if len(r) > col]
total = sum(num(r[col]) for r in body)
print('samples', total)
for r in sorted(body, key=lambda r: -num(r[col]))[:30]:
    print(f"{num(r[col]) / total * 100:5.1f}%", r[0], r[src][:90])
PY
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
