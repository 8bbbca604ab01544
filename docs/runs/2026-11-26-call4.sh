#!/usr/bin/env bash
# Device call 4 of 2026-11-26 (one H100), after merging the exact memory models (99f308c+):
# every GPU test executable (PROPTEST_CASES=8, four at a time), then issue 26's benchmark,
# part 1: nets A-C (trained with the warm-up + cosine schedule, in the pack's data/nets) over
# the 10000 MNIST test images with every method of the default run, tcchain and auto side by
# side (classify: time, accuracy, predictions against the CPU reference; snicit's threshold as
# in docs/real-networks.md: 10 for A and B, 6 for C), then auto against the best methods on
# the official 1024-120.
. .device/preamble.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > $R/gpu.txt; el "$(cat $R/gpu.txt)"
el "nets: $(ls $W/data/nets | tr '\n' ' ')"
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 230 bash .device/run.sh tests > $R/tests-run.txt 2>&1
el "tests rc=$?"; cat $OUT/tests-summary.txt; grep -hE "^test .*FAILED|panicked at" $OUT/tests.log | head -20
summary() { python3 - "$1" <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
print("  reference accuracy %.4f" % d['reference_accuracy'])
for r in d['results']:
    print("  %-12s %10.4f ms  acc %.4f  match %s  differ %s  %s" % (r['method'], r['infer_ms'] or -1, r['accuracy'] or 0, r['categories_match'], r['predictions_differ'], (r.get('error') or '')[:100]))
    if r.get('choice'): print("  %-12s %s" % ('', r['choice'][:300]))
PY
}
for net in A B C; do
  t=10; [ $net = C ] && t=6
  timeout 120 $W/bin/spdnn classify --network $W/data/nets/$net.safetensors --mnist-test \
    --methods cpu,bf,snig,cusparse,dense,xy,snicit,hp,blockdepend,sz,tcchain,auto --no-auto-cache --threshold $t \
    --warmup 3 --repetitions 10 --json > $R/classify-$net.json 2> $R/classify-$net.err
  el "classify $net rc=$?"; summary $R/classify-$net.json
done
left=$(( 560 - ($(date +%s) - T0) ))
BENCH_TAG=official timeout $(( left - 10 )) bash .device/run.sh bench --neurons 1024 --layers 120 \
  --methods auto,blockdepend,sz,hp,xy,snicit --warmup 2 --repetitions 5 > $R/official.log 2>&1
el "official rc=$?"; grep -hE '^\| ' $OUT/official/*.md 2>/dev/null | head -20; grep -E "chose" $R/official.log | head -3
tar -C $OUT -czf $OUT/call4.tar.gz r $(cd $OUT && ls -d official 2>/dev/null); rm -rf $R $OUT/official
el done
