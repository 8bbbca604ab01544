#!/usr/bin/env bash
# Device call of 2026-11-26 (one GPU): cold start, issue 28 (branch coldstart). For each
# method, `spdnn infer` on the official 1024-120 (MNIST-recipe input, against its truth),
# one timed repetition, three times:
#   cold  the kernel cache ($SPDNN_PTX_CACHE) removed first: CUBINs compiled per kernel;
#   ptx   removed again, SPDNN_KERNEL_IMAGE=ptx: the same kernels as PTX, which the driver
#         compiles at load time (what the CUBINs save);
#   warm  the cache kept from the cold run: NVRTC reads it, the driver loads CUBINs.
# The table: compile_ms (the time the run waited for its kernels), the method's own
# preprocessing time (it leaves compile_ms out), total_ms, infer_ms, and the modules
# (compiled / from the cache / loaded, NVRTC ms summed over the worker threads).
# Goal: compile_ms <= 3000 for every method, cold. Methods: METHODS (default below).
. .device/preamble.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/gpu.txt
el "gpu $(cat $R/gpu.txt) cores $(nproc)"
official=$W/data/sdgc/neuron1024.tar.gz truth=$W/data/sdgc/neuron1024-l120-categories.tsv
METHODS=${METHODS:-"bf snig cusparse xy snicit hp sz sz+t4 blockdepend"}
# The first value of "key" in a pretty-printed report (top-level keys come first).
val() { grep -m1 -E "^ *\"$1\": " "$2" | sed -E 's/^[^:]*: *"?([^",]*)"?,?$/\1/'; }
run() {  # pass method [VAR=value ...]
  local pass=$1 m=$2; shift 2
  local left=$(( ${END:-560} - ($(date +%s) - T0) )); [ $left -lt 40 ] && { el "no time $pass $m"; return; }
  local f=$R/$pass-${m//+/_}.json
  env "$@" timeout $(( left - 10 )) $W/bin/spdnn infer --method "$m" --weights $official \
    --neurons 1024 --layers 120 --mnist --truth $truth --warmup 1 --repetitions 1 --json \
    > $f 2> ${f%.json}.err
  local rc=$?
  local prep; prep=$(val preprocessing_ms $f); [ -z "$prep" ] && prep=$(val preprocess_ms $f)
  printf '| %s | %s | %s | %s | %s | %s | %s | %s/%s/%s | %s | %s |\n' "$m" "$pass" \
    "$(val compile_ms $f)" "${prep:--}" "$(val total_ms $f)" "$(val infer_ms $f)" \
    "$(val nvrtc_ms $f)" "$(val compiled $f)" "$(val from_cache $f)" "$(val loaded $f)" \
    "$(val matched $f)" "$rc" >> $R/table.md
  el "$pass $m rc=$rc compile_ms=$(val compile_ms $f) total_ms=$(val total_ms $f)"
  [ $rc -ne 0 ] && tail -5 ${f%.json}.err
}
echo '| method | pass | compile_ms | preprocessing_ms | total_ms | infer_ms | NVRTC ms (all threads) | compiled/cached/loaded | matched | rc |' > $R/table.md
echo '|---|---|---|---|---|---|---|---|---|---|' >> $R/table.md
for m in $METHODS; do
  rm -rf "$SPDNN_PTX_CACHE"; run cold "$m"
  run warm "$m"
  rm -rf "$SPDNN_PTX_CACHE"; run ptx "$m" SPDNN_KERNEL_IMAGE=ptx
done
rm -rf "$SPDNN_PTX_CACHE"
cat $R/table.md
tar -C $OUT -czf $OUT/coldstart.tar.gz r; rm -rf $R
el done
