//! Per-neuron biases (trained networks) against a dense f64 evaluation of the documented
//! rule: `Y' = clip(Z + b_k·[Z_k structurally nonzero])`, for biases of both signs, and the
//! predictions read off the last layer.

use ndarray::{Array2, Zip, array};
use proptest::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_reference::{
    Activation, Inference, Options, categories_of, correct, infer, infer_with_biases, predictions,
};

fn to_csr(nrows: usize, ncols: usize, cells: &[Option<f32>]) -> Csr {
    let triplets: Vec<(u32, u32, f32)> = cells
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| ((i / ncols) as u32, (i % ncols) as u32, v)))
        .collect();
    Csr::from_triplets(nrows, ncols, &triplets).unwrap()
}

/// The documented rule, densely in f64: bias `b_k` where `(Y ≠ 0)·pattern(W)` is positive.
fn dense(layers: &[Csr], input: &Csr, biases: &[Vec<f32>], upper: f32) -> Array2<f64> {
    let to_dense = |m: &Csr| {
        let mut values = Array2::zeros((m.nrows(), m.ncols()));
        let mut pattern = Array2::zeros((m.nrows(), m.ncols()));
        for (r, c, v) in m.triplets() {
            values[[r as usize, c as usize]] = f64::from(v);
            pattern[[r as usize, c as usize]] = 1.0;
        }
        (values, pattern)
    };
    let (mut y, _) = to_dense(input);
    for (w, b) in layers.iter().zip(biases) {
        let (w, pattern) = to_dense(w);
        let z = y.dot(&w);
        let structural = y.mapv(|v| f64::from(u8::from(v != 0.0))).dot(&pattern);
        let mut next = Array2::zeros(z.raw_dim());
        Zip::indexed(&mut next)
            .and(&z)
            .and(&structural)
            .for_each(|(_, k), out, &z, &s| {
                let v = if s > 0.0 { z + f64::from(b[k]) } else { z };
                *out = v.clamp(0.0, f64::from(upper));
            });
        y = next;
    }
    y
}

/// Dyadic values (k/4) so that f32 and f64 sums are exact and comparable bit for bit.
fn dyadic() -> BoxedStrategy<f32> {
    (-8i32..=8).prop_map(|k| k as f32 / 4.0).boxed()
}

type Case = (Vec<Csr>, Csr, Vec<Vec<f32>>, f32);

/// Rectangular chains of 1–5 layers, widths 1–40, random sparsity, per-neuron dyadic
/// biases of both signs (and zeros), a dyadic bound.
fn case() -> impl Strategy<Value = Case> {
    (1usize..=5, 1usize..=24)
        .prop_flat_map(|(layers, rows)| {
            (prop::collection::vec(1usize..=40, layers + 1), Just(rows))
        })
        .prop_flat_map(|(widths, rows)| {
            let layers: Vec<_> = widths
                .windows(2)
                .map(|p| {
                    let (n_in, n_out) = (p[0], p[1]);
                    (0.0f64..=1.0).prop_flat_map(move |density| {
                        prop::collection::vec(
                            prop::option::weighted(density, dyadic()),
                            n_in * n_out,
                        )
                        .prop_map(move |cells| to_csr(n_in, n_out, &cells))
                    })
                })
                .collect();
            let biases: Vec<_> = widths[1..]
                .iter()
                .map(|&n| prop::collection::vec(dyadic(), n))
                .collect();
            let n0 = widths[0];
            let input = (0.0f64..=1.0).prop_flat_map(move |density| {
                prop::collection::vec(prop::option::weighted(density, dyadic()), rows * n0)
                    .prop_map(move |cells| to_csr(rows, n0, &cells))
            });
            (
                layers,
                input,
                biases,
                (1i32..=16).prop_map(|k| k as f32 / 2.0),
            )
        })
}

fn no_stats() -> Options {
    Options {
        keep_output: true,
        collect_stats: false,
        ..Options::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200)
    ))]

    #[test]
    fn per_neuron_biases_follow_the_structural_rule((layers, input, biases, upper) in case()) {
        let expected = dense(&layers, &input, &biases, upper);
        let f64_run: Inference<f64> =
            infer_with_biases(&layers, &input, &biases, upper, &no_stats()).unwrap();
        let f32_run: Inference<f32> =
            infer_with_biases(&layers, &input, &biases, upper, &no_stats()).unwrap();
        let out64 = f64_run.output.unwrap();
        prop_assert_eq!(&out64, &expected);
        prop_assert_eq!(f32_run.output.unwrap().mapv(f64::from), expected.clone());
        prop_assert_eq!(&f64_run.categories, &categories_of(expected.view()));
        prop_assert_eq!(&f32_run.categories, &f64_run.categories);
        prop_assert_eq!(predictions(out64.view()), predictions(expected.view()));
    }

    /// One bias for all neurons gives what the per-neuron path gives with that bias
    /// repeated (either sign).
    #[test]
    fn one_bias_equals_the_same_bias_per_neuron(
        (layers, input, _, upper) in case(),
        k in -8i32..=8,
    ) {
        let bias = k as f32 / 4.0;
        let repeated: Vec<Vec<f32>> = layers.iter().map(|w| vec![bias; w.ncols()]).collect();
        let one: Inference<f32> =
            infer(&layers, &input, Activation { bias, upper_bound: upper }, &no_stats()).unwrap();
        let each: Inference<f32> =
            infer_with_biases(&layers, &input, &repeated, upper, &no_stats()).unwrap();
        prop_assert_eq!(one.output, each.output);
        prop_assert_eq!(one.categories, each.categories);
    }
}

#[test]
fn a_positive_bias_does_not_lift_an_output_no_input_reaches() {
    // Input (1 row) sets neuron 0 only. Output 0 is reached (W00), output 1 is reached
    // only from neuron 1 (zero in the input): structurally zero, so its bias +0.5 is not
    // added (plain ReLU(Y·W + b) would give 0.5). Output 2 is reached through a stored
    // zero weight: structurally nonzero, so it gets its bias.
    let input = Csr::from_triplets(1, 2, &[(0, 0, 1.0)]).unwrap();
    let w = Csr::from_triplets(2, 3, &[(0, 0, 2.0), (1, 1, 1.0), (0, 2, 0.0)]).unwrap();
    let biases = vec![vec![-0.5, 0.5, 0.25]];
    let out: Inference<f32> = infer_with_biases(&[w], &input, &biases, 1.0, &no_stats()).unwrap();
    assert_eq!(out.output.unwrap(), array![[1.0f32, 0.0, 0.25]]);
    assert_eq!(out.categories, vec![1]);
}

#[test]
fn biases_that_do_not_fit_are_errors() {
    let input = Csr::from_triplets(1, 2, &[(0, 0, 1.0)]).unwrap();
    let w = Csr::from_triplets(2, 3, &[(0, 0, 2.0)]).unwrap();
    let layers = [w];
    let run = |b: Vec<Vec<f32>>| {
        infer_with_biases::<f32>(&layers, &input, &b, 1.0, &no_stats())
            .unwrap_err()
            .to_string()
    };
    assert!(run(vec![]).contains("0 bias vectors for 1 layers"));
    assert!(run(vec![vec![0.0; 2]]).contains("layer 1 has 3 outputs but 2 biases"));
    assert!(run(vec![vec![0.0, f32::NAN, 0.0]]).contains("neuron 2 of layer 1"));
}

#[test]
fn predictions_take_the_first_largest_score_and_nothing_from_a_zero_row() {
    let scores = array![
        [0.0f32, 0.5, 0.25],
        [1.0, 0.0, 1.0],
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 0.125]
    ];
    let p = predictions(scores.view());
    assert_eq!(p, vec![Some(1), Some(0), None, Some(2)]);
    assert_eq!(correct(&p, &[1, 2, 0, 2]), 2);
}
