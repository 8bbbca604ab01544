//! Conversion costs on a 1024×1024 matrix with 32 entries in every row and column,
//! the shape of an N = 1024 SDGC layer.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use spdnn_formats::{Bcsr, Csr, SlicedEll};

const N: u32 = 1024;
const PER_ROW: u32 = 32;

/// Row `row` holds columns `(row + 32·k) mod N` for `k in 0..32`, value 1/16.
fn sdgc_like() -> Csr {
    let triplets: Vec<(u32, u32, f32)> = (0..N)
        .flat_map(|row| (0..PER_ROW).map(move |k| (row, (row + 32 * k) % N, 1.0 / 16.0)))
        .collect();
    Csr::from_triplets(N as usize, N as usize, &triplets).expect("valid pattern")
}

fn conversions(c: &mut Criterion) {
    let csr = sdgc_like();
    c.bench_function("csr_to_bcsr_16x16", |b| {
        b.iter(|| Bcsr::from_csr(black_box(&csr), 16, 16).expect("valid block shape"))
    });
    c.bench_function("csr_to_sliced_ell_32", |b| {
        b.iter(|| SlicedEll::from_csr(black_box(&csr), 32).expect("valid slice height"))
    });
    c.bench_function("csr_transpose", |b| b.iter(|| black_box(&csr).transpose()));
}

criterion_group!(benches, conversions);
criterion_main!(benches);
