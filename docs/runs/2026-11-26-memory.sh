#!/usr/bin/env bash
# Device call for issue 29 (one H100, `nvidia-h100-x1`; written 2026-11-26 on branch memory):
# the memory models against the measured peak, and the partition under the issue's budgets.
#
# 1. The per-method peak tests (spdnn-adaptive--gpu, `*_peak_is_its_model`: each method on
#    1024-24 over 999 MNIST rows, unconstrained and in a budget of about a third of the rows,
#    predicted ≥ measured and ≤ 1.10 × measured, results equal to the reference), in the
#    background while the 65536-480 network is generated.
# 2. `spdnn generate --neurons 65536 --layers 480 --seed 0 --cache n.bin`.
# 3. `spdnn infer --weights n.bin --neurons 65536 --layers 480 --mnist [--gpu-memory B] --json`
#    for the issue's table
#    (blockdepend none/4GiB/1GiB, snicit none/8GiB, bf 4GiB streamed; then xy and hp
#    unconstrained while time is left), each run's categories against the method's
#    unconstrained run, and one table: infer ms, × unconstrained, batches × rows, predicted
#    and measured peak.
#
# Use: `cargo xtask device-pack`, `git rev-parse --short HEAD > .device/COMMIT`, copy
# preamble.sh and this file into .device/, carry [".device"], then
#   END=470 bash .device/2026-11-26-memory.sh
# (what it leaves under $OUT: r/*.json, r/*.log, r/table.md). About 8 minutes on one H100:
# the generation ~1 min, each blockdepend run ~40 s (its compression), bf streamed ~1 min.
# LAYERS (default 480) picks the network, RUNS the runs (tags method-budget, "none" for no
# budget; default the list below), PEAK=0 leaves out step 1, WARMUP and REPETITIONS (default
# 1 and 3; added 2026-11-27d) the timing of the runs other than bf's streamed ones.
. .device/preamble.sh
L=${LAYERS:-480}
RUNS=${RUNS:-"blockdepend-none blockdepend-4GiB blockdepend-1GiB snicit-none snicit-8GiB bf-4GiB xy-none hp-none"}
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $R/gpus.txt 2>&1
T=$W/tests/spdnn-adaptive--gpu
[ "${PEAK:-1}" = 1 ] && ( timeout 200 $T --include-ignored --test-threads=1 --nocapture peak_is_its_model \
    > $R/peak-tests.log 2>&1; echo "rc=$?" >> $R/peak-tests.log ) &
tests=$!
# The network: generated unless a caller left it at $W/n$L.bin.
NET=$W/n$L.bin
if [ ! -s $NET ]; then
  timeout 300 $W/bin/spdnn generate --neurons 65536 --layers $L --seed 0 --cache $NET \
    > $R/generate.log 2>&1
  el "generate rc=$? $(ls -l $NET 2>/dev/null | awk '{print $5}') bytes"
fi
if [ "${PEAK:-1}" = 1 ]; then wait $tests
el "peak tests $(tail -1 $R/peak-tests.log) $(grep -E '^test result' $R/peak-tests.log)"
grep -E '^test .*(ok|FAILED)$|panicked|predicted' $R/peak-tests.log | cut -c1-300 | head -40
fi

run() {  # tag method budget(- for none) warmup reps [args...]
  local tag=$1 method=$2 budget=$3 warmup=$4 reps=$5; shift 5
  local left=$(( ${END:-470} - ($(date +%s) - T0) ))
  [ $left -lt 45 ] && { el "no time for $tag ($left s)"; return; }
  local memory=(); [ "$budget" != - ] && memory=(--gpu-memory "$budget")
  timeout $(( left - 10 )) $W/bin/spdnn infer --method $method --weights $NET \
    --neurons 65536 --layers $L --mnist "${memory[@]}" --warmup $warmup --repetitions $reps \
    --json --categories-out $R/$tag.tsv "$@" > $R/$tag.json 2> $R/$tag.err
  el "$tag rc=$? $(grep -E '^  "(infer_ms|categories|total_ms)"' $R/$tag.json | tr -d ' \n')"
  grep -iE 'error|refused' $R/$tag.err | head -3
}
for tag in $RUNS; do
  method=${tag%-*} budget=${tag##*-}; [ "$budget" = none ] && budget=-
  # bf streams its weights in a budget: one pass, no warm-up.
  if [ "$method" = bf ] && [ "$budget" != - ]; then run $tag $method $budget 0 1
  else run $tag $method $budget ${WARMUP:-1} ${REPETITIONS:-3}; fi
done

# One table from the JSON: each run against its method's unconstrained run.
python3 - "$R" $RUNS > $R/table.md <<'PY'
import json, os, subprocess, sys
r = sys.argv[1]
mib = lambda b: f"{b / 2**20:,.0f}".replace(",", " ")
rows = ["| method | budget | infer ms | × unconstrained | batches × rows | predicted MiB | "
        "measured peak MiB | predicted / measured | exact | categories | same as unconstrained |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
base = {}
for tag in sys.argv[2:]:
    path = os.path.join(r, tag + ".json")
    method, budget = tag.rsplit("-", 1)
    try:
        run = json.load(open(path))
    except Exception:
        rows.append(f"| {method} | {budget} | not run | | | | | | | | |")
        continue
    gpu = run["details"]["plan"]["gpus"][0]
    plan = gpu["plan"]
    if budget == "none":
        base[method] = (run["infer_ms"], tag)
    ms, first = base.get(method, (None, None))
    ratio = f"{run['infer_ms'] / ms:.2f}" if ms else "–"
    same = "–"
    if first and first != tag:
        same = "yes" if subprocess.call(["cmp", "-s", os.path.join(r, tag + ".tsv"),
                                         os.path.join(r, first + ".tsv")]) == 0 else "NO"
    peak, predicted = gpu["measured_peak"], plan["predicted_bytes"]
    rows.append(f"| {method} | {budget} | {run['infer_ms']:.2f} | {ratio} | {plan['batches']} × "
                f"{plan['batch']} | {mib(predicted)} | {mib(peak)} | "
                f"{predicted / max(peak, 1):.3f} | {gpu['exact_model']} | {run['categories']} | {same} |")
print("\n".join(rows))
PY
el "table rc=$?"; cat $R/table.md
tar -C $OUT -czf $OUT/memory.tar.gz r; rm -rf $R
el done
