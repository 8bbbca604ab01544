//! The engine's vocabulary: the problem, the run configuration, the [`Method`] trait and
//! what a method returns. A leaf: it depends on no other module of the engine.

use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use serde::{Deserialize, Serialize};
use spdnn_sdgc::{Input, Network};

use crate::options::OptionSet;

/// What a method runs on.
pub struct Problem<'a> {
    /// The network (all layers are used).
    pub network: &'a Network,
    /// The input rows.
    pub input: &'a Input,
    /// Bias (negative) of every neuron; unused when the network has per-neuron biases
    /// ([`Network::biases`]).
    pub bias: f32,
    /// Upper bound of the activations.
    pub upper_bound: f32,
}

/// Floating-point precision of the CPU reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Single precision (as the GPU methods and the papers).
    #[default]
    F32,
    /// Double precision.
    F64,
}

/// How a run is repeated, and the options of the methods and modifiers.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Untimed runs before the timed ones.
    pub warmup: usize,
    /// Timed runs; the report gives the median.
    pub repetitions: usize,
    /// Precision of the CPU reference.
    pub precision: Precision,
    /// The options of every method and modifier (each reads its own groups).
    pub options: OptionSet,
    /// Work that depends only on the problem, shared by the methods run on it (GLARE's
    /// statistics); a caller running several methods on one problem passes one
    /// [`SharedWork`] to all of them and a new one for the next problem.
    pub shared: SharedWork,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            warmup: 1,
            repetitions: 3,
            precision: Precision::F32,
            options: OptionSet::default(),
            shared: SharedWork::default(),
        }
    }
}

/// A value of any type, shared.
type SharedValue = Arc<dyn Any + Send + Sync>;

/// Results computed once per problem and reused by every method run on it.
#[derive(Clone, Default)]
pub struct SharedWork {
    entries: Arc<Mutex<Vec<(String, SharedValue)>>>,
    /// Prefix of this view's keys (a modifier that changes the problem gives the methods
    /// it wraps a view of their own, so their results never mix with the original's).
    scope: String,
}

impl std::fmt::Debug for SharedWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<String> = self
            .entries
            .lock()
            .map(|e| e.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default();
        f.debug_struct("SharedWork")
            .field("scope", &self.scope)
            .field("keys", &keys)
            .finish()
    }
}

impl SharedWork {
    /// A view of the same store whose keys live under `scope` (within this view's).
    pub fn scoped(&self, scope: &str) -> Self {
        Self {
            entries: self.entries.clone(),
            scope: format!("{}{scope}/", self.scope),
        }
    }

    /// The value stored under `key`, or `compute()`'s, stored. The flag says whether it
    /// was computed by this call.
    pub fn get_or_compute<T: Any + Send + Sync>(
        &self,
        key: &str,
        compute: impl FnOnce() -> Result<T>,
    ) -> Result<(Arc<T>, bool)> {
        let key = format!("{}{key}", self.scope);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(value) = entries
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.clone().downcast::<T>().ok())
        {
            return Ok((value, false));
        }
        let value = Arc::new(compute()?);
        entries.push((key, value.clone()));
        Ok((value, true))
    }
}

/// How a method's times were taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Timing {
    /// Host wall clock (CPU methods).
    WallClock,
    /// CUDA events around the timed region, after warm-up.
    CudaEvents,
}

/// One stage of a profiled run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// Its name (`pre-convergence`, `transpose`, …).
    pub stage: String,
    /// Its time, ms.
    pub ms: f64,
}

/// How a `+glare` run's segment length was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChosenBy {
    /// By the access model from the statistics.
    Model,
    /// Given by hand (`--glare-segment`).
    Option,
}

/// Expected accesses of one candidate segment length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The segment length.
    pub m: usize,
    /// Σ over the recorded layers of the model's expected accesses.
    pub expected_accesses: f64,
}

/// What GLARE did in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GlareOutcome {
    /// The segment length `m`.
    pub segment: usize,
    /// Model or option.
    pub chosen_by: ChosenBy,
    /// Input rows the model's statistics were taken on (none when given by hand).
    pub model_rows: Option<usize>,
    /// Every candidate's expected accesses (empty when given by hand).
    pub model: Vec<Candidate>,
    /// Whether the census ran.
    pub census: bool,
    /// Time the statistics took, ms (0 when reused or given by hand).
    pub profile_ms: f64,
    /// Σ avoided / Σ accesses without the recorder over all layers (none without census).
    pub reduction: Option<f64>,
}

/// One layer's global-memory accesses from a census run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerAccesses {
    /// 1-based layer.
    pub layer: usize,
    /// Activation values read.
    pub activation_reads: u64,
    /// Activation reads avoided by the recorder.
    pub activation_reads_skipped: u64,
    /// Activation values written.
    pub activation_writes: u64,
    /// Activation writes avoided by the recorder.
    pub activation_writes_skipped: u64,
    /// Weight entries read.
    pub weight_reads: u64,
    /// Recorder flags read.
    pub recorder_reads: u64,
    /// Recorder flags written.
    pub recorder_writes: u64,
    /// Bound values written back into vetoed units.
    pub write_backs: u64,
    /// Accesses without the recorder.
    pub without_recorder: u64,
    /// Accesses with it.
    pub with_recorder: u64,
    /// Accesses avoided (may be negative).
    pub avoided: i64,
    /// Avoided / without (0 when nothing was counted).
    pub reduction: f64,
}

/// Method-specific facts of a run, typed; serialised as the report's `details`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Details {
    /// The GPU's name (GPU methods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// What the run found or chose (`slab_width`, `centroids`, …).
    #[serde(flatten)]
    pub found: BTreeMap<String, serde_json::Value>,
    /// The stages of one profiled run, in order (empty for one-stage methods).
    #[serde(rename = "stages_ms", default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Stage>,
    /// The time of every layer of one profiled run, ms (empty when not measured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layer_ms: Vec<f64>,
    /// The method's options as run (methods that take some).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<serde_json::Value>,
    /// GLARE's segment and outcome (`+glare` runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glare: Option<GlareOutcome>,
    /// Every layer's accesses (GLARE runs with a census).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accesses: Vec<LayerAccesses>,
    /// What compression made of the network (`+compress` runs). Read back leniently: a
    /// method's own `compression` detail (BlockDepend's, a string) under the same key reads
    /// as none instead of failing the whole report.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "compress_report_or_none"
    )]
    pub compression: Option<spdnn_compress::CompressReport>,
    /// The class each input row predicts, for a network with per-neuron biases (a trained
    /// network): `spdnn_reference::predictions` of the last layer's output. Not serialised.
    #[serde(skip)]
    pub predictions: Option<Vec<Option<u32>>>,
    /// The memory plan of each GPU (GPU methods; `spdnn_adaptive`).
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub plan: Option<spdnn_adaptive::PlanReport>,
    /// What compiling and loading kernel modules cost the run (GPU methods): the time it
    /// waited for them (the report's `compile_ms`), NVRTC's and the driver's time on every
    /// thread, and how many modules were compiled, read from the cache and loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile: Option<spdnn_cuda::CompileStats>,
}

/// A `+compress` report, or none when the key holds something else (a method's own
/// `compression` detail); a malformed report is still an error.
fn compress_report_or_none<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<spdnn_compress::CompressReport>, D::Error> {
    match serde_json::Value::deserialize(d)? {
        value @ serde_json::Value::Object(_) => serde_json::from_value(value)
            .map(Some)
            .map_err(serde::de::Error::custom),
        _ => Ok(None),
    }
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
    /// Method-specific facts.
    pub details: Details,
}

/// An inference method of the registry.
pub trait Method: Send + Sync {
    /// Registry name, as given to `--method`.
    fn name(&self) -> &str;
    /// One line for `--help` and docs.
    fn description(&self) -> &str;
    /// Whether this method needs a CUDA GPU.
    fn needs_gpu(&self) -> bool;
    /// Whether `spdnn bench` runs it when no methods are named (variants made by a
    /// modifier run only when named or asked for).
    fn in_default_run(&self) -> bool {
        true
    }
    /// The option groups this method reads: its own, those embedded in it, its
    /// modifiers'.
    fn reads(&self) -> Vec<TypeId>;
    /// Checks, before anything is loaded or run, that this method can run with `options`
    /// on a network of `neurons` neurons (bad options, a segment the kernel cannot use).
    fn check(&self, options: &OptionSet, neurons: usize) -> Result<()>;
    /// Runs the whole problem, `config.warmup` untimed then `config.repetitions` timed.
    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_work_is_computed_once_per_key() {
        let shared = SharedWork::default();
        let (a, fresh) = shared.get_or_compute("k", || Ok(41usize)).unwrap();
        assert_eq!((*a, fresh), (41, true));
        let (b, fresh) = shared
            .get_or_compute("k", || -> Result<usize> { panic!("computed twice") })
            .unwrap();
        assert_eq!((*b, fresh), (41, false));
        let copy = shared.clone();
        let (c, fresh) = copy.get_or_compute("other", || Ok(1usize)).unwrap();
        assert_eq!((*c, fresh), (1, true));
        // A scoped view shares the store but not the keys.
        let scoped = shared.scoped("compressed");
        let (d, fresh) = scoped.get_or_compute("k", || Ok(7usize)).unwrap();
        assert_eq!((*d, fresh), (7, true));
        let (e, fresh) = shared
            .scoped("compressed")
            .get_or_compute("k", || Ok(8usize))
            .unwrap();
        assert_eq!((*e, fresh), (7, false));
        assert!(
            shared
                .get_or_compute("e", || -> Result<u8> { anyhow::bail!("no") })
                .is_err()
        );
    }

    #[test]
    fn a_methods_own_compression_detail_reads_back() {
        let text = r#"{"gpu": "H200", "compression": "widths x17.45", "layer_ms": [1.0]}"#;
        let details: Details = serde_json::from_str(text).unwrap();
        assert_eq!(details.compression, None);
        assert_eq!(details.layer_ms, vec![1.0]);
        let malformed = r#"{"compression": {"identity": "no"}}"#;
        assert!(serde_json::from_str::<Details>(malformed).is_err());
    }

    #[test]
    fn details_serialise_as_the_reports_always_have() {
        let mut details = Details {
            gpu: Some("H200".into()),
            stages: vec![Stage {
                stage: "conversion".into(),
                ms: 1.0,
            }],
            layer_ms: vec![1.0, 2.0],
            parameters: Some(serde_json::json!({ "threshold": 30 })),
            ..Details::default()
        };
        details
            .found
            .insert("kernel".into(), serde_json::json!("generic"));
        let value = serde_json::to_value(&details).unwrap();
        assert_eq!(value["gpu"], "H200");
        assert_eq!(value["kernel"], "generic");
        assert_eq!(
            value["stages_ms"][0],
            serde_json::json!({ "stage": "conversion", "ms": 1.0 })
        );
        assert_eq!(value["layer_ms"][1], 2.0);
        assert_eq!(value["parameters"]["threshold"], 30);
        assert!(value.get("glare").is_none() && value.get("accesses").is_none());
        let back: Details = serde_json::from_value(value).unwrap();
        assert_eq!(back, details);
        let plain = serde_json::to_value(Details::default()).unwrap();
        assert_eq!(plain, serde_json::json!({}));
    }
}
