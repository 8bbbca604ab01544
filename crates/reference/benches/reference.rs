//! The CPU reference on the 1024-120 benchmark: the official network and the 60000
//! MNIST-recipe images when both are at hand, otherwise a RadiX-Net-like network
//! (`W[r, j] = 1/16` iff `(r − j) mod 64 ∈ {0, 2^(l mod 6)}`) and seeded ~10% dense binary
//! input, labelled as such.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use spdnn_formats::Csr;
use spdnn_reference::{Activation, Options, infer};
use spdnn_sdgc::paths::{find_official, workspace_root_from_manifest};
use spdnn_sdgc::{images, tsv};

const NEURONS: usize = 1024;
const LAYERS: usize = 120;
const ROWS: usize = 60000;

/// Layer `l` (0-based) of the RadiX-Net-like stand-in.
fn radix_like_layer(l: usize) -> Csr {
    let offset = 1usize << (l % 6);
    let mut triplets = Vec::with_capacity(NEURONS * 32);
    for r in 0..NEURONS {
        for j in 0..NEURONS {
            let d = (r + NEURONS - j) % 64;
            if d == 0 || d == offset {
                triplets.push((r as u32, j as u32, 1.0 / 16.0));
            }
        }
    }
    Csr::from_triplets(NEURONS, NEURONS, &triplets).expect("valid layer")
}

/// Seeded binary rows of about `density` (xorshift).
fn random_input(rows: usize, density: f64, seed: u64) -> Csr {
    let mut state = seed | 1;
    let mut triplets = Vec::new();
    for r in 0..rows {
        for c in 0..NEURONS {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if ((state >> 11) as f64 / (1u64 << 53) as f64) < density {
                triplets.push((r as u32, c as u32, 1.0));
            }
        }
    }
    Csr::from_triplets(rows, NEURONS, &triplets).expect("valid input")
}

/// The official network and MNIST-recipe images, when both can be read.
fn real_data() -> Result<(Vec<Csr>, Csr), String> {
    let root = workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
    let net = find_official(&root, "neuron1024.tar.gz").ok_or("neuron1024.tar.gz not found")?;
    let network =
        tsv::read_network(&net, Some(NEURONS), LAYERS, &mut |_| {}).map_err(|e| e.to_string())?;
    let mnist = images::load_mnist_train(&root.join("data")).map_err(|e| e.to_string())?;
    let input = images::from_mnist(&mnist, NEURONS, &|_, _| {}).map_err(|e| e.to_string())?;
    Ok((network.layers().to_vec(), input.features))
}

fn data() -> (Vec<Csr>, Csr, &'static str) {
    match real_data() {
        Ok((layers, input)) => (layers, input, "official net, MNIST images"),
        Err(why) => {
            eprintln!("real data unavailable ({why}): using a generated-like net, synthetic input");
            let layers = (0..LAYERS).map(radix_like_layer).collect();
            (
                layers,
                random_input(ROWS, 0.1, 42),
                "generated-like net, synthetic input",
            )
        }
    }
}

fn bench(c: &mut Criterion) {
    let (layers, input, label) = data();
    let activation = Activation::official(NEURONS).expect("official size");
    let options = Options::default();
    let no_stats = Options {
        collect_stats: false,
        ..Options::default()
    };
    let probe = infer::<f32>(&layers, &input, activation, &options).expect("runs");
    eprintln!("{label}: {} categories", probe.categories.len());
    let mut group = c.benchmark_group("reference 1024-120");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(40));
    group.bench_function(format!("f32 ({label})"), |b| {
        b.iter(|| infer::<f32>(&layers, &input, activation, &options).expect("runs"))
    });
    group.bench_function(format!("f32 without stats ({label})"), |b| {
        b.iter(|| infer::<f32>(&layers, &input, activation, &no_stats).expect("runs"))
    });
    group.bench_function(format!("f64 ({label})"), |b| {
        b.iter(|| infer::<f64>(&layers, &input, activation, &options).expect("runs"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
