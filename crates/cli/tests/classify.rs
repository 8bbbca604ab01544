//! `spdnn classify` through the binary: a small trained-shaped network written as
//! safetensors, scored on the MNIST test images (skipped with a note when they are not in
//! data/mnist, except under CI, where they must be).

mod common;

use std::path::{Path, PathBuf};

use common::spdnn;
use spdnn_formats::Csr;
use spdnn_sdgc::Network;

/// The checkout's MNIST folder when it has the test images, or `None` after saying so.
fn mnist_folder() -> Option<PathBuf> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/mnist");
    let found = folder.join("t10k-images-idx3-ubyte").exists()
        && folder.join("t10k-labels-idx1-ubyte").exists();
    assert!(
        found || std::env::var_os("CI").is_none(),
        "CI: the MNIST test images are missing from {} (cargo xtask setup)",
        folder.display()
    );
    if !found {
        eprintln!(
            "skipped: no MNIST test images in {} (cargo xtask setup)",
            folder.display()
        );
    }
    found.then_some(folder)
}

/// A temp folder whose data/mnist links to the checkout's, with `net.safetensors`: 784
/// inputs, a hidden layer of 12 and 10 outputs, a bias per neuron (≤ 0, some 0).
fn classify_folder(mnist: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::os::unix::fs::symlink(mnist, dir.path().join("data/mnist")).unwrap();
    // Hidden neuron h sums a band of 40 pixels; output c takes hidden c and c + 1 (mod 12).
    let first: Vec<(u32, u32, f32)> = (0..12u32)
        .flat_map(|h| (0..40u32).map(move |k| (200 + 30 * h + k, h, 0.01 + 0.001 * k as f32)))
        .collect();
    let second: Vec<(u32, u32, f32)> = (0..10u32)
        .flat_map(|c| [(c, c, 1.0), ((c + 1) % 12, c, 0.5)])
        .collect();
    let layers = vec![
        Csr::from_triplets(784, 12, &first).unwrap(),
        Csr::from_triplets(12, 10, &second).unwrap(),
    ];
    let biases = vec![
        (0..12).map(|h| -0.05 * (h % 3) as f32).collect(),
        (0..10)
            .map(|c| if c % 2 == 0 { 0.0 } else { -0.01 })
            .collect(),
    ];
    let network = Network::chain(layers).unwrap().with_biases(biases).unwrap();
    spdnn_sdgc::trained::write_safetensors(
        &dir.path().join("net.safetensors"),
        &network,
        Some(1.0),
    )
    .unwrap();
    dir
}

/// `spdnn classify --methods METHODS` (without `--methods` when `None`) on the first 300
/// test images in a fresh [`classify_folder`], with its stdout and stderr; `None` without
/// the MNIST test images.
fn classify_with(methods: Option<&str>) -> Option<(std::process::Output, String, String)> {
    let dir = classify_folder(&mnist_folder()?);
    let mut args = vec![
        "classify",
        "--network",
        "net.safetensors",
        "--mnist-test",
        "--rows",
        "300",
        "--warmup",
        "0",
        "--repetitions",
        "1",
    ];
    if let Some(methods) = methods {
        args.extend(["--methods", methods]);
    }
    let run = spdnn(dir.path(), &args);
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    Some((run, stdout, stderr))
}

/// [`classify_with`] the methods named.
fn classify(methods: &str) -> Option<(std::process::Output, String, String)> {
    classify_with(Some(methods))
}

#[test]
fn without_methods_classify_runs_auto_and_says_what_it_chose() {
    let Some((run, stdout, stderr)) = classify_with(None) else {
        return;
    };
    assert_eq!(run.status.code(), Some(0), "{stdout}{stderr}");
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("auto ") || l.starts_with("cpu "))
        .collect();
    assert_eq!(rows.len(), 1, "only auto runs: {stdout}");
    assert!(rows[0].starts_with("auto "), "{stdout}");
    // Without a GPU auto runs the CPU reference; either way it says what it chose and why.
    let said = format!("{stdout}{stderr}");
    if spdnn_engine::gpu_available() {
        assert!(
            said.contains("chose ") && !said.contains("chose cpu"),
            "{said}"
        );
    } else {
        assert!(said.contains("chose cpu: no CUDA GPU"), "{said}");
    }
}

#[test]
fn all_methods_is_the_default_run_with_the_dense_yardstick_then_auto() {
    let Some((run, stdout, stderr)) = classify("all") else {
        return;
    };
    let row = |method: &str| stdout.lines().any(|l| l.starts_with(&format!("{method} ")));
    assert!(row("cpu") && row("auto"), "{stdout}");
    if spdnn_engine::gpu_available() {
        // Every GPU method of the default run, the cuBLAS yardstick among them.
        for method in ["dense", "cusparse", "hp", "sz", "xy", "bf"] {
            assert!(row(method), "{method}: {stdout}");
        }
        assert!(!row("bf+glare") && !row("cpu+compress"), "{stdout}");
        assert_eq!(run.status.code(), Some(0), "{stdout}{stderr}");
    } else {
        // Here only the CPU runs, and a note names what the default run left out.
        assert_eq!(run.status.code(), Some(0), "{stdout}{stderr}");
        assert!(!row("dense"), "{stdout}");
        let note = stderr
            .lines()
            .find(|l| l.starts_with("note: no CUDA GPU here"))
            .unwrap_or_else(|| panic!("{stderr}"));
        assert!(
            note.contains("dense") && note.contains("cusparse"),
            "{note}"
        );
    }
}

#[test]
fn classify_scores_the_reference_and_compression_agrees() {
    let Some((run, stdout, stderr)) = classify("cpu,cpu+compress") else {
        return;
    };
    assert_eq!(run.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("300 MNIST test images"), "{stdout}");
    // Both rows ran, with the reference's categories and no differing prediction.
    for method in ["cpu ", "cpu+compress "] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(method))
            .unwrap_or_else(|| panic!("{stdout}"));
        assert!(!row.contains("refused"), "{row}");
        let fields: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(fields[fields.len() - 2], "yes", "{row}");
        assert_eq!(fields[fields.len() - 1], "0", "{row}");
    }
}

#[test]
fn a_named_method_that_does_not_run_makes_classify_fail_after_the_table() {
    // +glare refuses a bias per neuron on every machine, GPU or not.
    let Some((run, stdout, stderr)) = classify("cpu,bf+glare") else {
        return;
    };
    assert_eq!(run.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stdout.lines().any(|l| l.starts_with("cpu ")), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("bf+glare") && l.contains("refused")),
        "{stdout}"
    );
    assert!(
        stderr.contains("1 of 2 methods did not run: bf+glare"),
        "{stderr}"
    );
}
