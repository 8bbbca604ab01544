//! The CPU proof of the kernels' arithmetic: the emulation of `sz.cu` (fragments lane by
//! lane, fp16 hi/lo splits, exact products summed in fp32, the CSR rest, the clip) over
//! the real layouts, against the CPU reference. No GPU needed.

use proptest::test_runner::{Config, TestCaseError, TestRunner};
use spdnn_cuda::rows::GpuInference;
use spdnn_gputest::{Problem, Tolerance, compare};
use spdnn_sz::emulate::{self, Split};
use spdnn_sz::format::{self, LayoutError, SzLayer};
use spdnn_sz::reorder::reorder_network;

/// The layouts of `problem`'s layers at block fill `min_fill`.
fn layout(problem: &Problem, min_fill: f32) -> Vec<SzLayer> {
    let reorderings = reorder_network(&problem.layers, min_fill);
    let mut layers = Vec::new();
    format::build_layers::<LayoutError>(
        &problem.layers,
        &reorderings,
        |_| true,
        4,
        |_, l| {
            layers.push(l);
            Ok(())
        },
    )
    .expect("layout");
    layers
}

/// Emulates `problem` at `min_fill` with `split` and compares with the reference.
fn check(
    problem: &Problem,
    min_fill: f32,
    split: Split,
    tolerance: Tolerance,
) -> Result<(), String> {
    let layers = layout(problem, min_fill);
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
    // Weights in (0, 0.5] that are not fp16: the layers take the residual fragments.
    proptest_all(
        spdnn_gputest::general_problem(80, 40),
        32,
        Tolerance::Relative(1e-5),
    );
}

#[test]
fn generated_challenge_networks() {
    let problem = spdnn_gputest::challenge_problem(1024, 12, 96, 7);
    let layers = layout(&problem, 0.25);
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
    assert_eq!(stats.split_layers, 0, "1/16 is exact in fp16");
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
    let layers = layout(&problem, 0.25);
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
    let layers = layout(&problem, 0.25);
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
