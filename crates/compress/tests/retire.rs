//! Retired rows: the proofs hold in every summation order we can simulate, and rows the
//! analysis calls finished end as it says under the reference.

mod common;

use common::{
    Values, all_at, compressed, least_evaluation, planted_layer, random_input, reference,
};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spdnn_compress::{Retirement, RowState, prove_layer};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_reference::Activation;

fn columns(layer: &Csr) -> Vec<Vec<f32>> {
    let t = layer.transpose();
    (0..t.nrows()).map(|j| t.row(j).1.to_vec()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A layer proved to preserve gives the bound in every simulated order and under the
    /// reference; a column the proof calls short of it by a clear margin really is.
    #[test]
    fn proofs_hold_in_every_order(seed in any::<u64>(), mixed in any::<bool>(), u in 0usize..5) {
        let mut rng = StdRng::seed_from_u64(seed);
        let upper = [0.25f32, 1.0, 4.0, 32.0, 100.0][u];
        let values = if mixed { Values::MixedReal } else { Values::PositiveReal };
        let rows = rng.random_range(1..=40);
        let cols = rng.random_range(1..=12);
        let classes = rng.random_range(1..=cols);
        let (mut layer, _) = planted_layer(&mut rng, rows, cols, classes, 0.8, values);
        // Scale the weights so that the column sums land near the bound.
        let scale = rng.random_range(0.02f32..4.0);
        let t: Vec<(u32, u32, f32)> = layer.triplets().map(|(r, c, w)| (r, c, w * scale)).collect();
        layer = Csr::from_triplets(rows, cols, &t).unwrap();
        let bias = -rng.random_range(0.01f32..0.5);
        let proof = prove_layer(&layer, bias, upper).unwrap();
        let mut all_reach = true;
        for column in columns(&layer) {
            if column.is_empty() {
                all_reach = false;
                continue;
            }
            let least = least_evaluation(&column, bias, upper, &mut rng);
            if proof.preserves {
                prop_assert!(least >= upper, "proved, but an order gives {} < {}", least, upper);
            }
            all_reach &= least >= upper;
        }
        if proof.preserves {
            let activation = Activation::new(bias, upper).unwrap();
            let out = reference::<f32>(std::slice::from_ref(&layer), &all_at(rows, upper), activation);
            prop_assert!(out.output.unwrap().iter().all(|&v| v == upper));
        } else if proof.empty_columns == 0 {
            // Not proved: some column's exact sum reaches the bound by less than a
            // rounding-sized margin (the proof is conservative, not blind).
            let close = columns(&layer).iter().any(|c| {
                let a: f64 = c.iter().map(|&w| f64::from(upper) * f64::from(w).abs()).sum::<f64>()
                    - f64::from(bias);
                let s: f64 = c.iter().map(|&w| f64::from(upper) * f64::from(w)).sum::<f64>()
                    + f64::from(bias);
                s - f64::from(upper) < 1e-4 * a
            });
            prop_assert!(close, "{:?}", proof);
        }
        if !all_reach {
            prop_assert!(!proof.preserves);
        }
    }

    /// Columns whose exact sum lands just above the bound, by less than their rounding
    /// error or by more: whatever the proof claims holds in every simulated order.
    #[test]
    fn proofs_are_sound_at_the_threshold(seed in any::<u64>(), mixed in any::<bool>()) {
        let mut rng = StdRng::seed_from_u64(seed);
        let upper = [1.0f32, 32.0, 3.7][rng.random_range(0..3)];
        let n = rng.random_range(1..=64);
        let weights: Vec<f32> = (0..n)
            .map(|_| {
                let w = rng.random_range(0.05f32..1.0);
                if mixed && rng.random_bool(0.3) { -w / 4.0 } else { w }
            })
            .collect();
        let sum: f64 = weights.iter().map(|&w| f64::from(upper) * f64::from(w)).sum();
        let above = [0.0, 1e-7, 1e-6, 1e-5, 1e-3][rng.random_range(0..5)] * sum;
        let bias = -(sum - f64::from(upper) - above) as f32;
        prop_assume!(bias < 0.0 && bias.is_finite());
        let t: Vec<(u32, u32, f32)> = weights.iter().enumerate().map(|(r, &w)| (r as u32, 0, w)).collect();
        let layer = Csr::from_triplets(n, 1, &t).unwrap();
        let proof = prove_layer(&layer, bias, upper).unwrap();
        let least = least_evaluation(&weights, bias, upper, &mut rng);
        if proof.preserves {
            prop_assert!(least >= upper, "proved, but an order gives {} < {}", least, upper);
        }
        if above >= 1e-3 * sum {
            prop_assert!(proof.preserves, "a clear margin must be proved: {:?}", proof);
        }
    }

    /// Rows the analysis calls finished after k layers end as it says: all at the bound
    /// (a category) or all zero (not one), on the original and the compressed network.
    #[test]
    fn finished_rows_end_as_claimed(seed in any::<u64>()) {
        let mut rng = StdRng::seed_from_u64(seed);
        let depth = rng.random_range(1..=6);
        let width = rng.random_range(2..=16);
        let upper = [1.0f32, 2.0, 32.0][rng.random_range(0..3)];
        let mut layers = Vec::new();
        for _ in 0..depth {
            let classes = rng.random_range(1..=width);
            // Strong positive layers (columns sum far above the bound), with now and then a
            // weak or mixed one that breaks the suffix.
            let values = if rng.random_bool(0.2) { Values::MixedReal } else { Values::PositiveReal };
            let (layer, _) = planted_layer(&mut rng, width, width, classes, 0.9, values);
            let scale = if rng.random_bool(0.8) { 40.0 } else { 1.0 };
            let t: Vec<(u32, u32, f32)> = layer.triplets().map(|(r, c, w)| (r, c, w * scale)).collect();
            layers.push(Csr::from_triplets(width, width, &t).unwrap());
        }
        let bias = -rng.random_range(0.01f32..0.5);
        let activation = Activation::new(bias, upper).unwrap();
        // Random rows, rows all at the bound and zero rows.
        let random = random_input(&mut rng, 6, width, 0.6, Values::PositiveReal);
        let mut t: Vec<(u32, u32, f32)> = random.triplets().collect();
        for c in 0..width as u32 {
            t.push((6, c, upper));
            t.push((7, c, upper));
        }
        let input = Csr::from_triplets(9, width, &t).unwrap();
        let c = compressed(&layers);
        for net in [&layers[..], c.layers()] {
            let retirement = Retirement::analyze(net, bias, upper).unwrap();
            let last = reference::<f32>(net, &input, activation);
            let last_width = net.last().unwrap().ncols();
            let final_values = last.output.unwrap();
            for done in 0..=net.len() {
                // The rows after `done` layers (the input itself before the first).
                let values = if done == 0 {
                    input.to_dense()
                } else {
                    reference::<f32>(&net[..done], &input, activation).output.unwrap()
                };
                let states: Vec<RowState> = values.rows().into_iter()
                    .map(|r| retirement.row_state(done, r.as_slice().unwrap()).unwrap())
                    .collect();
                for (row, state) in states.iter().enumerate() {
                    let out = final_values.row(row);
                    let category = last.categories.contains(&(row as u32 + 1));
                    match state {
                        RowState::AtBound => {
                            prop_assert!(out.iter().all(|&v| v == upper), "row {} after {}", row, done);
                            prop_assert!(category);
                            prop_assert!(done >= retirement.suffix_start());
                        }
                        RowState::Zero => {
                            prop_assert!(out.iter().all(|&v| v == 0.0));
                            prop_assert!(!category);
                        }
                        RowState::Active => {}
                    }
                }
                prop_assert_eq!(final_values.ncols(), last_width);
            }
            // Input rows 6 and 7 are all at the bound: finished at once when every layer
            // preserves.
            if retirement.suffix_start() == 0 {
                prop_assert!(final_values.row(6).iter().all(|&v| v == upper));
            }
        }
    }
}

#[test]
fn generated_networks_preserve_in_every_layer() {
    for (n, l) in [(64, 12), (1024, 24)] {
        let net = spdnn_sdgc::generator::network(n, l, 3).unwrap();
        let bias = spdnn_sdgc::benchmark::official_bias(n).unwrap_or(-0.3);
        let original = Retirement::analyze(net.layers(), bias, 32.0).unwrap();
        assert_eq!(original.suffix_start(), 0);
        assert_eq!(original.preserving_suffix_len(), l);
        let c = compressed(net.layers());
        let retirement = c.retirement(bias, 32.0).unwrap();
        assert_eq!(retirement.suffix_start(), 0);
        for proof in retirement.layers() {
            // Every compressed column still sums to 2 (32 weights of 1/16).
            assert!((proof.min_margin - (64.0 + f64::from(bias) - 32.0)).abs() < 1e-3);
        }
        // A bound above Σ U·w + b (U·2 − 0.3 < U needs U < 0.3) is not preserved.
        let low = c.retirement(bias, 0.25).unwrap();
        assert_eq!(low.suffix_start(), l);
        assert!(low.layers().iter().all(|p| !p.preserves));
    }
}
