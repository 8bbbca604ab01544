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
    /// Whether `spdnn bench` runs it when no methods are named (the `+glare` variants
    /// run only when named or asked for with `--glare`).
    fn in_default_run(&self) -> bool {
        true
    }
    /// Runs the whole problem, `config.warmup` untimed then `config.repetitions` timed.
    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput>;
}

/// Every method this build knows.
pub struct Registry {
    methods: Vec<Box<dyn Method>>,
}

impl Default for Registry {
    fn default() -> Self {
        let gpu = crate::gpu_methods::GPU_METHODS
            .iter()
            .map(|&m| Box::new(m) as Box<dyn Method>);
        Self {
            methods: std::iter::once(Box::new(CpuReference) as Box<dyn Method>)
                .chain(gpu)
                .collect(),
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

    /// The name of the GLARE variant of `name` (itself when it is one), when this
    /// registry has it.
    pub fn glare_variant(&self, name: &str) -> Option<&'static str> {
        let variant = crate::glare::variant_of(name)?;
        self.all().map(|m| m.name()).find(|n| *n == variant)
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
    fn registry_order_puts_each_glare_variant_after_its_method() {
        let registry = Registry::default();
        assert_eq!(
            registry.names(),
            [
                "cpu",
                "bf",
                "bf+glare",
                "snig",
                "snig+glare",
                "xy",
                "xy+glare",
                "snicit",
                "snicit+glare",
                "cusparse"
            ]
        );
        for method in registry.all() {
            assert!(!method.description().is_empty());
            assert_eq!(method.needs_gpu(), method.name() != "cpu");
            let glare = method.name().ends_with("+glare");
            assert_eq!(method.in_default_run(), !glare, "{}", method.name());
        }
    }

    #[test]
    fn glare_variants_are_found_in_the_registry() {
        let registry = Registry::default();
        assert_eq!(registry.glare_variant("bf"), Some("bf+glare"));
        assert_eq!(registry.glare_variant("snicit"), Some("snicit+glare"));
        assert_eq!(registry.glare_variant("xy+glare"), Some("xy+glare"));
        assert_eq!(registry.glare_variant("cpu"), None);
        assert_eq!(registry.glare_variant("cusparse"), None);
        assert_eq!(registry.glare_variant("nonsense"), None);
    }

    #[test]
    fn glare_methods_check_their_options_before_looking_for_a_gpu() {
        let network = spdnn_sdgc::generator::network(64, 2, 0).unwrap();
        let input = spdnn_sdgc::images::synthetic(4, 64, 0).unwrap();
        let problem = Problem {
            network: &network,
            input: &input,
            bias: -0.3,
            upper_bound: 32.0,
        };
        let mut config = RunConfig::default();
        config.methods.glare.segment = Some(32);
        let registry = Registry::default();
        let error = match registry.get("bf+glare").unwrap().run(&problem, &config) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("bf+glare accepted m = 32 for N = 64"),
        };
        assert!(error.contains("accepts 64"), "{error}");
    }
}
