#!/usr/bin/env bash
# Device call 5 of the session 2026-11-27i (one H100): the pack of commit .device/COMMIT
# (new: the ring of scaled entries' loads, the spread rule by stored bytes, equal tile waves,
# the register row walk) against the pack of de9bc7a (old: .device/spdnn-old.xz, stripped).
# 1. blockdepend's and the engine's GPU tests at full scale (new).
# 2. The four widths at L = 120 and random 4096-120, old and new; new with the last launch
#    covering more layers: cuts 4,8,16,32 (layers 33-120 in one launch) and 4,8,16.
# Predicted: equal waves take 4096's launch 1 0.223 -> ~0.195 ms and 4096-120 0.360 -> ~0.33;
# 16384's launch 1 -3 %; 1024 and 65536 as in call 4 (their tiles already fill the waves).
# One launch fewer saves ~4 us (an empty launch costs 4 us at 1024 and 4096), two ~8 us.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
for t in blockdepend engine; do
  threads=2; [ $t = engine ] && threads=1
  timeout 200 $W/tests/spdnn-$t--gpu --include-ignored --test-threads=$threads > $R/tests-$t.txt 2>&1
  el "tests $t rc=$? $(grep -E '^test result' $R/tests-$t.txt | tail -1)"
  grep -E 'panicked|FAILED' -A3 $R/tests-$t.txt | head -8
done
cp $W/bin/spdnn $W/spdnn-new
xz -dc .device/spdnn-old.xz > $W/spdnn-old && chmod +x $W/spdnn-old
infer() { # variant name args...
  local variant=$1 name=$2; shift 2
  timeout 120 $W/spdnn-$variant infer --method blockdepend "$@" --json \
    > $R/bd-$name-$variant.json 2> $R/bd-$name-$variant.err
  el "bd-$name-$variant rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-$name-$variant.json | tr -d ' \n')"
}
shapes() { # name args... : old, new, and new with two cut sets
  local name=$1; shift
  infer old $name "$@"; infer new $name "$@"
  infer new $name-c4-8-16-32 "$@" --bd-cuts 4,8,16,32
  infer new $name-c4-8-16 "$@" --bd-cuts 4,8,16
}
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
shapes 1024-120 $OFF --warmup 3 --repetitions 20
for n in 4096 16384; do
  net=$W/g$n.bin
  timeout 60 $W/spdnn-new generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  shapes $n-120 --weights $net --neurons $n --layers 120 --mnist --warmup 2 --repetitions 5
  rm -f $net
done
timeout 40 $W/spdnn-new generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
for v in old new; do infer $v r4096-120 --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 3; done
rm -f $W/r4096.bin
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
net=$W/g65536.bin images=$W/i65536.bin
timeout 120 $W/spdnn-new generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
timeout 100 $W/spdnn-new images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
[ $(( 570 - ($(date +%s) - T0) )) -gt 80 ] && shapes 65536-120 --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5
rm -f $net $images
python3 .device/launches.py $R 'bd-65536*.json' | tee -a $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
