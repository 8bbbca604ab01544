//! The fused tensor-core chain (`spdnn-tcchain`) on a network read from TSV files.
//!
//! Uses only `spdnn-tcchain`, `spdnn-formats` and `spdnn-cuda`: a user who lifts the crate
//! needs nothing more. The TSV reader and the CPU check are `spdnn_cuda::standalone`.
//!
//! ```text
//! spdnn generate --neurons 1024 --layers 120 --seed 0 --out nets/1024
//! spdnn images --neurons 1024 --rows 2000 --out nets/images-1024.tsv
//! cargo run --release -p spdnn-tcchain --example tsv -- nets/1024 120 nets/images-1024.tsv
//! ```
//!
//! Arguments: a folder of `n{N}-l{i}.tsv` files (`row<TAB>col<TAB>value`, 1-based, row =
//! input neuron), the layers L to run, an images file (`image<TAB>neuron<TAB>value`), and
//! optionally the bias (the challenge's for N by default). It prints the categories, the
//! time, and whether the categories equal those of a plain CPU loop. Exit status: 0 when
//! they do, 1 when not, 2 on any error (no GPU, no NVRTC, a malformed file…). The method is
//! built for dense-ish layers; on the challenge's 3 %-dense ones it is correct but slow.

use std::process::ExitCode;

use spdnn_cuda::Gpu;
use spdnn_cuda::rows::RunSpec;
use spdnn_cuda::standalone::{self, CHALLENGE_UPPER};
use spdnn_tcchain::TcChainOptions;

fn main() -> ExitCode {
    standalone::run_example("tcchain", |problem| {
        let gpu = Gpu::new(0)?;
        let spec = RunSpec {
            warmup: 1,
            repetitions: 5,
            ..RunSpec::default()
        };
        Ok(spdnn_tcchain::infer(
            &gpu,
            &problem.layers,
            &problem.input,
            problem.bias,
            CHALLENGE_UPPER,
            &TcChainOptions::default(),
            &spec,
        )?)
    })
}
