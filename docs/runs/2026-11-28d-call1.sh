#!/usr/bin/env bash
# Device call 1 of the session 2026-11-28d (four H200 if lent): where the events' time of
# launch 1 goes outside the kernel. ncu put the official 1024's launch 1 (a row a lane) at
# 50-52 us (2026-11-28c calls 1 and 2, clocks free) while the events between the run's start
# and launch 1's end read 0.065-0.10 ms. Binaries: the pack of c050fde (base) and `diag`, the
# same code plus two switches read from the environment (not committed):
#   SPDNN_DIAG_HOLD_MB=M  the harness zeroes an M MiB device buffer before each timed
#                         region, so the GPU is busy while the host enqueues the run: the
#                         events then time the GPU's work alone;
#   SPDNN_DIAG_REUSE=1    blockdepend's load copies a batch into the input buffers it holds
#                         instead of freeing them and allocating new ones each pass.
# Predicted: if the gap is the host's enqueue (memset + launch 1 + the spread launches),
# hold takes 5-15 us off the official 1024 (0.12 -> ~0.11 ms) and a few us off each GPU at
# 65536; if it is the fresh input allocation (the kernel's first touches of new pages), reuse
# takes it. Neither changes the categories.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants diag
el "nsys: $(command -v nsys || ls /usr/local/cuda/bin 2>/dev/null | grep -i nsys || echo none)"
stats() { python3 -c "
import json,sys,statistics as s
for f in sys.argv[1:]:
    d=json.load(open(f)); r=sorted(d['infer_ms_runs'])
    print(f.split('/')[-1], 'min %.4f med %.4f max %.4f'%(r[0], s.median(r), r[-1]), d['categories'], d.get('matched'), ' '.join('%.4f'%x['ms'] for x in d['details'].get('stages_ms',[])))
" "$@"; }
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2; do
  bd 1024-base$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-plain$i $W/spdnn-diag $OFF --warmup 3 --repetitions 30
  SPDNN_DIAG_HOLD_MB=2048 bd 1024-hold$i $W/spdnn-diag $OFF --warmup 3 --repetitions 30
  SPDNN_DIAG_REUSE=1 bd 1024-reuse$i $W/spdnn-diag $OFF --warmup 3 --repetitions 30
  SPDNN_DIAG_REUSE=1 SPDNN_DIAG_HOLD_MB=2048 bd 1024-holdreuse$i $W/spdnn-diag $OFF --warmup 3 --repetitions 30
done
stats $R/bd-1024-*.json | tee $R/stats1024.txt
if command -v nsys > /dev/null; then
  timeout 120 nsys profile -t cuda -o $R/n1024 --force-overwrite true $W/spdnn-diag infer --method blockdepend $OFF --warmup 2 --repetitions 3 > $R/nsys.log 2>&1
  timeout 120 nsys stats --report cuda_gpu_trace,cuda_api_trace --format csv --output $R/n1024 $R/n1024.nsys-rep >> $R/nsys.log 2>&1
  el "nsys rc=$? $(ls $R | grep n1024 | tr '\n' ' ')"
fi
net=$W/g65536.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
timeout 120 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $W/i65536.bin > $R/images65536.log 2>&1
el "generated"
IN="--weights $net --neurons 65536 --layers 120 --images $W/i65536.bin --warmup 2 --repetitions 5"
if [ "$(wc -l < $OUT/gpu.txt)" -ge 4 ]; then G="0 0,1,2,3"; else G="0"; fi
for gpus in $G; do
  tag=${gpus//,/}
  bd 65536-plain-g$tag $W/spdnn-diag $IN --gpus $gpus --categories-out $R/c-plain-$tag.tsv
  SPDNN_DIAG_HOLD_MB=2048 bd 65536-hold-g$tag $W/spdnn-diag $IN --gpus $gpus
done
[ -f $R/c-plain-0123.tsv ] && { cmp -s $R/c-plain-0.tsv $R/c-plain-0123.tsv && el "categories on four GPUs identical to one GPU's" || el "categories DIFFER"; }
stats $R/bd-65536-*.json | tee $R/stats65536.txt
rm -f $net $W/i65536.bin
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
