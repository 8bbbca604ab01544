//! What the CLI's integration tests share.

use std::path::Path;
use std::process::Command;

/// `spdnn` in `dir` with the data folder there too (no MNIST: the synthetic input).
pub fn spdnn(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_spdnn"))
        .args(args)
        .current_dir(dir)
        .env("SPDNN_DATA", dir.join("data"))
        .output()
        .expect("running spdnn")
}
