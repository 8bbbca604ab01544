//! `spdnn-fuzz`: runs a fuzz target (see `docs/reliability.md`).
//!
//! ```text
//! spdnn-fuzz list
//! spdnn-fuzz run TARGET [--inputs N] [--seed S] [--max-len BYTES] [--timeout-s S] [--out DIR]
//! spdnn-fuzz replay TARGET FILE...
//! spdnn-fuzz seed            # writes the binary seeds into fuzz/corpus/
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use spdnn_fuzz::fuzzer::{self, Fuzzer};
use spdnn_fuzz::targets::{self, Target};

/// Allocations above this size abort the run, with the input saved: a reader must refuse
/// absurd sizes before allocating them (inputs are at most a few tens of KiB).
const ALLOCATION_LIMIT: usize = 1 << 30;

/// Where an input that asked for too much memory is written (opened before fuzzing).
static OVERSIZE_FILE: OnceLock<std::fs::File> = OnceLock::new();

struct Guard;

impl Guard {
    fn check(size: usize) {
        if size > ALLOCATION_LIMIT {
            // No allocation from here on: write the input and a fixed message, then abort.
            // SAFETY: read only, by the fuzzing thread's allocation.
            let input = unsafe { fuzzer::current_input() };
            if let Some(mut file) = OVERSIZE_FILE.get() {
                let _ = file.write_all(input);
            }
            let _ = std::io::stderr()
                .write_all(b"OVERSIZE: an input asked for more than 1 GiB; see oversize.bin\n");
            std::process::abort();
        }
    }
}

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::check(layout.size());
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::check(layout.size());
        // SAFETY: forwarded.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::check(new_size);
        // SAFETY: forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Guard = Guard;

fn main() {
    if let Err(e) = run_cli() {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}

fn target_named(name: Option<&String>) -> Result<&'static Target> {
    let names: Vec<&str> = targets::TARGETS.iter().map(|t| t.name).collect();
    let Some(name) = name else {
        bail!("name a target: {}", names.join(", "));
    };
    targets::target(name)
        .with_context(|| format!("unknown target {name}; targets: {}", names.join(", ")))
}

fn run_cli() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("list") => {
            for target in targets::TARGETS {
                println!("{:14} {}", target.name, target.description);
            }
            Ok(())
        }
        Some("run") => run(&args[1..]),
        Some("replay") => {
            let target = target_named(args.get(1))?;
            let mut fuzzer = Fuzzer::new(target, 0);
            for file in &args[2..] {
                let data = std::fs::read(file).with_context(|| format!("reading {file}"))?;
                fuzzer.replay(&data);
            }
            report_crashes(&fuzzer)
        }
        Some("seed") => seed(&spdnn_fuzz::fuzz_dir().join("corpus")),
        _ => bail!(
            "usage: spdnn-fuzz list | run TARGET [--inputs N] [--seed S] [--max-len BYTES] [--timeout-s S] [--out DIR] | replay TARGET FILE... | seed"
        ),
    }
}

fn run(args: &[String]) -> Result<()> {
    let target = target_named(args.first())?;
    let mut inputs: u64 = 1_000_000;
    let mut seed: u64 = 0;
    let mut max_len: usize = 16 << 10;
    let mut timeout_s: u64 = 10;
    let mut out = spdnn_fuzz::fuzz_dir().join("out").join(target.name);
    let mut rest = args[1..].iter();
    while let Some(flag) = rest.next() {
        let value = rest
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        let number = || -> Result<u64> {
            value
                .replace('_', "")
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(|v| v as u64)
                .with_context(|| format!("{flag}: {value} is not a count"))
        };
        match flag.as_str() {
            "--inputs" => inputs = number()?,
            "--seed" => seed = number()?,
            "--max-len" => max_len = number()? as usize,
            "--timeout-s" => timeout_s = number()?,
            "--out" => out = PathBuf::from(value),
            _ => bail!("unknown flag {flag}"),
        }
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let oversize = std::fs::File::create(out.join("oversize.bin"))?;
    let _ = OVERSIZE_FILE.set(oversize);
    fuzzer::start_watchdog(Duration::from_secs(timeout_s), out.join("hang.bin"));
    if !fuzzer::instrumented() {
        eprintln!(
            "note: the readers are not instrumented: mutating blindly (bash fuzz/run.sh builds them with coverage)"
        );
    }
    let mut fuzzer = Fuzzer::new(target, seed);
    fuzzer.max_len = max_len;
    fuzzer.out_dir = Some(out.clone());
    fuzzer.report_every = Some(Duration::from_secs(10));
    let seeds = fuzzer.add_corpus_dir(&spdnn_fuzz::corpus_dir(target.name))?;
    let found = fuzzer.add_corpus_dir(&out.join("corpus"))?;
    let regressions = spdnn_fuzz::regressions_dir(target.name);
    let replayed = replay_dir(&mut fuzzer, &regressions)?;
    eprintln!(
        "{}: {seeds} seeds, {found} earlier finds, {replayed} regressions replayed; {inputs} inputs to run",
        target.name
    );
    fuzzer.run(inputs);
    let stats = fuzzer.stats();
    let summary = format!(
        "{}: {} inputs in {:.0} s ({:.0}/s), corpus {}, {} edges, {} distinct crashes, instrumented {}, seed {seed}, max-len {max_len}",
        target.name,
        stats.inputs,
        stats.seconds,
        stats.inputs as f64 / stats.seconds.max(1e-9),
        stats.corpus,
        stats.edges,
        fuzzer.crashes.len(),
        fuzzer::instrumented(),
    );
    println!("{summary}");
    std::fs::write(out.join("summary.txt"), format!("{summary}\n"))?;
    let _ = std::fs::remove_file(out.join("oversize.bin"));
    report_crashes(&fuzzer)
}

fn replay_dir(fuzzer: &mut Fuzzer, dir: &Path) -> Result<usize> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(0);
    };
    let mut count = 0;
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        fuzzer.replay(&std::fs::read(&path)?);
        count += 1;
    }
    Ok(count)
}

fn report_crashes(fuzzer: &Fuzzer) -> Result<()> {
    if fuzzer.crashes.is_empty() {
        return Ok(());
    }
    for crash in fuzzer.crashes.values() {
        eprintln!("crash ({} inputs): {}", crash.hits, crash.message);
    }
    bail!("{} distinct crashes", fuzzer.crashes.len())
}

/// Writes small binary seeds: a generated network, an input, an XY network, two
/// `.safetensors` networks (the text seeds are cut from the official files, see fuzz/corpus/README.md).
fn seed(corpus: &Path) -> Result<()> {
    let network = spdnn_sdgc::generator::network(32, 2, 1)?;
    let dir = corpus.join("network_cache");
    std::fs::create_dir_all(&dir)?;
    spdnn_sdgc::cache::write_network(&dir.join("generated-32-2.bin"), &network)?;
    let input = spdnn_sdgc::images::synthetic(5, 32, 3)?;
    spdnn_sdgc::cache::write_input(&dir.join("synthetic-5x32.bin"), &input)?;
    let dir = corpus.join("xy_cache");
    std::fs::create_dir_all(&dir)?;
    for (name, layers) in [("generated-32-3", 3usize), ("generated-64-2", 2)] {
        let neurons = if name.contains("-64-") { 64 } else { 32 };
        let network = spdnn_sdgc::generator::network(neurons, layers, 2)?;
        let xy = spdnn_xy::XyNetwork::prepare(network.layers())?;
        let mut bytes = Vec::new();
        xy.write_to(&mut bytes)?;
        std::fs::write(dir.join(format!("{name}.xybin")), bytes)?;
    }
    // safetensors, by the project's writer: a generated N = 32 network (every entry stored,
    // so dense `weight` tensors) with biases and an upper bound, and a small N = 2 one whose
    // sparse layers are CSR tensors around a dense one, without biases or bound.
    let dir = corpus.join("safetensors");
    std::fs::create_dir_all(&dir)?;
    let generated =
        spdnn_sdgc::generator::network(32, 2, 1)?.with_biases(vec![vec![-0.3; 32]; 2])?;
    spdnn_sdgc::trained::write_safetensors(
        &dir.join("generated-32-2.safetensors"),
        &generated,
        Some(spdnn_sdgc::UPPER_BOUND),
    )?;
    let layer =
        |text: &str| spdnn_sdgc::tsv::parse_layer(text.as_bytes(), 2, Path::new("seed.tsv"));
    let small = spdnn_sdgc::Network::new(
        2,
        vec![
            layer("1\t2\t0.5\n2\t1\t-1\n")?,
            layer("1\t1\t0.25\n1\t2\t2\n2\t1\t-0.5\n2\t2\t1\n")?,
            layer("2\t2\t0.75\n")?,
        ],
    )?;
    spdnn_sdgc::trained::write_safetensors(&dir.join("dense-2-3.safetensors"), &small, None)?;
    println!("binary seeds written under {}", corpus.display());
    Ok(())
}
