#!/usr/bin/env bash
# Device call 5 of the session 2026-11-27h (one H100), commit in .device/COMMIT: default
# cuts from 4 (4, 8, 16, ...; call 4 measured them faster on all four widths).
# 1. blockdepend's and the engine's GPU tests (the default launches changed).
# 2. Defaults: the official 1024-120 against its truth (3 warm-ups, 20 runs); generated
#    4096-120, 16384-120 and 65536-120 (seed 0, MNIST-recipe rows; 2 warm-ups, 5 runs).
#    Expected: call 4's cut4 numbers (0.228, 0.458, 1.463; 65536 4.53 in call 3).
# 3. Random 4096-120 (fan-in 32, rows never die): default against the old cuts
#    (--bd-cuts 2,4,8,16,32,64); 1 warm-up, 3 runs. Expected within noise of each other
#    (289 ms on 2026-11-27g).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
for t in blockdepend engine; do
  timeout 200 $W/tests/spdnn-$t--gpu --include-ignored --test-threads=2 > $R/tests-$t.txt 2>&1
  el "tests $t rc=$? $(grep -E '^test result' $R/tests-$t.txt | tail -1)"
  grep -E 'panicked|FAILED' -A3 $R/tests-$t.txt | head -8
done
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
timeout 40 $W/bin/spdnn generate --random --fan-in 32 --neurons 4096 --layers 120 --seed 0 --cache $W/r4096.bin > $R/genr4096.log 2>&1
for variant in default cut2; do
  opts=; [ $variant = cut2 ] && opts="--bd-cuts 2,4,8,16,32,64"
  timeout 60 $W/bin/spdnn infer --method blockdepend --weights $W/r4096.bin --neurons 4096 --layers 120 --mnist \
    $opts --warmup 1 --repetitions 3 --json > $R/bd-r4096-120-$variant.json 2> $R/bd-r4096-120-$variant.err
  el "bd-r4096-120-$variant rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/bd-r4096-120-$variant.json | tr -d ' \n')"
done
rm -f $W/r4096.bin
net=$W/g65536.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
timeout 100 $W/bin/spdnn infer --method blockdepend --weights $net --neurons 65536 --layers 120 --mnist \
  --warmup 2 --repetitions 5 --json > $R/bd-65536-120.json 2> $R/bd-65536-120.err
el "bd-65536-120 rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/bd-65536-120.json | tr -d ' \n')"
rm -f $net
python3 - "$R" > $OUT/launches.md <<'PY'
import json, glob, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "bd-*.json"))):
    try:
        run = json.load(open(path))
    except Exception as e:
        print(f"{os.path.basename(path)}: unreadable ({e})"); continue
    d = run["details"]
    launches = " ".join(f"{s['ms']:.3f}" for s in d.get("stages_ms", []))
    print(f"{os.path.basename(path)}: {run['infer_ms']:.3f} ms, {run['categories']} categories, matched {run.get('matched')}; {d.get('launches')}; launches {launches}")
PY
cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
