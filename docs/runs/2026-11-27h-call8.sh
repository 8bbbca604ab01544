#!/usr/bin/env bash
# Device call 8 of the session 2026-11-27h (a four-GPU machine), commit in .device/COMMIT.
# 1. blockdepend's GPU tests (on GPU 0) after the spread test's fix (the other 13 test
#    executables passed on 12b43dc in call 7).
# 2. Issue 27's scaling item: blockdepend on 1, 2 and 4 GPUs at 65536-120 and 16384-120
#    (seed 0, MNIST-recipe rows; 2 warm-ups, 5 runs), every count's categories compared
#    row by row. Predicted: below the 3.46x of 2026-11-26. Launch 1, the part that divides
#    by the rows, is now 3.1 of 4.6 ms, and the launches after it (about 1.5 ms on one GPU)
#    are the part that did not scale then.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "tests blockdepend rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -8
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
