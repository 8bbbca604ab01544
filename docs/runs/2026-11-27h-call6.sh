#!/usr/bin/env bash
# Device call 6 of the session 2026-11-27h (one H100), the pack of call 5 (commit in
# .device/COMMIT). Issue 27: which cuts after the first launch. The launch of layers 9-16
# (0.64 ms at 65536, 0.38 at 16384) runs tiles that lose most of their rows within a few
# layers, and every tile reads each layer's weights whole; re-packing the survivors more
# often keeps tiles full at the cost of a launch and a carry each. Predicted: cuts every 2
# layers from 8 to 16 take 0.1-0.3 ms off at 65536 and 16384, little at 1024 and 4096;
# launch 1 over 1-8 loses (its tiles empty fastest).
# The official 1024-120 (3 warm-ups, 20 runs) and generated 4096-120, 16384-120, 65536-120
# (seed 0, MNIST-recipe rows; 2 warm-ups, 5 runs), each under five cut sets.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
CUTS="4,8,16,32,64 4,6,8,10,12,16,32,64 4,8,10,12,14,16,32,64 4,8,12,16,24,32,64 8,16,32,64"
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for cuts in $CUTS; do
  tag=bd-1024-120-c${cuts//,/-}
  timeout 60 $W/bin/spdnn infer --method blockdepend $OFF --bd-cuts $cuts --warmup 3 --repetitions 20 --json > $R/$tag.json 2> $R/$tag.err
  el "$tag rc=$? $(grep -E '^  "(infer_ms|matched)"' $R/$tag.json | tr -d ' \n')"
done
for n in 4096 16384 65536; do
  net=$W/g$n.bin
  timeout 120 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  IN=--mnist
  if [ $n = 65536 ]; then
    timeout 120 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $W/i65536.bin > $R/images65536.log 2>&1
    [ -s $W/i65536.bin ] && IN="--images $W/i65536.bin"
  fi
  for cuts in $CUTS; do
    tag=bd-$n-120-c${cuts//,/-}
    timeout 100 $W/bin/spdnn infer --method blockdepend --weights $net --neurons $n --layers 120 $IN \
      --bd-cuts $cuts --warmup 2 --repetitions 5 --json > $R/$tag.json 2> $R/$tag.err
    el "$tag rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/$tag.json | tr -d ' \n')"
  done
  rm -f $net $W/i65536.bin
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
    print(f"{os.path.basename(path)}: {run['infer_ms']:.3f} ms, {run['categories']} categories; carried {d.get('rows_carried')}; launches {launches}")
PY
cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
