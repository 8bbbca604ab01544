#!/usr/bin/env bash
# Device call 2 of 2026-11-26 (one H100): tcchain after the one-basic-block k-loop (instances
# per warp tile count), dense's first GPU run; nets A-C side by side (cpu, dense fp32,
# dense TF32, tcchain, hp, auto); tcchain's tile heights on B; an ncu profile of tcchain on B;
# auto on the official 1024-120. The quick pack (device-pack --only tcchain,dense).
. .device/preamble.sh
mkdir -p $W/data/nets && cp data/nets-quick/*.safetensors $W/data/nets/ && el "nets: $(ls $W/data/nets | tr '\n' ' ')"
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > $R/gpu.txt; el "$(cat $R/gpu.txt)"
TESTS_TIMEOUT_S=240 bash .device/run.sh tests > $R/tests.log 2>&1
el "tests rc=$?"; cat $OUT/tests-summary.txt 2>/dev/null; grep -hE "FAILED|panicked" $OUT/tests.log $OUT/logs/*.log 2>/dev/null | head -20
summary() { python3 - "$1" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d['results']:
    det=r.get('details') or {}
    print("  %-10s %9.4f ms  acc %.4f  match %s  differ %s  %s" % (r['method'], r['infer_ms'] or -1, r['accuracy'] or 0, r['categories_match'], r['predictions_differ'], r.get('error') or ''))
PY
}
for net in A B C; do
  timeout 200 $W/bin/spdnn classify --network $W/data/nets/$net.safetensors --mnist-test \
    --methods cpu,dense,tcchain,hp,auto --no-auto-cache --warmup 3 --repetitions 10 --json > $R/classify-$net.json 2> $R/classify-$net.err
  el "classify $net rc=$?"; summary $R/classify-$net.json
  timeout 60 $W/bin/spdnn classify --network $W/data/nets/$net.safetensors --mnist-test \
    --methods dense --dense-tf32 --warmup 3 --repetitions 10 --json > $R/tf32-$net.json 2> $R/tf32-$net.err
  el "tf32 $net rc=$?"; summary $R/tf32-$net.json
done
for rows in 16 32 48 64 80; do
  timeout 60 $W/bin/spdnn classify --network $W/data/nets/B.safetensors --mnist-test --methods tcchain \
    --tc-tile-rows $rows --warmup 3 --repetitions 10 --json > $R/tile-$rows.json 2>&1
  el "B tile rows $rows: $(summary $R/tile-$rows.json)"
done
timeout 120 /usr/local/cuda/bin/ncu --clock-control none -k regex:tcchain -c 1 --section SpeedOfLight \
  --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section Occupancy --section LaunchStats $W/bin/spdnn classify --network $W/data/nets/B.safetensors --mnist-test \
  --methods tcchain --warmup 0 --repetitions 1 > $R/ncu-B.txt 2>&1
el "ncu rc=$?"; grep -E "Duration|Throughput|Issue Slot|No Eligible|Stall|Registers|Achieved Occ|Warp Cycles|Eligible Warps|L2 Hit|Mem Busy|Max Bandwidth" $R/ncu-B.txt | head -40
timeout 150 $W/bin/spdnn infer --method auto --no-auto-cache --weights $W/data/sdgc/neuron1024.tar.gz --layers 120 --mnist \
  --truth $W/data/sdgc/neuron1024-l120-categories.tsv --warmup 2 --repetitions 5 --json > $R/auto-1024.json 2> $R/auto-1024.err
el "auto 1024-120 rc=$? $(grep -E '"infer_ms"|"auto_choice"|"auto_reason"|"matched"' $R/auto-1024.json | tr -d '\n' | cut -c1-400)"
tar -C $OUT -czf $OUT/call2.tar.gz r; rm -rf $R
el done
