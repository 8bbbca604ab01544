//! Measures the preparation time of compression and of the retirement analysis.
//!
//! ```text
//! cargo run --release -p spdnn-compress --example prepare                # 1024-120
//! cargo run --release -p spdnn-compress --example prepare -- 4096 120 65536 120
//! ```
//!
//! With no arguments: the official 1024-120 network when its file is there (and then, with
//! MNIST in `data/mnist/`, the CPU reference over the 60000 MNIST-recipe rows on the
//! original and on the compressed network, and the rows still active after each layer),
//! and the generated 1024-120. Arguments are `N L` pairs of generated networks, streamed
//! layer by layer through the compressor (so 65536-1920 fits in memory). Reading or
//! generating the layers is not counted.

use std::error::Error;
use std::time::{Duration, Instant};

use spdnn_compress::{CompressReport, Compressor, Retirement, compress, prove_layer};
use spdnn_reference::{Activation, Options, infer};
use spdnn_sdgc::generator;
use spdnn_sdgc::paths::{find_official, workspace_root_from_manifest};

const BIAS_FALLBACK: f32 = -0.3;
const UPPER: f32 = 32.0;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>())
        .collect::<Result<_, _>>()?;
    println!(
        "rayon threads: {}; held networks: best of 3 runs; streamed ones: one pass",
        rayon::current_num_threads()
    );
    if args.is_empty() {
        let root = workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
        match find_official(&root, "neuron1024.tar.gz") {
            Some(path) => {
                let net = spdnn_sdgc::tsv::read_network(&path, Some(1024), 120, &mut |_| {})?;
                held("official 1024-120", net.layers(), -0.3)?;
                oracle(&root, net.layers())?;
            }
            None => println!("official 1024-120: the file is not there, skipped"),
        }
        let net = generator::network(1024, 120, 1)?;
        held("generated 1024-120", net.layers(), -0.3)?;
        return Ok(());
    }
    for pair in args.chunks(2) {
        let [n, l] = pair else {
            return Err("arguments come in pairs: N L".into());
        };
        streamed(*n, *l)?;
    }
    Ok(())
}

/// A network held in memory: `compress` and `Retirement::analyze`, best of three.
fn held(name: &str, layers: &[spdnn_formats::Csr], bias: f32) -> Result<(), Box<dyn Error>> {
    let mut best = (Duration::MAX, Duration::MAX, Duration::MAX);
    let mut last = None;
    for _ in 0..3 {
        let start = Instant::now();
        let c = compress(layers)?;
        let compress_time = start.elapsed();
        let start = Instant::now();
        let retirement = c.retirement(bias, UPPER)?;
        let retire_time = start.elapsed();
        let start = Instant::now();
        let original = Retirement::analyze(layers, bias, UPPER)?;
        let original_time = start.elapsed();
        assert_eq!(original.layers().len(), layers.len());
        best = (
            best.0.min(compress_time),
            best.1.min(retire_time),
            best.2.min(original_time),
        );
        last = Some((c, retirement));
    }
    let (c, retirement) = last.expect("three rounds ran");
    let report = CompressReport::new(c.summary(), Some(&retirement));
    println!(
        "{name}: compress {:.1} ms, retirement of the compressed net {:.2} ms (of the original {:.1} ms); \
         widths ×{:.2}, entries ×{:.2}, preserving suffix from layer {} (0-based), identity: {}",
        ms(best.0),
        ms(best.1),
        ms(best.2),
        report.width_ratio,
        report.nnz_ratio,
        retirement.suffix_start(),
        report.identity
    );
    Ok(())
}

/// A generated network streamed through the compressor (one pass; layers are generated
/// in windows by `for_each_layer`, outside the timed calls).
fn streamed(n: usize, layers: usize) -> Result<(), Box<dyn Error>> {
    let bias = spdnn_sdgc::benchmark::official_bias(n).unwrap_or(BIAS_FALLBACK);
    let mut compressor = Compressor::new();
    let mut proofs = Vec::with_capacity(layers);
    let mut retire_time = Duration::ZERO;
    let mut original_retire_time = Duration::ZERO;
    let mut failure = None;
    generator::for_each_layer(n, layers, 1, |_, layer| {
        let start = Instant::now();
        let original = prove_layer(&layer, bias, UPPER);
        original_retire_time += start.elapsed();
        let small = match compressor.push(&layer) {
            Ok(small) => small,
            Err(e) => {
                failure.get_or_insert(e.to_string());
                return Ok(());
            }
        };
        let start = Instant::now();
        let proof = prove_layer(&small, bias, UPPER);
        retire_time += start.elapsed();
        match (proof, original) {
            (Ok(p), Ok(_)) => proofs.push(p),
            (Err(e), _) | (_, Err(e)) => {
                failure.get_or_insert(e.to_string());
            }
        }
        Ok::<(), spdnn_sdgc::SdgcError>(())
    })?;
    if let Some(e) = failure {
        return Err(e.into());
    }
    let (summary, _) = compressor.finish()?;
    let retirement = Retirement::from_proofs(proofs, bias, UPPER)?;
    let report = CompressReport::new(&summary, Some(&retirement));
    println!(
        "generated {n}-{layers} (streamed): compress {:.1} ms ({:.2} ms/layer), retirement of the compressed net \
         {:.1} ms (of the original {:.1} ms); widths ×{:.2}, entries ×{:.2}, preserving suffix from layer {}",
        report.compress_ms,
        report.compress_ms / layers as f64,
        ms(retire_time),
        ms(original_retire_time),
        report.width_ratio,
        report.nnz_ratio,
        retirement.suffix_start()
    );
    Ok(())
}

/// The reference over the MNIST-recipe rows, on the original and the compressed network.
fn oracle(root: &std::path::Path, layers: &[spdnn_formats::Csr]) -> Result<(), Box<dyn Error>> {
    let data = root.join("data");
    let mnist_file = spdnn_sdgc::images::mnist::mnist_dir(&data)
        .join(spdnn_sdgc::images::mnist::MNIST_TRAIN_IMAGES);
    if !mnist_file.is_file() {
        println!("MNIST is not in data/mnist/: the oracle timing is skipped");
        return Ok(());
    }
    let mnist = spdnn_sdgc::images::load_mnist_train(&data)?;
    let input = spdnn_sdgc::images::from_mnist(&mnist, 1024, &|_, _| {})?.features;
    let activation = Activation::new(-0.3, UPPER)?;
    let whole_row = 1 << 30;
    let options = Options {
        keep_output: false,
        collect_stats: true,
        segment_lengths: vec![whole_row],
    };
    let c = compress(layers)?;
    let mut best = (Duration::MAX, Duration::MAX);
    let mut results = None;
    for _ in 0..3 {
        let start = Instant::now();
        let original = infer::<f32>(layers, &input, activation, &options)?;
        let original_time = start.elapsed();
        let start = Instant::now();
        let small = infer::<f32>(c.layers(), &input, activation, &options)?;
        let small_time = start.elapsed();
        best = (best.0.min(original_time), best.1.min(small_time));
        results = Some((original, small));
    }
    let (original, small) = results.expect("three rounds ran");
    println!(
        "reference, 60000 MNIST-recipe rows, f32: original {:.0} ms, compressed {:.0} ms; categories equal: {} ({})",
        ms(best.0),
        ms(best.1),
        original.categories == small.categories,
        small.categories.len()
    );
    let active: Vec<usize> = small
        .stats
        .iter()
        .map(|s| {
            let at_bound = s
                .segment(whole_row)
                .map_or(0, |g| g.all_upper_bound as usize);
            s.active_rows - at_bound
        })
        .collect();
    println!(
        "rows neither zero nor all at the bound after layer l (l = 1, 2, 3, 5, 10, 15, 20, 25, 30): {:?}",
        [1, 2, 3, 5, 10, 15, 20, 25, 30].map(|l| active[l - 1])
    );
    let finished_from = active.iter().rposition(|&a| a > 0).map_or(1, |l| l + 2);
    println!("every row is finished (zero or retired) after layer {finished_from}");
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
