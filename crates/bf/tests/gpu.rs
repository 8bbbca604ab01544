//! BF against the CPU reference. These need a CUDA GPU: run with `--include-ignored`
//! on the GPU machine (`cargo xtask device-pack`).

use spdnn_bf::{BfOptions, infer};
use spdnn_cuda::Gpu;
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_cuda::slab_weights::Residency;
use spdnn_gputest::{
    Problem, check_challenge, check_exact_random, check_general_random, check_official_1024,
};

const SPEC: RunSpec = RunSpec {
    warmup: 1,
    repetitions: 2,
    keep_output: true,
};

fn run_with(
    options: BfOptions,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| infer(gpu, &p.layers, &p.input, p.bias, p.upper, &options, &SPEC)
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
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn general_random_networks() {
    check_general_random(&run_with(BfOptions {
        slab_width: Some(32),
        residency: Residency::Auto,
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
    };
    assert!(infer(&gpu, &[w], &x, -0.3, 32.0, &too_wide, &spec).is_err());
}
