#!/usr/bin/env bash
# Device call 1 of the session 2026-11-27g (one H100), commit in .device/COMMIT.
# 1. Every GPU test executable (`run.sh tests`, four at a time, each within 200 s): the four
#    review commits of 2026-11-27f that never ran on a GPU (drive's each_step, snicit's
#    recovery launches, blockdepend's wide test problem, Format::is_scaled).
# 2. Issue 27's A/B (the pending-issue27-scaled.sh of 2026-11-27f, here with the network
#    generated once): blockdepend's scaled ELL layers
#    against pairs (`--bd-format ell-pairs`) in one binary, generated 1024-120 and 65536-120
#    (seed 0, MNIST-recipe rows), 2 warm-ups and 5 timed runs each; the JSON keeps a time per
#    launch (`stages_ms`) and each instance's registers.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
TESTS_JOBS=4 TESTS_TIMEOUT_S=200 PROPTEST_CASES=8 timeout 280 bash .device/run.sh tests > $R/tests-run.txt 2>&1
el "tests rc=$? $(grep -E '^test executables' $R/tests-run.txt)"
grep -E '^FAIL|panicked' $R/tests-run.txt | head -10
( cd $OUT && tar czf tests.tar.gz tests.log tests-summary.txt r/tests-run.txt && rm -f tests.log r/tests-run.txt )
for n in 1024 65536; do
  net=$W/ab$n.bin
  timeout 120 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  el "generate $n rc=$?"
  for format in auto ell-pairs; do
    tag=bd-$n-120-$format
    timeout 100 $W/bin/spdnn infer --method blockdepend --weights $net --neurons $n \
      --layers 120 --mnist --bd-format $format --warmup 2 --repetitions 5 --json \
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
    print(f"{os.path.basename(path)}: {run['infer_ms']:.3f} ms; {d.get('registers')}; launches {launches}")
PY
cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
