#!/usr/bin/env bash
# Device call 3 of the session 2026-11-27i (one H100): three builds of the CLI (the kernel
# source is embedded in the binary; .device/spdnn-<variant>.xz, stripped):
#   old:   the pack's, commit .device/COMMIT (de9bc7a);
#   a8d2:  the exact items' ring of loads again, its entries now whole 32-bit registers (call
#          1's 16-bit ring merged each refill into its register as soon as it was issued, a
#          PRMT that waited for the load: worse than no ring) and whole turns without a branch;
#          BD_ITEM_AHEAD 8, BD_DENSE_AHEAD 2. With it, the spread rule weighs a layer's bytes
#          as stored (16384's heavy layers, 64 KiB, stay in tiles).
#   a16d4: the same with 16 entries and 4 dense steps (the wide instances spill 32-72 bytes).
# Call 2's source counters: 57 % of 4096's launch-3 stalls wait on the entries' loads (the
# LOP3 after each LDG). Predicted: 4096's launch 3 0.102 -> ~0.05 ms, launch 4 0.056 ->
# ~0.03; 4096-120 0.443 -> ~0.36 ms; 16384-120 1.43 -> ~1.1 (1.20 from the spread rule
# alone); 65536-120 0.1-0.3 ms less; the official 1024 a few us (its launches 3-4 wait at
# barriers: 2 of 8 warps have items). a16d4 at most like a8d2.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cp $W/bin/spdnn $W/spdnn-old
for v in a8d2 a16d4; do xz -dc .device/spdnn-$v.xz > $W/spdnn-$v && chmod +x $W/spdnn-$v; done
infer() { # variant name args...
  local variant=$1 name=$2; shift 2
  timeout 120 $W/spdnn-$variant infer --method blockdepend "$@" --json \
    > $R/bd-$name-$variant.json 2> $R/bd-$name-$variant.err
  el "bd-$name-$variant rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-$name-$variant.json | tr -d ' \n')"
}
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for v in old a8d2 a16d4; do infer $v 1024-120 $OFF --warmup 3 --repetitions 20; done
net=$W/g4096.bin
timeout 60 $W/bin/spdnn generate --neurons 4096 --layers 120 --seed 0 --cache $net > $R/gen4096.log 2>&1
for v in old a8d2 a16d4; do infer $v 4096-120 --weights $net --neurons 4096 --layers 120 --mnist --warmup 2 --repetitions 5; done
NCU=/usr/local/cuda/bin/ncu
timeout 90 $NCU --kernel-name regex:bd_chain --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SourceCounters --section SchedulerStats \
  --export $R/ncu-4096-l3-a8d2 --force-overwrite \
  $W/spdnn-a8d2 infer --method blockdepend --weights $net --neurons 4096 --layers 120 --mnist --warmup 0 --repetitions 1 \
  > $R/ncu-4096-l3-a8d2.txt 2>&1
el "ncu 4096 launch 3 a8d2 rc=$?"
grep -E 'Duration|No Eligible|Warp Cycles Per Issued' $R/ncu-4096-l3-a8d2.txt | head -4
mkdir -p $OUT/src
$NCU --import $R/ncu-4096-l3-a8d2.ncu-rep --page source --csv --print-source sass > $OUT/src/src-4096-l3-a8d2.csv 2>/dev/null
rm -f $net
net=$W/g16384.bin
timeout 60 $W/bin/spdnn generate --neurons 16384 --layers 120 --seed 0 --cache $net > $R/gen16384.log 2>&1
for v in old a8d2 a16d4; do infer $v 16384-120 --weights $net --neurons 16384 --layers 120 --mnist --warmup 2 --repetitions 5; done
infer old 16384-120-spreadoff --weights $net --neurons 16384 --layers 120 --mnist --bd-spread off --warmup 2 --repetitions 5
rm -f $net
timeout 40 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
for v in old a8d2 a16d4; do infer $v r4096-120 --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist --warmup 1 --repetitions 3; done
rm -f $W/r4096.bin
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
left=$(( 540 - ($(date +%s) - T0) ))
if [ $left -gt 150 ]; then
  net=$W/g65536.bin images=$W/i65536.bin
  timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
  timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
  el "65536 inputs rc=$?"
  for v in old a8d2 a16d4; do
    [ $(( 570 - ($(date +%s) - T0) )) -gt 35 ] || break
    infer $v 65536-120 --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5
  done
  rm -f $net $images
  python3 .device/launches.py $R 'bd-65536*.json' | tee -a $OUT/launches.md
fi
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
