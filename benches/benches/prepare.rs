//! What each method does before its timed region, on the CPU: XY's grouping of outputs by
//! shared input sets, H&P's sliced-ELL layout, exact compression, and BlockDepend's chain
//! (compression, the retirement proof, the per-layer dense/ELL layout).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use spdnn_benches::{UPPER, problem};
use spdnn_blockdepend::{Chain, FormatChoice, Layout};
use spdnn_hp::{HpNetwork, Layout as HpLayout, Params};

fn prepare(c: &mut Criterion) {
    let mut group = c.benchmark_group("prepare");
    group.sample_size(10);
    for (neurons, layers) in [(1024, 120), (4096, 24)] {
        let (network, _, bias) = problem(neurons, layers, 1);
        let shape = format!("{neurons}-{layers}");
        group.bench_function(format!("xy-grouping/{shape}"), |b| {
            b.iter(|| {
                black_box(
                    spdnn_xy::XyNetwork::prepare(&network)
                        .expect("xy")
                        .layers
                        .len(),
                )
            })
        });
        let params = Params {
            buffer: spdnn_hp::default_buffer(16),
            layout: HpLayout::Grouped,
        };
        group.bench_function(format!("hp-layout/{shape}"), |b| {
            b.iter(|| {
                black_box(
                    HpNetwork::build(&network, &params)
                        .expect("hp")
                        .layers
                        .len(),
                )
            })
        });
        group.bench_function(format!("compress/{shape}"), |b| {
            b.iter(|| {
                black_box(
                    spdnn_compress::compress(&network)
                        .expect("compression")
                        .layers()
                        .len(),
                )
            })
        });
        group.bench_function(format!("blockdepend-chain/{shape}"), |b| {
            b.iter(|| {
                let chain = Chain::build(&network, bias, UPPER, true, true).expect("chain");
                let layout = Layout::build(&chain, FormatChoice::Auto).expect("layout");
                black_box(layout.weight_bytes())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, prepare);
criterion_main!(benches);
