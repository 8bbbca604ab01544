#!/usr/bin/env bash
# Device call 10 of the session 2026-11-29d (one H200). Pack 9e4a547, the final kernels: the
# 12-shape table and random 4096-120 as 2026-11-29c call 7 (the 1024 shapes three benches
# each), then the official 1024-120 three times with the diagnostic "hold" build (call 9:
# SPDNN_HOLD set, a 1 GiB memset before each timed pass, so the events time the GPU's pass
# without the host's enqueue; never committed, its patch beside call 9's data).
# Predicted: 1024 shapes at the loan's level, 0.049-0.064 ms (calls 6, 8, 9); with the hold
# 0.049-0.050; 4096 ~0.22, 16384 ~0.75, 65536 ~2.56, random ~218 ms (their kernels' SASS is
# 25602cb's).
. .device/preamble.sh
S=$W/bin/spdnn
el "table binary $S"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - T0) )); }
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do bd 1024-120-$i $S $OFF --warmup 3 --repetitions 30; done
variants hold
for i in 1 2 3; do SPDNN_HOLD=1 bd 1024-120-hold-$i $W/spdnn-hold $OFF --warmup 20 --repetitions 100; done
for n in 1024 4096 16384; do
  for l in 120 480 1920; do
    [ $n = 1024 ] && [ $l = 120 ] && continue
    net=$W/g$n-$l.bin
    timeout 90 $W/bin/spdnn generate --neurons $n --layers $l --seed 0 --cache $net > $R/gen$n-$l.log 2>&1
    reps=30; [ $n = 16384 ] && reps=10
    runs="1"; [ $n = 1024 ] && runs="1 2 3"
    for i in $runs; do bd $n-$l-$i $S --weights $net --neurons $n --layers $l --mnist --warmup 3 --repetitions $reps; done
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
  else
    BD_TIMEOUT=$(( $(left) - 5 )) bd 65536-$l $S --weights $net --neurons 65536 --layers $l --images $images --warmup 2 --repetitions 5
  fi
  rm -f $net
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
