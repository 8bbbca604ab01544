//! The dense cuBLAS yardstick (`spdnn-dense`) on a network read from TSV files.
//!
//! Uses only `spdnn-dense`, `spdnn-formats` and `spdnn-cuda`: a user who lifts the crate
//! needs nothing more. The TSV reader and the CPU check are `spdnn_cuda::standalone`.
//!
//! ```text
//! spdnn generate --neurons 1024 --layers 120 --seed 0 --out nets/1024
//! spdnn images --neurons 1024 --rows 2000 --out nets/images-1024.tsv
//! cargo run --release -p spdnn-dense --example tsv -- nets/1024 120 nets/images-1024.tsv
//! ```
//!
//! Arguments: a folder of `n{N}-l{i}.tsv` files (`row<TAB>col<TAB>value`, 1-based, row =
//! input neuron), the layers L to run, an images file (`image<TAB>neuron<TAB>value`), and
//! optionally the bias (the challenge's for N by default). Every layer is densified
//! (`N × N` floats each, so keep N·N·L·4 bytes within the GPU's memory). It prints the
//! categories, the time, and whether the categories equal those of a plain CPU loop. Exit
//! status: 0 when they do, 1 when not, 2 on any error (no GPU, no cuBLAS, no NVRTC, a
//! malformed file, a network too large for the GPU…).

use std::process::ExitCode;

use spdnn_cuda::Gpu;
use spdnn_cuda::rows::RunSpec;
use spdnn_cuda::standalone::{self, CHALLENGE_UPPER};
use spdnn_dense::DenseOptions;

fn main() -> ExitCode {
    standalone::run_example("dense", |problem| {
        if !spdnn_dense::cublas_present() {
            return Err("libcublas is not installed (the CUDA toolkit's cuBLAS library)".into());
        }
        let gpu = Gpu::new(0)?;
        let spec = RunSpec {
            warmup: 1,
            repetitions: 5,
            ..RunSpec::default()
        };
        Ok(spdnn_dense::infer(
            &gpu,
            &problem.layers,
            &problem.input,
            problem.bias,
            CHALLENGE_UPPER,
            &DenseOptions::default(),
            &spec,
        )?)
    })
}
