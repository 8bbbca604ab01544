//! The reference against a dense ndarray implementation of the official semantics, on
//! random networks, and its statistics against statistics counted on the dense result.

use ndarray::{Array2, Zip};
use proptest::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_reference::{Activation, Element, Options, categories_of, infer};

/// A random problem: per-layer stored weights (row-major, `None` = not stored), the input
/// (`None` = not stored), bias, bound and segment lengths.
#[derive(Debug, Clone)]
struct Problem {
    widths: Vec<usize>,
    layers: Vec<Vec<Option<f32>>>,
    rows: usize,
    input: Vec<Option<f32>>,
    bias: f32,
    upper_bound: f32,
    segment_lengths: Vec<usize>,
}

impl Problem {
    fn layer_csrs(&self) -> Vec<Csr> {
        self.layers
            .iter()
            .enumerate()
            .map(|(l, w)| to_csr(self.widths[l], self.widths[l + 1], w))
            .collect()
    }

    fn input_csr(&self) -> Csr {
        to_csr(self.rows, self.widths[0], &self.input)
    }

    fn activation(&self) -> Activation {
        Activation {
            bias: self.bias,
            upper_bound: self.upper_bound,
        }
    }
}

fn to_csr(nrows: usize, ncols: usize, cells: &[Option<f32>]) -> Csr {
    let triplets: Vec<(u32, u32, f32)> = cells
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| ((i / ncols) as u32, (i % ncols) as u32, v)))
        .collect();
    Csr::from_triplets(nrows, ncols, &triplets).unwrap()
}

fn dense(nrows: usize, ncols: usize, cells: &[Option<f32>]) -> (Array2<f64>, Array2<f64>) {
    let values = cells.iter().map(|v| f64::from(v.unwrap_or(0.0))).collect();
    let pattern = cells
        .iter()
        .map(|v| if v.is_some() { 1.0 } else { 0.0 })
        .collect();
    (
        Array2::from_shape_vec((nrows, ncols), values).unwrap(),
        Array2::from_shape_vec((nrows, ncols), pattern).unwrap(),
    )
}

/// The official semantics, densely: Z = Y·W, bias where (Y ≠ 0)·pattern(W) > 0, clip.
/// Returns the activations after every layer.
fn dense_inference(p: &Problem) -> Vec<Array2<f64>> {
    let (mut y, _) = dense(p.rows, p.widths[0], &p.input);
    let (bias, bound) = (f64::from(p.bias), f64::from(p.upper_bound));
    let mut outputs = Vec::new();
    for (l, cells) in p.layers.iter().enumerate() {
        let (w, pattern) = dense(p.widths[l], p.widths[l + 1], cells);
        let z = y.dot(&w);
        let structural = y.mapv(|v| if v != 0.0 { 1.0 } else { 0.0 }).dot(&pattern);
        y = Zip::from(&z).and(&structural).map_collect(|&z, &s| {
            let v = if s > 0.0 { z + bias } else { z };
            v.clamp(0.0, bound)
        });
        outputs.push(y.clone());
    }
    outputs
}

fn value(dyadic: bool) -> BoxedStrategy<f32> {
    if dyadic {
        (-4i32..=4).prop_map(|k| k as f32 / 2.0).boxed()
    } else {
        (-1.0f32..=1.0).boxed()
    }
}

/// Random shapes (N = 1..=70, chained; square when `square`), sparsity, weights, bias.
/// Dyadic problems (weights k/2, input k/2, bias k/4 of either sign, bound k/2) are
/// computed exactly in f32 and f64; the others have weights and inputs in [-1, 1],
/// a negative bias and any bound.
fn problem(dyadic: bool) -> impl Strategy<Value = Problem> {
    (1usize..=6, 1usize..=40, any::<bool>())
        .prop_flat_map(|(layers, rows, square)| {
            let widths = if square {
                (1usize..=70).prop_map(move |n| vec![n; layers + 1]).boxed()
            } else {
                prop::collection::vec(1usize..=70, layers + 1).boxed()
            };
            (widths, Just(rows))
        })
        .prop_flat_map(move |(widths, rows)| {
            let layers: Vec<_> = widths
                .windows(2)
                .map(|pair| {
                    let cells = pair[0] * pair[1];
                    (0.0f64..=1.0).prop_flat_map(move |density| {
                        prop::collection::vec(prop::option::weighted(density, value(dyadic)), cells)
                    })
                })
                .collect();
            let input_cells = rows * widths[0];
            let input = (0.0f64..=1.0).prop_flat_map(move |density| {
                prop::collection::vec(prop::option::weighted(density, value(dyadic)), input_cells)
            });
            let (bias, bound) = if dyadic {
                (
                    (-8i32..=4).prop_map(|k| k as f32 / 4.0).boxed(),
                    (1i32..=64).prop_map(|k| k as f32 / 2.0).boxed(),
                )
            } else {
                ((-1.0f32..-1e-3).boxed(), (0.1f32..=32.0).boxed())
            };
            let lengths = prop::collection::vec(1usize..=80, 1..=3);
            (
                Just(widths),
                layers,
                Just(rows),
                input,
                bias,
                bound,
                lengths,
            )
        })
        .prop_map(
            |(widths, layers, rows, input, bias, upper_bound, segment_lengths)| Problem {
                widths,
                layers,
                rows,
                input,
                bias,
                upper_bound,
                segment_lengths,
            },
        )
}

fn run<T: Element>(p: &Problem) -> spdnn_reference::Inference<T> {
    let options = Options {
        keep_output: true,
        collect_stats: true,
        segment_lengths: p.segment_lengths.clone(),
    };
    infer::<T>(&p.layer_csrs(), &p.input_csr(), p.activation(), &options).unwrap()
}

fn as_f64<T: Element>(a: &Array2<T>) -> Array2<f64> {
    a.mapv(Element::to_f64)
}

/// Largest `|a - b| / max(|b|, 1)`.
fn max_relative_error(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
    Zip::from(a)
        .and(b)
        .fold(0.0f64, |m, &a, &b| m.max((a - b).abs() / b.abs().max(1.0)))
}

/// Checks `stats` (one layer of the reference) against counts on the dense activations.
fn check_stats(
    stats: &spdnn_reference::LayerStats,
    layer: usize,
    y: &Array2<f64>,
    p: &Problem,
) -> Result<(), TestCaseError> {
    let bound = f64::from(p.upper_bound);
    prop_assert_eq!(stats.layer, layer);
    prop_assert_eq!(stats.rows, y.nrows());
    prop_assert_eq!(stats.neurons, y.ncols());
    let active = y
        .rows()
        .into_iter()
        .filter(|r| r.iter().any(|&v| v != 0.0))
        .count();
    prop_assert_eq!(stats.active_rows, active);
    prop_assert_eq!(
        stats.nonzeros,
        y.iter().filter(|&&v| v != 0.0).count() as u64
    );
    prop_assert_eq!(
        stats.at_upper_bound,
        y.iter().filter(|&&v| v >= bound).count() as u64
    );
    prop_assert_eq!(stats.segments.len(), p.segment_lengths.len());
    for (seg, &length) in stats.segments.iter().zip(&p.segment_lengths) {
        let (mut total, mut upper, mut zero) = (0u64, 0u64, 0u64);
        for row in y.rows() {
            let row = row.to_vec();
            for chunk in row.chunks(length) {
                total += 1;
                upper += u64::from(chunk.iter().all(|&v| v >= bound));
                zero += u64::from(chunk.iter().all(|&v| v == 0.0));
            }
        }
        prop_assert_eq!(seg.length, length);
        prop_assert_eq!(
            (seg.total, seg.all_upper_bound, seg.all_zero),
            (total, upper, zero)
        );
    }
    Ok(())
}

/// 128 cases, or `PROPTEST_CASES` when set (for a longer search).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(128)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Dyadic values: every sum is exact, so both precisions equal the dense result
    /// exactly, including the positive-bias cases where the structural rule shows.
    #[test]
    fn dyadic_networks_match_the_dense_result_exactly(p in problem(true)) {
        let expected = dense_inference(&p);
        let last = expected.last().unwrap();
        let r64 = run::<f64>(&p);
        let r32 = run::<f32>(&p);
        prop_assert_eq!(r64.output.as_ref().unwrap(), last);
        prop_assert_eq!(&as_f64(r32.output.as_ref().unwrap()), last);
        let categories = categories_of(last.view());
        prop_assert_eq!(&r64.categories, &categories);
        prop_assert_eq!(&r32.categories, &categories);
        prop_assert_eq!(r64.stats.len(), p.layers.len());
        for (l, y) in expected.iter().enumerate() {
            check_stats(&r64.stats[l], l + 1, y, &p)?;
            check_stats(&r32.stats[l], l + 1, y, &p)?;
        }
    }

    /// A row's result does not depend on the rows it is computed with (grouping, kernel
    /// choice and task cuts keep the order of every sum): each row alone gives the same
    /// bits as the whole batch.
    #[test]
    fn each_row_alone_gives_the_same_bits(p in problem(false)) {
        let layers = p.layer_csrs();
        let input = p.input_csr();
        let options = Options { keep_output: true, collect_stats: false, segment_lengths: vec![] };
        let whole = infer::<f32>(&layers, &input, p.activation(), &options).unwrap().output.unwrap();
        for row in 0..p.rows {
            let single = to_csr(1, p.widths[0], &p.input[row * p.widths[0]..(row + 1) * p.widths[0]]);
            let alone = infer::<f32>(&layers, &single, p.activation(), &options).unwrap().output.unwrap();
            let same = alone.row(0).iter().zip(whole.row(row)).all(|(a, b)| a.to_bits() == b.to_bits());
            prop_assert!(same, "row {}: {:?} vs {:?}", row, alone.row(0), whole.row(row));
        }
    }

    /// Real-valued weights of both signs, negative bias: f64 within 1e-9 and f32 within
    /// 1e-4 of the dense f64 result (relative, with a floor of 1), f64 categories equal.
    #[test]
    fn real_networks_match_the_dense_result(p in problem(false)) {
        let expected = dense_inference(&p);
        let last = expected.last().unwrap();
        let r64 = run::<f64>(&p);
        let r32 = run::<f32>(&p);
        let e64 = max_relative_error(r64.output.as_ref().unwrap(), last);
        let e32 = max_relative_error(&as_f64(r32.output.as_ref().unwrap()), last);
        prop_assert!(e64 <= 1e-9, "f64 relative error {e64}");
        prop_assert!(e32 <= 1e-4, "f32 relative error {e32}");
        prop_assert_eq!(&r64.categories, &categories_of(last.view()));
    }
}

#[test]
fn input_stats_match_dense_counts() {
    let cells: Vec<Option<f32>> = (0..7 * 13)
        .map(|i| (i % 3 != 0).then_some(if i % 5 == 0 { 2.0 } else { 1.0 }))
        .collect();
    let p = Problem {
        widths: vec![13],
        layers: vec![],
        rows: 7,
        input: cells,
        bias: -0.5,
        upper_bound: 2.0,
        segment_lengths: vec![1, 4, 13, 20],
    };
    let input = p.input_csr();
    let stats = spdnn_reference::input_stats(&input, 2.0, &p.segment_lengths);
    let y = input.to_dense().mapv(f64::from);
    check_stats(&stats, 0, &y, &p).unwrap();
}

/// Thousands of rows, so that the work is cut into many tasks whose pieces then merge:
/// still exactly the dense result, with any number of threads.
#[test]
fn many_rows_over_many_tasks_match_the_dense_result() {
    let (n, rows, layers) = (48usize, 3000usize, 4usize);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut cell = |density: u64| -> Option<f32> {
        let r = next();
        (r % 100 < density).then(|| ((r >> 32) % 9) as f32 / 2.0 - 2.0)
    };
    let p = Problem {
        widths: vec![n; layers + 1],
        layers: (0..layers)
            .map(|_| (0..n * n).map(|_| cell(30)).collect())
            .collect(),
        rows,
        // Densities from 2% to 98% over the rows, so both grouped kernels run.
        input: (0..rows * n)
            .map(|i| cell(2 + (i / n % 97) as u64))
            .collect(),
        bias: -0.5,
        upper_bound: 8.0,
        segment_lengths: vec![5, 16],
    };
    let expected = dense_inference(&p);
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let result = pool.install(|| run::<f32>(&p));
        assert_eq!(
            &as_f64(result.output.as_ref().unwrap()),
            expected.last().unwrap()
        );
        assert_eq!(
            result.categories,
            categories_of(expected.last().unwrap().view())
        );
        assert!(!result.categories.is_empty() && result.categories.len() < rows);
        for (l, y) in expected.iter().enumerate() {
            check_stats(&result.stats[l], l + 1, y, &p).unwrap();
        }
    }
}
