#!/usr/bin/env bash
# BlockDepend on the GPU machine: its GPU tests, compute-sanitizer, and every timing of
# docs/blockdepend.md. Each stage fits one device call (< 10 minutes).
#
# On the build machine, from the repository root:
#     cargo xtask device-pack
# Then one device call per stage, from the repository root, carrying [".device"]:
#     bash crates/blockdepend/device.sh tests      # the GPU tests (PROPTEST_CASES=32)
#     bash crates/blockdepend/device.sh sanitize   # memcheck + racecheck on a subset
#     bash crates/blockdepend/device.sh small      # 1024 and 4096 × 120/480/1920 (+ official), xy beside, ablations
#     bash crates/blockdepend/device.sh large16    # 16384 × 120/480/1920
#     bash crates/blockdepend/device.sh large65    # 65536 × 120/480/1920
#     bash crates/blockdepend/device.sh ablate65   # 65536-120 under other cuts (the cut model)
#     bash crates/blockdepend/device.sh racecheck  # tiles_straddle alone under racecheck, its own output shown
#     bash crates/blockdepend/device.sh random 4096  # the random-network bench of issue 12 (one N a call)
# Logs and the bench tables land under $OUT; the end of the output is a short summary.
set -uo pipefail
stage=${1:-tests}
run=".device/run.sh"
work=${SPDNN_DEVICE_WORK:-/tmp/spdnn-device}
out=${OUT:-$work/out}
mkdir -p "$out"
# run.sh unpacks the pack once; the same environment for the sanitizer runs below.
bash "$run" spdnn methods >"$out/methods.txt" 2>&1 || { cat "$out/methods.txt"; exit 2; }
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib:/usr/local/cuda/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export SPDNN_DATA="$work/data" SPDNN_PTX_CACHE="$work/ptx" SPDNN_KERNELS_CU="$PWD/kernels-cu"
spdnn="$work/bin/spdnn"
tests="$work/tests/spdnn-blockdepend--gpu"
official="$work/data/sdgc/neuron1024.tar.gz"
truth="$work/data/sdgc/neuron1024-l120-categories.tsv"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader | tee "$out/gpu.txt"

# One `spdnn infer` of blockdepend on the official 1024-120 over the 60000 MNIST-recipe rows,
# checked against the official truth; extra flags are the ablation.
official_infer() {
  local tag=$1; shift
  "$spdnn" infer --method blockdepend --weights "$official" --neurons 1024 --layers 120 --mnist \
    --truth "$truth" --warmup 3 --repetitions 20 --json "$@" >"$out/infer-$tag.json" 2>"$out/infer-$tag.err"
  local status=$?
  echo "official 1024-120 [$tag] exit $status: $(grep -E '^  "(infer_ms|categories|matched)"' "$out/infer-$tag.json" | tr -d '\n')"
  grep -E '"(launches|rows_carried|path|preprocessing_ms)"' "$out/infer-$tag.json" | sed 's/^ */    /'
  [ "$status" -eq 0 ] || tail -3 "$out/infer-$tag.err"
}

case "$stage" in
  tests)
    SPDNN_TESTS=blockdepend PROPTEST_CASES=${PROPTEST_CASES:-32} bash "$run" tests
    ;;
  sanitize)
    # memcheck: out-of-bounds and misaligned accesses; racecheck: shared-memory hazards
    # (the tile's bookkeeping, the in-place compaction, the staging buffer).
    PROPTEST_CASES=4 compute-sanitizer --tool memcheck --error-exitcode 9 "$tests" --include-ignored \
      --test-threads=1 official_1024_network tiles_straddle wide_chains random_wide batches_reuse saturating \
      >"$out/memcheck.log" 2>&1
    echo "memcheck exit $? ($(grep -c 'Invalid\|ERROR SUMMARY: [1-9]' "$out/memcheck.log") error lines)"
    tail -5 "$out/memcheck.log"
    PROPTEST_CASES=2 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 "$tests" \
      --include-ignored --test-threads=1 tiles_straddle batches_reuse >"$out/racecheck.log" 2>&1
    echo "racecheck exit $? ($(grep -c 'Race\|hazard' "$out/racecheck.log") hazard lines)"
    tail -5 "$out/racecheck.log"
    PROPTEST_CASES=2 compute-sanitizer --tool synccheck --error-exitcode 9 "$tests" --include-ignored \
      --test-threads=1 tiles_straddle >"$out/synccheck.log" 2>&1
    echo "synccheck exit $?"
    tail -3 "$out/synccheck.log"
    ;;
  small)
    # The official net with the default options, then one ablation each (docs: "what each
    # piece is predicted to buy").
    official_infer defaults
    official_infer uncompressed --bd-uncompressed
    official_infer no-retire --bd-no-retire
    official_infer one-launch --bd-cuts none
    official_infer every-layer --bd-cuts "$(seq -s, 1 119)"
    official_infer global --bd-placement global
    official_infer all-ell --bd-format ell
    official_infer predicated --bd-items predicated
    BENCH_TAG=bd-small bash "$run" bench --methods blockdepend,xy --neurons 1024,4096 \
      --layers 120,480,1920 --warmup 2 --repetitions 10 >"$out/bench-small.log" 2>&1
    echo "bench small exit $?"
    cat "$out"/bd-small/*.md 2>/dev/null | head -60
    ;;
  large16)
    BENCH_TAG=bd-16384 bash "$run" bench --methods blockdepend --neurons 16384 \
      --layers 120,480,1920 --warmup 2 --repetitions 5 >"$out/bench-16384.log" 2>&1
    echo "bench 16384 exit $?"
    cat "$out"/bd-16384/*.md 2>/dev/null | head -40
    ;;
  large65)
    for layers in 120 480 1920; do
      BENCH_TAG=bd-65536-$layers bash "$run" bench --methods blockdepend --neurons 65536 \
        --layers "$layers" --warmup 1 --repetitions 5 >"$out/bench-65536-$layers.log" 2>&1
      echo "bench 65536-$layers exit $?"
      cat "$out"/bd-65536-"$layers"/*.md 2>/dev/null | head -30
    done
    ;;
  ablate65)
    # The cut model at the widest rows: is re-packing after 2 and 4 layers worth carrying
    # 16 KB a row? (docs/blockdepend.md, "Cuts")
    for cuts in default 4,8,16,32,64 8,16,32,64 none; do
      flags=()
      [ "$cuts" = default ] || flags=(--bd-cuts "$cuts")
      "$spdnn" infer --method blockdepend --generate-seed 0 --neurons 65536 --layers 120 --mnist \
        --warmup 1 --repetitions 3 --json ${flags[@]+"${flags[@]}"} >"$out/ablate65-$cuts.json" 2>"$out/ablate65-$cuts.err"
      echo "65536-120 cuts $cuts, exit $?: $(grep -E '^  "(infer_ms|categories)"' "$out/ablate65-$cuts.json" | tr -d '\n')"
      grep -E '"(launches|rows_carried)"' "$out/ablate65-$cuts.json" | sed 's/^ */    /'
    done
    ;;
  racecheck)
    # The straddling tiles alone under racecheck, with the test's own output: each case is
    # named before it runs, and a failure says which case and why (a refused launch names
    # its shared memory). First without the tool, for comparison; the timeout keeps the
    # output when the tool makes the run too slow.
    timeout 120 "$tests" --include-ignored --exact tiles_straddle_the_end_of_the_input --nocapture \
      --test-threads=1 >"$out/straddle-plain.log" 2>&1
    echo "without a tool: exit $?"; tail -3 "$out/straddle-plain.log"
    PROPTEST_CASES=2 RUST_BACKTRACE=1 timeout -s INT 480 compute-sanitizer --tool racecheck \
      --racecheck-report all --print-limit 10 --error-exitcode 9 "$tests" --include-ignored --exact \
      tiles_straddle_the_end_of_the_input --nocapture --test-threads=1 >"$out/straddle-racecheck.log" 2>&1
    echo "racecheck: exit $? (9: hazards, 101: the test failed, 124/130: timed out)"
    grep -nE "tiles_straddle:|panicked|refused|rror|azard|Race" "$out/straddle-racecheck.log" | tail -25
    tail -15 "$out/straddle-racecheck.log"
    ;;
  random)
    # Issue 12's general-network benchmark: a random unstructured network (fan-in 32, weights
    # uniform on ±0.75) over the MNIST-recipe rows, every method beside blockdepend.
    n=${2:-4096}
    BENCH_TAG=bd-random-$n bash "$run" bench --network random --fan-in 32 --neurons "$n" --layers 120 \
      --methods bf,snig,cusparse,blockdepend,xy,hp --repetitions 3 --warmup 1 --no-official \
      >"$out/bench-random-$n.log" 2>&1
    echo "bench random $n exit $?"
    grep -E "matched|blockdepend:" "$out/bench-random-$n.log" | head -20
    cat "$out"/bd-random-"$n"/*.md 2>/dev/null | head -30
    ;;
  *)
    echo "usage: device.sh tests|sanitize|small|large16|large65|ablate65|racecheck|random [N]"
    exit 2
    ;;
esac
