//! The challenge's readers on files written here from a generated network: a folder of
//! official TSV layers, the same network as a binary cache, and an images TSV.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use spdnn_benches::problem;
use spdnn_formats::SparseMatrix;
use spdnn_sdgc::{Network, cache, tsv};

fn readers(c: &mut Criterion) {
    let (neurons, layers, rows) = (1024, 24, 6000);
    let (weights, input, _) = problem(neurons, layers, rows);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let network = Network::new(neurons, weights).expect("a network");
    let folder = dir.path().join("net");
    tsv::write_network_dir(&folder, &network, &mut |_| {}).expect("writing the TSV layers");
    let cached = dir.path().join("net.bin");
    cache::write_network(&cached, &network).expect("writing the cache");
    let images = dir.path().join("images.tsv");
    tsv::write_images(&images, &input).expect("writing the images");
    let bytes = |path: &std::path::Path| -> u64 {
        if path.is_dir() {
            std::fs::read_dir(path)
                .expect("the folder")
                .filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        } else {
            std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
        }
    };

    let mut group = c.benchmark_group("readers");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes(&folder)));
    group.bench_function(format!("tsv-folder/{neurons}-{layers}"), |b| {
        b.iter(|| {
            let net = tsv::read_network(&folder, Some(neurons), layers, &mut |_| {})
                .expect("reading the folder");
            black_box(net.layers().len())
        })
    });
    group.throughput(Throughput::Bytes(bytes(&cached)));
    group.bench_function(format!("cache/{neurons}-{layers}"), |b| {
        b.iter(|| {
            let net = cache::read_network(&cached, None).expect("reading the cache");
            black_box(net.layers().len())
        })
    });
    group.throughput(Throughput::Bytes(bytes(&images)));
    group.bench_function(format!("images-tsv/{rows}x{neurons}"), |b| {
        b.iter(|| {
            let rows = tsv::read_images(&images, neurons, None).expect("reading the images");
            black_box(rows.nnz())
        })
    });
    group.finish();
}

criterion_group!(benches, readers);
criterion_main!(benches);
