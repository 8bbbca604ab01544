//! SNIG against the CPU reference. These need a CUDA GPU: run with `--include-ignored`
//! on the GPU machine (`cargo xtask device-pack`).

use spdnn_cuda::Gpu;
use spdnn_cuda::method::{self, LayerChain};
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_formats::SparseMatrix;
use spdnn_glare::Glare;
use spdnn_gputest::biased::{
    BiasedProblem, check_biased_random, check_trained_nets, check_trained_shaped,
};
use spdnn_gputest::{
    Problem, check_challenge, check_compressed, check_exact_random, check_general_random,
    check_glare_random, check_glare_saturating, check_official_1024, check_rectangular_random,
};
use spdnn_snig::{Snig, SnigOptions, infer};

/// One warm-up and two timed runs (one at sanitize scale), the output kept.
fn spec() -> RunSpec {
    spdnn_gputest::run_spec(1, 2)
}

fn run_with(
    options: SnigOptions,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| infer(gpu, &p.layers, &p.input, p.bias, p.upper, &options, &spec())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_graph() {
    check_exact_random(&run_with(SnigOptions::default()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_narrow_sections_without_graph() {
    // Sections of 5 columns: many sections skipped and reset individually.
    check_exact_random(&run_with(SnigOptions {
        section_width: Some(5),
        graph: false,
        glare: None,
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_narrow_sections_graph() {
    check_exact_random(&run_with(SnigOptions {
        section_width: Some(16),
        graph: true,
        glare: None,
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn general_random_networks() {
    check_general_random(&run_with(SnigOptions {
        section_width: Some(32),
        graph: true,
        glare: None,
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generated_challenge_networks() {
    check_challenge(&run_with(SnigOptions::default()), 1024, 120, 3000);
    check_challenge(&run_with(SnigOptions::default()), 4096, 24, 500);
    check_challenge(&run_with(SnigOptions::default()), 16384, 12, 64);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn official_1024_network() {
    check_official_1024(&run_with(SnigOptions::default()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rectangular_random_networks() {
    check_rectangular_random(&run_with(SnigOptions::default()));
    // Sections of 5 columns, layer by layer: section counts change from layer to layer.
    check_rectangular_random(&run_with(SnigOptions {
        section_width: Some(5),
        graph: false,
        glare: None,
    }));
    check_rectangular_random(&run_with(SnigOptions {
        section_width: Some(16),
        graph: true,
        glare: None,
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn compressed_networks() {
    check_compressed(&run_with(SnigOptions::default()));
}

/// SNIG with GLARE: the unit is the section, whose width varies with the problem (N: the
/// widest width of a rectangular chain).
fn run_glare(
    graph: bool,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| {
        let n = p
            .layers
            .iter()
            .map(SparseMatrix::ncols)
            .fold(p.input.ncols(), usize::max);
        let widths = [n, 7, 32, n.div_ceil(3).max(1)];
        let options = SnigOptions {
            section_width: None,
            graph,
            glare: Some(Glare::new(widths[(n + p.input.nrows()) % widths.len()])),
        };
        infer(gpu, &p.layers, &p.input, p.bias, p.upper, &options, &spec())
    }
}

// The GLARE check in four tests, each one process of bounded length under racecheck (each
// whole check took 474-516 s there, 2026-11-27).
#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_random_networks() {
    check_glare_random(&run_glare(true));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_saturating_networks() {
    check_glare_saturating(&run_glare(true));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_random_networks_without_a_graph() {
    check_glare_random(&run_glare(false));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_saturating_networks_without_a_graph() {
    check_glare_saturating(&run_glare(false));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_rectangular_and_compressed_networks() {
    check_rectangular_random(&run_glare(true));
    check_rectangular_random(&run_glare(false));
    check_compressed(&run_glare(true));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_challenge_networks() {
    let with = |segment: usize| SnigOptions {
        glare: Some(Glare::new(segment)),
        ..SnigOptions::default()
    };
    check_challenge(&run_with(with(1024)), 1024, 120, 3000);
    check_challenge(&run_with(with(256)), 1024, 40, 500);
    check_challenge(&run_with(with(8192)), 16384, 12, 64);
    check_official_1024(&run_with(with(1024)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_section_conflicts_are_errors() {
    let gpu = spdnn_gputest::gpu();
    let p = spdnn_gputest::challenge_problem(1024, 2, 8, 1);
    let options = SnigOptions {
        section_width: Some(512),
        glare: Some(Glare::new(1024)),
        ..SnigOptions::default()
    };
    assert!(
        infer(
            &gpu,
            &p.layers,
            &p.input,
            p.bias,
            p.upper,
            &options,
            &spec()
        )
        .is_err()
    );
}

fn run_biased(gpu: &Gpu, p: &BiasedProblem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    method::run::<Snig>(
        gpu,
        &LayerChain::with_biases(&p.layers, &p.biases, p.upper),
        &p.input,
        &SnigOptions::default(),
        &spec(),
    )
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn per_neuron_biases() {
    check_biased_random(&run_biased, false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_shaped_chains() {
    check_trained_shaped(&run_biased, false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_networks_a_b_c() {
    check_trained_nets(&run_biased);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn positive_biases_and_glare_are_refused() {
    let gpu = spdnn_gputest::gpu();
    let p = spdnn_gputest::biased::trained_shaped_problem(32, 1, 4, true, 3);
    let error = run_biased(&gpu, &p).unwrap_err().to_string();
    assert!(error.contains("only for biases ≤ 0"), "{error}");
    let p = spdnn_gputest::biased::trained_shaped_problem(32, 1, 4, false, 3);
    let glare = SnigOptions {
        glare: Some(Glare::new(32)),
        ..SnigOptions::default()
    };
    let chain = LayerChain::with_biases(&p.layers, &p.biases, p.upper);
    let error = method::run::<Snig>(&gpu, &chain, &p.input, &glare, &spec())
        .unwrap_err()
        .to_string();
    assert!(error.contains("snig+glare takes one bias"), "{error}");
}
