//! `spdnn bench` into a log (stderr not a terminal): one timestamped line as each long phase
//! starts and ends, and the network and truth caches an earlier bench left, reused.

mod common;

use std::path::Path;

use common::spdnn;

/// [`common::SMALL_BENCH`] and `extra`; its stderr and JSON.
fn bench(dir: &Path, extra: &[&str]) -> (String, serde_json::Value) {
    let mut args = common::SMALL_BENCH.to_vec();
    args.extend_from_slice(extra);
    let run = spdnn(dir, &args);
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "{stderr}");
    let doc = serde_json::from_slice(&run.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (stderr, doc)
}

/// The phase lines of a log: (seconds since the start, the rest), in order.
fn phase_lines(stderr: &str) -> Vec<(f64, String)> {
    stderr
        .lines()
        .filter_map(|line| {
            let (stamp, rest) = line.strip_prefix('[')?.split_once(" s] ")?;
            Some((stamp.parse().ok()?, rest.to_string()))
        })
        .collect()
}

/// The rest of the line of phase `label` that ends with `: done in …`, checking that its
/// start came before it.
fn done<'a>(lines: &'a [(f64, String)], label: &str) -> &'a str {
    let started = lines
        .iter()
        .position(|(_, l)| *l == format!("{label}: started"))
        .unwrap_or_else(|| panic!("no start of {label:?} in {lines:?}"));
    let (at, line) = lines
        .iter()
        .skip(started + 1)
        .find(|(_, l)| l.starts_with(&format!("{label}: done in ")))
        .unwrap_or_else(|| panic!("no end of {label:?} in {lines:?}"));
    assert!(*at >= lines[started].0, "{lines:?}");
    line
}

#[test]
fn a_bench_logs_each_phase_and_the_next_one_reuses_its_network_and_truth() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ["--network-cache", "on"];
    let (stderr, first) = bench(dir.path(), &cache);
    let lines = phase_lines(&stderr);
    // The timestamps never go back.
    assert!(lines.windows(2).all(|w| w[0].0 <= w[1].0), "{stderr}");
    let network = dir.path().join("data/cache/networks/radix-n1024-s0-l2.bin");
    assert!(
        done(&lines, "generate 1024-2").contains("written to the cache"),
        "{stderr}"
    );
    assert!(network.is_file(), "{stderr}");
    done(&lines, "input 1024");
    done(&lines, "oracle 1024-2: first 50 rows, f64");
    done(&lines, "compress 1024-2");
    done(
        &lines,
        "oracle 1024-2: all 300 rows on the compressed network, f64",
    );
    assert!(
        done(&lines, "truth 1024-2").contains("written to the cache"),
        "{stderr}"
    );
    assert!(
        done(&lines, "run cpu 1024-2").contains("matched yes"),
        "{stderr}"
    );
    done(&lines, "write results");

    let (stderr, second) = bench(dir.path(), &cache);
    let lines = phase_lines(&stderr);
    assert!(
        done(&lines, "generate 1024-2").contains("read from the cache"),
        "{stderr}"
    );
    assert!(
        done(&lines, "truth 1024-2").contains("read from the cache"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("oracle 1024-2"),
        "the oracle ran again: {stderr}"
    );
    // The same categories, truth and check; a note says where the truth came from.
    let report = |doc: &serde_json::Value, key: &str| doc["reports"][0][key].clone();
    for key in ["categories", "matched", "check", "rows", "weights", "input"] {
        assert_eq!(report(&first, key), report(&second, key), "{key}");
    }
    assert_eq!(report(&second, "matched"), true);
    let notes = second["notes"].to_string();
    assert!(notes.contains("truth read from"), "{notes}");
    assert!(notes.contains("truth on all 300 rows"), "{notes}");

    // Asked not to, the bench computes the truth again.
    let (stderr, third) = bench(dir.path(), &["--network-cache", "on", "--no-truth-cache"]);
    let lines = phase_lines(&stderr);
    done(&lines, "oracle 1024-2: first 50 rows, f64");
    assert!(
        done(&lines, "truth 1024-2").contains("truth cache off"),
        "{stderr}"
    );
    assert_eq!(report(&first, "categories"), report(&third, "categories"));
}

#[test]
fn a_radix_network_is_not_cached_unless_asked_and_a_random_one_is() {
    let dir = tempfile::tempdir().unwrap();
    let (stderr, _) = bench(dir.path(), &[]);
    let lines = phase_lines(&stderr);
    assert!(
        done(&lines, "generate 1024-2").ends_with("(generated)"),
        "{stderr}"
    );
    assert!(!dir.path().join("data/cache/networks").exists());
    let random = [
        "--network-cache",
        "auto",
        "--network",
        "random",
        "--fan-in",
        "8",
    ];
    let (stderr, _) = bench(dir.path(), &random);
    assert!(
        done(&phase_lines(&stderr), "generate 1024-2").contains("written to the cache"),
        "{stderr}"
    );
    assert!(
        dir.path()
            .join("data/cache/networks/random-f8-n1024-s0-l2.bin")
            .is_file()
    );
    let (stderr, _) = bench(dir.path(), &random);
    assert!(
        done(&phase_lines(&stderr), "generate 1024-2").contains("read from the cache"),
        "{stderr}"
    );
}
