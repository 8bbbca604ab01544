//! What `spdnn sweep` reuses of `spdnn bench`: its flags, its benchmarks (network, input
//! and truth, prepared once for many runs) and its runs.

use std::path::Path;

use anyhow::{Context, Result};
use spdnn_engine::data::WeightsSpec;
use spdnn_engine::{OptionSet, RunReport};
use spdnn_sdgc::generator;

use super::{BenchArgs, Case, Preparer, run_case};
use crate::method_args::MethodArgs;
use crate::progress;

/// One benchmark as `spdnn bench` prepares it.
pub struct Prepared(Case);

impl BenchArgs {
    /// The N values and the L values.
    pub fn shapes(&self) -> (&[usize], &[usize]) {
        (&self.neurons, &self.layers)
    }

    /// The methods given with `--methods`.
    pub fn named_methods(&self) -> &[String] {
        &self.methods
    }

    /// The method and modifier flags.
    pub fn method_args(&self) -> &MethodArgs {
        &self.method_options
    }

    /// The results folder (`--out`).
    pub fn out_dir(&self) -> &Path {
        &self.out
    }

    /// Whether the JSON document goes to stdout (`--json`).
    pub fn json(&self) -> bool {
        self.json
    }
}

/// Prepares the benchmarks of each N-L as `spdnn bench` does (one input per N).
pub struct Cases<'a>(Preparer<'a>);

impl<'a> Cases<'a> {
    /// Cases of `args`, with progress on `log`.
    pub fn new(args: &'a BenchArgs, log: &'a progress::Log) -> Self {
        Self(Preparer::new(args, log))
    }

    /// The benchmarks of one N-L: the generated network, and the official one when its
    /// files are at hand (RadiX-Net networks only).
    pub fn of(
        &mut self,
        args: &BenchArgs,
        neurons: usize,
        layers: usize,
        notes: &mut Vec<String>,
    ) -> Result<Vec<Prepared>> {
        let weights = args.weights_spec()?;
        if let WeightsSpec::Random { fan_in, .. } = weights {
            generator::check_random(neurons, fan_in)?;
        }
        let cases = self.0.cases(&weights, neurons, layers, notes)?;
        Ok(cases.into_iter().map(Prepared).collect())
    }
}

/// Runs `method` with `options` on `case` as `spdnn bench` does.
pub fn run(
    method: &dyn spdnn_engine::Method,
    case: &Prepared,
    args: &BenchArgs,
    options: &OptionSet,
    log: &progress::Log,
) -> Result<RunReport> {
    run_case(method, &case.0, args, options, log, None)
        .with_context(|| format!("{} on {}", method.name(), case.0.benchmark.name()))
}
