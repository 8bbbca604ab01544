//! The CPU reference (f32, activation-sparse, all threads) on generated networks over
//! synthetic rows: the oracle every GPU method is checked against.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use spdnn_benches::{UPPER, problem};
use spdnn_reference::{Activation, Inference, Options, infer};

fn reference(c: &mut Criterion) {
    let mut group = c.benchmark_group("reference");
    group.sample_size(10);
    for (neurons, layers, rows) in [(1024, 120, 2000), (4096, 24, 1000)] {
        let (network, input, bias) = problem(neurons, layers, rows);
        let activation = Activation::new(bias, UPPER).expect("a valid activation");
        let options = Options {
            keep_output: false,
            collect_stats: false,
            ..Options::default()
        };
        // Edges as the challenge counts them: rows · 32 · N · L.
        group.throughput(Throughput::Elements((rows * 32 * neurons * layers) as u64));
        group.bench_function(format!("{neurons}-{layers}/{rows}-rows"), |b| {
            b.iter(|| {
                let out: Inference<f32> =
                    infer(&network, &input, activation, &options).expect("the reference runs");
                black_box(out.categories.len())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, reference);
criterion_main!(benches);
