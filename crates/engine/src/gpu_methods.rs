//! The GPU methods as registry entries.

use anyhow::{Context, Result};
use spdnn_cuda::Gpu;
use spdnn_cuda::rows::{GpuInference, RunSpec};

use spdnn_glare::model::Kernel;
use spdnn_glare::{AccessCounts, Glare};

use crate::glare::{self, SegmentChoice};
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

fn output(
    gpu: &Gpu,
    result: GpuInference,
    parameters: Option<serde_json::Value>,
    glare: Option<(&SegmentChoice, bool)>,
) -> MethodOutput {
    let mut details = details(gpu.name(), &result, parameters);
    if let Some((choice, census)) = glare {
        add_glare(&mut details, choice, census, &result.accesses);
    }
    MethodOutput {
        categories: result.categories,
        infer_ms: result.infer_ms,
        total_ms: result.total_ms,
        timing: Timing::CudaEvents,
        details,
    }
}

/// Adds `glare` (the segment and how it was chosen) and, when a census was taken,
/// `accesses` (one record per layer) to a run's details.
fn add_glare(
    details: &mut serde_json::Value,
    choice: &SegmentChoice,
    census: bool,
    accesses: &[AccessCounts],
) {
    details[glare::GLARE_KEY] = glare::choice_json(choice, census, accesses);
    if !accesses.is_empty() {
        details[glare::ACCESSES_KEY] = glare::accesses_json(accesses);
    }
}

/// The kernel family a registry entry runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Bf,
    Snig,
    Xy,
    Snicit,
    Cusparse,
}

impl Family {
    /// The GLARE model's kernel of this family (none for cuSPARSE).
    fn glare_kernel(self) -> Option<Kernel> {
        match self {
            Family::Bf => Some(Kernel::Bf),
            Family::Snig => Some(Kernel::Snig),
            Family::Xy => Some(Kernel::Xy),
            Family::Snicit => Some(Kernel::Snicit),
            Family::Cusparse => None,
        }
    }
}

/// A GPU method of the registry: a kernel family, plain or with GLARE's recorder.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GpuMethod {
    name: &'static str,
    description: &'static str,
    family: Family,
    glare: bool,
}

/// The GPU methods in registry order, each `+glare` variant after its plain method.
pub(crate) const GPU_METHODS: [GpuMethod; 9] = [
    GpuMethod {
        name: "bf",
        description: "BF-2019: column-slab CSR, non-empty row lists, double-buffered weights",
        family: Family::Bf,
        glare: false,
    },
    GpuMethod {
        name: "bf+glare",
        description: "GLARE on BF-2019: row segments all at the bound are neither read nor \
                      written (m from the access model)",
        family: Family::Bf,
        glare: true,
    },
    GpuMethod {
        name: "snig",
        description: "SNIG-2020: sections with nonzero flags, incremental resetting, CUDA graph",
        family: Family::Snig,
        glare: false,
    },
    GpuMethod {
        name: "snig+glare",
        description: "GLARE on SNIG-2020: a section all at the bound is neither read nor written",
        family: Family::Snig,
        glare: true,
    },
    GpuMethod {
        name: "xy",
        description: "XY-2021: outputs grouped by shared input sets, row-major first/stride layers, \
                      neuron-major generic kernel, dead rows deleted once",
        family: Family::Xy,
        glare: false,
    },
    GpuMethod {
        name: "xy+glare",
        description: "GLARE on XY-2021: neuron-major tiles all at the bound skipped after the \
                      deletion (m from the access model)",
        family: Family::Xy,
        glare: true,
    },
    GpuMethod {
        name: "snicit",
        description: "SNICIT: XY (or BF) before layer t, then centroids + residues and the \
                      load-reduced update",
        family: Family::Snicit,
        glare: false,
    },
    GpuMethod {
        name: "snicit+glare",
        description: "GLARE on SNICIT: row segments all at the bound skipped after layer t \
                      (m from the access model)",
        family: Family::Snicit,
        glare: true,
    },
    GpuMethod {
        name: "cusparse",
        description: "baseline: cuSPARSE SpMM per layer + bias-and-clip kernel",
        family: Family::Cusparse,
        glare: false,
    },
];

impl Method for GpuMethod {
    fn name(&self) -> &'static str {
        self.name
    }
    fn description(&self) -> &'static str {
        self.description
    }
    fn needs_gpu(&self) -> bool {
        true
    }
    fn in_default_run(&self) -> bool {
        !self.glare
    }
    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput> {
        let options = &config.methods;
        match self.family {
            Family::Xy => validate_xy(&options.xy)?,
            Family::Snicit => validate_snicit(&options.snicit)?,
            _ => {}
        }
        let kernel = self.family.glare_kernel().filter(|_| self.glare);
        if kernel.is_some() {
            // A bad hand-given segment fails here, before a GPU is looked for.
            glare::check_method(self.name, problem.network.neurons(), options)?;
        }
        let gpu = open_gpu()?;
        // The model runs on the CPU before any GPU work: not part of total_ms.
        let choice = kernel
            .map(|kernel| glare::choose_segment(kernel, problem, config))
            .transpose()?;
        let recorder = choice.as_ref().map(|c| Glare {
            segment: c.segment,
            census: options.glare.census,
        });
        let (layers, input) = (problem.network.layers(), &problem.input.features);
        let (bias, upper, spec) = (problem.bias, problem.upper_bound, spec(config));
        let (result, parameters) = match self.family {
            Family::Bf => {
                let bf = spdnn_bf::BfOptions {
                    glare: recorder,
                    ..spdnn_bf::BfOptions::default()
                };
                let result = spdnn_bf::infer(&gpu, layers, input, bias, upper, &bf, &spec)?;
                (result, None)
            }
            Family::Snig => {
                let snig = spdnn_snig::SnigOptions {
                    glare: recorder,
                    ..spdnn_snig::SnigOptions::default()
                };
                let result = spdnn_snig::infer(&gpu, layers, input, bias, upper, &snig, &spec)?;
                (result, None)
            }
            Family::Xy => {
                let xy = spdnn_xy::XyOptions {
                    glare: recorder,
                    ..options.xy.clone()
                };
                let result = spdnn_xy::infer(&gpu, layers, input, bias, upper, &xy, &spec)?;
                (result, Some(xy_parameters(&xy)))
            }
            Family::Snicit => {
                // The recorder serves the post-convergence layers; `xy.glare` stays as given.
                let snicit = spdnn_snicit::SnicitOptions {
                    glare: recorder,
                    ..options.snicit.clone()
                };
                let result = spdnn_snicit::infer(&gpu, layers, input, bias, upper, &snicit, &spec)?;
                (result, Some(snicit_parameters(&snicit)))
            }
            Family::Cusparse => {
                let result = spdnn_cusparse::infer(&gpu, layers, input, bias, upper, &spec)?;
                (result, None)
            }
        };
        let glare = choice.as_ref().map(|c| (c, options.glare.census));
        Ok(output(&gpu, result, parameters, glare))
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
    fn glare_runs_report_the_choice_and_the_census() {
        let choice = SegmentChoice {
            segment: 1024,
            chosen_by: glare::ChosenBy::Model,
            model_rows: Some(512),
            expected: vec![(1024, 7.0)],
            profile_ms: 1.5,
        };
        let accesses = vec![
            AccessCounts::default(),
            AccessCounts {
                activation_reads: 10,
                activation_reads_skipped: 30,
                ..AccessCounts::default()
            },
        ];
        let result = GpuInference {
            accesses: accesses.clone(),
            ..GpuInference::default()
        };
        let mut value = details("H200", &result, None);
        add_glare(&mut value, &choice, true, &result.accesses);
        assert_eq!(value["glare"]["segment"], 1024);
        assert_eq!(value["glare"]["chosen_by"], "model");
        assert_eq!(value["glare"]["model"][0]["m"], 1024);
        assert_eq!(value["accesses"][1]["layer"], 2);
        assert_eq!(value["accesses"][1]["activation_reads_skipped"], 30);
        let summary = crate::report::glare_summary(&value).unwrap();
        assert_eq!(summary.segment, 1024);
        assert_eq!(summary.reduction, Some(0.75));

        let mut plain = details("H200", &GpuInference::default(), None);
        add_glare(&mut plain, &choice, false, &[]);
        assert!(plain.get("accesses").is_none());
        assert!(plain["glare"]["reduction"].is_null());
        assert!(
            details("H200", &GpuInference::default(), None)
                .get("glare")
                .is_none()
        );
    }

    #[test]
    fn every_glare_entry_has_a_model_kernel() {
        for method in GPU_METHODS {
            let kernel = method.family.glare_kernel();
            if method.glare {
                assert_eq!(glare::kernel_of(method.name), kernel, "{}", method.name);
                assert!(method.name.ends_with(glare::SUFFIX));
            } else {
                assert!(glare::kernel_of(method.name).is_none());
            }
        }
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
