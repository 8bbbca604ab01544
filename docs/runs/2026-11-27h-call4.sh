#!/usr/bin/env bash
# Device call 4 of the session 2026-11-27h (one H100), the pack of call 3 (commit in
# .device/COMMIT). Issue 27: with layer 1 cheap, does launch 1 over layers 1-4 pay
# everywhere? (65536-120: 4.72 -> 4.53 ms in call 3.) Predicted: one launch and one carry
# fewer, a few µs at 1024 and 4096, more at 16384.
# 1. The official 1024-120 and generated 4096-120 and 16384-120, default cuts (2, 4, 8, ...)
#    against --bd-cuts 4,8,16,32,64: 1024 3 warm-ups, 20 runs; others 2 and 5.
# 2. Generated 1024 and 4096 at 480 and 1920 layers, default cuts (the deep layers retire:
#    the same floors as 120).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
CUT4="--bd-cuts 4,8,16,32,64"
for variant in default cut4; do
  opts=; [ $variant = cut4 ] && opts=$CUT4
  timeout 60 $W/bin/spdnn infer --method blockdepend $OFF $opts --warmup 3 --repetitions 20 --json > $R/bd-1024-120-$variant.json 2> $R/bd-1024-120-$variant.err
  el "bd-1024-120-$variant rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-1024-120-$variant.json | tr -d ' \n')"
done
for shape in 4096:120 16384:120 1024:480 1024:1920 4096:480 4096:1920; do
  n=${shape%:*}; l=${shape#*:}; net=$W/g$n-$l.bin
  timeout 120 $W/bin/spdnn generate --neurons $n --layers $l --seed 0 --cache $net > $R/gen$n-$l.log 2>&1
  variants=default; [ $l = 120 ] && variants="default cut4"
  for variant in $variants; do
    opts=; [ $variant = cut4 ] && opts="$CUT4"
    [ $l != 120 ] && [ $variant = cut4 ] && continue
    tag=bd-$n-$l-$variant
    timeout 100 $W/bin/spdnn infer --method blockdepend --weights $net --neurons $n --layers $l --mnist \
      $opts --warmup 2 --repetitions 5 --json > $R/$tag.json 2> $R/$tag.err
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
    print(f"{os.path.basename(path)}: {run['infer_ms']:.3f} ms, {run['categories']} categories, matched {run.get('matched')}; launches {launches}")
PY
cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
