//! The GPU methods as registry entries.

use anyhow::{Context, Result};
use spdnn_cuda::Gpu;
use spdnn_cuda::rows::{GpuInference, RunSpec};

use crate::method::{Method, MethodOutput, Problem, Timing};
use crate::run::RunConfig;

/// Opens GPU 0 with a message that says what is missing.
fn open_gpu() -> Result<Gpu> {
    Gpu::new(0).context("this method needs a CUDA GPU")
}

fn spec(config: &RunConfig) -> RunSpec {
    RunSpec {
        warmup: config.warmup,
        repetitions: config.repetitions.max(1),
        keep_output: false,
    }
}

fn output(gpu: &Gpu, result: GpuInference) -> MethodOutput {
    let mut details = serde_json::Map::new();
    details.insert("gpu".into(), gpu.name().into());
    for (key, value) in result.details {
        details.insert(key, value.into());
    }
    MethodOutput {
        categories: result.categories,
        infer_ms: result.infer_ms,
        total_ms: result.total_ms,
        timing: Timing::CudaEvents,
        details: serde_json::Value::Object(details),
    }
}

/// BF-2019 (`bf`).
pub struct Bf;

impl Method for Bf {
    fn name(&self) -> &'static str {
        "bf"
    }
    fn description(&self) -> &'static str {
        "BF-2019: column-slab CSR, non-empty row lists, double-buffered weights"
    }
    fn needs_gpu(&self) -> bool {
        true
    }
    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput> {
        let gpu = open_gpu()?;
        let result = spdnn_bf::infer(
            &gpu,
            problem.network.layers(),
            &problem.input.features,
            problem.bias,
            problem.upper_bound,
            &spdnn_bf::BfOptions::default(),
            &spec(config),
        )?;
        Ok(output(&gpu, result))
    }
}

/// SNIG-2020 (`snig`).
pub struct Snig;

impl Method for Snig {
    fn name(&self) -> &'static str {
        "snig"
    }
    fn description(&self) -> &'static str {
        "SNIG-2020: sections with nonzero flags, incremental resetting, CUDA graph"
    }
    fn needs_gpu(&self) -> bool {
        true
    }
    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput> {
        let gpu = open_gpu()?;
        let result = spdnn_snig::infer(
            &gpu,
            problem.network.layers(),
            &problem.input.features,
            problem.bias,
            problem.upper_bound,
            &spdnn_snig::SnigOptions::default(),
            &spec(config),
        )?;
        Ok(output(&gpu, result))
    }
}

/// The cuSPARSE baseline (`cusparse`).
pub struct Cusparse;

impl Method for Cusparse {
    fn name(&self) -> &'static str {
        "cusparse"
    }
    fn description(&self) -> &'static str {
        "baseline: cuSPARSE SpMM per layer + bias-and-clip kernel"
    }
    fn needs_gpu(&self) -> bool {
        true
    }
    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput> {
        let gpu = open_gpu()?;
        let result = spdnn_cusparse::infer(
            &gpu,
            problem.network.layers(),
            &problem.input.features,
            problem.bias,
            problem.upper_bound,
            &spec(config),
        )?;
        Ok(output(&gpu, result))
    }
}
