//! Networks with a bias per output neuron (trained networks): random problems with dyadic
//! per-neuron biases, a chain shaped like the SNICIT paper's MNIST networks (dense first
//! and last layers), and the trained networks A–C of `data/nets/` over the MNIST test
//! images. A method must give the reference's categories and predictions.

use std::path::PathBuf;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spdnn_cuda::Gpu;
use spdnn_cuda::rows::GpuInference;
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_reference::{Inference, Options};
use spdnn_sdgc::paths;

use crate::{Tolerance, compare_values, gpu, run_proptest, sized, sparse_matrix};

/// A problem with a bias per output neuron of every layer.
#[derive(Debug, Clone)]
pub struct BiasedProblem {
    /// The layers (`N_{l-1} × N_l`).
    pub layers: Vec<Csr>,
    /// The input rows.
    pub input: Csr,
    /// `biases[l][k]`: the bias of output `k` of layer `l`.
    pub biases: Vec<Vec<f32>>,
    /// Upper bound.
    pub upper: f32,
}

/// Runs a method on a problem with per-neuron biases (keeping the output).
pub type BiasedRunner<'a> =
    &'a dyn Fn(&Gpu, &BiasedProblem) -> Result<GpuInference, spdnn_cuda::CudaError>;

/// A runner of method `K` with `options` on problems with per-neuron biases, through the
/// harness every method plugs into (`spdnn_cuda::method::run`).
pub fn method_runner<K: spdnn_cuda::method::KernelMethod>(
    options: K::Options,
    spec: spdnn_cuda::rows::RunSpec,
) -> impl Fn(&Gpu, &BiasedProblem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| {
        spdnn_cuda::method::run::<K>(
            gpu,
            &spdnn_cuda::method::LayerChain::with_biases(&p.layers, &p.biases, p.upper),
            &p.input,
            &options,
            &spec,
        )
    }
}

/// The reference's result, with the final activations.
pub fn reference(problem: &BiasedProblem) -> Inference<f32> {
    let options = Options {
        keep_output: true,
        collect_stats: false,
        ..Options::default()
    };
    spdnn_reference::infer_with_biases(
        &problem.layers,
        &problem.input,
        &problem.biases,
        problem.upper,
        &options,
    )
    .expect("reference runs")
}

/// Compares categories, values (within `tolerance`) and predictions with the reference's.
/// A prediction may differ only where the reference's two best scores are within
/// `tie` of each other (the summation order may break such a tie either way); the count of
/// those is returned.
pub fn compare(
    problem: &BiasedProblem,
    gpu: &GpuInference,
    tolerance: Tolerance,
    tie: f32,
) -> Result<usize, String> {
    let expected = reference(problem);
    if gpu.categories != expected.categories {
        return Err(format!(
            "categories differ: gpu {} rows, cpu {} rows",
            gpu.categories.len(),
            expected.categories.len()
        ));
    }
    let scores = expected.output.as_ref().expect("kept");
    let values = gpu
        .output
        .as_ref()
        .ok_or("the runner must keep the output")?;
    let n = scores.ncols();
    compare_values(values, scores, n, tolerance)?;
    let got =
        ndarray::ArrayView2::from_shape(scores.raw_dim(), values).map_err(|e| e.to_string())?;
    let (mine, theirs) = (
        spdnn_reference::predictions(got),
        spdnn_reference::predictions(scores.view()),
    );
    let mut ties = 0;
    for (row, (a, b)) in mine.iter().zip(&theirs).enumerate() {
        if a != b {
            let mut best: Vec<f32> = scores.row(row).to_vec();
            best.sort_by(|x, y| y.total_cmp(x));
            if best.len() >= 2 && best[0] - best[1] <= tie {
                ties += 1;
            } else {
                return Err(format!("row {row} predicts {a:?}, the reference {b:?}"));
            }
        }
    }
    Ok(ties)
}

/// Exact random rectangular chains (widths up to `max_width`, 1–4 layers, dyadic weights
/// and inputs) with dyadic per-neuron biases: negative or zero, or of both signs when
/// `positive`.
pub fn biased_problem(
    max_width: usize,
    max_rows: usize,
    positive: bool,
) -> impl Strategy<Value = BiasedProblem> {
    (
        proptest::collection::vec(1..=max_width, 2..=5),
        1..=max_rows,
        0.05f64..0.7,
        0.1f64..0.9,
    )
        .prop_flat_map(move |(widths, rows, density, input_density)| {
            let weight = (-8i32..=8).prop_map(|k| k as f32 / 4.0);
            let layers: Vec<_> = widths
                .windows(2)
                .map(|p| sparse_matrix(p[0], p[1], density, weight.clone()))
                .collect();
            let top = if positive { 4 } else { 0 };
            let biases: Vec<_> = widths[1..]
                .iter()
                .map(|&n| proptest::collection::vec((-8i32..=top).prop_map(|k| k as f32 / 4.0), n))
                .collect();
            (
                layers,
                sparse_matrix(
                    rows,
                    widths[0],
                    input_density,
                    (1i32..=8).prop_map(|k| k as f32 / 2.0),
                ),
                biases,
                prop_oneof![Just(32.0f32), Just(4.0), Just(1.5)],
            )
        })
        .prop_map(|(layers, input, biases, upper)| BiasedProblem {
            layers,
            input,
            biases,
            upper,
        })
}

/// Random problems with per-neuron biases (positive ones too when `positive`) must equal
/// the reference bit for bit, predictions included.
pub fn check_biased_random(runner: BiasedRunner<'_>, positive: bool) {
    let gpu = gpu();
    run_proptest(biased_problem(80, 300, positive), |p| {
        let result = runner(&gpu, p).map_err(|e| format!("the method failed: {e}"))?;
        compare(p, &result, Tolerance::Exact, 0.0).map(|_| ())
    });
}

/// A chain shaped like the paper's MNIST networks: a dense `inputs × n` layer, `sparse`
/// layers `n × n` of about 55% density, a dense `n × 10` layer, weights and biases
/// (≤ 0, or of both signs when `positive`) random, `rows` random inputs in [0, 1], bound 1.
pub fn trained_shaped_problem(
    n: usize,
    sparse: usize,
    rows: usize,
    positive: bool,
    seed: u64,
) -> BiasedProblem {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let inputs = 784;
    let mut widths = vec![inputs];
    widths.extend(std::iter::repeat_n(n, sparse + 1));
    widths.push(10);
    let last = widths.len() - 2;
    let mut layers = Vec::new();
    let mut biases = Vec::new();
    for (l, p) in widths.windows(2).enumerate() {
        let density = if l == 0 || l == last { 1.0 } else { 0.55 };
        let scale = (2.0 / (p[0] as f64 * density)).sqrt() as f32;
        let mut triplets = Vec::new();
        for j in 0..p[0] {
            for k in 0..p[1] {
                if rng.random_bool(density) {
                    triplets.push((j as u32, k as u32, scale * rng.random_range(-1.5f32..1.5)));
                }
            }
        }
        layers.push(Csr::from_triplets(p[0], p[1], &triplets).expect("valid"));
        let top = if positive { 0.1 } else { 0.0 };
        biases.push((0..p[1]).map(|_| rng.random_range(-0.2f32..=top)).collect());
    }
    let mut triplets = Vec::new();
    for r in 0..rows {
        for j in 0..inputs {
            if rng.random_bool(0.19) {
                triplets.push((r as u32, j as u32, rng.random_range(0.01f32..=1.0)));
            }
        }
    }
    BiasedProblem {
        layers,
        input: Csr::from_triplets(rows, inputs, &triplets).expect("valid"),
        biases,
        upper: 1.0,
    }
}

/// Trained-shaped chains (784 → 128 × 6 → 10 and 784 → 256 × 4 → 10, 2000 rows, 64 at
/// sanitize scale, biases ≤ 0, or of both signs when `positive`): categories equal, values
/// within 1e-4 of the bound, predictions equal except at near ties (reported).
pub fn check_trained_shaped(runner: BiasedRunner<'_>, positive: bool) {
    let gpu = gpu();
    for (n, sparse, seed) in [(128, 6, 1), (256, 4, 2)] {
        let problem = trained_shaped_problem(n, sparse, sized(2000, 64), positive, seed);
        let result = runner(&gpu, &problem).expect("the method runs");
        let ties = compare(&problem, &result, Tolerance::Relative(1e-4), 1e-5)
            .unwrap_or_else(|e| panic!("{n}-{sparse}: {e}"));
        eprintln!("{n}-{sparse}: predictions equal (near ties that differ: {ties})");
    }
}

/// The networks `data/nets/{A,B,C}.safetensors` (`cargo xtask train-nets`) over the 10000
/// MNIST test images (the first 64 at sanitize scale): categories equal, predictions equal
/// except at near ties (reported). Skipped, with a message, when the networks or MNIST's
/// test set are not there.
pub fn check_trained_nets(runner: BiasedRunner<'_>) {
    let root = paths::workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
    let data = std::env::var_os("SPDNN_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("data"));
    let Ok(test) = spdnn_sdgc::images::load_mnist_test(&data) else {
        eprintln!("skipped: no MNIST test set under {}", data.display());
        return;
    };
    let features = test.features().expect("features");
    let features = features.rows_slice(0..sized(features.nrows(), 64));
    let gpu = gpu();
    let mut ran = 0;
    for name in ["A", "B", "C"] {
        let path = data.join("nets").join(format!("{name}.safetensors"));
        let Ok(trained) = spdnn_sdgc::trained::read_safetensors(&path) else {
            eprintln!("skipped: {} (run `cargo xtask train-nets`)", path.display());
            continue;
        };
        let problem = BiasedProblem {
            layers: trained.network.layers().to_vec(),
            input: features.clone(),
            biases: trained.network.biases().expect("biases").to_vec(),
            upper: trained.upper_bound.unwrap_or(1.0),
        };
        let result = runner(&gpu, &problem).expect("the method runs");
        let ties = compare(
            &problem,
            &result,
            Tolerance::Relative(1e-4),
            1e-5 * problem.upper,
        )
        .unwrap_or_else(|e| panic!("net {name}: {e}"));
        eprintln!(
            "net {name}: {} rows, predictions equal (near ties that differ: {ties})",
            problem.input.nrows()
        );
        ran += 1;
    }
    eprintln!("{ran} trained networks checked");
}
