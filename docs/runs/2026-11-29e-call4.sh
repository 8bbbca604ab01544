#!/usr/bin/env bash
# Device call 4 of the session 2026-11-29e (one H200). Pack 103e4b5 (kernels as 9e4a547's):
# the 12-shape table's 16384 and 65536 rows with the graph's span beside the events (call 3
# ran the 1024 and 4096 rows and random 4096-120 on 7609f8d, whose code is this one's but a
# detail's text and a test), and what each GPU of four runs at 65536-120, timed on one
# (--rows 15000 --skip-rows S, as 2026-11-28d call 4; last on 963e8ee: the slowest slab 0.836
# ms against one GPU's 2.553, 3.05x).
# Predicted: 16384 ~0.76 ms (call 10: 0.759-0.766), the span ~0.01 below; 65536 ~2.56 ms;
# slabs ~0.83 each, ~3.05x.
. .device/preamble.sh
S=$W/bin/spdnn
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - T0) )); }
for l in 120 480 1920; do
  net=$W/g16384-$l.bin
  timeout 90 $S generate --neurons 16384 --layers $l --seed 0 --cache $net > $R/gen16384-$l.log 2>&1
  bd 16384-$l-1 $S --weights $net --neurons 16384 --layers $l --mnist --warmup 3 --repetitions 10
  rm -f $net
done
images=$W/i65536.bin
timeout 100 $S images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
for l in 120 480 1920; do
  net=$W/g65536-$l.bin
  [ $(left) -gt 50 ] || { el "no time for 65536-$l"; break; }
  timeout $(( $(left) - 20 )) $S generate --neurons 65536 --layers $l --seed 0 --cache $net > $R/gen65536-$l.log 2>&1
  el "gen 65536-$l rc=$?"
  IN="--weights $net --neurons 65536 --layers $l --images $images --warmup 2 --repetitions 5"
  if [ $l = 120 ]; then
    BD_TIMEOUT=60 bd 65536-$l-1 $S $IN
    for s in 0 15000 30000 45000; do
      [ $(left) -gt 80 ] || { el "no time for slab $s"; break; }
      BD_TIMEOUT=40 bd 65536-120-slab$s $S $IN --rows 15000 --skip-rows $s
    done
  else
    BD_TIMEOUT=$(( $(left) - 5 )) bd 65536-$l-1 $S $IN
  fi
  rm -f $net
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
