#!/usr/bin/env bash
# Pending device call for issue 27 (written at the end of the session 2026-11-27f, whose
# device budget was spent), one GPU, about 4 minutes: blockdepend's scaled ELL layers
# against the pair layout in the same binary (`--bd-format ell-pairs`). In 2026-11-27f
# (call 4) the unconstrained 65536 runs took 10.56 ms against 9.91 with pairs on
# 2026-11-26 (another commit and another H100): launch 1 (global tiles) 7.60 -> 8.17 ms,
# its instance's registers 64 -> 78. This call says how much of that is the format, per
# launch, on one card: generated 1024-120 and 65536-120 (seed 0, MNIST-recipe rows),
# default (scaled) and pairs, 2 warm-ups and 5 timed runs each; the JSON keeps
# `stages_ms` (a launch each), `registers` and `launches`.
# Copy beside preamble.sh into .device/ (after `cargo xtask device-pack` and
# `git rev-parse --short HEAD > .device/COMMIT`); carry [".device"].
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
for n in 1024 65536; do
  for format in auto ell-pairs; do
    tag=bd-$n-120-$format
    timeout 150 $W/bin/spdnn infer --method blockdepend --generate-seed 0 --neurons $n \
      --layers 120 --mnist --bd-format $format --warmup 2 --repetitions 5 --json \
      > $R/$tag.json 2> $R/$tag.err
    el "$tag rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/$tag.json | tr -d ' \n')"
  done
done
python3 - "$R" > $OUT/launches.md <<'PY'
import json, glob, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    run = json.load(open(path)); d = run["details"]
    launches = " ".join(f"{s['ms']:.3f}" for s in d.get("stages_ms", []))
    print(f"{os.path.basename(path)}: {run['infer_ms']:.3f} ms; {d.get('registers')}; launches {launches}")
PY
cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
