//! The GPU methods as registry entries.

use anyhow::{Context, Result};
use spdnn_cuda::Gpu;
use spdnn_cuda::rows::{GpuInference, RunSpec};

use crate::method::{Method, MethodOutput, Problem, Timing};
use crate::run::{RunConfig, validate_snicit, validate_xy};

/// Key of the stage times in a report's details.
pub(crate) const STAGES_KEY: &str = "stages_ms";
/// Key of the per-layer times in a report's details.
pub(crate) const LAYER_MS_KEY: &str = "layer_ms";

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

/// The report details of a GPU run: the GPU's name, the crate's details, the stage times
/// as `stages_ms: [{"stage": name, "ms": t}, …]` (an array, so the order is kept), the
/// per-layer times as `layer_ms: [t, …]` when measured, and the method's `parameters`.
fn details(
    gpu_name: &str,
    result: &GpuInference,
    parameters: Option<serde_json::Value>,
) -> serde_json::Value {
    let mut details = serde_json::Map::new();
    details.insert("gpu".into(), gpu_name.into());
    for (key, value) in &result.details {
        details.insert(key.clone(), value.as_str().into());
    }
    if !result.stages.is_empty() {
        let stages = result
            .stages
            .iter()
            .map(|(stage, ms)| serde_json::json!({ "stage": stage, "ms": ms }))
            .collect();
        details.insert(STAGES_KEY.into(), serde_json::Value::Array(stages));
    }
    if !result.layer_ms.is_empty() {
        details.insert(LAYER_MS_KEY.into(), result.layer_ms.clone().into());
    }
    if let Some(parameters) = parameters {
        details.insert("parameters".into(), parameters);
    }
    serde_json::Value::Object(details)
}

fn output(gpu: &Gpu, result: GpuInference, parameters: Option<serde_json::Value>) -> MethodOutput {
    let details = details(gpu.name(), &result, parameters);
    MethodOutput {
        categories: result.categories,
        infer_ms: result.infer_ms,
        total_ms: result.total_ms,
        timing: Timing::CudaEvents,
        details,
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
        Ok(output(&gpu, result, None))
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
        Ok(output(&gpu, result, None))
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
        Ok(output(&gpu, result, None))
    }
}

/// An `f32` parameter as JSON, written as its shortest decimal (0.03, not 0.0299999…).
fn f32_json(value: f32) -> serde_json::Value {
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// XY's parameters for the report.
fn xy_parameters(options: &spdnn_xy::XyOptions) -> serde_json::Value {
    serde_json::json!({
        "delete_at": options.delete_at.map_or_else(|| "never".into(), serde_json::Value::from),
        "row_major_layers": options
            .row_major_layers
            .map_or_else(|| "detect".into(), serde_json::Value::from),
        "cache_dir": options.cache_dir.as_ref().map(|d| d.display().to_string()),
    })
}

/// SNICIT's parameters for the report (XY's too when XY runs the pre-convergence layers).
fn snicit_parameters(options: &spdnn_snicit::SnicitOptions) -> serde_json::Value {
    let pre = match options.pre_convergence {
        spdnn_snicit::PreConvergence::Xy => "xy",
        spdnn_snicit::PreConvergence::Bf => "bf",
    };
    let mut value = serde_json::json!({
        "threshold": options.threshold,
        "samples": options.samples,
        "bins": options.bins,
        "epsilon": f32_json(options.epsilon),
        "eta": f32_json(options.eta),
        "refresh_interval": options.refresh_interval,
        "batch": options.batch.map_or_else(|| "all".into(), serde_json::Value::from),
        "pre_convergence": pre,
    });
    if options.pre_convergence == spdnn_snicit::PreConvergence::Xy {
        value["xy"] = xy_parameters(&options.xy);
    }
    value
}

/// XY-2021 (`xy`).
pub struct Xy;

impl Method for Xy {
    fn name(&self) -> &'static str {
        "xy"
    }
    fn description(&self) -> &'static str {
        "XY-2021: outputs grouped by shared input sets, row-major first/stride layers, \
         neuron-major generic kernel, dead rows deleted once"
    }
    fn needs_gpu(&self) -> bool {
        true
    }
    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput> {
        let options = &config.methods.xy;
        validate_xy(options)?;
        let gpu = open_gpu()?;
        let result = spdnn_xy::infer(
            &gpu,
            problem.network.layers(),
            &problem.input.features,
            problem.bias,
            problem.upper_bound,
            options,
            &spec(config),
        )?;
        Ok(output(&gpu, result, Some(xy_parameters(options))))
    }
}

/// SNICIT (`snicit`).
pub struct Snicit;

impl Method for Snicit {
    fn name(&self) -> &'static str {
        "snicit"
    }
    fn description(&self) -> &'static str {
        "SNICIT: XY (or BF) before layer t, then centroids + residues and the load-reduced update"
    }
    fn needs_gpu(&self) -> bool {
        true
    }
    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput> {
        let options = &config.methods.snicit;
        validate_snicit(options)?;
        let gpu = open_gpu()?;
        let result = spdnn_snicit::infer(
            &gpu,
            problem.network.layers(),
            &problem.input.features,
            problem.bias,
            problem.upper_bound,
            options,
            &spec(config),
        )?;
        Ok(output(&gpu, result, Some(snicit_parameters(options))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_parameters_print_as_given() {
        assert_eq!(f32_json(0.03).to_string(), "0.03");
        assert_eq!(f32_json(f32::NAN), serde_json::Value::Null);
    }

    #[test]
    fn snicit_parameters_name_everything() {
        let mut options = spdnn_snicit::SnicitOptions::default();
        let value = snicit_parameters(&options);
        for key in [
            "threshold",
            "samples",
            "bins",
            "epsilon",
            "eta",
            "refresh_interval",
            "batch",
            "pre_convergence",
            "xy",
        ] {
            assert!(value.get(key).is_some(), "{key} missing from {value}");
        }
        assert_eq!(value["batch"], "all");
        assert_eq!(value["xy"]["delete_at"], 22);
        assert_eq!(value["xy"]["row_major_layers"], "detect");
        options.pre_convergence = spdnn_snicit::PreConvergence::Bf;
        options.batch = Some(4096);
        let value = snicit_parameters(&options);
        assert_eq!(value["pre_convergence"], "bf");
        assert_eq!(value["batch"], 4096);
        assert!(value.get("xy").is_none());
    }

    #[test]
    fn details_keep_stage_order_and_layer_times() {
        let result = GpuInference {
            details: vec![("kernel".into(), "generic".into())],
            stages: vec![
                ("pre-convergence".into(), 3.0),
                ("conversion".into(), 1.0),
                ("post-convergence".into(), 2.0),
                ("recovery".into(), 0.5),
            ],
            layer_ms: vec![1.0, 2.0, 3.0],
            ..GpuInference::default()
        };
        let value = details(
            "H200",
            &result,
            Some(serde_json::json!({ "threshold": 30 })),
        );
        assert_eq!(value["gpu"], "H200");
        assert_eq!(value["kernel"], "generic");
        assert_eq!(
            value[STAGES_KEY][1],
            serde_json::json!({ "stage": "conversion", "ms": 1.0 })
        );
        let stages = crate::report::stages(&value);
        assert_eq!(
            stages.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(),
            [
                "pre-convergence",
                "conversion",
                "post-convergence",
                "recovery"
            ]
        );
        assert_eq!(crate::report::layer_times(&value), vec![1.0, 2.0, 3.0]);
        assert_eq!(value["parameters"]["threshold"], 30);

        let plain = details("H200", &GpuInference::default(), None);
        assert!(plain.get(STAGES_KEY).is_none());
        assert!(plain.get(LAYER_MS_KEY).is_none());
        assert!(plain.get("parameters").is_none());
    }
}
