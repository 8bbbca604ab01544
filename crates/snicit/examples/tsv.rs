//! SNICIT (`spdnn-snicit`) on a network read from TSV files.
//!
//! Uses only `spdnn-snicit`, `spdnn-formats` and `spdnn-cuda` (and `spdnn-xy`, `spdnn-bf`, which it builds on): a user who lifts the
//! crate needs nothing more. The TSV reader and the CPU check are `spdnn_cuda::standalone`.
//!
//! ```text
//! spdnn generate --neurons 1024 --layers 120 --seed 0 --out nets/1024
//! spdnn images --neurons 1024 --rows 2000 --out nets/images-1024.tsv
//! cargo run --release -p spdnn-snicit --example tsv -- nets/1024 120 nets/images-1024.tsv
//! ```
//!
//! Arguments: a folder of `n{N}-l{i}.tsv` files (`row<TAB>col<TAB>value`, 1-based, row =
//! input neuron), the layers L to run, an images file (`image<TAB>neuron<TAB>value`), and
//! optionally the bias (the challenge's for N by default). It prints the categories, the
//! time and the stages (pre-convergence, conversion, post-convergence, recovery), and whether the categories equal those of a plain CPU loop. Exit
//! status: 0 when they do, 1 when not, 2 on any error (no GPU, no NVRTC, a malformed
//! file…).

use std::process::ExitCode;

use spdnn_cuda::Gpu;
use spdnn_cuda::rows::RunSpec;
use spdnn_cuda::standalone::{self, CHALLENGE_UPPER};
use spdnn_snicit::SnicitOptions;

fn main() -> ExitCode {
    standalone::run_example("snicit", |problem| {
        let gpu = Gpu::new(0)?;
        // The paper's parameters: threshold layer t = 30, s = 32 samples, n = 16 bins,
        // ε = η = 0.03, XY's kernels before t. A t at or past L clusters nothing.
        let options = SnicitOptions {
            threshold: 30.min(problem.layers.len()),
            ..SnicitOptions::default()
        };
        let spec = RunSpec {
            warmup: 1,
            repetitions: 5,
            ..RunSpec::default()
        };
        Ok(spdnn_snicit::infer(
            &gpu,
            &problem.layers,
            &problem.input,
            problem.bias,
            CHALLENGE_UPPER,
            &options,
            &spec,
        )?)
    })
}
