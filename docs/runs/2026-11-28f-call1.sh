#!/usr/bin/env bash
# Device call 1 of the session 2026-11-28f (one H200), pack of 8c20921 (kernels of 3c302e1) and
# two variant binaries of launch 1's tile scatter (bd_scatter_scaled):
#   lean:  a nonzero past the chunk's end reads the last one again and takes zero entries (no
#          branch a nonzero but the row walk's), the staged columns read through their 32-bit
#          shared-window address (sm_90 rebuilt it from CgaCtaId before every load), the row's
#          window address computed once a nonzero: ~24 instructions a nonzero instead of ~41
#          (SASS of the wide scaled32 instance, offline).
#   lean8: lean, and the wide instance (768 threads, 16384 and 65536) scatters 8 nonzeros a
#          thread a batch instead of 4 (79 registers, no spills offline).
# Launch 1 today: 4096 0.212-0.225 ms, 16384 0.746-0.757, 65536 2.99-3.01 (call 10 of
# 2026-11-28e). ncu of 65536's launch 1 (2026-11-27h): 55 % of issue slots, 1.3 eligible warps
# a scheduler of 6: instructions and latency both.
# Predicted: if the scatter is ~30-40 % of launch 1's instructions, lean takes launch 1 ~10-15 %
# down (4096 ~0.19, 16384 ~0.66, 65536 ~2.65 ms); lean8 a further ~5 % at 16384 and 65536 if
# the batches' round trips bind.
# Then ncu with source counters of launch 1 at 16384 (base and lean8): where the rest goes.
. .device/preamble.sh
variants lean lean8
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
left() { echo $(( 575 - ($(date +%s) - T0) )); }
bin_of() { [ $1 = base ] && echo $W/bin/spdnn || echo $W/spdnn-$1; }
for n in 16384 4096; do
  net=$W/g$n-120.bin
  timeout 90 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  el "gen $n rc=$?"
  reps=30; [ $n = 16384 ] && reps=10
  for i in 1 2; do for v in base lean lean8; do
    bd $n-120-$v$i $(bin_of $v) --weights $net --neurons $n --layers 120 --mnist --warmup 3 --repetitions $reps
  done; done
  for v in base lean lean8; do
    timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 8 \
      --metrics gpu__time_duration.sum --csv $(bin_of $v) infer --method blockdepend --weights $net --neurons $n --layers 120 --mnist \
      --warmup 1 --repetitions 2 > $R/ncu-$n-$v.csv 2> $R/ncu-$n-$v.err
    el "ncu $n $v rc=$? $(grep gpu__time_duration $R/ncu-$n-$v.csv | awk -F'","' '{printf "%s ", $NF}' | tr -d '"')"
  done
  if [ $n = 16384 ]; then
    for v in base lean8; do
      timeout 120 ncu -o $R/l1-$n-$v --kernel-name regex:bd_chain --launch-count 1 --section SpeedOfLight --section SchedulerStats \
        --section WarpStateStats --section InstructionStats --section Occupancy --section LaunchStats --section SourceCounters \
        $(bin_of $v) infer --method blockdepend --weights $net --neurons $n --layers 120 --mnist --warmup 0 --repetitions 1 > $R/ncu-l1-$n-$v.log 2>&1
      el "ncu source $n $v rc=$?"
      ncu -i $R/l1-$n-$v.ncu-rep > $R/ncu-l1-$n-$v.txt 2>&1
      ncu -i $R/l1-$n-$v.ncu-rep --page source --csv --print-source sass > $R/ncu-l1-$n-$v-sass.csv 2>&1
      rm -f $R/l1-$n-$v.ncu-rep
      grep -E "Duration|Executed Instructions |Issued Warp|No Eligible|Eligible Warps" $R/ncu-l1-$n-$v.txt | head -6
    done
  fi
  rm -f $net
done
images=$W/i65536.bin
[ $(left) -gt 200 ] && {
  timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
  el "65536 inputs rc=$?"
  net=$W/g65536-120.bin
  timeout $(( $(left) - 90 )) $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
  el "gen 65536 rc=$?"
  for v in base lean8 lean; do
    [ $(left) -gt 40 ] || { el "no time for 65536 $v"; break; }
    BD_TIMEOUT=$(( $(left) - 10 )) bd 65536-120-$v $(bin_of $v) --weights $net --neurons 65536 --layers 120 --images $images --warmup 2 --repetitions 5
  done
}
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
