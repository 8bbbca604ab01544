//! The method registry: every inference method behind one trait.

use anyhow::Result;
use serde::Serialize;
use spdnn_reference::{Activation, Inference, Options};
use spdnn_sdgc::{Input, Network};

use crate::run::{Precision, RunConfig};

/// What a method runs on.
pub struct Problem<'a> {
    /// The network (all layers are used).
    pub network: &'a Network,
    /// The input rows.
    pub input: &'a Input,
    /// Bias (negative).
    pub bias: f32,
    /// Upper bound of the activations.
    pub upper_bound: f32,
}

/// How a method's times were taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Timing {
    /// Host wall clock (CPU methods).
    WallClock,
    /// CUDA events around the timed region, after warm-up.
    CudaEvents,
}

/// What one method returned.
#[derive(Debug, Clone)]
pub struct MethodOutput {
    /// 1-based ascending rows with a nonzero sum after the last layer.
    pub categories: Vec<u32>,
    /// Timed-region time of each repetition (layer loop + category extraction).
    pub infer_ms: Vec<f64>,
    /// Time including uploads and preparation, for one run.
    pub total_ms: f64,
    /// How the times were taken.
    pub timing: Timing,
    /// Extra, method-specific facts for the report (per-stage times, parameters…).
    pub details: serde_json::Value,
}

/// An inference method.
pub trait Method: Send + Sync {
    /// Registry name, as given to `--method`.
    fn name(&self) -> &'static str;
    /// One line for `--help` and docs.
    fn description(&self) -> &'static str;
    /// Whether this method needs a CUDA GPU.
    fn needs_gpu(&self) -> bool;
    /// Runs the whole problem, `config.warmup` untimed then `config.repetitions` timed.
    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput>;
}

/// Every method this build knows.
pub struct Registry {
    methods: Vec<Box<dyn Method>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            methods: vec![
                Box::new(CpuReference),
                Box::new(crate::gpu_methods::Bf),
                Box::new(crate::gpu_methods::Snig),
                Box::new(crate::gpu_methods::Xy),
                Box::new(crate::gpu_methods::Snicit),
                Box::new(crate::gpu_methods::Cusparse),
            ],
        }
    }
}

impl Registry {
    /// All registered methods.
    pub fn all(&self) -> impl Iterator<Item = &dyn Method> {
        self.methods.iter().map(|m| m.as_ref())
    }

    /// The method called `name`, or an error listing the known names.
    pub fn get(&self, name: &str) -> Result<&dyn Method> {
        self.all().find(|m| m.name() == name).ok_or_else(|| {
            let known: Vec<_> = self.all().map(|m| m.name()).collect();
            anyhow::anyhow!(
                "unknown method '{name}'; known methods: {}",
                known.join(", ")
            )
        })
    }

    /// Names of all methods.
    pub fn names(&self) -> Vec<&'static str> {
        self.all().map(|m| m.name()).collect()
    }
}

/// The CPU reference as a method (`cpu`).
pub struct CpuReference;

impl CpuReference {
    /// Runs the reference once in the configured precision.
    fn infer_once(problem: &Problem<'_>, precision: Precision) -> Result<Vec<u32>> {
        let activation = Activation::new(problem.bias, problem.upper_bound)?;
        let options = Options {
            keep_output: false,
            collect_stats: false,
            ..Options::default()
        };
        let layers = problem.network.layers();
        let features = &problem.input.features;
        Ok(match precision {
            Precision::F32 => {
                let out: Inference<f32> =
                    spdnn_reference::infer(layers, features, activation, &options)?;
                out.categories
            }
            Precision::F64 => {
                let out: Inference<f64> =
                    spdnn_reference::infer(layers, features, activation, &options)?;
                out.categories
            }
        })
    }
}

impl Method for CpuReference {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn description(&self) -> &'static str {
        "CPU reference (rayon, activation-sparse), the oracle"
    }

    fn needs_gpu(&self) -> bool {
        false
    }

    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput> {
        for _ in 0..config.warmup {
            Self::infer_once(problem, config.precision)?;
        }
        let mut infer_ms = Vec::with_capacity(config.repetitions.max(1));
        let mut categories = Vec::new();
        for _ in 0..config.repetitions.max(1) {
            let start = std::time::Instant::now();
            categories = Self::infer_once(problem, config.precision)?;
            infer_ms.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let total_ms = infer_ms[0];
        Ok(MethodOutput {
            categories,
            infer_ms,
            total_ms,
            timing: Timing::WallClock,
            details: serde_json::json!({
                "precision": config.precision,
                "threads": host_threads(),
            }),
        })
    }
}

fn host_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_lists_xy_and_snicit_after_snig() {
        let registry = Registry::default();
        let names = registry.names();
        let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
        assert_eq!(at("xy"), at("snig") + 1);
        assert_eq!(at("snicit"), at("xy") + 1);
        for name in ["xy", "snicit"] {
            let method = registry.get(name).unwrap();
            assert!(method.needs_gpu());
            assert!(!method.description().is_empty());
        }
    }
}
