//! Times the reference on the real 1024-120 benchmark (the official network and the
//! 60000 MNIST-recipe images) on stderr, and prints the per-layer statistics (layer 0 =
//! the input) as JSON lines on stdout.
//!
//! `cargo run --release -p spdnn-reference --example official_1024 [REPEATS]`

use std::io::Write;
use std::time::Instant;

use spdnn_reference::{Activation, Options, ReferenceError, infer};
use spdnn_sdgc::paths::{find_official, workspace_root_from_manifest};
use spdnn_sdgc::{images, tsv};

/// CPU time of this process so far (user + system), in seconds, where `/proc` tells it.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

type Error = Box<dyn std::error::Error>;

/// Runs `run` `repeats` times and reports the best wall and CPU times on stderr.
fn time(
    name: &str,
    repeats: usize,
    run: impl Fn() -> Result<Vec<u32>, ReferenceError>,
) -> Result<Vec<u32>, Error> {
    let (mut wall, mut cpu) = (f64::MAX, f64::MAX);
    let mut categories = Vec::new();
    for _ in 0..repeats.max(1) {
        let (start, cpu_start) = (Instant::now(), cpu_seconds());
        categories = run()?;
        wall = wall.min(start.elapsed().as_secs_f64());
        if let (Some(a), Some(b)) = (cpu_start, cpu_seconds()) {
            cpu = cpu.min(b - a);
        }
    }
    eprintln!(
        "{name}: best of {repeats}: {wall:.3} s wall, {cpu:.2} s CPU, {} categories",
        categories.len()
    );
    Ok(categories)
}

fn main() -> Result<(), Error> {
    let repeats: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(3);
    let root = workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
    let net_path =
        find_official(&root, "neuron1024.tar.gz").ok_or("neuron1024.tar.gz not found")?;
    let network = tsv::read_network(&net_path, Some(1024), 120, &mut |_| {})?;
    let mnist = images::load_mnist_train(&root.join("data"))?;
    let input = images::from_mnist(&mnist, 1024, &|_, _| {})?;
    let activation = Activation::new(-0.3, 32.0)?;
    let (layers, features) = (network.layers(), &input.features);
    let stats = Options::default();
    let no_stats = Options {
        collect_stats: false,
        ..Options::default()
    };
    time("f32, stats", repeats, || {
        Ok(infer::<f32>(layers, features, activation, &stats)?.categories)
    })?;
    time("f32, no stats", repeats, || {
        Ok(infer::<f32>(layers, features, activation, &no_stats)?.categories)
    })?;
    time("f64, stats", repeats, || {
        Ok(infer::<f64>(layers, features, activation, &stats)?.categories)
    })?;
    let result = infer::<f32>(layers, features, activation, &stats)?;
    if let Some(truth) = find_official(&root, "neuron1024-l120-categories.tsv") {
        let matches = tsv::read_categories(&truth)? == result.categories;
        eprintln!("categories equal the official truth: {matches}");
    }
    let layer0 = spdnn_reference::input_stats(features, 32.0, &stats.segment_lengths);
    let mut out = std::io::stdout().lock();
    for layer in std::iter::once(&layer0).chain(&result.stats) {
        writeln!(out, "{}", serde_json::to_string(layer)?)?;
    }
    Ok(())
}
