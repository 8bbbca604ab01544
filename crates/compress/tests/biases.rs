//! Networks with a bias per output neuron (trained networks): compression keys its classes
//! on the bias too and stays exact under the official rule (biases of both signs), and the
//! retirement proof uses each column's own bias, in every summation order we can simulate.

mod common;

use common::{Values, all_at, least_evaluation, planted_problem};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spdnn_compress::{Retirement, RowState, compress_with_biases, prove_layer_per_neuron};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_reference::{Element, Inference, Options, infer_with_biases};

fn reference<T: Element>(
    layers: &[Csr],
    input: &Csr,
    biases: &[Vec<f32>],
    upper: f32,
) -> Inference<T> {
    let options = Options {
        keep_output: true,
        collect_stats: false,
        ..Options::default()
    };
    infer_with_biases::<T>(layers, input, biases, upper, &options).expect("reference runs")
}

/// Per layer, one dyadic bias per planted class (so planted classes may merge), of both
/// signs when `positive`; with probability `split` a neuron gets a bias of its own (so its
/// class must split).
fn planted_biases(
    rng: &mut StdRng,
    planted: &[Vec<u32>],
    positive: bool,
    split: f64,
) -> Vec<Vec<f32>> {
    let top = if positive { 4 } else { 0 };
    let draw = |rng: &mut StdRng| rng.random_range(-8..=top) as f32 / 4.0;
    planted
        .iter()
        .map(|class_of| {
            let classes = class_of.iter().copied().max().map_or(0, |m| m as usize + 1);
            let per_class: Vec<f32> = (0..classes).map(|_| draw(rng)).collect();
            class_of
                .iter()
                .map(|&c| {
                    if rng.random_bool(split) {
                        draw(rng)
                    } else {
                        per_class[c as usize]
                    }
                })
                .collect()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Dyadic networks with planted classes and per-neuron biases (a bias per planted class,
    /// now and then one of a neuron's own, of both signs or ≤ 0): every found class holds
    /// one bias, a planted class with one bias lies inside one found class, and the
    /// compressed network with its biases computes the original's values bit for bit under
    /// the official rule (f32 and f64).
    #[test]
    fn biased_dyadic_compression_is_bit_exact(
        seed in any::<u64>(),
        positive in any::<bool>(),
        split in prop_oneof![Just(0.0), Just(0.1), Just(0.5)],
    ) {
        let problem = planted_problem(seed, Values::Dyadic);
        let mut rng = StdRng::seed_from_u64(seed ^ 0xb1a5);
        let biases = planted_biases(&mut rng, &problem.planted, positive, split);
        let c = compress_with_biases(&problem.layers, &biases).unwrap();
        let kept = c.biases().expect("biases out");
        prop_assert_eq!(kept.len(), problem.layers.len());
        for (l, planted) in problem.planted.iter().enumerate() {
            let found = c.classes(l).unwrap();
            prop_assert_eq!(kept[l].len(), found.len());
            prop_assert_eq!(kept[l].len(), c.layers()[l].ncols());
            for (class, bias) in kept[l].iter().enumerate() {
                for &m in found.members(class).unwrap() {
                    prop_assert_eq!(biases[l][m as usize].to_bits(), bias.to_bits(),
                        "layer {} class {} member {}", l + 1, class, m);
                }
            }
            for a in 0..planted.len() {
                for b in a + 1..planted.len() {
                    if planted[a] == planted[b] && biases[l][a].to_bits() == biases[l][b].to_bits() {
                        prop_assert_eq!(found.class_of(a), found.class_of(b), "layer {}", l + 1);
                    }
                }
            }
        }
        let rows = problem.input.nrows();
        for f64_run in [false, true] {
            let (original, small): (Vec<f64>, Vec<f64>) = if f64_run {
                let o = reference::<f64>(&problem.layers, &problem.input, &biases, problem.upper);
                let s = reference::<f64>(c.layers(), &problem.input, kept, problem.upper);
                prop_assert_eq!(&o.categories, &s.categories);
                let s: Vec<f64> = s.output.unwrap().iter().copied().collect();
                (o.output.unwrap().iter().copied().collect(), c.expand(&s, rows).unwrap())
            } else {
                let o = reference::<f32>(&problem.layers, &problem.input, &biases, problem.upper);
                let s = reference::<f32>(c.layers(), &problem.input, kept, problem.upper);
                prop_assert_eq!(&o.categories, &s.categories);
                let s: Vec<f32> = s.output.unwrap().iter().copied().collect();
                let o: Vec<f32> = o.output.unwrap().iter().copied().collect();
                (
                    o.iter().map(|&v| f64::from(v)).collect(),
                    c.expand(&s, rows).unwrap().iter().map(|&v| f64::from(v)).collect(),
                )
            };
            prop_assert_eq!(original.len(), small.len());
            for (k, (a, b)) in original.iter().zip(&small).enumerate() {
                prop_assert!(a == b, "value {}: {} against {} (f64: {})", k, b, a, f64_run);
            }
        }
    }

    /// A layer proved to preserve with per-neuron biases gives the bound in every simulated
    /// order, each column with its own bias, and under the reference. Most columns get a
    /// bias that leaves room to spare, some one that puts them just above, at, or below the
    /// bound: one such column breaks the proof of a layer whose other columns are strong.
    #[test]
    fn per_neuron_proofs_hold_in_every_order(seed in any::<u64>(), u in 0usize..4) {
        let mut rng = StdRng::seed_from_u64(seed);
        let upper = [0.25f32, 1.0, 4.0, 32.0][u];
        let rows = rng.random_range(1..=40);
        let cols = rng.random_range(1..=12);
        let mut t = Vec::new();
        for r in 0..rows as u32 {
            for c in 0..cols as u32 {
                if rng.random_bool(0.7) {
                    let w = rng.random_range(0.05f32..1.0) * 4.0 / rows as f32;
                    let w = if rng.random_bool(0.2) { -w / 4.0 } else { w };
                    t.push((r, c, w));
                }
            }
        }
        let layer = Csr::from_triplets(rows, cols, &t).unwrap();
        let columns = layer.transpose();
        let biases: Vec<f32> = (0..cols)
            .map(|j| {
                let sum: f64 = columns.row(j).1.iter().map(|&w| f64::from(upper) * f64::from(w)).sum();
                let reach = -(sum - f64::from(upper));
                match rng.random_range(0..10) {
                    // Room to spare (a bias of either sign), or 0 (trained networks).
                    0..=5 => (reach + rng.random_range(0.05..0.5) * f64::from(upper)) as f32,
                    6 => 0.0,
                    // Just above the bound's need (proved from 1e-5 on), at it, or below.
                    _ => {
                        let offset = [0.0, 1e-7, 1e-5, 1e-3, -1e-3][rng.random_range(0..5)];
                        (reach + offset * sum.abs().max(f64::from(upper))) as f32
                    }
                }
            })
            .collect();
        prop_assume!(biases.iter().all(|b| b.is_finite()));
        let proof = prove_layer_per_neuron(&layer, &biases, upper).unwrap();
        let mut all_reach = true;
        for (j, &bias) in biases.iter().enumerate() {
            let weights = columns.row(j).1;
            if weights.is_empty() {
                all_reach = false;
                continue;
            }
            let least = least_evaluation(weights, bias, upper, &mut rng);
            if proof.preserves {
                prop_assert!(least >= upper,
                    "proved, but column {} gives {} < {} in some order", j, least, upper);
            }
            all_reach &= least >= upper;
        }
        if !all_reach {
            prop_assert!(!proof.preserves);
        }
        if proof.preserves {
            let out = reference::<f32>(std::slice::from_ref(&layer), &all_at(rows, upper),
                std::slice::from_ref(&biases), upper);
            prop_assert!(out.output.unwrap().iter().all(|&v| v == upper));
        }
        // A column's own margin decides: raising every other bias changes nothing when the
        // weakest column falls short.
        if let (true, Some(weak)) = (proof.min_margin < 0.0, proof.weakest_column) {
            let mut stronger = vec![100.0 * upper; cols];
            stronger[weak as usize] = biases[weak as usize];
            let again = prove_layer_per_neuron(&layer, &stronger, upper).unwrap();
            prop_assert!(!again.preserves);
            prop_assert_eq!(again.weakest_column, Some(weak));
        }
    }

    /// Rows the per-neuron analysis calls finished after k layers end as it says under the
    /// official rule with those biases, on the original and the compressed network.
    #[test]
    fn finished_rows_end_as_claimed_with_per_neuron_biases(seed in any::<u64>()) {
        let mut rng = StdRng::seed_from_u64(seed);
        let depth = rng.random_range(1..=6);
        let width = rng.random_range(2..=16);
        let upper = [1.0f32, 2.0, 32.0][rng.random_range(0..3)];
        let mut layers = Vec::new();
        let mut biases = Vec::new();
        for _ in 0..depth {
            let classes = rng.random_range(1..=width);
            let (layer, class_of) =
                common::planted_layer(&mut rng, width, width, classes, 0.9, Values::PositiveReal);
            let scale = if rng.random_bool(0.8) { 40.0 } else { 1.0 };
            let t: Vec<(u32, u32, f32)> = layer.triplets().map(|(r, c, w)| (r, c, w * scale)).collect();
            layers.push(Csr::from_triplets(width, width, &t).unwrap());
            // Mostly small biases ≤ 0, shared per planted class; now and then one column
            // with a bias that sinks it (breaking the layer's proof).
            let per_class: Vec<f32> = (0..classes).map(|_| -rng.random_range(0.0f32..0.5)).collect();
            let mut b: Vec<f32> = class_of.iter().map(|&c| per_class[c as usize]).collect();
            if rng.random_bool(0.3) {
                let j = rng.random_range(0..width);
                b[j] = -1000.0 * upper;
            }
            biases.push(b);
        }
        let random = common::random_input(&mut rng, 6, width, 0.6, Values::PositiveReal);
        let mut t: Vec<(u32, u32, f32)> = random.triplets().collect();
        for c in 0..width as u32 {
            t.push((6, c, upper));
            t.push((7, c, upper));
        }
        let input = Csr::from_triplets(9, width, &t).unwrap();
        let c = compress_with_biases(&layers, &biases).unwrap();
        for (net, net_biases) in [(&layers[..], &biases[..]), (c.layers(), c.biases().unwrap())] {
            let retirement = Retirement::analyze_per_neuron(net, net_biases, upper).unwrap();
            let last = reference::<f32>(net, &input, net_biases, upper);
            let final_values = last.output.unwrap();
            for done in 0..=net.len() {
                // The rows after `done` layers (the input itself before the first).
                let values = if done == 0 {
                    input.to_dense()
                } else {
                    reference::<f32>(&net[..done], &input, &net_biases[..done], upper)
                        .output.unwrap()
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
                        }
                        RowState::Zero => {
                            prop_assert!(out.iter().all(|&v| v == 0.0));
                            prop_assert!(!category);
                        }
                        RowState::Active => {}
                    }
                }
            }
            // A sunk column (bias −1000·U) never preserves.
            for (l, b) in net_biases.iter().enumerate() {
                if b.iter().any(|&v| v <= -1000.0 * upper) {
                    prop_assert!(!retirement.preserves(l), "layer {}", l + 1);
                }
            }
        }
    }
}
