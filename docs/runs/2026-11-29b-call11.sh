#!/usr/bin/env bash
# Device call 11 of the session 2026-11-29b (one H200). Pack e475dcf (the folded layer 1 of
# the lanes launch; the final kernel: calls 9-10 ran blockdepend's, the CLI's, cuda's and the
# engine's GPU tests and the sanitizers on it). The 12-shape table and random 4096-120 as
# 2026-11-29a call 6.
# Predicted: 1024 shapes ~0.060-0.065 ms (calls 9-10: 0.060-0.072 for the official 1024-120);
# 4096 ~0.22 (its layer 1 is 4096 inputs to 256 outputs: no lanes launch, unchanged), 16384
# ~0.75, 65536 ~2.55, random ~218 ms (unchanged launches).
. .device/preamble.sh
S=$W/bin/spdnn
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
  else
    BD_TIMEOUT=$(( $(left) - 5 )) bd 65536-$l $S --weights $net --neurons 65536 --layers $l --images $images --warmup 2 --repetitions 5
  fi
  rm -f $net
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
