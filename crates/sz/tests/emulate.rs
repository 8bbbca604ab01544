//! The CPU proof of the kernels' arithmetic: the emulation of `sz.cu` (fragments lane by
//! lane, exact three-term bf16 splits, exact products summed in fp32, the CSR rest, the clip) over
//! the real layouts, against the CPU reference. No GPU needed.

use proptest::test_runner::{Config, TestCaseError, TestRunner};
use spdnn_cuda::method::{self, LayerChain};
use spdnn_cuda::rows::GpuInference;
use spdnn_formats::SparseMatrix;
use spdnn_gputest::biased::{self, BiasedProblem};
use spdnn_gputest::{Problem, Tolerance, compare};
use spdnn_sz::emulate::{self, Split};
use spdnn_sz::format::{self, LayoutError, SzLayer};
use spdnn_sz::reorder::reorder_network;
use spdnn_sz::{Sz, SzT4};

/// The layouts of `layers` at block fill `min_fill`, each reordering checked valid.
fn layout(layers: &[spdnn_formats::Csr], min_fill: f32) -> Vec<SzLayer> {
    let reorderings = reorder_network(layers, min_fill);
    for (r, w) in reorderings.iter().zip(layers) {
        r.validate(w.nrows(), w.ncols())
            .expect("a valid reordering of a rectangular layer");
    }
    let mut out = Vec::new();
    format::build_layers::<LayoutError>(
        layers,
        &reorderings,
        |_| true,
        4,
        |_, l| {
            out.push(l);
            Ok(())
        },
    )
    .expect("layout");
    out
}

/// Emulates `problem` at `min_fill` with `split` and compares with the reference.
fn check(
    problem: &Problem,
    min_fill: f32,
    split: Split,
    tolerance: Tolerance,
) -> Result<(), String> {
    let layers = layout(&problem.layers, min_fill);
    let e = emulate::run(&layers, &problem.input, problem.bias, problem.upper, |_| {
        split
    })?;
    let result = GpuInference {
        categories: e.categories,
        output: Some(e.output),
        ..GpuInference::default()
    };
    compare(problem, &result, tolerance)
}

const SPLITS: [Split; 3] = [
    Split::TENSOR,
    Split {
        group: 4,
        tc_tiles: 3,
    },
    Split {
        group: 3,
        tc_tiles: 1,
    },
];

fn proptest_all(
    strategy: impl proptest::strategy::Strategy<Value = Problem>,
    cases: u32,
    tolerance: Tolerance,
) {
    let mut runner = TestRunner::new(Config::with_cases(cases));
    let outcome = runner.run(&strategy, |p| {
        for min_fill in [0.0, 0.25, 2.0] {
            for split in SPLITS {
                check(&p, min_fill, split, tolerance)
                    .map_err(|e| TestCaseError::fail(format!("fill {min_fill}, {split:?}: {e}")))?;
            }
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

#[test]
fn exact_random_networks_are_bit_exact() {
    // Fill 0: every touched block on the tensor cores (unstructured layers too).
    proptest_all(spdnn_gputest::exact_problem(80, 40), 48, Tolerance::Exact);
}

#[test]
fn rectangular_chains_are_bit_exact() {
    proptest_all(
        spdnn_gputest::rectangular_problem(80, 40),
        32,
        Tolerance::Exact,
    );
}

#[test]
fn general_random_networks_with_real_weights() {
    // Weights in (0, 0.5] that are not bf16: the layers take two or three weight terms.
    proptest_all(
        spdnn_gputest::general_problem(80, 40),
        32,
        Tolerance::Relative(1e-5),
    );
}

#[test]
fn generated_challenge_networks() {
    // MNIST-recipe rows, some alive after the last layer (uniform random rows all die).
    let problem = spdnn_gputest::challenge_problem_mnist(1024, 12, 96, 7);
    assert!(
        !spdnn_gputest::reference(&problem).categories.is_empty() || !spdnn_gputest::has_mnist(),
        "no row lives to the end"
    );
    let layers = layout(&problem.layers, 0.25);
    let stats = layers
        .iter()
        .fold(format::LayoutStats::default(), |mut s, l| {
            s.add(l);
            s
        });
    assert_eq!(
        stats.dense_share(),
        1.0,
        "the challenge's blocks are all found"
    );
    assert_eq!(stats.split_layers, 0, "1/16 is exact in bf16");
    for split in SPLITS {
        check(&problem, 0.25, split, Tolerance::Relative(1e-5))
            .unwrap_or_else(|e| panic!("{split:?}: {e}"));
    }
}

#[test]
fn inputs_beyond_the_split_are_errors() {
    let mut problem = spdnn_gputest::challenge_problem(64, 1, 4, 1);
    let values: Vec<(u32, u32, f32)> = problem
        .input
        .triplets()
        .map(|(r, c, _)| (r, c, 1e30))
        .collect();
    problem.input = spdnn_formats::Csr::from_triplets(4, 64, &values).unwrap();
    let layers = layout(&problem.layers, 0.25);
    let e = emulate::run(&layers, &problem.input, -0.3, 32.0, |_| Split::TENSOR).unwrap_err();
    assert!(e.contains("beyond"), "{e}");
}

#[test]
fn official_1024_network_subset() {
    // The first 160 official images through the real 120 layers (skipped, with the
    // reason printed, when the official files are not found).
    let Some((mut problem, truth)) = spdnn_gputest::official_1024_subset() else {
        return;
    };
    let rows = 160;
    problem.input = problem.input.rows_slice(0..rows);
    let truth: Vec<u32> = truth.into_iter().filter(|&r| r as usize <= rows).collect();
    let layers = layout(&problem.layers, 0.25);
    let e = emulate::run(&layers, &problem.input, problem.bias, problem.upper, |_| {
        Split::TENSOR
    })
    .expect("the official input is in range");
    assert_eq!(
        e.categories, truth,
        "categories differ from the official truth"
    );
    let result = GpuInference {
        categories: e.categories,
        output: Some(e.output),
        ..GpuInference::default()
    };
    compare(&problem, &result, Tolerance::Relative(1e-5)).unwrap();
}

/// The rows of the 60000 MNIST-recipe images on which the fp16 hi/lo split (22 of fp32's 24
/// significand bits, the low half subnormal or zero for small activations) gave a category
/// the official truth does not have (1814 categories instead of 1812, measured on an H200
/// and by this emulation: `cargo run --release -p spdnn-sz --example official_rows`). Row
/// 11866 sits on the challenge's unstable fixed point (docs/sz.md, "Error analysis"): exact
/// bf16 products summed into one accumulator still kept it; one accumulator per term does
/// not.
const FP16_SPLIT_FLIPS: [u32; 2] = [11866, 49259];

#[test]
fn official_1024_rows_the_fp16_split_flipped() {
    // The exact bf16 split must give the truth on them (skipped, with the reason printed,
    // when the official files or MNIST are not found).
    let root = spdnn_sdgc::paths::workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
    let Some((mut problem, _)) = spdnn_gputest::official_1024_subset() else {
        return;
    };
    let Ok(mnist) = spdnn_sdgc::images::load_mnist_train(&root.join("data")) else {
        assert!(std::env::var_os("CI").is_none(), "CI: MNIST is missing");
        eprintln!("skipped: MNIST (data/mnist/) is not there");
        return;
    };
    let full = spdnn_sdgc::images::from_mnist(&mnist, 1024, &|_, _| {}).expect("the recipe");
    let truth_path = spdnn_sdgc::paths::find_official(&root, "neuron1024-l120-categories.tsv")
        .expect("the truth is there with the network");
    let truth = spdnn_sdgc::tsv::read_categories(&truth_path).expect("the truth");
    // The flipped rows, and the truth's categories around them (rows that must stay).
    let mut rows: Vec<u32> = FP16_SPLIT_FLIPS.to_vec();
    for flip in FP16_SPLIT_FLIPS {
        let near = truth.partition_point(|&r| r < flip);
        rows.extend(&truth[near.saturating_sub(2)..(near + 2).min(truth.len())]);
    }
    rows.sort_unstable();
    rows.dedup();
    let mut triplets = Vec::new();
    for (k, &r) in rows.iter().enumerate() {
        let (cols, vals) = full.features.row(r as usize - 1);
        triplets.extend(cols.iter().zip(vals).map(|(&c, &v)| (k as u32, c, v)));
    }
    problem.input = spdnn_formats::Csr::from_triplets(rows.len(), 1024, &triplets).unwrap();
    let expect: Vec<u32> = (1..=rows.len() as u32)
        .filter(|&k| truth.binary_search(&rows[k as usize - 1]).is_ok())
        .collect();
    assert_eq!(expect.len(), rows.len() - FP16_SPLIT_FLIPS.len());
    let layers = layout(&problem.layers, 0.25);
    let e = emulate::run(&layers, &problem.input, problem.bias, problem.upper, |_| {
        Split::TENSOR
    })
    .expect("the official input is in range");
    assert_eq!(
        e.categories, expect,
        "rows {rows:?}: categories differ from the official truth"
    );
    let result = GpuInference {
        categories: e.categories,
        output: Some(e.output),
        ..GpuInference::default()
    };
    compare(&problem, &result, Tolerance::Relative(1e-5)).unwrap();
}

/// Emulates `problem` (a bias per output neuron, put into each layer's output order as the
/// `_neurons` kernels read it) and compares categories, values and predictions with the
/// reference; returns the near ties that differ.
fn check_biased(
    problem: &BiasedProblem,
    layers: &[SzLayer],
    split: Split,
    tolerance: Tolerance,
    tie: f32,
) -> Result<usize, String> {
    let e = emulate::run_biased(
        layers,
        &problem.input,
        &problem.biases,
        problem.upper,
        |_| split,
    )?;
    let result = GpuInference {
        categories: e.categories,
        output: Some(e.output),
        ..GpuInference::default()
    };
    biased::compare(problem, &result, tolerance, tie)
}

#[test]
fn per_neuron_biases_are_bit_exact_on_random_rectangular_chains() {
    // Dyadic weights, inputs and biases ≤ 0: every order of additions is exact, so the
    // emulation must equal the reference bit for bit, at every fill and split.
    let mut runner = TestRunner::new(Config::with_cases(48));
    let outcome = runner.run(&biased::biased_problem(80, 40, false), |p| {
        for min_fill in [0.0, 0.25, 2.0] {
            let layers = layout(&p.layers, min_fill);
            for split in SPLITS {
                check_biased(&p, &layers, split, Tolerance::Exact, 0.0)
                    .map_err(|e| TestCaseError::fail(format!("fill {min_fill}, {split:?}: {e}")))?;
            }
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

#[test]
fn per_neuron_biases_follow_each_layers_output_order() {
    // The biases must be read in each layer's output order (reading biases[k] at position
    // k fails this and the other biased tests: checked by breaking run_biased on purpose).
    // Here the reordering moves the outputs of the 55 %-dense layers (a dense layer's
    // outputs all read every input: they keep their order) and the biases change values.
    let p = biased::trained_shaped_problem(64, 2, 24, false, 5);
    let layers = layout(&p.layers, 0.25);
    let moved = layers
        .iter()
        .filter(|l| l.order.iter().enumerate().any(|(p, &k)| p != k as usize))
        .count();
    assert!(
        moved >= 2,
        "the reordering moves outputs of {moved} layers (the 55 % ones)"
    );
    check_biased(&p, &layers, Split::TENSOR, Tolerance::Relative(1e-4), 1e-5).unwrap();
    let unbiased = emulate::run(&layers, &p.input, 0.0, p.upper, |_| Split::TENSOR).unwrap();
    let biased =
        emulate::run_biased(&layers, &p.input, &p.biases, p.upper, |_| Split::TENSOR).unwrap();
    assert_ne!(
        biased.output, unbiased.output,
        "the biases change the values"
    );
}

#[test]
fn trained_shaped_chains() {
    // 784 → N (dense) → N (55 %) … → 10 (dense), bound 1, real weights (two or three bf16
    // terms) and biases ≤ 0: at fill ¼ every 16 × 16 block of a 55 %-dense layer is dense,
    // at 0.6 only some are (the rest goes to CSR), at 2 none.
    for (n, sparse, rows, seed) in [(128, 2, 40, 1), (64, 3, 33, 2)] {
        let p = biased::trained_shaped_problem(n, sparse, rows, false, seed);
        for min_fill in [0.25, 0.6, 2.0] {
            let layers = layout(&p.layers, min_fill);
            let stats = layers
                .iter()
                .fold(format::LayoutStats::default(), |mut s, l| {
                    s.add(l);
                    s
                });
            assert_eq!(layers[0].inputs, 784);
            assert_eq!(layers.last().unwrap().outputs, 10);
            if min_fill <= 1.0 {
                assert!(
                    stats.split_layers > 0,
                    "real weights take more than one term"
                );
                assert!(stats.blocks > 0, "fill {min_fill}: some blocks are found");
            } else {
                assert_eq!(stats.dense_share(), 0.0);
            }
            for split in SPLITS {
                let ties = check_biased(&p, &layers, split, Tolerance::Relative(1e-4), 1e-5)
                    .unwrap_or_else(|e| panic!("{n}-{sparse}, fill {min_fill}, {split:?}: {e}"));
                assert!(ties <= 1, "{ties} near ties differ");
            }
            eprintln!(
                "{n}-{sparse} fill {min_fill}: {} blocks, dense share {:.3}, rest {}",
                stats.blocks,
                stats.dense_share(),
                stats.rest_nnz
            );
        }
    }
}

#[test]
fn positive_biases_are_refused() {
    let p = biased::trained_shaped_problem(32, 1, 4, true, 3);
    assert!(p.biases.iter().flatten().any(|&b| b > 0.0));
    let chain = LayerChain::with_biases(&p.layers, &p.biases, p.upper);
    for error in [
        method::check_bias_support::<Sz>(&chain),
        method::check_bias_support::<SzT4>(&chain),
    ] {
        let error = error.unwrap_err().to_string();
        assert!(error.contains("only for biases ≤ 0"), "{error}");
    }
    // Biases ≤ 0 are taken.
    let p = biased::trained_shaped_problem(32, 1, 4, false, 3);
    let chain = LayerChain::with_biases(&p.layers, &p.biases, p.upper);
    method::check_bias_support::<Sz>(&chain).unwrap();
    method::check_bias_support::<SzT4>(&chain).unwrap();
    // The emulation refuses biases that do not match the layers.
    let layers = layout(&p.layers, 0.25);
    let e = emulate::run_biased(&layers, &p.input, &p.biases[1..], p.upper, |_| {
        Split::TENSOR
    })
    .unwrap_err();
    assert!(e.contains("bias vectors"), "{e}");
}
