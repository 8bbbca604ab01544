#!/usr/bin/env bash
# Device call 6 of the session 2026-11-27j (four GPUs): the pack of commit .device/COMMIT (the
# same code as call 5). 16384-120 and 65536-120 on 1, 2 and 4 GPUs (2 warm-ups, 5 runs), the
# categories of each count compared with one GPU's, row by row (as 2026-11-27i call 7).
# Predicted: 65536's launches after the first run wide 7-row tiles, which the plan's tile
# bounds, so one wave of tiles changed nothing there: ~3.2x on four GPUs as in 2026-11-27i.
# 16384's launch 3 went 0.142 -> 0.115 ms on one GPU (one wave); on four its rows per GPU
# fill fewer tiles than blocks either way: ~2.4-2.6x.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
for n in 16384 65536; do
  net=$W/g$n.bin
  timeout 120 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  IN=--mnist
  if [ $n = 65536 ]; then
    timeout 120 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $W/i65536.bin > $R/images65536.log 2>&1
    [ -s $W/i65536.bin ] && IN="--images $W/i65536.bin"
  fi
  for gpus in 0 0,1 0,1,2,3; do
    tag=bd-$n-120-gpus${gpus//,/}
    timeout 100 $W/bin/spdnn infer --method blockdepend --weights $net --neurons $n --layers 120 $IN \
      --gpus $gpus --warmup 2 --repetitions 5 --json --categories-out $R/$tag.tsv > $R/$tag.json 2> $R/$tag.err
    el "$tag rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/$tag.json | tr -d ' \n')"
  done
  for gpus in 01 0123; do
    cmp -s $R/bd-$n-120-gpus0.tsv $R/bd-$n-120-gpus$gpus.tsv && el "$n: categories on GPUs $gpus identical to one GPU's" || el "$n: categories on GPUs $gpus DIFFER"
  done
  rm -f $net $W/i65536.bin
done
python3 - "$R" > $OUT/scaling.md <<'PY'
import json, os, sys
r = sys.argv[1]
for n in (16384, 65536):
    times = {}
    for g in ("0", "01", "0123"):
        try:
            times[len(g)] = json.load(open(os.path.join(r, f"bd-{n}-120-gpus{g}.json")))["infer_ms"]
        except Exception as e:
            print(f"{n}: {g} unreadable ({e})")
    if 1 in times:
        print(f"{n}-120: " + ", ".join(f"{k} GPU {v:.3f} ms ({times[1] / v:.2f}x)" for k, v in sorted(times.items())))
PY
cat $OUT/scaling.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
