//! The cuSPARSE baseline against the CPU reference. These need a CUDA GPU: run with
//! `--include-ignored` on the GPU machine (`cargo xtask device-pack`).

use spdnn_cuda::Gpu;
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_cusparse::infer;
use spdnn_gputest::{
    Problem, check_challenge, check_exact_random, check_general_random, check_official_1024,
};

const SPEC: RunSpec = RunSpec {
    warmup: 1,
    repetitions: 2,
    keep_output: true,
};

fn run(gpu: &Gpu, p: &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    infer(gpu, &p.layers, &p.input, p.bias, p.upper, &SPEC)
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
