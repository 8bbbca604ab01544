//! Kernel crates as methods: one adapter over `spdnn_cuda::method::KernelMethod` serves
//! every GPU method of the registry.

use std::any::TypeId;
use std::marker::PhantomData;

use anyhow::{Context, Result, anyhow};
use spdnn_adaptive::MemorySettings;
use spdnn_cuda::Gpu;
use spdnn_cuda::census::AccessCounts;
use spdnn_cuda::method::{KernelMethod, LayerChain, MethodOptions, check_bias_support};
use spdnn_cuda::rows::{GpuInference, RunSpec};

use crate::method::{
    Details, LayerAccesses, Method, MethodOutput, Problem, RunConfig, Stage, Timing,
};
use crate::options::OptionSet;

/// The GPU method of kernel family `K`, as it is (no modifier).
pub struct KernelRow<K>(PhantomData<fn() -> K>);

impl<K> Default for KernelRow<K> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<K: KernelMethod> Method for KernelRow<K> {
    fn name(&self) -> &str {
        K::NAME
    }

    fn description(&self) -> &str {
        K::DESCRIPTION
    }

    fn needs_gpu(&self) -> bool {
        true
    }

    fn reads(&self) -> Vec<TypeId> {
        reads::<K::Options>()
    }

    fn check(&self, options: &OptionSet, _neurons: usize) -> Result<()> {
        checked_options::<K>(options).map(|_| ())
    }

    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput> {
        let options = checked_options::<K>(&config.options)?;
        // Biases the method does not take are refused before a GPU is looked for (the
        // harness checks again, for callers of the crates' own functions).
        check_bias_support::<K>(&layer_chain(problem))?;
        let gpu = open_gpu(&config.options)?;
        run_kernel::<K>(&gpu, problem, config, &options)
    }
}

/// `problem`'s network as the harness's chain: its per-neuron biases when it has them,
/// else the one bias.
fn layer_chain<'a>(problem: &Problem<'a>) -> LayerChain<'a> {
    let layers = problem.network.layers();
    match problem.network.biases() {
        Some(biases) => LayerChain::with_biases(layers, biases, problem.upper_bound),
        None => LayerChain::new(layers, problem.bias, problem.upper_bound),
    }
}

/// The option groups a GPU method with options `O` reads: `O`, the groups it embeds, and
/// the memory budget's ([`MemorySettings`]).
pub(crate) fn reads<O: MethodOptions>() -> Vec<TypeId> {
    std::iter::once(TypeId::of::<O>())
        .chain(OptionSet::embedded_types::<O>())
        .chain(std::iter::once(TypeId::of::<MemorySettings>()))
        .collect()
}

/// `K`'s options from the set, validated (the error names the method).
pub(crate) fn checked_options<K: KernelMethod>(options: &OptionSet) -> Result<K::Options> {
    let options: K::Options = options.get();
    options
        .validate()
        .map_err(|e| anyhow!("{}: {e}", K::NAME))?;
    Ok(options)
}

/// Opens the run's first GPU (the first of `--gpus`, else GPU 0) with a message that says
/// what is missing.
pub(crate) fn open_gpu(options: &OptionSet) -> Result<Gpu> {
    let settings: MemorySettings = options.get();
    let ordinal = settings.gpus.first().copied().unwrap_or(0);
    Gpu::new(ordinal).context("this method needs a CUDA GPU")
}

/// Runs `K` with `options` through the one harness under the memory plan of
/// `spdnn_adaptive` (the budget and GPUs of the run's [`MemorySettings`]) and types what
/// it returned.
pub(crate) fn run_kernel<K: KernelMethod>(
    gpu: &Gpu,
    problem: &Problem<'_>,
    config: &RunConfig,
    options: &K::Options,
) -> Result<MethodOutput> {
    let spec = RunSpec {
        warmup: config.warmup,
        repetitions: config.repetitions.max(1),
        // A trained network's predictions come from its last layer's output.
        keep_output: problem.network.biases().is_some(),
        batch: None,
        profiled_only: false,
    };
    let chain = layer_chain(problem);
    let settings: MemorySettings = config.options.get();
    let adaptive = spdnn_adaptive::run::<K>(
        gpu,
        &chain,
        &problem.input.features,
        options,
        &spec,
        &settings,
    )?;
    let parameters = Some(serde_json::to_value(options)?).filter(|v| !v.is_null());
    let width = problem
        .network
        .layers()
        .last()
        .map_or(0, spdnn_formats::SparseMatrix::ncols);
    let predictions = predictions_of(adaptive.result.output.as_deref(), width)?;
    let mut output = output(gpu.name(), adaptive.result, parameters);
    output.details.plan = Some(adaptive.report);
    output.details.predictions = predictions;
    Ok(output)
}

/// The predictions of a run's final activations (rows × `width`), when it kept them.
pub(crate) fn predictions_of(
    output: Option<&[f32]>,
    width: usize,
) -> Result<Option<Vec<Option<u32>>>> {
    let Some(values) = output else {
        return Ok(None);
    };
    let rows = values.len().checked_div(width).unwrap_or(0);
    let scores = ndarray::ArrayView2::from_shape((rows, width), &values[..rows * width])
        .context("the final activations do not fill rows of the last layer's width")?;
    Ok(Some(spdnn_reference::predictions(scores)))
}

/// A GPU run's output with its details typed.
fn output(
    gpu_name: &str,
    result: GpuInference,
    parameters: Option<serde_json::Value>,
) -> MethodOutput {
    let details = Details {
        gpu: Some(gpu_name.to_string()),
        found: result
            .details
            .into_iter()
            .map(|(key, value)| (key, value.into()))
            .collect(),
        stages: result
            .stages
            .into_iter()
            .map(|(stage, ms)| Stage { stage, ms })
            .collect(),
        layer_ms: result.layer_ms,
        parameters,
        glare: None,
        accesses: layer_accesses(&result.accesses),
        compression: None,
        plan: None,
        predictions: None,
        compile: Some(result.compile),
    };
    MethodOutput {
        categories: result.categories,
        infer_ms: result.infer_ms,
        total_ms: result.total_ms,
        timing: Timing::CudaEvents,
        details,
    }
}

/// One record per layer (1-based) with the counts and what they add up to.
pub(crate) fn layer_accesses(accesses: &[AccessCounts]) -> Vec<LayerAccesses> {
    accesses
        .iter()
        .enumerate()
        .map(|(i, a)| LayerAccesses {
            layer: i + 1,
            activation_reads: a.activation_reads,
            activation_reads_skipped: a.activation_reads_skipped,
            activation_writes: a.activation_writes,
            activation_writes_skipped: a.activation_writes_skipped,
            weight_reads: a.weight_reads,
            recorder_reads: a.recorder_reads,
            recorder_writes: a.recorder_writes,
            write_backs: a.write_backs,
            without_recorder: a.without_recorder(),
            with_recorder: a.with_recorder(),
            avoided: a.avoided(),
            reduction: a.reduction(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_keep_stage_order_layer_times_and_parameters() {
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
        let output = output("H200", result, Some(serde_json::json!({ "threshold": 30 })));
        let value = serde_json::to_value(&output.details).unwrap();
        assert_eq!(value["gpu"], "H200");
        assert_eq!(value["kernel"], "generic");
        assert_eq!(
            value["stages_ms"][1],
            serde_json::json!({ "stage": "conversion", "ms": 1.0 })
        );
        let stages: Vec<&str> = output
            .details
            .stages
            .iter()
            .map(|s| s.stage.as_str())
            .collect();
        assert_eq!(
            stages,
            [
                "pre-convergence",
                "conversion",
                "post-convergence",
                "recovery"
            ]
        );
        assert_eq!(output.details.layer_ms, vec![1.0, 2.0, 3.0]);
        assert_eq!(value["parameters"]["threshold"], 30);

        let plain =
            serde_json::to_value(super::output("H200", GpuInference::default(), None).details)
                .unwrap();
        assert!(plain.get("stages_ms").is_none());
        assert!(plain.get("layer_ms").is_none());
        assert!(plain.get("parameters").is_none());
    }

    #[test]
    fn accesses_are_numbered_from_one_with_their_sums() {
        let counts = AccessCounts {
            activation_reads: 10,
            activation_reads_skipped: 30,
            ..AccessCounts::default()
        };
        let layers = layer_accesses(&[AccessCounts::default(), counts]);
        assert_eq!(layers[1].layer, 2);
        assert_eq!(layers[1].activation_reads_skipped, 30);
        assert_eq!(layers[1].without_recorder, counts.without_recorder());
        assert_eq!(layers[1].reduction, counts.reduction());
    }
}
