//! The kernel's arithmetic emulated on the CPU (`spdnn_tcchain::emulate`, over the packed
//! layers as the device reads them) against the reference: bit for bit on the exact random
//! problems, within the GPU methods' tolerance elsewhere, predictions equal on
//! trained-shaped chains. No GPU needed.

use proptest::test_runner::{Config, TestCaseError, TestRunner};
use spdnn_cuda::rows::{GpuInference, categories_from_flags};
use spdnn_formats::SparseMatrix;
use spdnn_gputest::biased::{BiasedProblem, biased_problem, trained_shaped_problem};
use spdnn_gputest::{Problem, Tolerance, compare};
use spdnn_tcchain::emulate::{self, Biases};
use spdnn_tcchain::layout::PackedLayer;

fn pack(layers: &[spdnn_formats::Csr]) -> Vec<PackedLayer> {
    let mut widths = vec![layers[0].nrows()];
    widths.extend(layers.iter().map(|w| w.ncols()));
    let warp_tiles = spdnn_tcchain::layout::chain_warp_tiles(&widths);
    layers
        .iter()
        .map(|w| PackedLayer::pack(w, warp_tiles).expect("finite weights"))
        .collect()
}

fn as_result((output, flags): (Vec<f32>, Vec<u8>)) -> GpuInference {
    GpuInference {
        categories: categories_from_flags(&flags),
        output: Some(output),
        ..GpuInference::default()
    }
}

fn emulated(problem: &Problem) -> GpuInference {
    as_result(emulate::run(
        &pack(&problem.layers),
        Biases::Scalar(problem.bias),
        problem.upper,
        &problem.input,
    ))
}

fn emulated_biased(problem: &BiasedProblem) -> GpuInference {
    as_result(emulate::run(
        &pack(&problem.layers),
        Biases::PerNeuron(&problem.biases),
        problem.upper,
        &problem.input,
    ))
}

fn check_all<P: std::fmt::Debug>(
    cases: u32,
    strategy: impl proptest::strategy::Strategy<Value = P>,
    check: impl Fn(&P) -> Result<(), String>,
) {
    let mut runner = TestRunner::new(Config::with_cases(cases));
    if let Err(e) = runner.run(&strategy, |p| check(&p).map_err(TestCaseError::fail)) {
        panic!("{e}");
    }
}

#[test]
fn exact_random_problems_are_bit_exact() {
    check_all(64, spdnn_gputest::exact_problem(80, 120), |p| {
        compare(p, &emulated(p), Tolerance::Exact)
    });
}

#[test]
fn rectangular_problems_are_bit_exact() {
    check_all(64, spdnn_gputest::rectangular_problem(80, 120), |p| {
        compare(p, &emulated(p), Tolerance::Exact)
    });
}

#[test]
fn general_random_problems_are_within_tolerance() {
    check_all(64, spdnn_gputest::general_problem(80, 120), |p| {
        compare(p, &emulated(p), Tolerance::Relative(1e-5))
    });
}

#[test]
fn per_neuron_biases_are_bit_exact() {
    check_all(64, biased_problem(80, 120, false), |p| {
        spdnn_gputest::biased::compare(p, &emulated_biased(p), Tolerance::Exact, 0.0).map(|_| ())
    });
}

#[test]
fn trained_shaped_chains_predict_as_the_reference() {
    for (n, sparse, seed) in [(128, 6, 1), (256, 4, 2)] {
        let problem = trained_shaped_problem(n, sparse, 300, false, seed);
        let ties = spdnn_gputest::biased::compare(
            &problem,
            &emulated_biased(&problem),
            Tolerance::Relative(1e-5),
            1e-5,
        )
        .unwrap_or_else(|e| panic!("{n}-{sparse}: {e}"));
        assert_eq!(ties, 0, "{n}-{sparse}");
    }
}

#[test]
fn a_challenge_network_is_within_tolerance() {
    let problem = spdnn_gputest::challenge_problem(1024, 24, 40, 3);
    compare(&problem, &emulated(&problem), Tolerance::Relative(1e-5)).unwrap();
    // The challenge's weights (1/16) need one fp16 term.
    assert!(pack(&problem.layers).iter().all(|l| !l.two_term_weights));
}
