//! The CPU reference as a method (`cpu`).

use std::any::TypeId;

use anyhow::Result;
use spdnn_reference::{Activation, Inference, Options};

use crate::method::{Details, Method, MethodOutput, Precision, Problem, RunConfig, Timing};
use crate::options::OptionSet;

/// The CPU reference as a method (`cpu`).
pub struct CpuReference;

/// Categories, and predictions for a trained network.
type Scored = (Vec<u32>, Option<Vec<Option<u32>>>);

impl CpuReference {
    /// Runs the reference once in the configured precision: the categories, and for a
    /// network with per-neuron biases (a trained one) the predictions.
    fn infer_once(problem: &Problem<'_>, precision: Precision) -> Result<Scored> {
        match precision {
            Precision::F32 => Self::infer_in::<f32>(problem),
            Precision::F64 => Self::infer_in::<f64>(problem),
        }
    }

    fn infer_in<T: spdnn_reference::Element>(problem: &Problem<'_>) -> Result<Scored> {
        let layers = problem.network.layers();
        let features = &problem.input.features;
        let out: Inference<T> = match problem.network.biases() {
            Some(biases) => {
                let options = Options {
                    keep_output: true,
                    collect_stats: false,
                    ..Options::default()
                };
                spdnn_reference::infer_with_biases(
                    layers,
                    features,
                    biases,
                    problem.upper_bound,
                    &options,
                )?
            }
            None => {
                let activation = Activation::new(problem.bias, problem.upper_bound)?;
                let options = Options {
                    keep_output: false,
                    collect_stats: false,
                    ..Options::default()
                };
                spdnn_reference::infer(layers, features, activation, &options)?
            }
        };
        let predictions = out
            .output
            .as_ref()
            .map(|scores| spdnn_reference::predictions(scores.view()));
        Ok((out.categories, predictions))
    }
}

impl Method for CpuReference {
    fn name(&self) -> &str {
        "cpu"
    }

    fn description(&self) -> &str {
        "CPU reference (rayon, activation-sparse), the oracle"
    }

    fn needs_gpu(&self) -> bool {
        false
    }

    fn reads(&self) -> Vec<TypeId> {
        Vec::new()
    }

    fn check(&self, _options: &OptionSet, _neurons: usize) -> Result<()> {
        Ok(())
    }

    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput> {
        for _ in 0..config.warmup {
            Self::infer_once(problem, config.precision)?;
        }
        let mut infer_ms = Vec::with_capacity(config.repetitions.max(1));
        let mut categories = Vec::new();
        let mut predictions = None;
        for _ in 0..config.repetitions.max(1) {
            let start = std::time::Instant::now();
            (categories, predictions) = Self::infer_once(problem, config.precision)?;
            infer_ms.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let total_ms = infer_ms[0];
        let mut details = Details::default();
        details
            .found
            .insert("precision".into(), serde_json::to_value(config.precision)?);
        details
            .found
            .insert("threads".into(), host_threads().into());
        details.predictions = predictions;
        Ok(MethodOutput {
            categories,
            infer_ms,
            total_ms,
            timing: Timing::WallClock,
            details,
        })
    }
}

fn host_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
