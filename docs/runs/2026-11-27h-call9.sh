#!/usr/bin/env bash
# Device call 9 of the session 2026-11-27h (one H100), commit in .device/COMMIT: layer 1's
# columns staged 16 bytes a cp.async (one copy where there were four).
# Predicted: launch 1 at 65536-120 3.10 -> about 2.8 ms (the staging was about 6 of some 30
# instructions a nonzero), the run 4.57 -> about 4.3 ms; 1024-120 a few µs at most.
# 1. blockdepend's and the engine's GPU tests at full scale.
# 2. The official 1024-120 against its truth (3 warm-ups, 20 runs); generated 4096-120,
#    16384-120 and 65536-120 (seed 0, MNIST-recipe rows; 2 warm-ups, 5 runs).
# 3. At the sanitize scale: memcheck over the official, challenge and random tests, and
#    racecheck over the challenge networks (the staging's copies and barriers).
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
timeout 200 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend.txt 2>&1
el "tests blockdepend rc=$? $(grep -E '^test result' $R/tests-blockdepend.txt | tail -1)"
grep -E 'panicked|FAILED' -A3 $R/tests-blockdepend.txt | head -8
# The engine runs blockdepend through the registry beside every method (it fills the GPU's
# memory: one test at a time).
timeout 100 $W/tests/spdnn-engine--gpu --include-ignored --test-threads=1 > $R/tests-engine.txt 2>&1
el "tests engine rc=$? $(grep -E '^test result' $R/tests-engine.txt | tail -1)"
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
timeout 60 $W/bin/spdnn infer --method blockdepend $OFF --warmup 3 --repetitions 20 --json > $R/bd-1024-120.json 2> $R/bd-1024-120.err
el "bd-1024-120 rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-1024-120.json | tr -d ' \n')"
for n in 4096 16384 65536; do
  net=$W/g$n.bin
  timeout 120 $W/bin/spdnn generate --neurons $n --layers 120 --seed 0 --cache $net > $R/gen$n.log 2>&1
  timeout 100 $W/bin/spdnn infer --method blockdepend --weights $net --neurons $n --layers 120 --mnist \
    --warmup 2 --repetitions 5 --json > $R/bd-$n-120.json 2> $R/bd-$n-120.err
  el "bd-$n-120 rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/bd-$n-120.json | tr -d ' \n')"
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
    print(f"{os.path.basename(path)}: {run['infer_ms']:.3f} ms, {run['categories']} categories, matched {run.get('matched')}; {d.get('registers')}; launches {launches}")
PY
cat $OUT/launches.md
SAN=/usr/local/cuda/bin/compute-sanitizer
export SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=2
left=$(( 560 - ($(date +%s) - T0) ))
[ $left -gt 60 ] && { timeout $(( left / 2 )) $SAN --tool memcheck --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 official_1024_network generated_challenge_networks exact_random_networks > $R/memcheck.txt 2>&1
  el "memcheck rc=$? $(grep -E 'ERROR SUMMARY|^test result' $R/memcheck.txt | tr '\n' ' ')"; }
left=$(( 575 - ($(date +%s) - T0) ))
[ $left -gt 40 ] && { timeout $(( left - 10 )) $SAN --tool racecheck --error-exitcode 9 $W/tests/spdnn-blockdepend--gpu \
    --include-ignored --test-threads=1 generated_challenge_networks > $R/racecheck.txt 2>&1
  el "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|^test result' $R/racecheck.txt | tr '\n' ' ')"; }
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
