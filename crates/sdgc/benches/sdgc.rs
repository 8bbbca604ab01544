//! Criterion benches of the challenge's data handling, one group per function:
//!
//! - `tsv_parse`: the weight-file parser on the real N = 1024 layer 1 (682,816 bytes) and
//!   on a synthetic N = 16384 layer (≈13 MB), on one thread and on all; throughput in
//!   bytes, so criterion prints MB/s.
//! - `network_load`: the real 1024-120 network from the official tar.gz, from its 120
//!   texts already in memory (parse only), and from a binary cache.
//!
//! - `generator`: the RadiX-Net generator building N = 4096, L = 24 (all threads); throughput
//!   in weight entries, so criterion prints entries/s.
//! - `images`: one output-row strip of the MNIST recipe's Fourier interpolation at N = 1024
//!   (1,680,000 → 1,920,000 points, planning included) and a 6000 × 1024 synthetic input.
//!
//! The real-data benches are skipped (with a note) when the official archive is absent.

use std::hint::black_box;
use std::io::Read;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use spdnn_formats::Csr;
use spdnn_sdgc::{cache, paths, tsv};

/// The official N = 1024 archive, when the team's data is at hand.
fn official_archive() -> Option<PathBuf> {
    let root = paths::workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
    let found = paths::find_official(&root, "neuron1024.tar.gz");
    if found.is_none() {
        eprintln!("skipping the real-data benches: neuron1024.tar.gz not found");
    }
    found
}

/// The texts of layers `1..=layers` of the archive, in layer order.
fn archive_texts(archive: &Path, layers: usize) -> Vec<Vec<u8>> {
    let file = std::fs::File::open(archive).expect("open the archive");
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut texts = vec![Vec::new(); layers];
    for entry in tar.entries().expect("read the archive") {
        let mut entry = entry.expect("read an archive member");
        let name = entry
            .path()
            .expect("member name")
            .to_string_lossy()
            .into_owned();
        let layer = (1..=layers).find(|&l| name.ends_with(&format!("/n1024-l{l}.tsv")));
        if let Some(l) = layer {
            entry.read_to_end(&mut texts[l - 1]).expect("read a layer");
        }
    }
    texts
}

/// A challenge-shaped `neurons`-neuron layer (32 entries a row) in the official text form.
fn synthetic_layer_text(neurons: usize) -> Vec<u8> {
    let triplets: Vec<(u32, u32, f32)> = (0..neurons as u32)
        .flat_map(|r| {
            (0..32u32).map(move |k| (r, (r + k * (neurons as u32 / 32)) % neurons as u32, 0.0625))
        })
        .collect();
    let layer = Csr::from_triplets(neurons, neurons, &triplets).expect("a valid layer");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("layer.tsv");
    tsv::write_layer(&path, &layer).expect("write the layer");
    std::fs::read(&path).expect("read the layer back")
}

fn tsv_parse(c: &mut Criterion) {
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a rayon pool");
    let mut inputs = Vec::new();
    if let Some(archive) = official_archive() {
        inputs.push(("real_n1024_l1", 1024, archive_texts(&archive, 1).remove(0)));
    }
    inputs.push(("synthetic_n16384", 16384, synthetic_layer_text(16384)));
    let mut group = c.benchmark_group("tsv_parse");
    for (name, neurons, text) in &inputs {
        group.throughput(Throughput::Bytes(text.len() as u64));
        let path = Path::new("bench.tsv");
        group.bench_function(format!("{name}/1_thread"), |b| {
            b.iter(|| {
                one_thread
                    .install(|| tsv::parse_layer(black_box(text), *neurons, path).expect("parse"))
            })
        });
        group.bench_function(format!("{name}/all_threads"), |b| {
            b.iter(|| tsv::parse_layer(black_box(text), *neurons, path).expect("parse"))
        });
    }
    group.finish();
}

fn network_load(c: &mut Criterion) {
    let Some(archive) = official_archive() else {
        return;
    };
    let texts = archive_texts(&archive, 120);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let cache_path = dir.path().join("neuron1024-120.bin");
    let network = tsv::read_network(&archive, None, 120, &mut |_| {}).expect("read the archive");
    cache::write_network(&cache_path, &network).expect("write the cache");

    let mut group = c.benchmark_group("network_load");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(
        texts.iter().map(|t| t.len() as u64).sum(),
    ));
    group.bench_function("n1024_l120/tar_gz", |b| {
        b.iter(|| tsv::read_network(&archive, None, 120, &mut |_| {}).expect("read"))
    });
    group.bench_function("n1024_l120/parse_only", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| tsv::parse_layer(t, 1024, Path::new("bench.tsv")).expect("parse"))
                .collect::<Vec<_>>()
        })
    });
    group.bench_function("n1024_l120/cache", |b| {
        b.iter(|| cache::read_network(&cache_path, None).expect("read the cache"))
    });
    group.finish();
}

// ---- generator and images benches ----

fn generator(c: &mut Criterion) {
    let (neurons, layers) = (4096, 24);
    let mut group = c.benchmark_group("generator");
    group.sample_size(10);
    group.throughput(Throughput::Elements((32 * neurons * layers) as u64));
    group.bench_function(format!("n{neurons}_l{layers}"), |b| {
        b.iter(|| spdnn_sdgc::generator::network(neurons, layers, black_box(7)).expect("generate"))
    });
    group.finish();
}

fn images(c: &mut Criterion) {
    let strip: Vec<f64> = (0u64..60000 * 28)
        .map(|s| ((s * 7919) % 256) as f64)
        .collect();
    let mut group = c.benchmark_group("images");
    group.sample_size(10);
    group.throughput(Throughput::Elements(60000 * 32));
    group.bench_function("interpolate_strip_1680000_to_1920000", |b| {
        b.iter(|| {
            spdnn_sdgc::images::fourier_interpolate(black_box(&strip), 60000 * 32)
                .expect("interpolate")
        })
    });
    group.throughput(Throughput::Elements(6000 * 1024));
    group.bench_function("synthetic_6000x1024", |b| {
        b.iter(|| spdnn_sdgc::images::synthetic(6000, 1024, black_box(3)).expect("synthetic"))
    });
    group.finish();
}

criterion_group!(benches, tsv_parse, network_load, generator, images);
criterion_main!(benches);
