//! What `spdnn sweep` reuses of `spdnn bench`: its flags, its benchmarks (network, input
//! and truth, prepared once for many runs) and its runs.

use std::path::Path;

use anyhow::{Context, Result};
use spdnn_engine::data::WeightsSpec;
use spdnn_engine::{OptionSet, RunReport};
use spdnn_sdgc::{generator, paths};

use super::{BenchArgs, Case, NetworkArg, generated_case, official_case, run_case};
use crate::method_args::MethodArgs;

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

/// The benchmarks of one N-L as `spdnn bench` runs them: the generated network, and the
/// official one when its files are at hand (RadiX-Net networks only).
pub fn cases(
    args: &BenchArgs,
    neurons: usize,
    layers: usize,
    show: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<Prepared>> {
    let weights = args.weights_spec()?;
    if let WeightsSpec::Random { fan_in, .. } = weights {
        generator::check_random(neurons, fan_in)?;
    }
    let data_dir = paths::data_dir();
    let mut cases = vec![Prepared(generated_case(
        args, &weights, neurons, layers, &data_dir, show, notes,
    )?)];
    if !args.no_official
        && args.network == NetworkArg::Radix
        && let Some(case) = official_case(args, neurons, layers, &data_dir, show, notes)?
    {
        cases.push(Prepared(case));
    }
    Ok(cases)
}

/// Runs `method` with `options` on `case` as `spdnn bench` does.
pub fn run(
    method: &dyn spdnn_engine::Method,
    case: &Prepared,
    args: &BenchArgs,
    options: &OptionSet,
    show: bool,
) -> Result<RunReport> {
    run_case(method, &case.0, args, options, show)
        .with_context(|| format!("{} on {}", method.name(), case.0.benchmark.name()))
}
