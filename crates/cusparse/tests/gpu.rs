//! The cuSPARSE baseline against the CPU reference. These need a CUDA GPU: run with
//! `--include-ignored` on the GPU machine (`cargo xtask device-pack`).

use spdnn_cuda::Gpu;
use spdnn_cuda::method::{self, LayerChain, NoOptions};
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_cusparse::Cusparse;
use spdnn_cusparse::infer;
use spdnn_gputest::biased::{
    BiasedProblem, check_biased_random, check_trained_nets, check_trained_shaped,
};
use spdnn_gputest::{
    Problem, check_challenge, check_compressed, check_exact_random, check_general_random,
    check_official_1024, check_rectangular_random,
};

/// One warm-up and two timed runs (one at sanitize scale), the output kept.
fn spec() -> RunSpec {
    spdnn_gputest::run_spec(1, 2)
}

fn run(gpu: &Gpu, p: &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    infer(gpu, &p.layers, &p.input, p.bias, p.upper, &spec())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks() {
    check_exact_random(&run);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn general_random_networks() {
    check_general_random(&run);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generated_challenge_networks() {
    check_challenge(&run, 1024, 120, 3000);
    check_challenge(&run, 4096, 24, 500);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn official_1024_network() {
    check_official_1024(&run);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rectangular_random_networks() {
    check_rectangular_random(&run);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn compressed_networks() {
    check_compressed(&run);
}

fn run_biased(gpu: &Gpu, p: &BiasedProblem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    method::run::<Cusparse>(
        gpu,
        &LayerChain::with_biases(&p.layers, &p.biases, p.upper),
        &p.input,
        &NoOptions,
        &spec(),
    )
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn per_neuron_biases_of_both_signs() {
    check_biased_random(&run_biased, true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_shaped_chains_with_positive_biases() {
    check_trained_shaped(&run_biased, true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_networks_a_b_c() {
    check_trained_nets(&run_biased);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_negative_input_under_a_positive_first_layer_bias_is_refused() {
    let gpu = spdnn_gputest::gpu();
    let p = BiasedProblem {
        layers: vec![spdnn_formats::Csr::from_triplets(2, 1, &[(0, 0, 1.0)]).unwrap()],
        input: spdnn_formats::Csr::from_triplets(1, 2, &[(0, 0, -1.0)]).unwrap(),
        biases: vec![vec![0.5]],
        upper: 1.0,
    };
    let error = run_biased(&gpu, &p).unwrap_err().to_string();
    assert!(error.contains("needs Y ≥ 0"), "{error}");
}
