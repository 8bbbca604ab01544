#!/usr/bin/env bash
# Device call 4 of the session 2026-11-27g (one H100), commit in .device/COMMIT: blockdepend's
# kernels compiled for the layer formats the chain has (BD_FORMATS).
# 1. blockdepend's GPU tests (the scaled-against-pairs test now also runs the kernels of
#    every format, bit for bit).
# 2. Issue 27's A/B on one card: generated 1024-120 and 65536-120 (seed 0, MNIST-recipe
#    rows), kernels of the layers' formats (default) against every format
#    (`--bd-kernel-formats every`: the kernels of ecdb6f0), 2 warm-ups and 5 timed runs,
#    a time per launch and each instance's registers.
# 3. Issue 29: cusparse on 65536-480 over the first 6000 rows, unconstrained, one pass:
#    the model's per-layer bytes at this depth against the measured peak (the 60000-row
#    pass did not end in 565 s in call 3).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=1 TESTS_TIMEOUT_S=150 PROPTEST_CASES=8 timeout 170 bash .device/run.sh tests > $R/tests-run.txt 2>&1
el "tests rc=$? $(grep -E '^test executables' $R/tests-run.txt)"
grep -E '^FAIL|panicked' -A3 $R/tests-run.txt | head -10
( cd $OUT && tar czf tests.tar.gz tests.log tests-summary.txt r/tests-run.txt && rm -f tests.log r/tests-run.txt )
for n in 1024 65536; do
  net=$W/ab$n.bin
  timeout 120 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  el "generate $n rc=$?"
  for formats in layers every; do
    tag=bd-$n-120-$formats
    timeout 100 $W/bin/spdnn infer --method blockdepend --weights $net --neurons $n \
      --layers 120 --mnist --bd-kernel-formats $formats --warmup 2 --repetitions 5 --json \
      > $R/$tag.json 2> $R/$tag.err
    el "$tag rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/$tag.json | tr -d ' \n')"
  done
  rm -f $net
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
    print(f"{os.path.basename(path)}: {run['infer_ms']:.3f} ms; {d.get('registers')}; local {d.get('local_bytes')}; launches {launches}")
PY
cat $OUT/launches.md
NET=$W/n480.bin
[ -s $NET ] || { timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 480 --seed 0 --cache $NET > $R/gen480.log 2>&1; el "generate 480 rc=$?"; }
left=$(( 580 - ($(date +%s) - T0) ))
timeout $(( left - 5 )) $W/bin/spdnn infer --method cusparse --weights $NET --neurons 65536 --layers 480 \
  --mnist --rows 6000 --warmup 0 --repetitions 1 --json > $R/cusparse-480-6000.json 2> $R/cusparse-480-6000.err
el "cusparse 480 x 6000 rc=$? $(grep -E '^  "(infer_ms|categories|total_ms)"' $R/cusparse-480-6000.json | tr -d ' \n')"
python3 - "$R/cusparse-480-6000.json" <<'PY'
import json, sys
try:
    run = json.load(open(sys.argv[1]))
    gpu = run["details"]["plan"]["gpus"][0]; plan = gpu["plan"]
    peak, predicted = gpu["measured_peak"], plan["predicted_bytes"]
    print(f"cusparse 65536-480 x 6000 rows: {run['infer_ms']:.1f} ms, {plan['batches']} x {plan['batch']}, "
          f"predicted {predicted} B, measured peak {peak} B, predicted / measured "
          f"{predicted / max(peak, 1):.4f}, exact_model {gpu['exact_model']}, categories {run['categories']}")
except Exception as e:
    print(f"cusparse: no table ({e})")
PY
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
