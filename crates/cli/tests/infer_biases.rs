//! `spdnn infer --biases FILE --upper-bound U` on a TSV network through the binary: the
//! reference's categories with `cpu`, and clear errors (exit status 2) for a malformed bias
//! file, a bad bound and methods that refuse the biases, none of which needs a GPU.

mod common;
mod tsv_net;

use std::path::Path;

use common::spdnn;

/// Runs `spdnn ARGS` in `dir`; its exit code, stdout and stderr.
fn run(dir: &Path, args: &[String]) -> (Option<i32>, String, String) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = spdnn(dir, &args);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A folder with [`tsv_net::write`]'s files.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    tsv_net::write(dir.path());
    dir
}

#[test]
fn cpu_gives_the_references_categories_with_the_biases_and_the_bound() {
    let dir = folder();
    let expected = tsv_net::reference(dir.path(), "biases.tsv", 0.75);
    // The biases and the bound both decide categories here, so ignoring either would show.
    assert!(
        !expected.is_empty() && expected.len() < tsv_net::ROWS,
        "{expected:?}"
    );
    assert_ne!(expected, tsv_net::reference(dir.path(), "biases.tsv", 32.0));
    std::fs::write(
        dir.path().join("zero.tsv"),
        (1..=tsv_net::LAYERS)
            .flat_map(|l| (1..=tsv_net::NEURONS).map(move |k| format!("{l}\t{k}\t0\n")))
            .collect::<String>(),
    )
    .unwrap();
    assert_ne!(expected, tsv_net::reference(dir.path(), "zero.tsv", 0.75));

    let (code, stdout, stderr) = run(
        dir.path(),
        &tsv_net::infer_args("cpu", "biases.tsv", "found.tsv"),
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(tsv_net::categories(dir.path(), "found.tsv"), expected);
    assert!(
        stdout.contains("bias/bound  per neuron (biases.tsv) / 0.75"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("categories  {}", expected.len())),
        "{stdout}"
    );

    // The same through --json: no one bias, the bias file and the bound named.
    let mut args = tsv_net::infer_args("cpu+compress", "biases.tsv", "compressed.tsv");
    args.push("--json".into());
    let (code, stdout, stderr) = run(dir.path(), &args);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(tsv_net::categories(dir.path(), "compressed.tsv"), expected);
    let value: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(value["bias"], serde_json::Value::Null, "{value}");
    assert_eq!(value["biases"], "biases.tsv", "{value}");
    assert_eq!(value["upper_bound"], 0.75, "{value}");
}

#[test]
fn a_malformed_bias_file_names_the_file_and_line() {
    let dir = folder();
    let text = std::fs::read_to_string(dir.path().join("biases.tsv")).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let cases = [
        // A neuron past the layer's width, on line 3.
        (
            "wide.tsv",
            {
                let mut l = lines.clone();
                l[2] = "1\t65\t-0.5".into();
                l
            },
            "wide.tsv:3:",
        ),
        // A bias that is not a number, on line 70.
        (
            "word.tsv",
            {
                let mut l = lines.clone();
                l[69] = "2\t6\tminus".into();
                l
            },
            "word.tsv:70:",
        ),
        // The last neuron of the last layer missing.
        (
            "short.tsv",
            {
                lines.pop();
                lines.clone()
            },
            "short.tsv",
        ),
    ];
    for (name, lines, expected) in cases {
        std::fs::write(dir.path().join(name), lines.join("\n") + "\n").unwrap();
        let (code, stdout, stderr) = run(dir.path(), &tsv_net::infer_args("cpu", name, "x.tsv"));
        assert_eq!(code, Some(2), "{name}: {stdout}{stderr}");
        assert!(stderr.contains(expected), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let (code, _, stderr) = run(
        dir.path(),
        &tsv_net::infer_args("cpu", "absent.tsv", "x.tsv"),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("absent.tsv"), "{stderr}");
}

#[test]
fn a_bound_that_is_not_positive_and_finite_is_refused() {
    let dir = folder();
    for bound in ["0", "-1", "nan", "inf"] {
        let mut args = tsv_net::infer_args("cpu", "biases.tsv", "x.tsv");
        let at = args.iter().position(|a| a == "--upper-bound").unwrap();
        args[at + 1] = bound.into();
        let (code, stdout, stderr) = run(dir.path(), &args);
        assert_eq!(code, Some(2), "{bound}: {stdout}{stderr}");
        assert!(
            stderr.contains("the upper bound must be positive and finite"),
            "{bound}: {stderr}"
        );
    }
    // --bias and --biases are one or the other.
    let mut args = tsv_net::infer_args("cpu", "biases.tsv", "x.tsv");
    args.extend(["--bias".into(), "-0.3".into()]);
    let (code, _, stderr) = run(dir.path(), &args);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--bias"), "{stderr}");
}

#[test]
fn methods_that_refuse_the_biases_say_why_before_a_gpu_is_looked_for() {
    let dir = folder();
    // +glare takes one bias for every neuron.
    let (code, stdout, stderr) = run(
        dir.path(),
        &tsv_net::infer_args("bf+glare", "biases.tsv", "x.tsv"),
    );
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("bf+glare") && stderr.contains("bias per neuron"),
        "{stderr}"
    );
    // bf takes per-neuron biases ≤ 0 only: the positive one is named.
    let (code, stdout, stderr) = run(
        dir.path(),
        &tsv_net::infer_args("bf", "positive.tsv", "x.tsv"),
    );
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("bf computes clip(Z + b)")
            && stderr.contains("neuron 7 of layer 3 has bias 0.125"),
        "{stderr}"
    );
    // The CPU reference takes a positive bias (the structural rule).
    let (code, stdout, stderr) = run(
        dir.path(),
        &tsv_net::infer_args("cpu", "positive.tsv", "positive-found.tsv"),
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(
        tsv_net::categories(dir.path(), "positive-found.tsv"),
        tsv_net::reference(dir.path(), "positive.tsv", 0.75)
    );
}
