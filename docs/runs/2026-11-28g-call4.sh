#!/usr/bin/env bash
# Device call 4 of the session 2026-11-28g (GPU 0 of the four-H200 machine of call 3, warm), pack of
# 394d475: the 12-shape table and random 4096-120, as 2026-11-28f call 5 ran it.
# Predicted (call 2): 1024 ~0.09-0.10 ms, 4096 ~0.27, 16384 ~0.91, 65536 ~3.68, random ~225 ms.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
left() { echo $(( ${BUDGET:-380} - ($(date +%s) - T0) )); }
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd 1024-120 $W/bin/spdnn $OFF --warmup 3 --repetitions 30
for n in 1024 4096 16384; do
  for l in 120 480 1920; do
    [ $n = 1024 ] && [ $l = 120 ] && continue
    net=$W/g$n-$l.bin
    timeout 90 $W/bin/spdnn generate --neurons $n --layers $l --seed 0 --cache $net > $R/gen$n-$l.log 2>&1
    reps=30; [ $n = 16384 ] && reps=10
    bd $n-$l $W/bin/spdnn --weights $net --neurons $n --layers $l --mnist --warmup 3 --repetitions $reps
    rm -f $net
  done
done
timeout 60 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
bd r4096-120 $W/bin/spdnn --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 5
rm -f $W/r4096.bin
images=$W/i65536.bin
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
for l in 120 480 1920; do
  net=$W/g65536-$l.bin
  [ $(left) -gt 50 ] || { el "no time for 65536-$l"; break; }
  timeout $(( $(left) - 20 )) $W/bin/spdnn generate --neurons 65536 --layers $l --seed 0 --cache $net > $R/gen65536-$l.log 2>&1
  el "gen 65536-$l rc=$?"
  BD_TIMEOUT=$(( $(left) - 5 )) bd 65536-$l $W/bin/spdnn --weights $net --neurons 65536 --layers $l --images $images --warmup 2 --repetitions 5
  rm -f $net
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
