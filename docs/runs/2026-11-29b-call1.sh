#!/usr/bin/env bash
# Device call 1 of the session 2026-11-29b (one H200). Pack aadadf0 (84a44fe's kernels = HEAD
# 2911fe9's). Questions: where a lanes warp's ~73 000 cycles go (variant `tracel`: clock64
# stamps per warp around the starts, the scatter, the conversion, each of layers 2-6 and the
# check with the carry-out, printed by lane 0); where both launches stall now (ncu source
# counters of each launch, base); and variant `rpw`: a lanes warp takes ceil(rows / resident
# warps) rows (29 instead of 32 for 60000 rows on 132 SMs, 2069 warps over 2112 slots) and
# its circulant chunks stop at its rows.
# Prediction (rpw): the scatter's share of the chain ~40 % scales with the rows, so the lanes
# launch ~36.7 -> ~35.5 us (ncu); events within the spread.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
variants tracel rpw
OFF120="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2 3; do
  bd 1024-120-base-$i $W/bin/spdnn $OFF120 --warmup 3 --repetitions 30
  bd 1024-120-rpw-$i $W/spdnn-rpw $OFF120 --warmup 3 --repetitions 30
done
timeout 120 $W/spdnn-tracel infer --method blockdepend $OFF120 --warmup 1 --repetitions 1 > $R/trace.out 2> $R/trace.err
el "trace rc=$? lines $(grep -c '^L ' $R/trace.out)"
for v in base rpw base rpw; do
  bin=$W/bin/spdnn; [ $v = rpw ] && bin=$W/spdnn-rpw
  timeout 120 ncu --clock-control none --kernel-name regex:bd_chain --launch-count 2 --section SpeedOfLight \
    $bin infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-dur-$v.log 2>&1
  el "ncu $v: $(grep -E 'bd_chain|Duration' $R/ncu-dur-$v.log | tr -s ' ' | tr '\n' ' ')"
done
for k in 0 1; do
  timeout 200 ncu --clock-control none -o $R/k-src$k --kernel-name regex:bd_chain --launch-skip $k --launch-count 1 \
    --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section SourceCounters --section Occupancy \
    --section LaunchStats $W/bin/spdnn infer --method blockdepend $OFF120 --warmup 0 --repetitions 1 > $R/ncu-src$k.log 2>&1
  el "ncu src$k rc=$?"
  ncu -i $R/k-src$k.ncu-rep > $R/ncu-src$k.txt 2>&1
  ncu -i $R/k-src$k.ncu-rep --page source --csv --print-source sass > $R/ncu-src$k-sass.csv 2>&1
  rm -f $R/k-src$k.ncu-rep
  grep -E "Duration|Executed Instructions |Issued Warp|No Eligible|Eligible Warps|Registers Per|Achieved Active" $R/ncu-src$k.txt | head -10
done
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
