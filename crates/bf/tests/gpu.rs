//! BF against the CPU reference. These need a CUDA GPU: run with `--include-ignored`
//! on the GPU machine (`cargo xtask device-pack`).

use spdnn_bf::{Bf, BfOptions, infer};
use spdnn_cuda::Gpu;
use spdnn_cuda::method::{self, LayerChain};
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_cuda::slab_weights::Residency;
use spdnn_formats::SparseMatrix;
use spdnn_glare::{Glare, GlareKernel, model};
use spdnn_gputest::biased::{
    BiasedProblem, check_biased_random, check_trained_nets, check_trained_shaped,
};
use spdnn_gputest::{
    Problem, check_challenge, check_compressed, check_exact_random, check_general_random,
    check_glare_random, check_glare_saturating, check_official_1024, check_rectangular_random,
};

/// One warm-up and two timed runs (one at sanitize scale), the output kept.
fn spec() -> RunSpec {
    spdnn_gputest::run_spec(1, 2)
}

fn run_with(
    options: BfOptions,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| infer(gpu, &p.layers, &p.input, p.bias, p.upper, &options, &spec())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_default_slabs() {
    check_exact_random(&run_with(BfOptions::default()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_narrow_slabs_streamed() {
    // Slabs of 7 columns: many slabs and a narrow last one; weights streamed.
    check_exact_random(&run_with(BfOptions {
        slab_width: Some(7),
        residency: Residency::Streamed,
        glare: None,
        ..BfOptions::default()
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn general_random_networks() {
    check_general_random(&run_with(BfOptions {
        slab_width: Some(32),
        residency: Residency::Auto,
        glare: None,
        ..BfOptions::default()
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generated_challenge_networks() {
    check_challenge(&run_with(BfOptions::default()), 1024, 120, 3000);
    check_challenge(
        &run_with(BfOptions {
            slab_width: None,
            residency: Residency::Streamed,
            glare: None,
            ..BfOptions::default()
        }),
        4096,
        24,
        500,
    );
    check_challenge(&run_with(BfOptions::default()), 16384, 12, 64);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn official_1024_network() {
    check_official_1024(&run_with(BfOptions::default()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rectangular_random_networks() {
    check_rectangular_random(&run_with(BfOptions::default()));
    // Slabs of 7 columns: several slabs in the wide layers, one narrow slab in the others.
    check_rectangular_random(&run_with(BfOptions {
        slab_width: Some(7),
        residency: Residency::Streamed,
        glare: None,
        ..BfOptions::default()
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn compressed_networks() {
    check_compressed(&run_with(BfOptions::default()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_problems_are_errors() {
    let gpu = spdnn_gputest::gpu();
    let w = spdnn_formats::Csr::from_triplets(4, 4, &[(0, 1, 1.0)]).unwrap();
    let x = spdnn_formats::Csr::from_triplets(2, 3, &[(0, 1, 1.0)]).unwrap();
    let spec = RunSpec::default();
    assert!(
        infer(
            &gpu,
            std::slice::from_ref(&w),
            &x,
            -0.3,
            32.0,
            &BfOptions::default(),
            &spec
        )
        .is_err()
    );
    let x = spdnn_formats::Csr::from_triplets(2, 4, &[(0, 1, 1.0)]).unwrap();
    assert!(
        infer(
            &gpu,
            std::slice::from_ref(&w),
            &x,
            0.3,
            32.0,
            &BfOptions::default(),
            &spec
        )
        .is_err()
    );
    let too_wide = BfOptions {
        slab_width: Some(1 << 20),
        residency: Residency::Auto,
        glare: None,
        ..BfOptions::default()
    };
    assert!(infer(&gpu, &[w], &x, -0.3, 32.0, &too_wide, &spec).is_err());
}

/// BF with GLARE: the segment is one of the lengths BF accepts for the problem's N (the
/// widest width of a rectangular chain), varied with the problem (so units span slabs and
/// rows have several units).
fn run_glare(
    slab_width: Option<usize>,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| {
        let n = p
            .layers
            .iter()
            .map(SparseMatrix::ncols)
            .fold(p.input.ncols(), usize::max);
        let slab = slab_width.unwrap_or_else(|| {
            spdnn_cuda::slab_weights::slab_width_for(
                n,
                spdnn_cuda::slab_weights::DEFAULT_SHARED_BYTES,
            )
        });
        let shape = model::Shape {
            neurons: n,
            slab_width: slab.min(n),
            first_layer: 0,
        };
        let candidates = Bf::candidates(&shape);
        let segment = candidates[(n + p.input.nrows()) % candidates.len()];
        let options = BfOptions {
            slab_width,
            residency: Residency::Auto,
            glare: Some(Glare::new(segment)),
            ..BfOptions::default()
        };
        infer(gpu, &p.layers, &p.input, p.bias, p.upper, &options, &spec())
    }
}

// The GLARE check in four tests, each one process of bounded length under racecheck (the
// random half of one slab width alone ran past 528 s there, 2026-11-27).
#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_random_networks() {
    check_glare_random(&run_glare(None));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_saturating_networks() {
    check_glare_saturating(&run_glare(None));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_random_networks_in_slabs_7_wide() {
    check_glare_random(&run_glare(Some(7)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_saturating_networks_in_slabs_7_wide() {
    check_glare_saturating(&run_glare(Some(7)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_rectangular_and_compressed_networks() {
    check_rectangular_random(&run_glare(None));
    check_rectangular_random(&run_glare(Some(7)));
    check_compressed(&run_glare(None));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_challenge_networks() {
    let with = |segment: usize| BfOptions {
        glare: Some(Glare::new(segment)),
        ..BfOptions::default()
    };
    check_challenge(&run_with(with(1024)), 1024, 120, 3000);
    // Two slabs of 8192: units of 16384 span both, units of 8192 do not.
    check_challenge(&run_with(with(16384)), 16384, 12, 64);
    check_challenge(&run_with(with(8192)), 16384, 12, 64);
    check_official_1024(&run_with(with(1024)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_segments_bf_cannot_use_are_errors() {
    let gpu = spdnn_gputest::gpu();
    let p = spdnn_gputest::challenge_problem(1024, 2, 8, 1);
    for segment in [0, 100, 512] {
        let options = BfOptions {
            glare: Some(Glare::new(segment)),
            ..BfOptions::default()
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
}

fn run_biased(gpu: &Gpu, p: &BiasedProblem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    method::run::<Bf>(
        gpu,
        &LayerChain::with_biases(&p.layers, &p.biases, p.upper),
        &p.input,
        &BfOptions::default(),
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
fn positive_biases_are_refused() {
    let gpu = spdnn_gputest::gpu();
    let p = spdnn_gputest::biased::trained_shaped_problem(32, 1, 4, true, 3);
    let error = run_biased(&gpu, &p).unwrap_err().to_string();
    assert!(error.contains("only for biases ≤ 0"), "{error}");
}
