#!/usr/bin/env bash
# Device call 3 of the session 2026-11-28d: a758d8f, whose timed passes replay one CUDA graph
# (the queues' memset and every launch) instead of enqueueing memset and launches call by
# call. Call 2 measured the host's calls on this machine: the start event's record 4-19 us,
# the memset 2-12 us, launch 1's enqueue 13-40 us, launches 2 and 3 7-35 us each; the GPU
# waits for launch 1 ~30 us of each 1024 pass (0.104 ms held against 0.13-0.14).
# Predicted: official 1024-120 with the graph ~0.110-0.120 ms (the GPU's 0.104 plus one graph
# launch's host time), --bd-no-graph 0.12-0.15 as before; 65536-120 a few tens of us less
# on one GPU, more on four if the threads' calls contend (four GPUs if lent). The new GPU
# test (graph against calls, the spread launches' cooperative kernels captured too) passes.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
PROPTEST_CASES=8 timeout 120 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=1 a_graph_replays batches_reuse official_1024 > $R/tests-graph.txt 2>&1
el "graph GPU tests rc=$? $(grep -E '^test result' $R/tests-graph.txt)"
grep -E "FAILED|panicked" -A5 $R/tests-graph.txt | cut -c1-800 | head -20
stats() { python3 -c "
import json,sys,statistics as s
for f in sys.argv[1:]:
    d=json.load(open(f)); r=sorted(d['infer_ms_runs'])
    print(f.split('/')[-1], 'min %.4f med %.4f max %.4f'%(r[0], s.median(r), r[-1]), d['categories'], d.get('matched'), d['details'].get('replay'), ' '.join('%.4f'%x['ms'] for x in d['details'].get('stages_ms',[])))
" "$@"; }
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-graph$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-calls$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-no-graph
done
for l in 480 1920; do
  net=$W/g1024-$l.bin
  timeout 90 $W/bin/spdnn generate --neurons 1024 --layers $l --seed 0 --cache $net > $R/gen1024-$l.log 2>&1
  bd 1024-$l-graph $W/bin/spdnn --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30
  bd 1024-$l-calls $W/bin/spdnn --weights $net --neurons 1024 --layers $l --mnist --warmup 3 --repetitions 30 --bd-no-graph
  rm -f $net
done
stats $R/bd-1024-*.json | tee $R/stats1024.txt
net=$W/g65536.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
timeout 120 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $W/i65536.bin > $R/images65536.log 2>&1
el "generated"
IN="--weights $net --neurons 65536 --layers 120 --images $W/i65536.bin --warmup 2 --repetitions 5"
if [ "$(wc -l < $OUT/gpu.txt)" -ge 4 ]; then G="0 0,1,2,3"; else G="0"; fi
for gpus in $G; do
  tag=${gpus//,/}
  bd 65536-graph-g$tag $W/bin/spdnn $IN --gpus $gpus --categories-out $R/c-graph-$tag.tsv
  bd 65536-calls-g$tag $W/bin/spdnn $IN --gpus $gpus --bd-no-graph --categories-out $R/c-calls-$tag.tsv
done
for f in $R/c-*.tsv; do cmp -s $f $R/c-graph-0.tsv && el "$(basename $f) identical to one GPU's" || el "$(basename $f) DIFFERS"; done
stats $R/bd-65536-*.json | tee $R/stats65536.txt
rm -f $net $W/i65536.bin
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
