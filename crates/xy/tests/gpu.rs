//! XY against the CPU reference. These need a CUDA GPU: run with `--include-ignored`
//! on the GPU machine (`cargo xtask device-pack`).

use spdnn_cuda::Gpu;
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_formats::SparseMatrix;
use spdnn_glare::{Glare, GlareKernel, model};
use spdnn_gputest::biased::{
    BiasedProblem, check_biased_random, check_trained_nets, check_trained_shaped,
};
use spdnn_gputest::{
    Problem, check_challenge, check_compressed, check_exact_random, check_general_random,
    check_glare, check_grouped_random, check_official_1024, check_rectangular_random,
};
use spdnn_xy::{Xy, XyOptions, infer};

/// One warm-up and two timed runs (one at sanitize scale), the output kept.
fn spec() -> RunSpec {
    spdnn_gputest::run_spec(1, 2)
}

fn options(row_major_layers: Option<usize>, delete_at: Option<usize>) -> XyOptions {
    XyOptions {
        delete_at,
        row_major_layers,
        cache_dir: None,
        glare: None,
    }
}

fn run_with(
    options: XyOptions,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| infer(gpu, &p.layers, &p.input, p.bias, p.upper, &options, &spec())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_default_phases() {
    check_exact_random(&run_with(XyOptions::default()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_every_phase_early() {
    // One row-major layer, then neuron-major with the deletion after layer 2.
    check_exact_random(&run_with(options(Some(1), Some(2))));
    // Neuron-major from the start (the input transposed), deletion after layer 1.
    check_exact_random(&run_with(options(Some(0), Some(1))));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn grouped_random_networks() {
    check_grouped_random(&run_with(XyOptions::default()));
    check_grouped_random(&run_with(options(Some(1), Some(2))));
    check_grouped_random(&run_with(options(Some(2), None)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn general_random_networks() {
    check_general_random(&run_with(options(Some(1), Some(3))));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rectangular_random_networks() {
    check_rectangular_random(&run_with(XyOptions::default()));
    // Neuron-major after one row-major layer, the deletion after layer 2.
    check_rectangular_random(&run_with(options(Some(1), Some(2))));
    // Neuron-major from the input on (the input's width transposed), deletion after 1.
    check_rectangular_random(&run_with(options(Some(0), Some(1))));
    // Row-major through every layer.
    check_rectangular_random(&run_with(options(Some(10), None)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn compressed_networks() {
    check_compressed(&run_with(XyOptions::default()));
    check_compressed(&run_with(options(Some(0), Some(3))));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generated_challenge_networks() {
    check_challenge(&run_with(XyOptions::default()), 1024, 120, 3000);
    check_challenge(&run_with(options(None, Some(3))), 4096, 24, 500);
    check_challenge(&run_with(XyOptions::default()), 16384, 12, 64);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn official_1024_network() {
    check_official_1024(&run_with(XyOptions::default()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn breakdown_covers_every_layer() {
    let gpu = spdnn_gputest::gpu();
    let problem = spdnn_gputest::challenge_problem(1024, 30, 500, 3);
    let result = run_with(XyOptions::default())(&gpu, &problem).expect("xy runs");
    assert_eq!(result.layer_ms.len(), 30);
    assert!(
        result
            .layer_ms
            .iter()
            .all(|ms| ms.is_finite() && *ms >= 0.0)
    );
    let names: Vec<&str> = result.stages.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"row-major layers") && names.contains(&"neuron-major layers"));
    // The generated N = 1024 net has log2(1024 / 16) = 6 first-cycle layers.
    assert_eq!(result.detail("row_major_layers"), Some("6"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_problems_are_errors() {
    let gpu = spdnn_gputest::gpu();
    let w = spdnn_formats::Csr::from_triplets(4, 4, &[(0, 1, 1.0)]).unwrap();
    let x = spdnn_formats::Csr::from_triplets(2, 3, &[(0, 1, 1.0)]).unwrap();
    let spec = RunSpec::default();
    let opts = XyOptions::default();
    assert!(infer(&gpu, std::slice::from_ref(&w), &x, -0.3, 32.0, &opts, &spec).is_err());
    let x = spdnn_formats::Csr::from_triplets(2, 4, &[(0, 1, 1.0)]).unwrap();
    assert!(infer(&gpu, std::slice::from_ref(&w), &x, 0.3, 32.0, &opts, &spec).is_err());
    assert!(infer(&gpu, &[], &x, -0.3, 32.0, &opts, &spec).is_err());
}

/// XY with GLARE from layer `delete_at` on (one row-major layer, so short networks reach
/// it): the segment is one of the lengths XY accepts for the widest layer (N in a square
/// network), varied with the problem.
fn run_glare(
    delete_at: Option<usize>,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| {
        let n = p
            .layers
            .iter()
            .map(|w| w.ncols())
            .fold(p.input.ncols(), usize::max);
        let shape = model::Shape {
            neurons: n,
            slab_width: 0,
            first_layer: delete_at.unwrap_or(0),
        };
        let candidates = Xy::candidates(&shape);
        let segment = candidates[(n + p.input.nrows()) % candidates.len()];
        let options = XyOptions {
            glare: Some(Glare::new(segment)),
            ..options(Some(1), delete_at)
        };
        infer(gpu, &p.layers, &p.input, p.bias, p.upper, &options, &spec())
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_random_networks() {
    check_glare(&run_glare(Some(1)));
    check_glare(&run_glare(None));
    check_grouped_random(&run_glare(Some(2)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_rectangular_and_compressed_networks() {
    check_rectangular_random(&run_glare(Some(1)));
    check_rectangular_random(&run_glare(None));
    check_compressed(&run_glare(Some(2)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_challenge_networks() {
    let with = |segment: usize| XyOptions {
        glare: Some(Glare::new(segment)),
        ..options(None, Some(22))
    };
    check_challenge(&run_with(with(1024)), 1024, 120, 3000);
    // Units of 32 positions: two blocks of 16 outputs per unit, vetoes between them.
    check_challenge(&run_with(with(32)), 1024, 60, 3000);
    check_challenge(&run_with(with(2048)), 4096, 40, 600);
    check_official_1024(&run_with(with(1024)));
    check_official_1024(&run_with(with(64)));
}

/// XY on a problem with a bias per output neuron (the `_neurons` kernels).
fn run_biased(
    options: XyOptions,
) -> impl Fn(&Gpu, &BiasedProblem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    spdnn_gputest::biased::method_runner::<Xy>(options, spec())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn per_neuron_biases() {
    // Detected phases (the first layer row-major, then neuron-major).
    check_biased_random(&run_biased(options(None, Some(22))), false);
    // One row-major layer, the deletion after layer 2.
    check_biased_random(&run_biased(options(Some(1), Some(2))), false);
    // Neuron-major from the input on, the deletion after layer 1.
    check_biased_random(&run_biased(options(Some(0), Some(1))), false);
    // Row-major through every layer.
    check_biased_random(&run_biased(options(Some(10), None)), false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_shaped_chains() {
    // The dense first layer is one class (grouped), the sparse and last layers general.
    check_trained_shaped(&run_biased(XyOptions::default()), false);
    check_trained_shaped(&run_biased(options(Some(2), Some(3))), false);
    check_trained_shaped(&run_biased(options(Some(10), None)), false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_networks_a_b_c() {
    check_trained_nets(&run_biased(XyOptions::default()));
    check_trained_nets(&run_biased(options(Some(1), Some(3))));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn positive_biases_and_glare_are_refused() {
    let gpu = spdnn_gputest::gpu();
    let p = spdnn_gputest::biased::trained_shaped_problem(32, 1, 4, true, 3);
    let error = run_biased(XyOptions::default())(&gpu, &p)
        .unwrap_err()
        .to_string();
    assert!(error.contains("only for biases ≤ 0"), "{error}");
    let p = spdnn_gputest::biased::trained_shaped_problem(32, 1, 4, false, 3);
    let glare = XyOptions {
        glare: Some(Glare::new(32)),
        ..options(Some(1), Some(1))
    };
    let error = run_biased(glare)(&gpu, &p).unwrap_err().to_string();
    assert!(error.contains("xy+glare takes one bias"), "{error}");
}
