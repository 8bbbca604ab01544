//! The random unstructured network through the `spdnn` binary: `generate --random` writes
//! what the generator builds, and `bench --network random` runs and checks it.

mod common;

use std::path::Path;

use common::spdnn;
use spdnn_sdgc::generator;

/// `spdnn bench --network random --fan-in F --neurons 1024 --layers L --rows R --out results`
/// and `extra` in `dir`.
fn bench_random(
    dir: &Path,
    fan_in: &str,
    layers: &str,
    rows: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "bench",
        "--network",
        "random",
        "--fan-in",
        fan_in,
        "--neurons",
        "1024",
        "--layers",
        layers,
        "--rows",
        rows,
        "--out",
        "results",
    ];
    args.extend_from_slice(extra);
    spdnn(dir, &args)
}

#[test]
fn generate_random_writes_the_generated_layers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("net");
    let run = spdnn(
        dir.path(),
        &[
            "generate",
            "--random",
            "--fan-in",
            "5",
            "--neurons",
            "40",
            "--layers",
            "3",
            "--seed",
            "9",
            "--out",
            "net",
        ],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let read = spdnn_sdgc::tsv::read_network(&out, Some(40), 3, &mut |_| {}).unwrap();
    assert_eq!(read, generator::random_network(40, 3, 5, 9).unwrap());

    // --fan-in belongs to --random; a fan-in above N is an error naming it.
    let run = spdnn(
        dir.path(),
        &[
            "generate",
            "--fan-in",
            "5",
            "--neurons",
            "64",
            "--layers",
            "1",
            "--out",
            "x",
        ],
    );
    assert_eq!(run.status.code(), Some(2));
    let run = spdnn(
        dir.path(),
        &[
            "generate",
            "--random",
            "--fan-in",
            "65",
            "--neurons",
            "64",
            "--layers",
            "1",
            "--out",
            "x",
        ],
    );
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("fan-in"));
}

#[test]
fn bench_runs_the_cpu_on_a_random_network() {
    let dir = tempfile::tempdir().unwrap();
    let run = bench_random(dir.path(), "8", "4", "60", &["--methods", "cpu", "--json"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let reports = doc["reports"].as_array().unwrap();
    // The official networks are RadiX-Net: not run with --network random.
    assert_eq!(reports.len(), 1);
    let report = &reports[0];
    assert_eq!(report["method"], "cpu");
    assert_eq!(report["benchmark"], "1024-4");
    assert_eq!(report["weights"], "random(fan-in 8, seed 0)");
    assert_eq!(report["rows"], 60);
    assert_eq!(report["matched"], true);
    assert!(report["categories"].as_u64().unwrap() > 0);

    let run = spdnn(dir.path(), &["bench", "--fan-in", "8", "--methods", "cpu"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("--network random"));
}

#[test]
fn the_default_bench_says_which_gpu_methods_it_leaves_out() {
    let dir = tempfile::tempdir().unwrap();
    let run = bench_random(dir.path(), "4", "2", "20", &[]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    let note = "no CUDA GPU here, so the default run leaves out";
    if spdnn_engine::gpu_available() {
        assert!(!stderr.contains(note), "{stderr}");
    } else {
        assert!(run.status.success(), "{stderr}");
        // The note names the default GPU methods, xy among them.
        let line = stderr
            .lines()
            .find(|l| l.contains(note))
            .unwrap_or_else(|| panic!("{stderr}"));
        assert!(line.contains("xy") && line.contains("bf"), "{line}");
    }
}

#[test]
fn bench_gpu_counts_run_cpu_methods_once_and_refuse_gpus_that_are_not_there() {
    let dir = tempfile::tempdir().unwrap();
    let run = bench_random(
        dir.path(),
        "4",
        "2",
        "20",
        &["--methods", "cpu", "--gpu-counts", "1,2", "--json"],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let methods: Vec<&str> = doc["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods, ["cpu"]);

    let too_many = spdnn_engine::gpu_count() + 1;
    let counts = too_many.to_string();
    let run = bench_random(
        dir.path(),
        "4",
        "2",
        "20",
        &["--methods", "xy", "--gpu-counts", &counts],
    );
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains(&format!("--gpu-counts {too_many}: this machine sees")),
        "{stderr}"
    );

    let run = bench_random(
        dir.path(),
        "4",
        "2",
        "20",
        &["--methods", "xy", "--gpu-counts", "1", "--gpus", "0"],
    );
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("not both"));
}
