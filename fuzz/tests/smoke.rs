//! The smoke run of `cargo xtask test`: every target replays its seed corpus and its saved
//! crashes (`fuzz/regressions/<target>/`), then runs a few thousand mutants; none may crash.
//! Uninstrumented here, so the mutants are blind; the long guided runs are `fuzz/run.sh`.

use spdnn_fuzz::fuzzer::Fuzzer;
use spdnn_fuzz::targets::TARGETS;

/// Mutants per target (SPDNN_FUZZ_SMOKE overrides).
fn mutants() -> u64 {
    std::env::var("SPDNN_FUZZ_SMOKE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

#[test]
fn every_target_survives_its_corpus_its_regressions_and_a_smoke_run() {
    let mut failures = Vec::new();
    for target in TARGETS {
        let mut fuzzer = Fuzzer::new(target, 17);
        let seeds = fuzzer
            .add_corpus_dir(&spdnn_fuzz::corpus_dir(target.name))
            .unwrap();
        assert!(seeds > 0, "{}: no seed corpus in fuzz/corpus", target.name);
        if let Ok(entries) = std::fs::read_dir(spdnn_fuzz::regressions_dir(target.name)) {
            for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
                fuzzer.replay(&std::fs::read(&path).unwrap());
            }
        }
        fuzzer.run(mutants());
        eprintln!("{}", fuzzer.progress_line());
        for crash in fuzzer.crashes.values() {
            failures.push(format!(
                "{}: {} (input {:?})",
                target.name,
                crash.message,
                String::from_utf8_lossy(&crash.input)
            ));
        }
    }
    assert!(failures.is_empty(), "crashes:\n{}", failures.join("\n"));
}
