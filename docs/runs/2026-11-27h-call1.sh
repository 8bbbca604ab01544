#!/usr/bin/env bash
# Device call 1 of the session 2026-11-27h (one H100), commit in .device/COMMIT. Issue 27:
# where launch 1 (layers 1-2, 7.7 of 10.2 ms at 65536-120) goes.
# The plan puts launch 1 at 65536 in global tiles (32 rows): its model divides layer 1's
# weights (1 MB, read per input nonzero whatever the tile) by the tile's rows and counts
# nothing for the scatter's atomics, which in global tiles are L2 atomics, one 32-byte
# sector per (nonzero, entry): about 6500 x 2 a row. Predicted: shared tiles (7 rows, one
# 768-thread block an SM, shared-memory atomics) take launch 1 from 7.7 to about 1.5-2 ms
# (W1's entries through L2, 6.2 GB, ~1 ms; the binary input, 1.57 GB, ~0.5 ms, overlapped);
# split tiles (14 rows) about the same for layer 1.
# 1. generated 65536-120 (seed 0, MNIST-recipe rows, made once into an input cache):
#    --bd-placement auto / shared / split, and shared with launch 1 over layers 1-4
#    (--bd-cuts 4,8,16,32,64: one carry of 37889 rows fewer), 2 warm-ups and 5 timed runs,
#    each launch's time.
# 2. ncu of launch 1 under shared and (default) global tiles at 65536, and of the official
#    1024-120's launch 1 (0.15 of its 0.31 ms).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
NCU=/usr/local/cuda/bin/ncu
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section ComputeWorkloadAnalysis"
net=$W/g65536.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
el "generate 65536 rc=$?"
images=$W/i65536.bin
timeout 120 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "images 65536 rc=$? $(ls -l $images | cut -d' ' -f5)"
IN="--images $images"; [ -s $images ] || IN=--mnist
for variant in auto shared split shared:4,8,16,32,64; do
  placement=${variant%%:*}; cuts=; tag=bd-65536-120-$placement
  [ "$variant" != "$placement" ] && { cuts="--bd-cuts ${variant#*:}"; tag=$tag-cut4; }
  timeout 100 $W/bin/spdnn infer --method blockdepend --weights $net --neurons 65536 --layers 120 $IN \
    --bd-placement $placement $cuts --warmup 2 --repetitions 5 --json > $R/$tag.json 2> $R/$tag.err
  el "$tag rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/$tag.json | tr -d ' \n')"
done
python3 - "$R" > $OUT/launches.md <<'PY'
import json, glob, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "bd-*.json"))):
    try:
        run = json.load(open(path))
    except Exception as e:
        print(f"{os.path.basename(path)}: unreadable ({e})"); continue
    d = run["details"]
    launches = " ".join(f"{s['ms']:.3f}" for s in d.get("stages_ms", []))
    print(f"{os.path.basename(path)}: {run['infer_ms']:.3f} ms, {run['categories']} categories; {d.get('launches')}; {d.get('registers')}; launches {launches}")
PY
cat $OUT/launches.md
for placement in shared global; do
  left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 90 ] && { el "no time for ncu $placement"; continue; }
  timeout $(( left - 30 )) $NCU --kernel-name regex:bd_chain --launch-count 1 $SECTIONS \
    $W/bin/spdnn infer --method blockdepend --weights $net --neurons 65536 --layers 120 $IN \
    --bd-placement $placement --warmup 0 --repetitions 1 > $R/ncu-65536-$placement.txt 2>&1
  el "ncu 65536 $placement rc=$?"
  grep -E 'bd_chain|Duration|Throughput|Hit Rate|Achieved Occupancy|Registers Per|Issue Slots Busy|No Eligible|Warp Cycles Per Issued' $R/ncu-65536-$placement.txt | head -24
done
left=$(( 580 - ($(date +%s) - T0) ))
[ $left -gt 40 ] && { timeout $(( left - 10 )) $NCU --kernel-name regex:bd_chain --launch-count 1 $SECTIONS \
  $W/bin/spdnn infer --method blockdepend --weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist \
  --truth $W/data/sdgc/neuron1024-l120-categories.tsv --warmup 0 --repetitions 1 > $R/ncu-1024.txt 2>&1
  el "ncu 1024 rc=$?"
  grep -E 'bd_chain|Duration|Throughput|Hit Rate|Achieved Occupancy|Registers Per|Issue Slots Busy|No Eligible|Warp Cycles Per Issued' $R/ncu-1024.txt | head -24; }
rm -f $net $images
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
