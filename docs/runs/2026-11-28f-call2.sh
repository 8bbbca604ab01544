#!/usr/bin/env bash
# Device call 2 of the session 2026-11-28f (one H200), pack of 8c20921 and variant binaries of
# launch 1's tile scatter (bd_scatter_scaled).
# Call 1: lean (no branch a nonzero, staged columns through their window address) took launch 1
# at 16384 708 -> 680 us (ncu), 16384-120 1.043 -> 1.010 ms, 65536-120 4.202 -> 4.114; lean8 (8
# nonzeros a batch in the wide instance) was slower (16384 1.21 ms): its source counters show
# the clamped nonzeros of a chunk's last batch adding 0 into one word, up to 12 shared
# wavefronts an ATOMS where the first nonzero's take 2.4.
#   leanp:  lean with those adds predicated off (no SEL of the entries either).
#   leanp8: leanp with 8 nonzeros a batch in the wide instance (79 registers, no spills).
# Predicted: leanp launch 1 at 16384 ~680 -> ~650 us (the same-word adds were ~6 % of the
# scatter's wavefronts in lean's last batch); leanp8 ~620-650 if the batches' round trips bind.
# 65536-120 ~4.05 with the better one; 4096 within 2 %.
# Then ncu with source counters: launch 1 at 16384 with leanp, launch 2 at 65536 (base).
. .device/preamble.sh
variants lean leanp leanp8
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
left() { echo $(( 575 - ($(date +%s) - T0) )); }
bin_of() { [ $1 = base ] && echo $W/bin/spdnn || echo $W/spdnn-$1; }
VS="base lean leanp leanp8"
for n in 16384 4096; do
  net=$W/g$n-120.bin
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  el "gen $n rc=$?"
  reps=30; [ $n = 16384 ] && reps=10
  for i in 1 2; do for v in $VS; do
    bd $n-120-$v$i $(bin_of $v) --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps
  done; done
  for v in $VS; do
    timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 8 \
      --metrics gpu__time_duration.sum --csv $(bin_of $v) infer --method blockdepend --weights $net --neurons $n --layers 120 --mnist \
      --warmup 1 --repetitions 2 > $R/ncu-$n-$v.csv 2> $R/ncu-$n-$v.err
    el "ncu $n $v rc=$? $(grep gpu__time_duration $R/ncu-$n-$v.csv | awk -F'","' '{printf "%s ", $NF}' | tr -d '"')"
  done
  if [ $n = 16384 ]; then
    v=leanp
    timeout 120 ncu -o $R/l1-$n-$v --kernel-name regex:bd_chain --launch-count 1 --section SpeedOfLight --section SchedulerStats \
      --section WarpStateStats --section InstructionStats --section Occupancy --section LaunchStats --section SourceCounters \
      $(bin_of $v) infer --method blockdepend --weights $net --neurons $n --layers 120 --mnist --warmup 0 --repetitions 1 > $R/ncu-l1-$n-$v.log 2>&1
    el "ncu source $n $v rc=$?"
    ncu -i $R/l1-$n-$v.ncu-rep > $R/ncu-l1-$n-$v.txt 2>&1
    ncu -i $R/l1-$n-$v.ncu-rep --page source --csv --print-source sass > $R/ncu-l1-$n-$v-sass.csv 2>&1
    rm -f $R/l1-$n-$v.ncu-rep
    grep -E "Duration|Executed Instructions |Issued Warp|No Eligible|Eligible Warps" $R/ncu-l1-$n-$v.txt | head -6
  fi
  rm -f $net
done
images=$W/i65536.bin
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
net=$W/g65536-120.bin
timeout $(( $(left) - 90 )) $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "gen 65536 rc=$?"
for v in base leanp leanp8 lean; do
  [ $(left) -gt 40 ] || { el "no time for 65536 $v"; break; }
  BD_TIMEOUT=$(( $(left) - 10 )) bd 65536-120-$v $(bin_of $v) --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5
done
[ $(left) -gt 90 ] && {
  timeout $(( $(left) - 20 )) ncu -o $R/l2-65536 --kernel-name regex:bd_chain --launch-skip 1 --launch-count 1 --section SpeedOfLight --section SchedulerStats \
    --section WarpStateStats --section InstructionStats --section Occupancy --section LaunchStats --section SourceCounters \
    $W/bin/spdnn infer --method blockdepend --weights $net --neurons 65536 --layers 120 --images $images --warmup 0 --repetitions 1 > $R/ncu-l2-65536.log 2>&1
  el "ncu source 65536 launch 2 rc=$?"
  ncu -i $R/l2-65536.ncu-rep > $R/ncu-l2-65536.txt 2>&1
  ncu -i $R/l2-65536.ncu-rep --page source --csv --print-source sass > $R/ncu-l2-65536-sass.csv 2>&1
  rm -f $R/l2-65536.ncu-rep
  grep -E "Duration|Executed Instructions |Issued Warp|No Eligible|Eligible Warps" $R/ncu-l2-65536.txt | head -6
}
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
