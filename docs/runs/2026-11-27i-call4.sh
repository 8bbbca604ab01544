#!/usr/bin/env bash
# Device call 4 of the session 2026-11-27i (one H100): four builds of the CLI (the kernel
# source is embedded in the binary; .device/spdnn-<variant>.xz, stripped):
#   old:  the pack's, commit .device/COMMIT (de9bc7a);
#   a8d2: call 3's (ring of 8 scaled entries, ring of 2 dense steps, spread rule by stored
#         bytes);
#   hyb:  the ring for scaled entries only where a column has at least 8 slots (the loop
#         unrolled by 2 below: call 3's launch 2, whose layers have 2 slots an output, lost
#         9-10 % at 16384 and 65536); dense and pair items as in old; the spread rule;
#   hybw: hyb, and layer 1's row walk keeps the next row's start in a register (call 2: the
#         walk's shared load at every nonzero was the most stalled instruction of 1024's
#         launch 1).
# Predicted: hyb's launch 2 back to old's (0.601 ms at 65536, 0.144 at 16384) with a8d2's
# later launches; the official 1024 back to old's 0.217-0.24. hybw: launch 1 at 1024 -5-10 %
# (0.104 -> ~0.095 ms), 4096 -3-5 %, 65536 ~1 % (rows of 6.5k nonzeros rarely move on).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cp $W/bin/spdnn $W/spdnn-old
for v in a8d2 hyb hybw; do xz -dc .device/spdnn-$v.xz > $W/spdnn-$v && chmod +x $W/spdnn-$v; done
infer() { # variant name args...
  local variant=$1 name=$2; shift 2
  timeout 120 $W/spdnn-$variant infer --method blockdepend "$@" --json \
    > $R/bd-$name-$variant.json 2> $R/bd-$name-$variant.err
  el "bd-$name-$variant rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-$name-$variant.json | tr -d ' \n')"
}
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in old a8d2 hyb hybw; do infer $v 1024-120 $OFF --warmup 3 --repetitions 20; done
net=$W/g4096.bin
timeout 60 $W/spdnn-old generate --neurons 4096 --layers 120 --seed 0 --cache $net > $R/gen4096.log 2>&1
for v in old a8d2 hyb hybw; do infer $v 4096-120 --weights $net --neurons 4096 --layers 120 --mnist --warmup 2 --repetitions 5; done
rm -f $net
net=$W/g16384.bin
timeout 60 $W/spdnn-old generate --neurons 16384 --layers 120 --seed 0 --cache $net > $R/gen16384.log 2>&1
infer old 16384-120-spreadoff --weights $net --neurons 16384 --layers 120 --mnist --bd-spread off --warmup 2 --repetitions 5
for v in a8d2 hyb hybw; do infer $v 16384-120 --weights $net --neurons 16384 --layers 120 --mnist --warmup 2 --repetitions 5; done
rm -f $net
timeout 40 $W/spdnn-old generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
for v in old hybw; do infer $v r4096-120 --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 3; done
rm -f $W/r4096.bin
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
net=$W/g65536.bin images=$W/i65536.bin
timeout 120 $W/spdnn-old generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
timeout 100 $W/spdnn-old images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
for v in old a8d2 hyb hybw; do
  [ $(( 570 - ($(date +%s) - T0) )) -gt 35 ] || break
  infer $v 65536-120 --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5
done
rm -f $net $images
python3 .device/launches.py $R 'bd-65536*.json' | tee -a $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
