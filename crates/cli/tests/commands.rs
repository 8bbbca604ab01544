//! The smaller commands through the `spdnn` binary, as the README tells a user to type them.

mod common;

use common::spdnn;

#[test]
fn methods_says_what_each_method_needs_and_whether_it_runs_here() {
    let dir = tempfile::tempdir().unwrap();
    let run = spdnn(dir.path(), &["methods"]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}");
    let mut lines = stdout.lines();
    let header = lines.next().unwrap();
    assert!(
        header.contains("needs") && header.contains("runs here"),
        "{header}"
    );
    let gpu_here = spdnn_engine::gpu_available();
    let mut seen = Vec::new();
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (name, needs, runs) = (words[0], words[1], words[2]);
        let expected = if needs == "cpu" || gpu_here {
            "yes"
        } else {
            "no"
        };
        assert!(needs == "cpu" || needs == "gpu", "{line}");
        assert_eq!(runs, expected, "{line}");
        seen.push((name.to_string(), needs.to_string()));
    }
    assert!(seen.contains(&("cpu".into(), "cpu".into())), "{stdout}");
    assert!(seen.contains(&("xy".into(), "gpu".into())), "{stdout}");
}

#[test]
fn infer_names_how_it_timed_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let args = "infer --method cpu --neurons 64 --layers 2 --generate-seed 0 \
                --synthetic-seed 1 --rows 10 --bias -0.3";
    let run = spdnn(dir.path(), &args.split_whitespace().collect::<Vec<_>>());
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("infer "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.ends_with("ms (wall clock)"), "{line}");
}

#[test]
fn skip_rows_runs_the_rows_after_them() {
    // The categories of rows 31..=60 alone are those of a run over rows 1..=60 past row 30,
    // numbered from the first row kept; skipping every row is an error.
    let dir = tempfile::tempdir().unwrap();
    let base = "infer --method cpu --neurons 64 --layers 2 --generate-seed 0 \
                --synthetic-seed 1 --bias -0.1";
    let run = |extra: &str, out: &str| {
        let args = format!("{base} {extra} --categories-out {out}");
        spdnn(dir.path(), &args.split_whitespace().collect::<Vec<_>>())
    };
    let categories = |out: &str| -> Vec<usize> {
        std::fs::read_to_string(dir.path().join(out))
            .unwrap()
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect()
    };
    for (extra, out) in [
        ("--rows 60", "all.tsv"),
        ("--skip-rows 30 --rows 30", "tail.tsv"),
    ] {
        let output = run(extra, out);
        assert!(
            output.status.success(),
            "{extra}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let past_30: Vec<usize> = categories("all.tsv")
        .into_iter()
        .filter(|&r| r > 30)
        .map(|r| r - 30)
        .collect();
    assert!(
        !past_30.is_empty(),
        "no category past row 30: pick another seed"
    );
    assert_eq!(categories("tail.tsv"), past_30);
    let none = run("--skip-rows 1000000", "none.tsv");
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert!(!none.status.success(), "{stderr}");
    assert!(
        stderr.contains("--skip-rows 1000000 leaves no row"),
        "{stderr}"
    );
}

#[test]
fn plot_with_methods_that_match_no_run_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let bench = "bench --neurons 1024 --layers 2 --rows 20 --methods cpu --network random \
                 --fan-in 4 --out results";
    let run = spdnn(dir.path(), &bench.split_whitespace().collect::<Vec<_>>());
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let json = std::fs::read_dir(dir.path().join("results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("bench wrote a JSON file");
    let json = json.to_str().unwrap();
    let run = spdnn(
        dir.path(),
        &["plot", json, "--methods", "bf", "--out", "figures"],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--methods bf: no run of these"), "{stderr}");
    // The cpu run is there to draw.
    let run = spdnn(
        dir.path(),
        &["plot", json, "--methods", "cpu", "--out", "figures"],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn bench_checks_the_cpu_slice_against_the_truth_of_those_rows() {
    // The truth covers all 300 rows (the compressed oracle); the CPU runs the first 50. Two
    // layers leave categories in the synthetic rows on both sides of row 50.
    let dir = tempfile::tempdir().unwrap();
    let run = spdnn(dir.path(), common::SMALL_BENCH);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let report = &doc["reports"][0];
    assert_eq!(report["rows"], 50);
    assert!(report["categories"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["matched"], true, "{report}");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("truth on all 300 rows"), "{notes}");
}
