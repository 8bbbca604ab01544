#!/usr/bin/env bash
# Guided fuzzing of one reader: builds the readers with SanitizerCoverage's 8-bit counters,
# debug assertions and overflow checks (in target/fuzz, apart from the normal build), then
# runs INPUTS inputs of TARGET (`spdnn-fuzz list`). New corpus entries and crashes go to
# fuzz/out/TARGET/ (ignored); the last line is the summary docs/reliability.md records.
#
#     bash fuzz/run.sh TARGET [INPUTS] [spdnn-fuzz run flags: --seed S --max-len B ...]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: bash fuzz/run.sh TARGET [INPUTS] [FLAGS]}
inputs=${2:-1000000}
shift $(($# < 2 ? $# : 2))
export RUSTC_WORKSPACE_WRAPPER="$PWD/fuzz/sancov-rustc"
export CARGO_TARGET_DIR="$PWD/target/fuzz"
export CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
cargo build --release --quiet -p spdnn-fuzz
exec "$CARGO_TARGET_DIR/release/spdnn-fuzz" run "$target" --inputs "$inputs" "$@"
