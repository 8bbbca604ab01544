#!/usr/bin/env bash
# Device call 4 of the session 2026-11-28h (the four-H200 machine of call 3, warm; GPU 0 unless
# said). Pack of call 3; TABLE_BIN (pf: the pack's spdnn, 1fb7980; nopf: its variant) is the
# binary call 3's A/B chose. The 12-shape table and random 4096-120 (as 2026-11-28g call 4), then
# issue 27's scaling item at 65536-120: 1, 2 and 4 GPUs, categories compared row by row.
# Predicted (calls 1-3): 1024 ~0.09 ms, 4096 ~0.23-0.24, 16384 ~0.78-0.80, 65536 ~2.84, random
# ~225 ms; four GPUs ~3.1-3.2x at 65536 (launch 1, the part that divides, shrank the most).
# Run as: TABLE_BIN=nopf BUDGET=540 bash .device/call4.sh (call 3: the prefetch did not help).
. .device/preamble.sh
[ "${TABLE_BIN:-pf}" = nopf ] && { variants nopf; S=$W/spdnn-nopf; } || S=$W/bin/spdnn
el "table binary $S"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - T0) )); }
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd 1024-120 $S $OFF --warmup 3 --repetitions 30
for n in 1024 4096 16384; do
  for l in 120 480 1920; do
    [ $n = 1024 ] && [ $l = 120 ] && continue
    net=$W/g$n-$l.bin
    timeout 90 $W/bin/spdnn generate --neurons $n --layers $l --seed 0 --cache $net > $R/gen$n-$l.log 2>&1
    reps=30; [ $n = 16384 ] && reps=10
    bd $n-$l $S --weights $net --neurons $n --layers $l --mnist --warmup 3 --repetitions $reps
    rm -f $net
  done
done
timeout 60 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
bd r4096-120 $S --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 5
rm -f $W/r4096.bin
images=$W/i65536.bin
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
for l in 120 480 1920; do
  net=$W/g65536-$l.bin
  [ $(left) -gt 50 ] || { el "no time for 65536-$l"; break; }
  timeout $(( $(left) - 20 )) $W/bin/spdnn generate --neurons 65536 --layers $l --seed 0 --cache $net > $R/gen65536-$l.log 2>&1
  el "gen 65536-$l rc=$?"
  if [ $l = 120 ]; then
    BD_TIMEOUT=60 bd 65536-$l $S --weights $net --neurons 65536 --layers $l --images $images --warmup 2 --repetitions 5 --categories-out $R/cat-gpus0.tsv
    for gpus in 0,1 0,1,2,3; do
      tag=65536-120-gpus${gpus//,/}
      BD_TIMEOUT=60 bd $tag $S --weights $net --neurons 65536 --layers 120 --images $images --gpus $gpus --warmup 2 --repetitions 5 --categories-out $R/cat-gpus${gpus//,/}.tsv
      cmp -s $R/cat-gpus0.tsv $R/cat-gpus${gpus//,/}.tsv && el "65536: categories on GPUs $gpus identical to one GPU's" || el "65536: categories on GPUs $gpus DIFFER"
    done
  else
    BD_TIMEOUT=$(( $(left) - 5 )) bd 65536-$l $S --weights $net --neurons 65536 --layers $l --images $images --warmup 2 --repetitions 5
  fi
  rm -f $net
done
python3 - "$R" > $OUT/scaling.md <<'PY'
import json, os, sys
r = sys.argv[1]
times = {}
for g, name in ((1, "bd-65536-120"), (2, "bd-65536-120-gpus01"), (4, "bd-65536-120-gpus0123")):
    try:
        times[g] = json.load(open(os.path.join(r, name + ".json")))["infer_ms"]
    except Exception as e:
        print(f"{name}: unreadable ({e})")
if 1 in times:
    print("65536-120: " + ", ".join(f"{k} GPU {v:.3f} ms ({times[1] / v:.2f}x)" for k, v in sorted(times.items())))
PY
cat $OUT/scaling.md
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
