#!/usr/bin/env bash
# Device call 6 of the session 2026-11-28g (one H200), pack of 394d475 (0ae6da4's kernels are
# instruction for instruction the same): the 12 shapes and random 4096-120 with the cuts 4, 8, 24
# (the candidate default), and the default 4, 8, 16 beside it on one depth of each N and random.
# Call 5: 4,8,24 took 4096-120 0.277 -> 0.262 ms and 16384-120 0.911 -> 0.894 (every row is
# finished by layer 24; launch 4 re-packed 170 and 289 rows into latency-bound 1-row tiles).
# Predicted: 1024 unchanged (lanes 1-6, warps 7-on: its warps launches merge either way), 4096
# ~0.262, 16384 ~0.89, 65536 -0-2 % (452 rows left at 16, spread launches), random 4096-120
# within 1 % (no row dies; its last launch holds every row either way).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
left() { echo $(( ${BUDGET:-380} - ($(date +%s) - T0) )); }
X="--bd-cuts 4,8,24"
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2; do
  bd 1024-120-d$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-x$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 $X
done
for n in 1024 4096 16384; do
  for l in 120 480 1920; do
    [ $n = 1024 ] && [ $l = 120 ] && continue
    net=$W/g$n-$l.bin
    timeout 90 $W/bin/spdnn generate --neurons $n --layers $l --seed 0 --cache $net > $R/gen$n-$l.log 2>&1
    reps=30; [ $n = 16384 ] && reps=10
    if [ $l = 120 ]; then
      bd $n-$l-d1 $W/bin/spdnn --weights $net --neurons $n --layers $l --mnist --warmup 3 --repetitions $reps
      bd $n-$l-x1 $W/bin/spdnn --weights $net --neurons $n --layers $l --mnist --warmup 3 --repetitions $reps $X
      bd $n-$l-d2 $W/bin/spdnn --weights $net --neurons $n --layers $l --mnist --warmup 3 --repetitions $reps
    fi
    bd $n-$l-x $W/bin/spdnn --weights $net --neurons $n --layers $l --mnist --warmup 3 --repetitions $reps $X
    rm -f $net
  done
done
timeout 60 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
bd r4096-120-d $W/bin/spdnn --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 5
bd r4096-120-x $W/bin/spdnn --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 5 $X
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
    bd 65536-$l-d1 $W/bin/spdnn --weights $net --neurons 65536 --layers $l --images $images --warmup 2 --repetitions 5
    bd 65536-$l-x1 $W/bin/spdnn --weights $net --neurons 65536 --layers $l --images $images --warmup 2 --repetitions 5 $X
    bd 65536-$l-d2 $W/bin/spdnn --weights $net --neurons 65536 --layers $l --images $images --warmup 2 --repetitions 5
  fi
  BD_TIMEOUT=$(( $(left) - 5 )) bd 65536-$l-x $W/bin/spdnn --weights $net --neurons 65536 --layers $l --images $images --warmup 2 --repetitions 5 $X
  rm -f $net
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
