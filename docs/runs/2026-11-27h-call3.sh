#!/usr/bin/env bash
# Device call 3 of the session 2026-11-27h (one H100), commit in .device/COMMIT. Issue 27:
# the tile loops without a division per element (layer 1's zeroing and bias, carried rows),
# the retirement check a float4 a lane.
# Predicted: 65536-120 launch 1 2.62 -> about 2.0 ms (ncu of call 2: issue-bound, and the
# zeroing and bias loops divided at each of a tile's 28 672 outputs, as many as its input
# nonzeros), the later launches 10-20 % less (retirement 4x fewer loads), the run 5.02 ->
# about 4.2 ms; the official 1024-120 0.259 -> about 0.24 ms.
# 1. Every GPU test executable (the kernel changed).
# 2. The official 1024-120 against its truth (3 warm-ups, 20 runs); generated 4096-120,
#    16384-120 and 65536-120 (seed 0, MNIST-recipe rows; 2 warm-ups, 5 runs), 65536 also
#    with launch 1 over layers 1-4 (--bd-cuts 4,8,16,32,64).
# 3. ncu of 65536's launches 1 and 2 with the source counters (where the stalls are).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 260 bash .device/run.sh tests > $R/tests-run.txt 2>&1
el "tests rc=$? $(grep -E '^test executables' $R/tests-run.txt)"
grep -E '^FAIL|panicked' -A3 $R/tests-run.txt | head -10
( cd $OUT && tar czf tests.tar.gz tests.log tests-summary.txt r/tests-run.txt 2>/dev/null; rm -f tests.log r/tests-run.txt )
NCU=/usr/local/cuda/bin/ncu
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section ComputeWorkloadAnalysis --section SourceCounters"
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 60 $W/bin/spdnn infer --method blockdepend $OFF --warmup 3 --repetitions 20 --json > $R/bd-1024-120.json 2> $R/bd-1024-120.err
el "bd-1024-120 rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-1024-120.json | tr -d ' \n')"
for n in 4096 16384; do
  net=$W/g$n.bin
  timeout 60 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  timeout 100 $W/bin/spdnn infer --method blockdepend --weights $net --neurons $n --layers 120 --mnist \
    --warmup 2 --repetitions 5 --json > $R/bd-$n-120.json 2> $R/bd-$n-120.err
  el "bd-$n-120 rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/bd-$n-120.json | tr -d ' \n')"
  rm -f $net
done
net=$W/g65536.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
images=$W/i65536.bin
timeout 120 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "images 65536 rc=$?"
IN="--images $images"; [ -s $images ] || IN=--mnist
for variant in default cut4; do
  opts=; tag=bd-65536-120; [ $variant = cut4 ] && { opts="--bd-cuts 4,8,16,32,64"; tag=$tag-cut4; }
  timeout 100 $W/bin/spdnn infer --method blockdepend --weights $net --neurons 65536 --layers 120 $IN \
    $opts --warmup 2 --repetitions 5 --json > $R/$tag.json 2> $R/$tag.err
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
    print(f"{os.path.basename(path)}: {run['infer_ms']:.3f} ms, {run['categories']} categories, matched {run.get('matched')}; {d.get('launches')}; {d.get('registers')}; local {d.get('local_bytes')}; launches {launches}")
PY
cat $OUT/launches.md
for skip in 0 1; do
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 40 ] && { el "no time for ncu launch $((skip + 1))"; continue; }
  timeout $(( left - 15 )) $NCU --kernel-name regex:bd_chain --launch-skip $skip --launch-count 1 $SECTIONS \
    $W/bin/spdnn infer --method blockdepend --weights $net --neurons 65536 --layers 120 $IN \
    --warmup 0 --repetitions 1 > $R/ncu-65536-launch$((skip + 1)).txt 2>&1
  el "ncu 65536 launch $((skip + 1)) rc=$?"
  grep -E 'bd_chain|Duration|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|L1/TEX Hit|DRAM Throughput' $R/ncu-65536-launch$((skip + 1)).txt | head -12
done
rm -f $net $images
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
