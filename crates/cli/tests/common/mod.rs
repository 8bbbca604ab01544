//! What the CLI's integration tests share.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `spdnn` binary cargo built; on the GPU machine, where the test executables run from
/// `cargo xtask device-pack`'s pack (`tests/` beside `bin/spdnn`), the packed one.
pub fn binary() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_spdnn"));
    if built.exists() {
        return built;
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("bin/spdnn")))
        .filter(|packed| packed.exists())
        .unwrap_or(built)
}

/// `spdnn` in `dir` with the data folder there too (no MNIST: the synthetic input).
pub fn spdnn(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(binary())
        .args(args)
        .current_dir(dir)
        .env("SPDNN_DATA", dir.join("data"))
        .output()
        .expect("running spdnn")
}

/// `spdnn bench` of the generated 1024-2 over 300 synthetic rows, the CPU reference on the
/// first 50 (so the compressed oracle gives the truth of all 300), the JSON on stdout and the
/// files under `results`.
#[allow(dead_code)] // not every test file benches
pub const SMALL_BENCH: &[&str] = &[
    "bench",
    "--neurons",
    "1024",
    "--layers",
    "2",
    "--rows",
    "300",
    "--cpu-rows",
    "50",
    "--methods",
    "cpu",
    "--no-official",
    "--json",
    "--out",
    "results",
];
