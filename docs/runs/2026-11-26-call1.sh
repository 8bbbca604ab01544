#!/usr/bin/env bash
# Device call 1 of 2026-11-26 (one H100 or H200): tcchain's first GPU run. Its GPU tests, then
# nets A-C (1-epoch quick nets: the same shapes and masks' density as Table 4's, weights not
# converged; times do not depend on the weights) with every fast method side by side, then
# the tile heights on net B, then the official-shape 1024-120 (tcchain runs every layer dense).
. .device/preamble.sh
mkdir -p $W/data/nets && cp data/nets-quick/*.safetensors $W/data/nets/ && el "nets: $(ls $W/data/nets | tr '\n' ' ')"
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > $R/gpu.txt; el "$(cat $R/gpu.txt)"
SPDNN_TESTS=tcchain TESTS_TIMEOUT_S=300 bash .device/run.sh tests > $R/tests.log 2>&1
el "tests rc=$?"; cat $OUT/tests-summary.txt 2>/dev/null; grep -E "^test .*(FAILED|ok)$|panicked|registers" $OUT/tests.log | head -40
for net in A B C; do
  timeout 150 $W/bin/spdnn classify --network $W/data/nets/$net.safetensors --mnist-test \
    --methods cpu,hp,sz,xy,tcchain --warmup 2 --repetitions 5 --json > $R/classify-$net.json 2> $R/classify-$net.err
  el "classify $net rc=$?"; python3 - $R/classify-$net.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d.get("rows", d.get("methods", [])):
    print(" ", {k: r.get(k) for k in ("method","infer_ms","accuracy","categories_equal","predictions_differ","error") if k in r})
PY
done
for rows in 32 48 64 80; do
  timeout 60 $W/bin/spdnn classify --network $W/data/nets/B.safetensors --mnist-test --methods tcchain \
    --tc-tile-rows $rows --warmup 2 --repetitions 5 --json > $R/tile-$rows.json 2>&1
  el "B tile rows $rows rc=$? $(grep -o '"infer_ms":[^,]*' $R/tile-$rows.json | head -1)"
done
timeout 120 $W/bin/spdnn infer --method tcchain --neurons 1024 --layers 120 --mnist --json > $R/official.json 2> $R/official.err
el "1024-120 rc=$? $(grep -E '"infer_ms"|"matched"|"categories"' $R/official.json | tr -d ' \n' | cut -c1-200)"
tar -C $OUT -czf $OUT/call1.tar.gz r; rm -rf $R
el done
