//! Test support for the GPU methods: random problems, the real N = 1024 data, and the
//! comparison with the CPU reference. Used by the kernel crates' (ignored) GPU tests.
//!
//! Random problems come in two kinds. *Exact* ones use small dyadic values (weights
//! `k/4`, inputs `k/2`, bias `−k/4`, few layers) or integers (any depth): every partial
//! sum is representable in f32, so any summation order gives the same bits and the GPU
//! must equal the reference exactly. *General* ones use arbitrary floats and are
//! compared within a relative tolerance.
//!
//! How large the problems are is the scale's ([`scale`], `SPDNN_TEST_SCALE`): full, or
//! small enough for compute-sanitizer with every kernel path kept.

pub mod biased;
pub mod scale;

pub use scale::{challenge_layers, challenge_rows, run_spec, sanitizing, sized};

use std::path::PathBuf;

use ndarray::Array2;
use proptest::prelude::*;
use spdnn_cuda::Gpu;
use spdnn_cuda::rows::GpuInference;
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_reference::{Activation, Inference, Options};
use spdnn_sdgc::paths;

/// One inference problem.
#[derive(Debug, Clone)]
pub struct Problem {
    /// The layers (N × N).
    pub layers: Vec<Csr>,
    /// The input rows (rows × N).
    pub input: Csr,
    /// Bias (negative).
    pub bias: f32,
    /// Upper bound.
    pub upper: f32,
}

/// The device every GPU test uses; panics with a clear message when there is none
/// (GPU tests are `#[ignore]`d, so this runs only when asked for).
pub fn gpu() -> Gpu {
    match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e) => panic!("this GPU test needs a CUDA GPU: {e}"),
    }
}

/// The reference's result for `problem`, with the final activations.
pub fn reference(problem: &Problem) -> Inference<f32> {
    let activation = Activation::new(problem.bias, problem.upper).expect("valid activation");
    let options = Options {
        keep_output: true,
        collect_stats: false,
        ..Options::default()
    };
    spdnn_reference::infer(&problem.layers, &problem.input, activation, &options)
        .expect("reference runs")
}

/// How strictly values are compared.
#[derive(Debug, Clone, Copy)]
pub enum Tolerance {
    /// Bit-for-bit equal (exact problems).
    Exact,
    /// `|gpu − cpu| ≤ relative·max(|cpu|, 1)`: activations lie in `[0, U]`, and a small
    /// one is `Z + b` with `Z ≈ −b`, whose rounding error scales with `|b|`, not with it.
    Relative(f32),
}

/// Asserts that the GPU's categories equal the reference's and, when the GPU returned
/// its final activations, that they match within `tolerance`. Returns a description
/// of the first difference instead of panicking, for proptest.
pub fn compare(problem: &Problem, gpu: &GpuInference, tolerance: Tolerance) -> Result<(), String> {
    let expected = reference(problem);
    if gpu.categories != expected.categories {
        return Err(format!(
            "categories differ: gpu {} rows {:?}…, cpu {} rows {:?}…",
            gpu.categories.len(),
            &gpu.categories[..gpu.categories.len().min(8)],
            expected.categories.len(),
            &expected.categories[..expected.categories.len().min(8)]
        ));
    }
    let (Some(values), Some(reference_values)) = (&gpu.output, &expected.output) else {
        return Ok(());
    };
    let n = problem
        .layers
        .last()
        .map_or(problem.input.ncols(), SparseMatrix::ncols);
    compare_values(values, reference_values, n, tolerance)
}

fn compare_values(
    values: &[f32],
    expected: &Array2<f32>,
    n: usize,
    tolerance: Tolerance,
) -> Result<(), String> {
    if values.len() != expected.len() {
        return Err(format!(
            "output has {} values, expected {}",
            values.len(),
            expected.len()
        ));
    }
    for (index, (&got, &want)) in values.iter().zip(expected.iter()).enumerate() {
        let ok = match tolerance {
            Tolerance::Exact => got.to_bits() == want.to_bits() || (got == 0.0 && want == 0.0),
            Tolerance::Relative(rel) => (got - want).abs() <= rel * want.abs().max(1.0),
        };
        if !ok {
            return Err(format!(
                "value at row {}, column {} is {got}, expected {want}",
                index / n,
                index % n
            ));
        }
    }
    Ok(())
}

fn sparse_matrix(
    rows: usize,
    cols: usize,
    density: f64,
    value: impl Strategy<Value = f32> + Clone,
) -> impl Strategy<Value = Csr> {
    let cells = rows * cols;
    proptest::collection::vec((proptest::bool::weighted(density), value), cells).prop_map(
        move |cells| {
            let triplets: Vec<(u32, u32, f32)> = cells
                .into_iter()
                .enumerate()
                .filter(|(_, (keep, v))| *keep && *v != 0.0)
                .map(|(i, (_, v))| ((i / cols) as u32, (i % cols) as u32, v))
                .collect();
            Csr::from_triplets(rows, cols, &triplets).expect("valid triplets")
        },
    )
}

/// Exact random problems: N in 1..=max_n (mostly not powers of two), 1–4 layers,
/// dyadic weights of both signs, or integer ones with up to 12 layers.
pub fn exact_problem(max_n: usize, max_rows: usize) -> impl Strategy<Value = Problem> {
    let dyadic = (
        1..=max_n,
        1..=4usize,
        1..=max_rows,
        0.05f64..0.6,
        0.1f64..0.9,
    )
        .prop_flat_map(|(n, depth, rows, weight_density, input_density)| {
            let weight = (-8i32..=8).prop_map(|k| k as f32 / 4.0);
            let input_value = (1i32..=8).prop_map(|k| k as f32 / 2.0);
            (
                proptest::collection::vec(sparse_matrix(n, n, weight_density, weight), depth),
                sparse_matrix(rows, n, input_density, input_value),
                (1i32..=8).prop_map(|k| -(k as f32) / 4.0),
                prop_oneof![Just(32.0f32), Just(4.0), Just(1.5)],
            )
        });
    let integer = (1..=max_n, 1..=12usize, 1..=max_rows, 0.05f64..0.5).prop_flat_map(
        |(n, depth, rows, density)| {
            let weight = prop_oneof![Just(1.0f32), Just(2.0), Just(-1.0)];
            (
                proptest::collection::vec(sparse_matrix(n, n, density, weight), depth),
                sparse_matrix(rows, n, 0.5, Just(1.0f32)),
                (1i32..=3).prop_map(|k| -(k as f32)),
                prop_oneof![Just(32.0f32), Just(3.0)],
            )
        },
    );
    prop_oneof![dyadic, integer].prop_map(|(layers, input, bias, upper)| Problem {
        layers,
        input,
        bias,
        upper,
    })
}

/// Exact random problems whose layers chain widths of their own (`N_{l-1} × N_l`, each
/// width in 1..=`max_width`, 1–4 layers; dyadic values of both signs), as compressed or
/// general networks have.
pub fn rectangular_problem(max_width: usize, max_rows: usize) -> impl Strategy<Value = Problem> {
    (
        proptest::collection::vec(1..=max_width, 2..=5),
        1..=max_rows,
        0.05f64..0.6,
    )
        .prop_flat_map(|(widths, rows, density)| {
            let weight = (-8i32..=8).prop_map(|k| k as f32 / 4.0);
            let layers: Vec<_> = widths
                .windows(2)
                .map(|pair| sparse_matrix(pair[0], pair[1], density, weight.clone()))
                .collect();
            (
                layers,
                sparse_matrix(
                    rows,
                    widths[0],
                    0.5,
                    (1i32..=8).prop_map(|k| k as f32 / 2.0),
                ),
                (1i32..=8).prop_map(|k| -(k as f32) / 4.0),
                prop_oneof![Just(32.0f32), Just(4.0)],
            )
                .prop_map(|(layers, input, bias, upper)| Problem {
                    layers,
                    input,
                    bias,
                    upper,
                })
        })
}

/// A layer whose outputs come in classes of identical columns (same inputs, same
/// weights): `n` outputs, each a copy of one of `distinct` random dyadic columns.
fn classed_layer(n: usize, distinct: usize) -> impl Strategy<Value = Csr> {
    let weight = (-8i32..=8).prop_map(|k| k as f32 / 4.0);
    (
        proptest::collection::vec(sparse_matrix(n, 1, 0.3, weight), distinct),
        proptest::collection::vec(0..distinct, n),
    )
        .prop_map(move |(columns, class_of)| {
            let mut triplets = Vec::new();
            for (output, &class) in class_of.iter().enumerate() {
                for (input, _, value) in columns[class].triplets() {
                    triplets.push((input, output as u32, value));
                }
            }
            Csr::from_triplets(n, n, &triplets).expect("valid triplets")
        })
}

/// Exact random problems whose layers have classes of identical outputs (N up to
/// `max_n`, 1–4 layers, dyadic values): what compression shrinks.
pub fn classed_problem(max_n: usize, max_rows: usize) -> impl Strategy<Value = Problem> {
    (2..=max_n, 1..=4usize, 1..=max_rows).prop_flat_map(|(n, depth, rows)| {
        (
            proptest::collection::vec(
                (1..=n.div_ceil(2)).prop_flat_map(move |d| classed_layer(n, d)),
                depth,
            ),
            sparse_matrix(rows, n, 0.5, (1i32..=8).prop_map(|k| k as f32 / 2.0)),
            (1i32..=8).prop_map(|k| -(k as f32) / 4.0),
            prop_oneof![Just(32.0f32), Just(4.0)],
        )
            .prop_map(|(layers, input, bias, upper)| Problem {
                layers,
                input,
                bias,
                upper,
            })
    })
}

/// `problem` with its layers compressed (`spdnn-compress`: identical outputs kept once,
/// their inputs merged), and the number of layers whose width shrank.
pub fn compressed(problem: &Problem) -> (Problem, usize) {
    let compressed = spdnn_compress::compress(&problem.layers).expect("compression");
    let shrunk = compressed
        .summary()
        .layers
        .iter()
        .filter(|l| l.classes < l.width)
        .count();
    let layers = compressed.into_layers();
    (
        Problem {
            layers,
            ..problem.clone()
        },
        shrunk,
    )
}

/// A nonzero dyadic weight of either sign, ±k/4 for k in 1..=8.
fn nonzero_dyadic() -> impl Strategy<Value = f32> + Clone {
    (1i32..=8, proptest::bool::ANY)
        .prop_map(|(k, negative)| if negative { -(k as f32) } else { k as f32 } / 4.0)
}

/// `layer` with every weight set to `value` (its pattern kept).
fn one_value(layer: &Csr, value: f32) -> Csr {
    let triplets: Vec<(u32, u32, f32)> = layer.triplets().map(|(r, c, _)| (r, c, value)).collect();
    Csr::from_triplets(layer.nrows(), layer.ncols(), &triplets).expect("valid triplets")
}

/// A layer whose outputs come in groups of 16 sharing one input set (the structure XY
/// detects), with shuffled output ids and exact dyadic values of both signs.
fn grouped_layer(n: usize) -> impl Strategy<Value = Csr> {
    let groups = n / 16;
    let nonzero = nonzero_dyadic();
    (
        Just((0..n as u32).collect::<Vec<u32>>()).prop_shuffle(),
        proptest::collection::vec(
            proptest::collection::vec(proptest::bool::weighted(0.3), n),
            groups,
        ),
        proptest::collection::vec(nonzero, n * n),
    )
        .prop_map(move |(outputs, input_sets, values)| {
            let mut triplets = Vec::new();
            for (group, inputs) in input_sets.iter().enumerate() {
                for &output in &outputs[group * 16..(group + 1) * 16] {
                    for (input, _) in inputs.iter().enumerate().filter(|(_, keep)| **keep) {
                        triplets.push((input as u32, output, values[input * n + output as usize]));
                    }
                }
            }
            Csr::from_triplets(n, n, &triplets).expect("valid triplets")
        })
}

/// Exact random problems whose layers are mostly grouped (N = 16·g, g ≤ `max_groups`),
/// mixed with unstructured layers, 1–4 layers (deep enough for every XY phase, shallow
/// enough that every dyadic partial sum stays exact in f32). Some layers, grouped or not,
/// have one weight value throughout, as the challenge's do (XY then stores it once).
pub fn grouped_problem(max_groups: usize, max_rows: usize) -> impl Strategy<Value = Problem> {
    (1..=max_groups, 1..=4usize, 1..=max_rows).prop_flat_map(|(groups, depth, rows)| {
        let n = groups * 16;
        let weight = (-8i32..=8).prop_map(|k| k as f32 / 4.0);
        let layer = prop_oneof![
            3 => grouped_layer(n),
            1 => (grouped_layer(n), nonzero_dyadic()).prop_map(|(layer, value)| one_value(&layer, value)),
            1 => sparse_matrix(n, n, 0.2, weight),
            1 => nonzero_dyadic().prop_flat_map(move |value| sparse_matrix(n, n, 0.2, Just(value))),
        ];
        (
            proptest::collection::vec(layer, depth),
            sparse_matrix(rows, n, 0.5, (1i32..=8).prop_map(|k| k as f32 / 2.0)),
            (1i32..=8).prop_map(|k| -(k as f32) / 4.0),
            prop_oneof![Just(32.0f32), Just(4.0)],
        )
            .prop_map(|(layers, input, bias, upper)| Problem {
                layers,
                input,
                bias,
                upper,
            })
    })
}

/// General random problems: arbitrary positive weights in (0, 0.5], inputs in (0, 1],
/// bias in [−0.5, −0.01); compared with [`Tolerance::Relative`].
pub fn general_problem(max_n: usize, max_rows: usize) -> impl Strategy<Value = Problem> {
    (1..=max_n, 1..=6usize, 1..=max_rows, 0.05f64..0.5).prop_flat_map(
        |(n, depth, rows, density)| {
            (
                proptest::collection::vec(sparse_matrix(n, n, density, 0.001f32..0.5), depth),
                sparse_matrix(rows, n, 0.4, 0.01f32..1.0),
                -0.5f32..-0.01,
            )
                .prop_map(|(layers, input, bias)| Problem {
                    layers,
                    input,
                    bias,
                    upper: 32.0,
                })
        },
    )
}

/// A challenge-shaped problem: the generated N-L network, seeded synthetic input.
pub fn challenge_problem(neurons: usize, layers: usize, rows: usize, seed: u64) -> Problem {
    let input = spdnn_sdgc::images::synthetic(rows, neurons, seed).expect("synthetic input");
    generated_with_input(neurons, layers, seed, input.features)
}

/// The generated N-L network of `seed` with the official bias for N (-0.3 otherwise) over
/// `input`.
fn generated_with_input(neurons: usize, layers: usize, seed: u64, input: Csr) -> Problem {
    let network = spdnn_sdgc::generator::network(neurons, layers, seed).expect("generator");
    let bias = spdnn_sdgc::benchmark::official_bias(neurons).unwrap_or(-0.3);
    Problem {
        layers: network.layers().to_vec(),
        input,
        bias,
        upper: 32.0,
    }
}

/// The data folder the GPU tests read: `$SPDNN_DATA`, else the workspace's `data/`.
fn data_folder() -> PathBuf {
    std::env::var_os("SPDNN_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            paths::workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR")).join("data")
        })
}

/// MNIST's training images from the data folder, read once; `None` when they are not there.
fn mnist_train() -> Option<&'static spdnn_sdgc::images::MnistImages> {
    static MNIST: std::sync::OnceLock<Option<spdnn_sdgc::images::MnistImages>> =
        std::sync::OnceLock::new();
    MNIST
        .get_or_init(|| spdnn_sdgc::images::load_mnist_train(&data_folder()).ok())
        .as_ref()
}

/// Whether [`challenge_problem_mnist`] has MNIST to draw from (else it falls back to
/// synthetic rows, outside CI).
pub fn has_mnist() -> bool {
    mnist_train().is_some()
}

/// The generated `neurons`-`layers` challenge network over the challenge's kind of input:
/// MNIST training images `k·rows..(k+1)·rows` (k = `seed` modulo the slices there are)
/// through the official recipe (`images::from_mnist`; `neurons` a square of an even side
/// ≥ 28). Rows of these survive the challenge networks as the official ones do (about 3 %
/// to the last layer, most of them past layer 30), while [`challenge_problem`]'s uniform
/// random rows all die within the first ~10 layers at N = 1024, so a check on those only
/// sees rows die. Falls back to [`challenge_problem`], saying so, when MNIST is not in the
/// data folder (`spdnn fetch --mnist`), except under CI, where that is an error.
pub fn challenge_problem_mnist(neurons: usize, layers: usize, rows: usize, seed: u64) -> Problem {
    let Some(mnist) = mnist_train().filter(|m| rows > 0 && rows <= m.count) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs MNIST's training images under {} (`cargo xtask setup`)",
            data_folder().display()
        );
        eprintln!(
            "note: no MNIST training images (or fewer than {rows}) under {}: synthetic rows, \
             which die early",
            data_folder().display()
        );
        return challenge_problem(neurons, layers, rows, seed);
    };
    let image = mnist.height * mnist.width;
    let slices = (mnist.count / rows) as u64;
    let first = (seed % slices) as usize * rows;
    let subset = spdnn_sdgc::images::MnistImages {
        count: rows,
        height: mnist.height,
        width: mnist.width,
        pixels: mnist.pixels[first * image..(first + rows) * image].to_vec(),
    };
    let input = spdnn_sdgc::images::from_mnist(&subset, neurons, &|_, _| {}).expect("the recipe");
    generated_with_input(neurons, layers, seed, input.features)
}

/// The generated `neurons`-`layers` challenge network over MNIST-recipe rows as
/// [`check_challenge`] runs it: [`challenge_problem_mnist`] with `rows` rows at full scale.
/// At sanitize scale at most [`challenge_layers`] layers and [`challenge_rows`] of those
/// rows: the rows that reach the last layer (found by the CPU reference on all `rows`) fill
/// up to half of them, the first rows that die the rest ([`live_rows_first`]). The first
/// rows alone would all die early (none of 64 rows of 1024-120 lives past layer 10),
/// leaving the deep layers' kernels no row.
pub fn challenge_problem_scaled(neurons: usize, layers: usize, rows: usize, seed: u64) -> Problem {
    let problem = challenge_problem_mnist(neurons, challenge_layers(layers), rows, seed);
    let keep = challenge_rows(neurons, rows);
    if keep >= problem.input.nrows() {
        return problem;
    }
    let live = reference(&problem).categories;
    let chosen = live_rows_first(&live, problem.input.nrows(), keep);
    let triplets: Vec<(u32, u32, f32)> = chosen
        .iter()
        .enumerate()
        .flat_map(|(new, &old)| {
            let (columns, values) = problem.input.row(old);
            columns
                .iter()
                .zip(values)
                .map(move |(&c, &v)| (new as u32, c, v))
        })
        .collect();
    let input = Csr::from_triplets(chosen.len(), problem.input.ncols(), &triplets)
        .expect("rows of a valid input");
    Problem { input, ..problem }
}

/// `keep` of the rows `0..total` (0-based, ascending): the first of the rows in `live`
/// (1-based, ascending, as categories are), at most half of `keep` rounded up, then the
/// first rows not in `live` until there are `keep` (or every row is taken).
pub fn live_rows_first(live: &[u32], total: usize, keep: usize) -> Vec<usize> {
    let keep = keep.min(total);
    let mut chosen: Vec<usize> = live
        .iter()
        .map(|&r| r as usize - 1)
        .filter(|&r| r < total)
        .take(keep.div_ceil(2))
        .collect();
    let is_live = |r: usize| live.binary_search(&(r as u32 + 1)).is_ok();
    let dead = (0..total).filter(|&r| !is_live(r));
    chosen.extend(dead.take(keep - chosen.len()));
    if chosen.len() < keep {
        // Fewer dead rows than asked for: more live ones.
        let more: Vec<usize> = live
            .iter()
            .map(|&r| r as usize - 1)
            .filter(|&r| r < total && !chosen.contains(&r))
            .take(keep - chosen.len())
            .collect();
        chosen.extend(more);
    }
    chosen.sort_unstable();
    chosen
}

/// The real N = 1024 network (120 layers) over the official first 1200 images, and the
/// official 120-layer truth restricted to those rows; at sanitize scale over the
/// [`scale::SANITIZE_OFFICIAL_ROWS`] consecutive images of those that hold the most truth
/// rows (images 1073–1200, 7 of the 19 rows that reach the last layer), the truth numbered
/// from the window's first image. `None` (with the reason printed) when the shared files
/// are absent and CI is not set.
pub fn official_1024_subset() -> Option<(Problem, Vec<u32>)> {
    official_1024_subset_at(scale::scale())
}

/// [`official_1024_subset`] at `scale`.
fn official_1024_subset_at(scale: scale::Scale) -> Option<(Problem, Vec<u32>)> {
    let root = paths::workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
    let find = |name: &str| -> Option<PathBuf> { paths::find_official(&root, name) };
    let (Some(net), Some(images), Some(truth)) = (
        find("neuron1024.tar.gz"),
        find("sparse-images-1024_subset.mtx"),
        find("neuron1024-l120-categories.tsv"),
    ) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI: the official N = 1024 files are missing"
        );
        eprintln!(
            "skipped: the official N = 1024 files are not in $SPDNN_DATA, data/ or ../shared/data/sdgc"
        );
        return None;
    };
    let network = spdnn_sdgc::tsv::read_network(&net, Some(1024), 120, &mut |_| {})
        .expect("official network");
    let input = spdnn_sdgc::tsv::read_images(&images, 1024, None).expect("official subset images");
    let rows = input.nrows() as u32;
    let truth: Vec<u32> = spdnn_sdgc::tsv::read_categories(&truth)
        .expect("official truth")
        .into_iter()
        .filter(|&r| r <= rows)
        .collect();
    let (input, truth) = if scale == scale::Scale::Sanitize {
        let total = input.nrows();
        let start = scale::densest_window(&truth, total, scale::SANITIZE_OFFICIAL_ROWS);
        let end = (start + scale::SANITIZE_OFFICIAL_ROWS).min(total);
        let window: Vec<u32> = truth
            .into_iter()
            .filter(|&r| r as usize > start && r as usize <= end)
            .map(|r| r - start as u32)
            .collect();
        (input.rows_slice(start..end), window)
    } else {
        (input, truth)
    };
    let problem = Problem {
        layers: network.layers().to_vec(),
        input,
        bias: -0.3,
        upper: 32.0,
    };
    Some((problem, truth))
}

/// Runs a method on a problem, returning its categories and final activations.
pub type Runner<'a> = &'a dyn Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError>;

/// Problems a method must refuse with an error, and chains it must take: an input of the
/// wrong width, a positive bias, a valid 4 × 4 layer, a 4 → 4 → 5 chain, and a 5 × 4 layer
/// after a 4 × 4 one (an error naming layer 2).
pub fn check_bad_problems(runner: Runner<'_>) {
    let gpu = gpu();
    let w = Csr::from_triplets(4, 4, &[(0, 1, 1.0)]).unwrap();
    let x = Csr::from_triplets(2, 4, &[(0, 1, 1.0)]).unwrap();
    let problem = |layers: Vec<Csr>, input: &Csr, bias: f32| Problem {
        layers,
        input: input.clone(),
        bias,
        upper: 32.0,
    };
    let narrow = Csr::from_triplets(2, 3, &[(0, 1, 1.0)]).unwrap();
    assert!(
        runner(&gpu, &problem(vec![w.clone()], &narrow, -0.3)).is_err(),
        "wrong input width"
    );
    assert!(
        runner(&gpu, &problem(vec![w.clone()], &x, 0.3)).is_err(),
        "positive bias"
    );
    assert!(runner(&gpu, &problem(vec![w.clone()], &x, -0.3)).is_ok());
    let wide = Csr::from_triplets(4, 5, &[(1, 4, 1.0)]).unwrap();
    assert!(runner(&gpu, &problem(vec![w.clone(), wide], &x, -0.3)).is_ok());
    let tall = Csr::from_triplets(5, 4, &[(4, 1, 1.0)]).unwrap();
    let e = runner(&gpu, &problem(vec![w, tall], &x, -0.3)).unwrap_err();
    assert!(e.to_string().contains("layer 2"), "{e}");
}

fn run_checked(
    gpu: &Gpu,
    runner: Runner<'_>,
    problem: &Problem,
    tolerance: Tolerance,
) -> Result<(), String> {
    run_and_check(gpu, runner, problem, tolerance).map(|_| ())
}

/// [`run_checked`], handing back the result for further checks.
fn run_and_check(
    gpu: &Gpu,
    runner: Runner<'_>,
    problem: &Problem,
    tolerance: Tolerance,
) -> Result<GpuInference, String> {
    let result = runner(gpu, problem).map_err(|e| format!("the method failed: {e}"))?;
    if result.output.is_none() {
        return Err("the runner must keep the output (RunSpec::keep_output)".into());
    }
    if result.infer_ms.is_empty()
        || result
            .infer_ms
            .iter()
            .any(|ms| !ms.is_finite() || *ms < 0.0)
    {
        return Err(format!("bad event times {:?}", result.infer_ms));
    }
    compare(problem, &result, tolerance)?;
    Ok(result)
}

fn run_proptest<P: std::fmt::Debug>(
    strategy: impl Strategy<Value = P>,
    check: impl Fn(&P) -> Result<(), String>,
) {
    let mut runner = proptest::test_runner::TestRunner::new(scale::proptest_config(None));
    let outcome = runner.run(&strategy, |problem| {
        check(&problem).map_err(TestCaseError::fail)
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

/// Exact random problems (N up to 80, up to 300 rows) must equal the reference bit for bit.
pub fn check_exact_random(runner: Runner<'_>) {
    let gpu = gpu();
    run_proptest(exact_problem(80, 300), |p| {
        run_checked(&gpu, runner, p, Tolerance::Exact)
    });
}

/// Exact random problems with grouped layers (N = 16…80, up to 300 rows) must equal the
/// reference bit for bit.
pub fn check_grouped_random(runner: Runner<'_>) {
    let gpu = gpu();
    run_proptest(grouped_problem(5, 300), |p| {
        run_checked(&gpu, runner, p, Tolerance::Exact)
    });
}

/// General random problems must match the reference's categories and values within 1e-5.
pub fn check_general_random(runner: Runner<'_>) {
    let gpu = gpu();
    run_proptest(general_problem(80, 300), |p| {
        run_checked(&gpu, runner, p, Tolerance::Relative(1e-5))
    });
}

/// Exact random problems with rectangular layers (widths up to 80, up to 300 rows) must
/// equal the reference bit for bit.
pub fn check_rectangular_random(runner: Runner<'_>) {
    let gpu = gpu();
    run_proptest(rectangular_problem(80, 300), |p| {
        run_checked(&gpu, runner, p, Tolerance::Exact)
    });
}

/// Compressed networks: the generated 1024-120 (2000 rows) and 4096-24 (300 rows; fewer rows
/// and layers at sanitize scale, [`challenge_rows`] and [`challenge_layers`]), the official
/// 1024-120 and exact random problems with classes of identical outputs, compressed; the
/// method on the compressed layers must match the reference on them (values) and on the
/// original layers (categories).
pub fn check_compressed(runner: Runner<'_>) {
    let gpu = gpu();
    for (neurons, layers, rows) in [(1024, 120, 2000), (4096, 24, 300)] {
        let (layers, rows) = (challenge_layers(layers), challenge_rows(neurons, rows));
        let original = challenge_problem(neurons, layers, rows, 11);
        let (problem, shrunk) = compressed(&original);
        assert!(shrunk > 0, "{neurons}-{layers} did not compress");
        let result = run_and_check(&gpu, runner, &problem, Tolerance::Relative(1e-5))
            .unwrap_or_else(|e| panic!("compressed {neurons}-{layers}: {e}"));
        assert_eq!(
            result.categories,
            reference(&original).categories,
            "compressed {neurons}-{layers}: categories differ from the uncompressed reference"
        );
    }
    run_proptest(classed_problem(80, 300), |p| {
        let (problem, _) = compressed(p);
        let result = run_and_check(&gpu, runner, &problem, Tolerance::Exact)?;
        if result.categories != reference(p).categories {
            return Err("categories differ from the uncompressed reference".into());
        }
        Ok(())
    });
    if let Some((official, truth)) = official_1024_subset() {
        let (problem, _) = compressed(&official);
        let result = runner(&gpu, &problem).expect("the method runs");
        assert_eq!(
            result.categories, truth,
            "compressed official 1024-120: categories differ from the official truth"
        );
    }
}

/// The generated `neurons`-`layers` challenge network over `rows` MNIST-recipe rows
/// ([`challenge_problem_scaled`]: fewer rows, live ones among them, at sanitize scale).
pub fn check_challenge(runner: Runner<'_>, neurons: usize, layers: usize, rows: usize) {
    let gpu = gpu();
    let problem = challenge_problem_scaled(neurons, layers, rows, 7);
    let rows = problem.input.nrows();
    if let Err(e) = run_checked(&gpu, runner, &problem, Tolerance::Relative(1e-5)) {
        panic!("{neurons}-{layers}, {rows} rows: {e}");
    }
}

/// The real N = 1024, 120-layer network over the official first 1200 images must give
/// the official truth (restricted to those rows) and the reference's values.
pub fn check_official_1024(runner: Runner<'_>) {
    let Some((problem, truth)) = official_1024_subset() else {
        return;
    };
    let gpu = gpu();
    let result = runner(&gpu, &problem).expect("the method runs");
    assert_eq!(
        result.categories, truth,
        "categories differ from the official truth"
    );
    if let Err(e) = compare(&problem, &result, Tolerance::Relative(1e-5)) {
        panic!("official 1024-120: {e}");
    }
}

/// Problems where many values reach the upper bound (GLARE's case): N in
/// `min_n..=max_n`, 1–`max_depth` layers of weights mostly +1 (some −1 and ½), inputs
/// of 1, bias −¼, bound 1 or 2; every value is dyadic, so the reference is exact.
pub fn saturating_problem(
    min_n: usize,
    max_n: usize,
    max_depth: usize,
    max_rows: usize,
) -> impl Strategy<Value = Problem> {
    (
        min_n..=max_n,
        1..=max_depth,
        1..=max_rows,
        0.05f64..0.6,
        0.2f64..1.0,
    )
        .prop_flat_map(|(n, depth, rows, weight_density, input_density)| {
            let weight = prop_oneof![6 => Just(1.0f32), 1 => Just(-1.0), 1 => Just(0.5)];
            (
                proptest::collection::vec(sparse_matrix(n, n, weight_density, weight), depth),
                sparse_matrix(rows, n, input_density, Just(1.0f32)),
                prop_oneof![Just(1.0f32), Just(2.0)],
            )
                .prop_map(|(layers, input, upper)| Problem {
                    layers,
                    input,
                    bias: -0.25,
                    upper,
                })
        })
}

/// A problem whose every activation is the bound after every layer: dense weights of 1,
/// every input 1, bound 1.
pub fn all_saturating_problem(neurons: usize, layers: usize, rows: usize) -> Problem {
    let all = |r: usize, c: usize| -> Csr {
        let triplets: Vec<(u32, u32, f32)> = (0..r)
            .flat_map(|i| (0..c).map(move |j| (i as u32, j as u32, 1.0f32)))
            .collect();
        Csr::from_triplets(r, c, &triplets).expect("valid triplets")
    };
    Problem {
        layers: vec![all(neurons, neurons); layers],
        input: all(rows, neurons),
        bias: -0.25,
        upper: 1.0,
    }
}

/// Checks a GLARE variant: saturating random problems (narrow, and wide enough for
/// units spanning several blocks) must equal the reference bit for bit, also with a
/// bound no value reaches, whose census must show no skipped access and no write-back;
/// all-saturating problems must equal it with some accesses skipped. At sanitize scale the
/// wide problems are at most 160 neurons and the all-saturating ones 8 rows of at most 4
/// layers: their weights are dense, and a method that sums with shared-memory atomics (bf,
/// snig) made `neurons² · layers · rows` of them, the longest racecheck runs of the whole
/// suite (bf's over 528 s, 2026-11-27). Each phase is named on stderr with its start.
/// [`check_glare_random`] and [`check_glare_saturating`] are its two halves, for methods
/// whose GLARE tests run them as separate processes under racecheck.
pub fn check_glare(runner: Runner<'_>) {
    check_glare_random(runner);
    check_glare_saturating(runner);
}

/// Names a phase of a GLARE check on stderr with the seconds since `started`.
fn glare_phase(started: std::time::Instant, name: &str) {
    eprintln!("glare [{:.1} s]: {name}", started.elapsed().as_secs_f64());
}

/// The random half of [`check_glare`]: saturating random problems, and a bound no value
/// reaches.
pub fn check_glare_random(runner: Runner<'_>) {
    let gpu = gpu();
    let started = std::time::Instant::now();
    glare_phase(started, "saturating, 1-80 neurons");
    run_proptest(saturating_problem(1, 80, 8, 200), |p| {
        run_checked(&gpu, runner, p, Tolerance::Exact)
    });
    glare_phase(started, "saturating, wide");
    run_proptest(saturating_problem(100, sized(300, 160), 8, 40), |p| {
        run_checked(&gpu, runner, p, Tolerance::Exact)
    });
    glare_phase(started, "bound unreached");
    // Shallow and narrow enough (64³ · 32 < 2^24) that every sum stays exact without a bound.
    run_proptest(saturating_problem(1, 64, 3, 200), |p| {
        let unreached = Problem {
            upper: 1.0e30,
            ..p.clone()
        };
        // One run checked and counted (under racecheck these tests are the longest).
        let result = run_and_check(&gpu, runner, &unreached, Tolerance::Exact)?;
        if result.accesses.is_empty() {
            return Err("GLARE runs must return the census".into());
        }
        let skipped: u64 = result
            .accesses
            .iter()
            .map(|a| a.activation_reads_skipped + a.activation_writes_skipped + a.write_backs)
            .sum();
        if skipped != 0 {
            return Err(format!(
                "{skipped} accesses skipped with an unreachable bound"
            ));
        }
        Ok(())
    });
}

/// The all-saturating half of [`check_glare`]: dense weights of 1, every access after the
/// first layer at the bound, some skipped.
pub fn check_glare_saturating(runner: Runner<'_>) {
    let gpu = gpu();
    let started = std::time::Instant::now();
    for (neurons, layers, rows) in [(64, 6, 300), (96, 40, 70), (300, 30, 33)] {
        let layers = sized(layers, layers.min(4));
        glare_phase(started, &format!("all-saturating {neurons}-{layers}"));
        let problem = all_saturating_problem(neurons, layers, sized(rows, 8));
        let result = run_and_check(&gpu, runner, &problem, Tolerance::Exact)
            .unwrap_or_else(|e| panic!("all-saturating {neurons}-{layers}: {e}"));
        let skipped: u64 = result
            .accesses
            .iter()
            .map(|a| a.activation_reads_skipped + a.activation_writes_skipped)
            .sum();
        assert!(
            skipped > 0,
            "all-saturating {neurons}-{layers}: no access skipped ({:?})",
            result.accesses
        );
    }
}

#[cfg(test)]
mod tests {
    use proptest::strategy::ValueTree;

    use super::*;

    #[test]
    fn compressed_classed_problems_keep_the_reference_categories() {
        let mut shrunk_any = false;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        for _ in 0..32 {
            let p = classed_problem(40, 60)
                .new_tree(&mut runner)
                .expect("a problem")
                .current();
            let (compressed, shrunk) = compressed(&p);
            shrunk_any |= shrunk > 0;
            assert_eq!(reference(&compressed).categories, reference(&p).categories);
        }
        assert!(shrunk_any, "no classed problem compressed");
    }

    #[test]
    fn live_rows_fill_up_to_half_the_kept_rows() {
        // Rows 3, 5, 9 and 10 (1-based) live: half of 4 kept rows live, then the first dead.
        let live = [3, 5, 9, 10];
        assert_eq!(live_rows_first(&live, 10, 4), vec![0, 1, 2, 4]);
        assert_eq!(live_rows_first(&live, 10, 5), vec![0, 1, 2, 4, 8]);
        assert_eq!(live_rows_first(&[], 10, 3), vec![0, 1, 2]);
        // Every row kept when asked for more than there are.
        assert_eq!(live_rows_first(&live, 10, 20), (0..10).collect::<Vec<_>>());
        // Few dead rows: the live ones make up the count.
        assert_eq!(live_rows_first(&[1, 2, 3, 4], 5, 5), vec![0, 1, 2, 3, 4]);
        assert_eq!(live_rows_first(&[1, 2, 3, 4], 5, 4), vec![0, 1, 2, 4]);
    }

    #[test]
    fn the_sanitize_window_of_the_official_subset_keeps_its_truth() {
        let Some((full, truth)) = official_1024_subset_at(scale::Scale::Full) else {
            return;
        };
        let (window, window_truth) =
            official_1024_subset_at(scale::Scale::Sanitize).expect("the same files");
        assert_eq!(full.input.nrows(), 1200);
        assert_eq!(window.input.nrows(), scale::SANITIZE_OFFICIAL_ROWS);
        assert_eq!(window_truth.len(), 7, "{window_truth:?}");
        // The window's rows are the full subset's rows 1073..=1200, renumbered from 1.
        let start = 1072;
        assert_eq!(window.input, full.input.rows_slice(start..1200));
        let shifted: Vec<u32> = truth
            .iter()
            .filter(|&&r| r as usize > start)
            .map(|&r| r - start as u32)
            .collect();
        assert_eq!(window_truth, shifted);
        // The reference agrees with the renumbered truth on the window alone.
        assert_eq!(reference(&window).categories, window_truth);
    }

    #[test]
    fn rectangular_problems_chain() {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        for _ in 0..32 {
            let p = rectangular_problem(30, 20)
                .new_tree(&mut runner)
                .expect("a problem")
                .current();
            assert_eq!(p.layers[0].nrows(), p.input.ncols());
            for pair in p.layers.windows(2) {
                assert_eq!(pair[1].nrows(), pair[0].ncols());
            }
            let _ = reference(&p);
        }
    }
}
