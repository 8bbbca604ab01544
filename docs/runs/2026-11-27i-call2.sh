#!/usr/bin/env bash
# Device call 2 of the session 2026-11-27i (one H100), the pack of commit .device/COMMIT.
# Call 1's ring of loads in flight made every shape slower (4096's launch 3 0.102 -> 0.138
# ms) while ncu still counted ~7.5 of ~14.5 cycles a warp stalled on L1TEX: the weight
# loads of the items are not the wait. So: where the warps wait, instruction by instruction.
# 1. ncu source counters (warp stall sampling a SASS line) of 4096's launch 3 (layers 9-16)
#    and of the official 1024's launches 1 and 3.
# 2. 65536-120 with the spread tail off against auto: call 1 measured 16384-120 at 1.204 ms
#    with it off against 1.434 (its heavy layers are 64 KiB of 16-bit entries; the spread rule
#    counts them as 8-byte pairs, 256 KiB). Predicted at 65536: off costs 0.05-0.2 ms (launch 5
#    in tiles took 0.25 ms against 0.16 spread, 2026-11-23, on the H200).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
NCU=/usr/local/cuda/bin/ncu
profile() { # name skip args...
  local name=$1 skip=$2; shift 2
  timeout 120 $NCU --kernel-name regex:bd_chain --launch-skip $skip --launch-count 1 \
    --section WarpStateStats --section SourceCounters --section SchedulerStats --section LaunchStats \
    --export $R/ncu-$name --force-overwrite \
    $W/bin/spdnn infer --method blockdepend "$@" --warmup 0 --repetitions 1 > $R/ncu-$name.txt 2>&1
  el "ncu $name rc=$?"
  $NCU --import $R/ncu-$name.ncu-rep --page source --csv --print-source sass > $R/src-$name.csv 2> $R/src-$name.err
  el "source $name rc=$? $(wc -l < $R/src-$name.csv) lines"
  $NCU --import $R/ncu-$name.ncu-rep --page details --print-details all > $R/details-$name.txt 2>&1
}
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
profile 1024-l1 0 $OFF
profile 1024-l3 2 $OFF
net=$W/g4096.bin
timeout 60 $W/bin/spdnn generate --neurons 4096 --layers 120 --seed 0 --cache $net > $R/gen4096.log 2>&1
profile 4096-l3 2 --weights $net --neurons 4096 --layers 120 --mnist
rm -f $net
net=$W/g65536.bin images=$W/i65536.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
for spread in auto off; do
  timeout 100 $W/bin/spdnn infer --method blockdepend --weights $net --neurons 65536 --layers 120 --images $images \
    --bd-spread $spread --warmup 2 --repetitions 5 --json > $R/bd-65536-120-spread$spread.json 2> $R/bd-65536-120-spread$spread.err
  el "bd-65536-120 spread $spread rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/bd-65536-120-spread$spread.json | tr -d ' \n')"
done
rm -f $net $images
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
mkdir -p $OUT/src; cp $R/src-*.csv $OUT/src/ 2>/dev/null
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
