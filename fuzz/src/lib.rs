//! Fuzzing spdnn's readers on the stable toolchain: the targets ([`targets`]) and a small
//! coverage-guided fuzzer ([`fuzzer`]) driven by SanitizerCoverage's 8-bit counters.
//!
//! `bash fuzz/run.sh TARGET N` builds the readers instrumented and runs N inputs;
//! `cargo test -p spdnn-fuzz` (part of `cargo xtask test`) replays the corpus and the saved
//! crashes and runs a short uninstrumented smoke run of every target. See
//! `docs/reliability.md`.

pub mod fuzzer;
pub mod targets;

use std::path::{Path, PathBuf};

/// The `fuzz/` folder of the checkout.
pub fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The seed corpus of `target`: `fuzz/corpus/<target>/`.
pub fn corpus_dir(target: &str) -> PathBuf {
    fuzz_dir().join("corpus").join(target)
}

/// The inputs that once crashed `target`, kept as regressions: `fuzz/regressions/<target>/`.
pub fn regressions_dir(target: &str) -> PathBuf {
    fuzz_dir().join("regressions").join(target)
}
