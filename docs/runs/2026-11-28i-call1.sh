#!/usr/bin/env bash
# Device call 1 of the session 2026-11-28i (one H200). Pack: e16b863 (the landed kernels; 6f4f27f
# changed host code only), knobs only.
# 4096-120 is at 0.2416-0.247 ms against 0.238 (10x its floor). Launch 1 (layers 1-4, 24-row tiles,
# 2500 tiles on 528 blocks: 4.73 waves) is ~0.17-0.19 ms, launch 3 (9-24) ~0.065.
# (1) Tiles of 23, 22 and 20 rows in launch 1 (--bd-tile): 5 waves either way; 23 rows would cut
#     the last wave's idle blocks. Predicted: within noise (2026-11-27i call 5 found 5 waves of 31
#     no faster than 4.2 of 36), so at most -2 %.
# (2) ncu source counters of 4096's launch 1 and launch 3 (no profile since the circulant items),
#     for where the instructions and stalls go.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
ncu_k() { # NAME SKIP ARGS...
  local name=$1 skip=$2; shift 2
  timeout 150 ncu -o $R/k-$name --kernel-name regex:bd_chain --launch-skip $skip --launch-count 1 --section SpeedOfLight --section SchedulerStats \
    --section WarpStateStats --section InstructionStats --section Occupancy --section LaunchStats --section SourceCounters \
    $W/bin/spdnn infer --method blockdepend "$@" --warmup 0 --repetitions 1 > $R/ncu-$name.log 2>&1
  el "ncu $name rc=$?"
  ncu -i $R/k-$name.ncu-rep > $R/ncu-$name.txt 2>&1
  ncu -i $R/k-$name.ncu-rep --page source --csv --print-source sass > $R/ncu-$name-sass.csv 2>&1
  rm -f $R/k-$name.ncu-rep
  grep -E "Duration|Executed Instructions |Issued Warp|No Eligible|Eligible Warps|Registers Per" $R/ncu-$name.txt | head -8
}
n=4096; net=$W/g$n-120.bin
timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
for i in 1 2 3; do for t in default 23 22 20; do
  knob=""; [ $t = default ] || knob="--bd-tile $t"
  bd $n-120-t$t-$i $W/bin/spdnn --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions 30 $knob
done; done
ncu_k 4096-l1 0 --weights $net --neurons $n --layers 120 --mnist
ncu_k 4096-l3 2 --weights $net --neurons $n --layers 120 --mnist
ncu_k 4096-l2 1 --weights $net --neurons $n --layers 120 --mnist
rm -f $net
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
bd 1024-120 $W/bin/spdnn $OFF --warmup 3 --repetitions 30
ncu_k 1024-l1 0 $OFF
ncu_k 1024-l2 1 $OFF
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
