//! The generated challenge networks (RadiX-Net): outputs come in classes of 16, and of 32
//! in the offset-G/2 layer of every cycle, so compression is exactly 16× (32× there);
//! the compressed network gives the reference's categories and values.

mod common;

use common::{compressed, max_difference, reference};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spdnn_compress::CompressReport;
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_reference::Activation;
use spdnn_sdgc::generator;

/// Layer `l` (1-based) of an `n`-neuron generated net has offset `2^p`, `p = (l−1) mod c`:
/// outputs `j` and `j + G·t` share their inputs (classes of 16); with `2^p = G/2` also
/// `j + G/2` (classes of 32).
fn expected_width(n: usize, l: usize) -> usize {
    let per_cycle = generator::layers_per_cycle(n);
    if (l - 1) % per_cycle == per_cycle - 1 {
        n / 32
    } else {
        n / 16
    }
}

#[test]
fn generated_networks_compress_16x_and_32x() {
    for (n, layers) in [(1024, 30), (4096, 20)] {
        let net = generator::network(n, layers, 7).unwrap();
        let c = compressed(net.layers());
        assert!(!c.is_identity());
        for (l, s) in c.summary().layers.iter().enumerate() {
            let width = expected_width(n, l + 1);
            assert_eq!(s.classes, width, "N = {n}, layer {}", l + 1);
            assert_eq!(s.largest_class, n / width);
            assert_eq!(s.merged_classes, width);
            assert_eq!(
                s.compressed_rows,
                if l == 0 {
                    n
                } else {
                    c.summary().layers[l - 1].classes
                }
            );
            let classes = c.classes(l).unwrap();
            for j in 0..n {
                assert_eq!(classes.class_of(j), Some((j % width) as u32));
            }
        }
        let report = CompressReport::new(c.summary(), None);
        assert!(report.width_ratio > 16.0 && report.width_ratio < 32.0);
        eprintln!(
            "{n}-{layers}: widths ×{:.2}, entries ×{:.2}, {:.1} ms",
            report.width_ratio, report.nnz_ratio, report.compress_ms
        );
    }
}

#[test]
fn small_generated_networks_compress_at_least_16x() {
    for n in [32, 64, 128, 256] {
        let net = generator::network(n, 16, 11).unwrap();
        let c = compressed(net.layers());
        for s in &c.summary().layers {
            assert!(s.classes <= n / 16 && s.classes >= 1, "N = {n}: {s:?}");
        }
    }
}

/// Binary rows (values 1, as the challenge's images) of densities spread over 5–60%.
fn binary_rows(rows: usize, n: usize, seed: u64) -> Csr {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut triplets = Vec::new();
    for r in 0..rows as u32 {
        let density = rng.random_range(0.05..0.6);
        for c in 0..n as u32 {
            if rng.random_bool(density) {
                triplets.push((r, c, 1.0));
            }
        }
    }
    Csr::from_triplets(rows, n, &triplets).unwrap()
}

#[test]
fn generated_networks_run_identically_compressed() {
    for (n, layers, rows) in [(1024, 60, 600), (4096, 24, 200), (64, 30, 300)] {
        let net = generator::network(n, layers, 5).unwrap();
        let input = binary_rows(rows, n, 5);
        let bias = spdnn_sdgc::benchmark::official_bias(n).unwrap_or(-0.3);
        let activation = Activation::new(bias, 32.0).unwrap();
        let c = compressed(net.layers());
        let original = reference::<f32>(net.layers(), &input, activation);
        let small = reference::<f32>(c.layers(), &input, activation);
        assert_eq!(small.categories, original.categories, "N = {n}");
        let values: Vec<f32> = small.output.unwrap().iter().copied().collect();
        let expanded = c.expand(&values, rows).unwrap();
        let original_values: Vec<f32> = original.output.unwrap().iter().copied().collect();
        let diff = max_difference(&expanded, &original_values);
        eprintln!(
            "{n}-{layers}, {rows} rows: {} categories, max |diff| {diff:e}",
            original.categories.len()
        );
        assert!(diff <= 1e-5 * 32.0);
        assert!(!original.categories.is_empty() && original.categories.len() < rows);
        assert_eq!(expanded.len(), rows * net.layers()[layers - 1].ncols());
    }
}
