//! Shared by the integration tests: random networks with planted classes, the reference on
//! the original and on the compressed network, and the comparisons.

#![allow(dead_code)]

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use spdnn_compress::{Compressed, compress};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_reference::{Activation, Element, Inference, Options, infer};

/// How weights, inputs and the bias are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Values {
    /// Weights `k/4` (`0 < |k| ≤ 8`), inputs `k/2`, bias `−k/4`, at most 4 layers: every
    /// partial sum is exact in f32, so compressed and original agree bit for bit.
    Dyadic,
    /// Weights in `[0.001, 0.5]`, inputs in `[0.01, 1]`, bias in `[−0.5, −0.01]` (the GPU
    /// tests' general problems).
    PositiveReal,
    /// Weights of both signs, `0.01 ≤ |w| ≤ 0.5`; inputs and bias as above.
    MixedReal,
}

/// A random problem.
#[derive(Debug, Clone)]
pub struct Problem {
    pub layers: Vec<Csr>,
    pub input: Csr,
    pub bias: f32,
    pub upper: f32,
    /// Per layer, the planted class of each output (outputs of one planted class have
    /// identical columns).
    pub planted: Vec<Vec<u32>>,
}

impl Problem {
    pub fn activation(&self) -> Activation {
        Activation::new(self.bias, self.upper).expect("valid activation")
    }
}

fn weight(rng: &mut StdRng, values: Values) -> f32 {
    match values {
        Values::Dyadic => {
            let k = rng.random_range(1..=8) as f32 / 4.0;
            if rng.random_bool(0.5) { -k } else { k }
        }
        Values::PositiveReal => rng.random_range(0.001f32..=0.5),
        Values::MixedReal => {
            let w = rng.random_range(0.01f32..=0.5);
            if rng.random_bool(0.5) { -w } else { w }
        }
    }
}

fn input_value(rng: &mut StdRng, values: Values) -> f32 {
    match values {
        Values::Dyadic => rng.random_range(1..=8) as f32 / 2.0,
        _ => rng.random_range(0.01f32..=1.0),
    }
}

/// A layer `rows × cols` whose outputs fall into `classes` planted classes (random sizes,
/// some possibly empty), each with a random input set of density `density` and random
/// weights shared by its members. Returns the layer and each output's planted class.
pub fn planted_layer(
    rng: &mut StdRng,
    rows: usize,
    cols: usize,
    classes: usize,
    density: f64,
    values: Values,
) -> (Csr, Vec<u32>) {
    let class_of: Vec<u32> = (0..cols)
        .map(|_| rng.random_range(0..classes) as u32)
        .collect();
    let columns: Vec<Vec<(u32, f32)>> = (0..classes)
        .map(|_| {
            let mut column = Vec::new();
            for r in 0..rows as u32 {
                if rng.random_bool(density) {
                    column.push((r, weight(rng, values)));
                }
            }
            column
        })
        .collect();
    let mut triplets = Vec::new();
    for (j, &c) in class_of.iter().enumerate() {
        for &(r, w) in &columns[c as usize] {
            triplets.push((r, j as u32, w));
        }
    }
    (
        Csr::from_triplets(rows, cols, &triplets).expect("valid layer"),
        class_of,
    )
}

/// A random problem with planted classes in every layer, from `seed`.
pub fn planted_problem(seed: u64, values: Values) -> Problem {
    let mut rng = StdRng::seed_from_u64(seed);
    let max_layers = if values == Values::Dyadic { 4 } else { 5 };
    let depth = rng.random_range(1..=max_layers);
    let widths: Vec<usize> = (0..=depth).map(|_| rng.random_range(1..=24)).collect();
    let mut layers = Vec::new();
    let mut planted = Vec::new();
    for l in 0..depth {
        let classes = rng.random_range(1..=widths[l + 1]);
        let density = rng.random_range(0.1..0.6);
        let (layer, class_of) =
            planted_layer(&mut rng, widths[l], widths[l + 1], classes, density, values);
        layers.push(layer);
        planted.push(class_of);
    }
    let rows = rng.random_range(1..=12);
    let input_density = rng.random_range(0.2..0.9);
    let input = random_input(&mut rng, rows, widths[0], input_density, values);
    let (bias, upper) = activation(&mut rng, values);
    Problem {
        layers,
        input,
        bias,
        upper,
        planted,
    }
}

/// A random problem whose layers have no two identical columns: column `j` stores the
/// value `2 + j/64` at row `j mod rows`, which no other column stores there.
pub fn classless_problem(seed: u64, values: Values) -> Problem {
    let mut rng = StdRng::seed_from_u64(seed);
    let depth = rng.random_range(1..=4);
    let widths: Vec<usize> = (0..=depth).map(|_| rng.random_range(1..=24)).collect();
    let mut layers = Vec::new();
    for l in 0..depth {
        let (rows, cols) = (widths[l], widths[l + 1]);
        let density = rng.random_range(0.05..0.5);
        let mut triplets = Vec::new();
        for j in 0..cols {
            let marker = j % rows;
            triplets.push((marker as u32, j as u32, 2.0 + j as f32 / 64.0));
            for r in (0..rows).filter(|&r| r != marker) {
                if rng.random_bool(density) {
                    triplets.push((r as u32, j as u32, weight(&mut rng, values)));
                }
            }
        }
        layers.push(Csr::from_triplets(rows, cols, &triplets).expect("valid layer"));
    }
    let rows = rng.random_range(1..=8);
    let input = random_input(&mut rng, rows, widths[0], 0.5, values);
    let (bias, upper) = activation(&mut rng, values);
    let planted = layers
        .iter()
        .map(|l| (0..l.ncols() as u32).collect())
        .collect();
    Problem {
        layers,
        input,
        bias,
        upper,
        planted,
    }
}

pub fn random_input(
    rng: &mut StdRng,
    rows: usize,
    cols: usize,
    density: f64,
    values: Values,
) -> Csr {
    let mut triplets = Vec::new();
    for r in 0..rows as u32 {
        for c in 0..cols as u32 {
            if rng.random_bool(density) {
                triplets.push((r, c, input_value(rng, values)));
            }
        }
    }
    Csr::from_triplets(rows, cols, &triplets).expect("valid input")
}

fn activation(rng: &mut StdRng, values: Values) -> (f32, f32) {
    match values {
        Values::Dyadic => (
            -(rng.random_range(1..=8) as f32) / 4.0,
            [32.0, 4.0, 1.5][rng.random_range(0..3)],
        ),
        _ => (
            rng.random_range(-0.5f32..=-0.01),
            [32.0, 2.0][rng.random_range(0..2)],
        ),
    }
}

/// The reference over `layers`, with its final activations.
pub fn reference<T: Element>(layers: &[Csr], input: &Csr, activation: Activation) -> Inference<T> {
    let options = Options {
        keep_output: true,
        collect_stats: false,
        ..Options::default()
    };
    infer::<T>(layers, input, activation, &options).expect("reference runs")
}

/// The original and the compressed network's results: categories, and final values
/// (the compressed ones expanded to the original width).
pub struct Both<T> {
    pub original: Inference<T>,
    pub compressed: Inference<T>,
    pub expanded: Vec<T>,
    pub original_values: Vec<T>,
    pub width: usize,
}

pub fn run_both<T: Element>(problem: &Problem, compressed: &Compressed) -> Both<T> {
    let original = reference::<T>(&problem.layers, &problem.input, problem.activation());
    let result = reference::<T>(compressed.layers(), &problem.input, problem.activation());
    let rows = problem.input.nrows();
    let values: Vec<T> = result
        .output
        .as_ref()
        .expect("kept output")
        .iter()
        .copied()
        .collect();
    let expanded = compressed.expand(&values, rows).expect("expands");
    let original_values = original
        .output
        .as_ref()
        .expect("kept output")
        .iter()
        .copied()
        .collect();
    Both {
        width: problem.layers.last().map_or(0, SparseMatrix::ncols),
        original,
        compressed: result,
        expanded,
        original_values,
    }
}

/// The first value differing by more than `relative·max(|expected|, 1)`, described.
pub fn first_difference<T: Element>(
    got: &[T],
    expected: &[T],
    width: usize,
    relative: f64,
) -> Option<String> {
    if got.len() != expected.len() {
        return Some(format!("{} values, expected {}", got.len(), expected.len()));
    }
    got.iter()
        .zip(expected)
        .enumerate()
        .find_map(|(k, (&g, &e))| {
            let (g, e) = (g.to_f64(), e.to_f64());
            ((g - e).abs() > relative * e.abs().max(1.0)).then(|| {
                format!(
                    "value at row {}, column {} is {g}, expected {e}",
                    k / width.max(1),
                    k % width.max(1)
                )
            })
        })
}

/// The largest `|got − expected|`.
pub fn max_difference<T: Element>(got: &[T], expected: &[T]) -> f64 {
    got.iter()
        .zip(expected)
        .map(|(&g, &e)| (g.to_f64() - e.to_f64()).abs())
        .fold(0.0, f64::max)
}

/// Compresses, or fails the test with the error.
pub fn compressed(layers: &[Csr]) -> Compressed {
    compress(layers).expect("compresses")
}

/// The least f32 value of `bias + Σ U·w_i` over many evaluation orders: forward, backward,
/// shuffled, pairwise, the bias first or last, products rounded or fused (the orders a GPU
/// method may use; `rng` shuffles).
pub fn least_evaluation(weights: &[f32], bias: f32, upper: f32, rng: &mut StdRng) -> f32 {
    let products: Vec<f32> = weights.iter().map(|&w| upper * w).collect();
    let mut results = Vec::new();
    let chain = |order: &[usize], bias_first: bool, fused: bool| {
        let mut acc = if bias_first { bias } else { 0.0 };
        for &i in order {
            acc = if fused {
                upper.mul_add(weights[i], acc)
            } else {
                acc + products[i]
            };
        }
        if bias_first { acc } else { acc + bias }
    };
    let mut order: Vec<usize> = (0..weights.len()).collect();
    for round in 0..8 {
        if round == 1 {
            order.reverse();
        } else if round > 1 {
            order.shuffle(rng);
        }
        for bias_first in [false, true] {
            for fused in [false, true] {
                results.push(chain(&order, bias_first, fused));
            }
        }
        // Pairwise (tree) reduction of the products in this order, bias last.
        let mut level: Vec<f32> = order.iter().map(|&i| products[i]).collect();
        while level.len() > 1 {
            level = level
                .chunks(2)
                .map(|p| if p.len() == 2 { p[0] + p[1] } else { p[0] })
                .collect();
        }
        results.push(level.first().copied().unwrap_or(0.0) + bias);
    }
    results.into_iter().fold(f32::INFINITY, f32::min)
}

/// A row of `width` values all at `upper`, as a one-row input.
pub fn all_at(width: usize, upper: f32) -> Csr {
    let t: Vec<(u32, u32, f32)> = (0..width as u32).map(|c| (0, c, upper)).collect();
    Csr::from_triplets(1, width, &t).unwrap()
}
