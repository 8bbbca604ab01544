//! SNIG against the CPU reference. These need a CUDA GPU: run with `--include-ignored`
//! on the GPU machine (`cargo xtask device-pack`).

use spdnn_cuda::Gpu;
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_formats::SparseMatrix;
use spdnn_glare::Glare;
use spdnn_gputest::{
    Problem, check_challenge, check_exact_random, check_general_random, check_glare,
    check_official_1024,
};
use spdnn_snig::{SnigOptions, infer};

const SPEC: RunSpec = RunSpec {
    warmup: 1,
    repetitions: 2,
    keep_output: true,
};

fn run_with(
    options: SnigOptions,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| infer(gpu, &p.layers, &p.input, p.bias, p.upper, &options, &SPEC)
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

/// SNIG with GLARE: the unit is the section, whose width varies with the problem.
fn run_glare(
    graph: bool,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| {
        let n = p.input.ncols();
        let widths = [n, 7, 32, n.div_ceil(3).max(1)];
        let options = SnigOptions {
            section_width: None,
            graph,
            glare: Some(Glare::new(widths[(n + p.input.nrows()) % widths.len()])),
        };
        infer(gpu, &p.layers, &p.input, p.bias, p.upper, &options, &SPEC)
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_random_networks() {
    check_glare(&run_glare(true));
    check_glare(&run_glare(false));
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
    assert!(infer(&gpu, &p.layers, &p.input, p.bias, p.upper, &options, &SPEC).is_err());
}
