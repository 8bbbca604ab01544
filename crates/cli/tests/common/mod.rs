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
