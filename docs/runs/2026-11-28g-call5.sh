#!/usr/bin/env bash
# Device call 5 of the session 2026-11-28g (one H200), pack of 394d475: the launch cuts and the
# spread launches at 4096-120 and 16384-120 (knobs only, same binary), for 4096's last 10 %.
# 4096-120 ran 0.265 ms (11.2x its floor) in call 4: launch 1 (layers 1-4) 0.189, then 0.035
# (5-8), 0.051 (9-16), 0.029 (17-120). Predicted: merging launches 1-2 (--bd-cuts 8,16) saves a
# launch and a carry, ~0.01 ms, if layers 5-8 in launch 1's tiles cost about what launch 2 costs;
# spreading the later launches (--bd-spread always) is slower at 4096 (layers of 16 KiB).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
knob() { case $1 in d) echo "";; c816) echo "--bd-cuts 8,16";; c416) echo "--bd-cuts 4,16";; c616) echo "--bd-cuts 6,16";;
  c4824) echo "--bd-cuts 4,8,24";; c41232) echo "--bd-cuts 4,12,32";; sa) echo "--bd-spread always";; esac; }
for n in 4096 16384; do
  net=$W/g$n-120.bin
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  reps=30; [ $n = 16384 ] && reps=10
  for i in 1 2; do for k in d c816 c416 c616 c4824 c41232 sa; do
    bd $n-120-$k$i $W/bin/spdnn --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps $(knob $k)
  done; done
  rm -f $net
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
