//! `--method auto`: a method on the seam that picks, per network, which registered method
//! runs it, and says why.
//!
//! 1. **The regime, from the data.** The share of stored weights over the dense products'
//!    entries, over the whole chain. At ≥ [`DENSE_SHARE`] the layers are dense-ish (a
//!    trained network's 55 % layers and dense ends): every gather costs more than the
//!    multiply-adds it saves, and the candidates are the dense products: `tcchain` (the
//!    fused chain on the tensor cores) and `dense` (cuBLAS). Below it the network is sparse
//!    (the challenge's 3 %, random fan-in-32 nets): the candidates are the sparse methods,
//!    `blockdepend` first (fused chain, exact compression, retired rows: the fastest on every
//!    challenge shape and random net measured, docs/results.md), then `sz`, `hp` and
//!    `cusparse` in that order for networks the earlier ones refuse (a positive bias,
//!    shapes, memory).
//! 2. **A cost model** of each candidate: its multiply-adds over a rate calibrated on the
//!    GPUs measured (docs/auto.md), plus its launches; a candidate whose memory model does
//!    not fit the GPU is out.
//! 3. **A short trial**, when the model leaves more than one candidate within
//!    [`TRIAL_FACTOR`] of its best: each such candidate runs on the first `trial_rows / 2`
//!    and `trial_rows` rows; the two times give a fixed and a per-row cost, extrapolated to
//!    the run's rows. The fastest by the trial is chosen. The choice, with the model's and
//!    the trial's numbers, is cached per network (a content hash), rows, bound and GPU, so
//!    a second run of the same problem skips the trial.
//!
//! The chosen method then runs the whole problem as it would alone; its report gains
//! `auto_choice`, `auto_reason`, `auto_model_ms`, `auto_trial_ms` and `auto_cached`. Without
//! a GPU, `auto` is the CPU reference.
//!
//! Not done: a choice per range of layers (a dense end on one method and a sparse middle on
//! another). Every network of the benchmark is one regime throughout (nets A–C are ≥ 55 %
//! dense in every layer, the challenge's 3 % in every layer), and a split would hand the
//! activations from one method to another through the device, which the seam does not do
//! today.

use std::any::TypeId;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use anyhow::{Result, anyhow};
use serde::{Deserialize, Serialize};
use spdnn_cuda::method::MethodOptions;
use spdnn_formats::SparseMatrix;
use xxhash_rust::xxh3::Xxh3;

use crate::method::{Method, MethodOutput, Problem, RunConfig};
use crate::options::OptionSet;

/// The registry name.
pub const NAME: &str = "auto";
/// The share of stored weights from which a network counts as dense-ish.
pub const DENSE_SHARE: f64 = 0.2;
/// Candidates whose modelled time is within this factor of the best one's are tried.
pub const TRIAL_FACTOR: f64 = 4.0;
/// Bumped when the model or the candidates change: cached choices of other versions are
/// ignored.
pub const MODEL_VERSION: u32 = 2;

/// The dense-ish regime's candidates, in order of preference on a tie.
pub const DENSE_CANDIDATES: [&str; 2] = ["tcchain", "dense"];
/// The sparse regime's candidates, in order: the first that runs the problem is used.
pub const SPARSE_CANDIDATES: [&str; 4] = ["blockdepend", "sz", "hp", "cusparse"];

/// Multiply-adds a second of the fused tensor-core chain (three fp16 products each, fp32
/// accumulation; the rate of whole products): nets A–C on an H100, 1.7–3.0·10¹³
/// (docs/auto.md, device call 4 of 2026-11-26).
pub const TCCHAIN_RATE: f64 = 1.8e13;
/// Multiply-adds a second of cuBLAS's fp32 GEMM at the small sizes of trained networks,
/// its launches apart: 1.2–1.6·10¹³ on nets A–C (same call).
pub const DENSE_RATE: f64 = 1.5e13;
/// A kernel launch, s.
pub const LAUNCH_S: f64 = 5.0e-6;

/// `auto`'s options.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AutoOptions {
    /// Where choices are cached (`None`: nowhere, a trial every run).
    pub cache_dir: Option<PathBuf>,
    /// Rows of the trial's larger slice (the smaller has half).
    pub trial_rows: usize,
}

impl Default for AutoOptions {
    fn default() -> Self {
        Self {
            cache_dir: None,
            trial_rows: 4096,
        }
    }
}

impl MethodOptions for AutoOptions {
    fn validate(&self) -> Result<(), String> {
        if self.trial_rows < 64 {
            return Err(format!(
                "auto: the trial needs at least 64 rows, got {}",
                self.trial_rows
            ));
        }
        Ok(())
    }

    fn default_in(data_dir: &Path) -> Self {
        Self {
            cache_dir: Some(data_dir.join("cache").join("auto")),
            ..Self::default()
        }
    }
}

/// What the model reads off a problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Features {
    /// Input rows.
    pub rows: usize,
    /// Layers.
    pub layers: usize,
    /// Σ over layers of `N_in · N_out`: multiply-adds a row of the dense products.
    pub dense_per_row: f64,
    /// Σ of stored weights: multiply-adds a row of a sparse product with dense activations.
    pub stored_per_row: f64,
    /// `stored_per_row / dense_per_row`.
    pub share: f64,
}

impl Features {
    /// The features of `problem`.
    pub fn of(problem: &Problem<'_>) -> Self {
        let layers = problem.network.layers();
        let dense_per_row: f64 = layers
            .iter()
            .map(|w| w.nrows() as f64 * w.ncols() as f64)
            .sum();
        let stored_per_row: f64 = layers.iter().map(|w| w.nnz() as f64).sum();
        Self {
            rows: problem.input.rows(),
            layers: layers.len(),
            dense_per_row,
            stored_per_row,
            share: if dense_per_row > 0.0 {
                stored_per_row / dense_per_row
            } else {
                0.0
            },
        }
    }

    /// Whether the network is dense-ish.
    pub fn dense_ish(&self) -> bool {
        self.share >= DENSE_SHARE
    }
}

/// The model's time for `method` on a problem with `features`, ms (`None`: no model, the
/// trial or the order decides).
pub fn model_ms(method: &str, features: &Features) -> Option<f64> {
    let macs = features.rows as f64 * features.dense_per_row;
    match method {
        "tcchain" => Some(1e3 * (macs / TCCHAIN_RATE + LAUNCH_S)),
        "dense" => Some(1e3 * (macs / DENSE_RATE + 2.0 * features.layers as f64 * LAUNCH_S)),
        _ => None,
    }
}

/// `share` as a percentage with two significant digits (0.049 %, 3.1 %, 62 %).
fn percent(share: f64) -> String {
    let p = 100.0 * share;
    let decimals = if p >= 10.0 || p <= 0.0 {
        0
    } else {
        (1.0 - p.log10().floor()).max(0.0) as usize
    };
    format!("{p:.decimals$}")
}

/// What `auto` chose and why (cached as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// [`MODEL_VERSION`] when it was made.
    pub version: u32,
    /// The method run.
    pub method: String,
    /// One line: the regime and the deciding numbers.
    pub reason: String,
    /// The model's time of each candidate it models, ms.
    pub model_ms: Vec<(String, f64)>,
    /// The trial's time of each candidate tried, extrapolated to the run's rows, ms.
    pub trial_ms: Vec<(String, f64)>,
    /// The candidates that could not run, with why.
    pub refused: Vec<(String, String)>,
    /// The features the choice was made on.
    pub features: Features,
}

/// `--method auto`.
pub struct Auto {
    /// The registry's methods it may pick (looked up by name).
    methods: Vec<Arc<dyn Method>>,
    /// The CPU reference, when no GPU is there.
    cpu: Arc<dyn Method>,
}

impl Auto {
    /// `auto` over `methods` (the registry's rows; the candidates are looked up by name,
    /// and `cpu` must be there).
    pub fn new(methods: &[Arc<dyn Method>]) -> Result<Self> {
        let cpu = methods
            .iter()
            .find(|m| m.name() == "cpu")
            .cloned()
            .ok_or_else(|| anyhow!("auto needs the cpu method in the registry"))?;
        Ok(Self {
            methods: methods.to_vec(),
            cpu,
        })
    }

    fn method(&self, name: &str) -> Option<&Arc<dyn Method>> {
        self.methods.iter().find(|m| m.name() == name)
    }

    /// The candidates of `features`' regime that this registry has, in order.
    fn candidates(&self, features: &Features) -> Vec<&Arc<dyn Method>> {
        let names: &[&str] = if features.dense_ish() {
            &DENSE_CANDIDATES
        } else {
            &SPARSE_CANDIDATES
        };
        names.iter().filter_map(|n| self.method(n)).collect()
    }

    /// Runs `method` on the first `rows` rows with a short repetition (the trial), returning
    /// its fastest timed-region time, ms (the least disturbed of three).
    fn trial_run(
        &self,
        method: &dyn Method,
        problem: &Problem<'_>,
        config: &RunConfig,
        rows: usize,
    ) -> Result<f64> {
        let input = problem.input.head(rows);
        let slice = Problem {
            input: &input,
            ..*problem
        };
        let trial_config = RunConfig {
            warmup: 1,
            repetitions: 3,
            shared: config.shared.scoped("auto-trial"),
            ..config.clone()
        };
        let output = method.run(&slice, &trial_config)?;
        output
            .infer_ms
            .iter()
            .copied()
            .reduce(f64::min)
            .ok_or_else(|| anyhow!("{} timed nothing", method.name()))
    }

    /// Chooses the method for `problem` (model, then trial), without the cache.
    pub fn choose(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<Choice> {
        let features = Features::of(problem);
        let options: AutoOptions = config.options.get();
        let candidates = self.candidates(&features);
        let regime = if features.dense_ish() {
            format!(
                "{:.0} % of the dense products' weights stored (≥ {:.0} %): dense-ish",
                100.0 * features.share,
                100.0 * DENSE_SHARE
            )
        } else {
            format!(
                "{} % of the dense products' weights stored (< {:.0} %): sparse",
                percent(features.share),
                100.0 * DENSE_SHARE
            )
        };
        let model_ms: Vec<(String, f64)> = candidates
            .iter()
            .filter_map(|m| model_ms(m.name(), &features).map(|t| (m.name().to_string(), t)))
            .collect();
        if model_ms.is_empty() {
            // The sparse regime: the order decides (the run falls back along it).
            let first = candidates
                .first()
                .ok_or_else(|| anyhow!("auto: this build has none of {SPARSE_CANDIDATES:?}"))?;
            return Ok(Choice {
                version: MODEL_VERSION,
                method: first.name().to_string(),
                reason: format!(
                    "{regime}; {} fuses the chain, compresses it exactly and retires finished \
                     rows (the fastest on every challenge shape and random net measured); \
                     the next of {} runs when one refuses",
                    first.name(),
                    SPARSE_CANDIDATES.join(", ")
                ),
                model_ms,
                trial_ms: Vec::new(),
                refused: Vec::new(),
                features,
            });
        }
        let best_model = model_ms
            .iter()
            .map(|(_, t)| *t)
            .fold(f64::INFINITY, f64::min);
        // Tried: the modelled candidates within the factor of the best.
        let tried: Vec<&Arc<dyn Method>> = candidates
            .iter()
            .filter(|m| {
                model_ms
                    .iter()
                    .any(|(n, t)| n == m.name() && *t <= TRIAL_FACTOR * best_model)
            })
            .copied()
            .collect();
        let mut trial_ms = Vec::new();
        let mut refused = Vec::new();
        let large = options.trial_rows.min(features.rows).max(1);
        let small = (large / 2).max(1);
        for method in &tried {
            let measured = if large < 2 * small || small == large {
                self.trial_run(method.as_ref(), problem, config, large)
                    .map(|t| t * features.rows as f64 / large as f64)
            } else {
                self.trial_run(method.as_ref(), problem, config, small)
                    .and_then(|t_small| {
                        let t_large = self.trial_run(method.as_ref(), problem, config, large)?;
                        let per_row = ((t_large - t_small) / (large - small) as f64).max(0.0);
                        let fixed = (t_small - per_row * small as f64).max(0.0);
                        Ok(fixed + per_row * features.rows as f64)
                    })
            };
            match measured {
                Ok(t) => trial_ms.push((method.name().to_string(), t)),
                Err(e) => refused.push((method.name().to_string(), format!("{e:#}"))),
            }
        }
        let (method, reason) = match trial_ms.iter().min_by(|a, b| a.1.total_cmp(&b.1)).cloned() {
            Some((name, t)) if trial_ms.len() > 1 => {
                let others: Vec<String> = trial_ms
                    .iter()
                    .filter(|(n, _)| *n != name)
                    .map(|(n, o)| format!("{n} {o:.3} ms"))
                    .collect();
                (
                    name.clone(),
                    format!(
                        "{regime}; trial on {small} and {large} rows: {name} {t:.3} ms against {}",
                        others.join(", ")
                    ),
                )
            }
            Some((name, t)) => {
                let model = model_ms
                    .iter()
                    .map(|(n, m)| format!("{n} {m:.3} ms"))
                    .collect::<Vec<_>>()
                    .join(", ");
                (
                    name.clone(),
                    format!(
                        "{regime}; model: {model}; only {name} within {TRIAL_FACTOR}× of the \
                         best (trial {t:.3} ms)"
                    ),
                )
            }
            None => {
                return Err(anyhow!(
                    "auto: no candidate of the {} regime runs this problem: {}",
                    if features.dense_ish() {
                        "dense-ish"
                    } else {
                        "sparse"
                    },
                    refused
                        .iter()
                        .map(|(n, e)| format!("{n}: {e}"))
                        .collect::<Vec<_>>()
                        .join("; ")
                ));
            }
        };
        Ok(Choice {
            version: MODEL_VERSION,
            method,
            reason,
            model_ms,
            trial_ms,
            refused,
            features,
        })
    }
}

/// The cache key of a choice: the network's content, its biases, the scalars, the rows,
/// the GPU and the model's version.
pub fn cache_key(problem: &Problem<'_>, gpu: &str) -> String {
    let mut sum = Xxh3::new();
    sum.update(&MODEL_VERSION.to_le_bytes());
    sum.update(&spdnn_xy::cache::fingerprint(problem.network.layers()).to_le_bytes());
    for biases in problem.network.biases().unwrap_or(&[]) {
        for b in biases {
            sum.update(&b.to_bits().to_le_bytes());
        }
    }
    for scalar in [problem.bias, problem.upper_bound] {
        sum.update(&scalar.to_bits().to_le_bytes());
    }
    sum.update(&(problem.input.rows() as u64).to_le_bytes());
    sum.update(gpu.as_bytes());
    format!("{:016x}", sum.digest())
}

fn read_cached(path: &Path) -> Option<Choice> {
    let text = std::fs::read_to_string(path).ok()?;
    let choice: Choice = serde_json::from_str(&text).ok()?;
    (choice.version == MODEL_VERSION).then_some(choice)
}

/// Whether this process sees a GPU (asked once).
fn gpu_name() -> Option<&'static str> {
    static NAME: OnceLock<Option<String>> = OnceLock::new();
    NAME.get_or_init(crate::gpu_name).as_deref()
}

impl Method for Auto {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "picks the method for the network: dense-ish layers (≥ 20 % stored) on tcchain or dense, sparse ones on blockdepend, by a cost model and a short trial (cached); says why"
    }

    fn needs_gpu(&self) -> bool {
        gpu_name().is_some()
    }

    fn in_default_run(&self) -> bool {
        false
    }

    fn reads(&self) -> Vec<TypeId> {
        let mut reads = vec![TypeId::of::<AutoOptions>()];
        for method in &self.methods {
            if DENSE_CANDIDATES.contains(&method.name())
                || SPARSE_CANDIDATES.contains(&method.name())
            {
                for id in method.reads() {
                    if !reads.contains(&id) {
                        reads.push(id);
                    }
                }
            }
        }
        reads
    }

    fn check(&self, options: &OptionSet, _neurons: usize) -> Result<()> {
        let auto: AutoOptions = options.get();
        auto.validate().map_err(anyhow::Error::msg)
    }

    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput> {
        let Some(gpu) = gpu_name() else {
            let mut output = self.cpu.run(problem, config)?;
            output
                .details
                .found
                .insert("auto_choice".into(), serde_json::json!("cpu"));
            output
                .details
                .found
                .insert("auto_reason".into(), serde_json::json!("no CUDA GPU"));
            return Ok(output);
        };
        self.run_on(problem, config, gpu)
    }
}

impl Auto {
    /// [`Method::run`] on a machine whose GPU is called `gpu` (the cache key names it).
    pub fn run_on(
        &self,
        problem: &Problem<'_>,
        config: &RunConfig,
        gpu: &str,
    ) -> Result<MethodOutput> {
        let started = Instant::now();
        let options: AutoOptions = config.options.get();
        let path = options
            .cache_dir
            .as_ref()
            .map(|dir| dir.join(format!("{}.json", cache_key(problem, gpu))));
        let (choice, cached) = match path.as_deref().and_then(read_cached) {
            Some(choice) => (choice, true),
            None => {
                let choice = self.choose(problem, config)?;
                if let Some(path) = &path {
                    // A cache that cannot be written only means the next run tries again.
                    let _ = path
                        .parent()
                        .map(std::fs::create_dir_all)
                        .transpose()
                        .ok()
                        .and_then(|_| serde_json::to_string_pretty(&choice).ok())
                        .map(|text| std::fs::write(path, text));
                }
                (choice, false)
            }
        };
        let choose_ms = started.elapsed().as_secs_f64() * 1e3;
        // The choice, then (in the sparse regime) the candidates after it, in order, until
        // one runs the problem.
        let mut order = vec![choice.method.as_str()];
        if !choice.features.dense_ish() {
            order.extend(
                SPARSE_CANDIDATES
                    .iter()
                    .skip_while(|n| **n != choice.method)
                    .skip(1),
            );
        }
        let mut refused = choice.refused.clone();
        let mut ran = None;
        for name in order {
            let Some(method) = self.method(name) else {
                continue;
            };
            match method.run(problem, config) {
                Ok(output) => {
                    ran = Some((name.to_string(), output));
                    break;
                }
                Err(e) => refused.push((name.to_string(), format!("{e:#}"))),
            }
        }
        let Some((chosen, mut output)) = ran else {
            return Err(anyhow!(
                "auto: no candidate ran this problem: {}",
                refused
                    .iter()
                    .map(|(n, e)| format!("{n}: {e}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        };
        output.total_ms += choose_ms;
        let found = &mut output.details.found;
        found.insert("auto_choice".into(), serde_json::json!(chosen));
        let reason = if chosen == choice.method {
            choice.reason.clone()
        } else {
            format!(
                "{}; {} refused, so {chosen} ran",
                choice.reason, choice.method
            )
        };
        found.insert("auto_reason".into(), serde_json::json!(reason));
        found.insert(
            "auto_model_ms".into(),
            serde_json::json!(
                choice
                    .model_ms
                    .iter()
                    .cloned()
                    .collect::<std::collections::BTreeMap<_, _>>()
            ),
        );
        found.insert(
            "auto_trial_ms".into(),
            serde_json::json!(
                choice
                    .trial_ms
                    .iter()
                    .cloned()
                    .collect::<std::collections::BTreeMap<_, _>>()
            ),
        );
        if !refused.is_empty() {
            found.insert(
                "auto_refused".into(),
                serde_json::json!(
                    refused
                        .into_iter()
                        .collect::<std::collections::BTreeMap<_, _>>()
                ),
            );
        }
        found.insert("auto_cached".into(), serde_json::json!(cached));
        found.insert("auto_choose_ms".into(), serde_json::json!(choose_ms));
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use spdnn_formats::Csr;
    use spdnn_sdgc::{Input, InputOrigin, Network};

    use super::*;
    use crate::cpu::CpuReference;
    use crate::method::{Details, Timing};

    /// A method whose timed runs take `fixed + per_row · rows` ms, or that refuses.
    struct Fake {
        name: &'static str,
        fixed: f64,
        per_row: f64,
        refuses: bool,
        runs: Mutex<Vec<usize>>,
    }

    impl Fake {
        fn new(name: &'static str, fixed: f64, per_row: f64) -> Arc<Self> {
            Arc::new(Self {
                name,
                fixed,
                per_row,
                refuses: false,
                runs: Mutex::new(Vec::new()),
            })
        }

        fn refusing(name: &'static str) -> Arc<Self> {
            Arc::new(Self {
                name,
                fixed: 0.0,
                per_row: 0.0,
                refuses: true,
                runs: Mutex::new(Vec::new()),
            })
        }
    }

    impl Method for Fake {
        fn name(&self) -> &str {
            self.name
        }
        fn description(&self) -> &str {
            "fake"
        }
        fn needs_gpu(&self) -> bool {
            true
        }
        fn reads(&self) -> Vec<TypeId> {
            Vec::new()
        }
        fn check(&self, _: &OptionSet, _: usize) -> Result<()> {
            Ok(())
        }
        fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput> {
            let rows = problem.input.rows();
            self.runs.lock().unwrap().push(rows);
            if self.refuses {
                anyhow::bail!("{} refuses", self.name);
            }
            Ok(MethodOutput {
                categories: Vec::new(),
                infer_ms: vec![self.fixed + self.per_row * rows as f64; config.repetitions],
                total_ms: 0.0,
                timing: Timing::CudaEvents,
                details: Details::default(),
            })
        }
    }

    fn registry(methods: Vec<Arc<dyn Method>>) -> Auto {
        let mut all: Vec<Arc<dyn Method>> = vec![Arc::new(CpuReference)];
        all.extend(methods);
        Auto::new(&all).unwrap()
    }

    /// A chain of `layers` square layers of width `n` with `per_column` entries a column.
    fn network(n: usize, layers: usize, per_column: usize) -> Network {
        let layer = || {
            let triplets: Vec<(u32, u32, f32)> = (0..n as u32)
                .flat_map(|c| (0..per_column as u32).map(move |k| ((c + k * 7) % n as u32, c, 0.5)))
                .collect();
            Csr::from_triplets(n, n, &triplets).unwrap()
        };
        Network::chain((0..layers).map(|_| layer()).collect()).unwrap()
    }

    fn input(rows: usize, n: usize) -> Input {
        let triplets: Vec<(u32, u32, f32)> =
            (0..rows as u32).map(|r| (r, r % n as u32, 1.0)).collect();
        Input {
            features: Csr::from_triplets(rows, n, &triplets).unwrap(),
            origin: InputOrigin::Synthetic { seed: 0 },
        }
    }

    fn config(trial_rows: usize) -> RunConfig {
        let mut config = RunConfig::default();
        config.options.set(AutoOptions {
            cache_dir: None,
            trial_rows,
        });
        config
    }

    #[test]
    fn the_regime_follows_the_stored_share() {
        let (dense_ish, sparse) = (network(64, 3, 20), network(64, 3, 4));
        let rows = input(10, 64);
        let features = |network: &Network| {
            Features::of(&Problem {
                network,
                input: &rows,
                bias: -0.3,
                upper_bound: 32.0,
            })
        };
        let (a, b) = (features(&dense_ish), features(&sparse));
        assert!(
            a.dense_ish() && (a.share - 20.0 / 64.0).abs() < 1e-9,
            "{a:?}"
        );
        assert!(
            !b.dense_ish() && (b.share - 4.0 / 64.0).abs() < 1e-9,
            "{b:?}"
        );
        assert_eq!(
            (a.rows, a.layers, a.dense_per_row),
            (10, 3, 3.0 * 64.0 * 64.0)
        );
        // The model ranks the fused tensor-core chain before cuBLAS's launches.
        assert!(model_ms("tcchain", &a).unwrap() < model_ms("dense", &a).unwrap());
        assert_eq!(model_ms("blockdepend", &a), None);
    }

    #[test]
    fn the_trial_extrapolates_a_fixed_and_a_per_row_cost() {
        // At 2048 rows `dense` (fixed 0.1 ms) is faster; at 100000 rows `tcchain` (less per
        // row) is: the trial on 1024 and 2048 rows must see it.
        let tc = Fake::new("tcchain", 1.0, 1e-5);
        let dense = Fake::new("dense", 0.1, 4e-5);
        let auto = registry(vec![tc.clone(), dense.clone()]);
        let net = network(64, 3, 20);
        let rows = input(100_000, 64);
        let problem = Problem {
            network: &net,
            input: &rows,
            bias: -0.3,
            upper_bound: 32.0,
        };
        let choice = auto.choose(&problem, &config(2048)).unwrap();
        assert_eq!(choice.method, "tcchain", "{choice:?}");
        let trial = |name: &str| choice.trial_ms.iter().find(|(n, _)| n == name).unwrap().1;
        assert!((trial("tcchain") - 2.0).abs() < 1e-6, "{choice:?}");
        assert!((trial("dense") - 4.1).abs() < 1e-6, "{choice:?}");
        assert!(choice.reason.contains("dense-ish"), "{}", choice.reason);
        assert_eq!(*tc.runs.lock().unwrap(), vec![1024, 2048]);
        // With 3000 rows the model already puts cuBLAS's launches beyond 4× the fused
        // chain: dense is not tried, and the reason says so.
        let few = input(3000, 64);
        let small = Problem {
            input: &few,
            ..problem
        };
        let choice = auto.choose(&small, &config(2048)).unwrap();
        assert_eq!(choice.trial_ms.len(), 1, "{choice:?}");
        assert!(
            choice.reason.contains("only tcchain within"),
            "{}",
            choice.reason
        );
        // Where dense costs less a row, the trial picks it.
        let auto = registry(vec![
            Fake::new("tcchain", 1.0, 4e-5) as Arc<dyn Method>,
            Fake::new("dense", 0.1, 1e-5),
        ]);
        let choice = auto.choose(&problem, &config(2048)).unwrap();
        assert_eq!(choice.method, "dense", "{choice:?}");
    }

    #[test]
    fn a_refusing_candidate_is_reported_and_skipped() {
        let auto = registry(vec![
            Fake::refusing("tcchain") as Arc<dyn Method>,
            Fake::new("dense", 0.1, 1e-5),
        ]);
        let net = network(64, 2, 20);
        let rows = input(500, 64);
        let problem = Problem {
            network: &net,
            input: &rows,
            bias: -0.3,
            upper_bound: 32.0,
        };
        let choice = auto.choose(&problem, &config(256)).unwrap();
        assert_eq!(choice.method, "dense");
        assert_eq!(choice.refused.len(), 1);
        assert!(choice.refused[0].1.contains("refuses"));
        // Nothing runs: an error naming every refusal.
        let none = registry(vec![Fake::refusing("tcchain") as Arc<dyn Method>]);
        let error = none.choose(&problem, &config(256)).unwrap_err().to_string();
        assert!(error.contains("tcchain refuses"), "{error}");
    }

    #[test]
    fn the_sparse_regime_runs_the_first_candidate_that_takes_the_problem() {
        let bd = Fake::refusing("blockdepend");
        let sz = Fake::new("sz", 1.0, 1e-3);
        let hp = Fake::new("hp", 0.1, 1e-6);
        let auto = registry(vec![bd.clone(), sz.clone(), hp.clone()]);
        let net = network(64, 2, 2);
        let rows = input(5000, 64);
        let problem = Problem {
            network: &net,
            input: &rows,
            bias: -0.3,
            upper_bound: 32.0,
        };
        // The choice is the order's first, without a trial.
        let choice = auto.choose(&problem, &config(1024)).unwrap();
        assert_eq!(choice.method, "blockdepend", "{choice:?}");
        assert!(choice.reason.contains("sparse"), "{}", choice.reason);
        assert!(
            bd.runs.lock().unwrap().is_empty(),
            "no trial in the sparse regime"
        );
        // The run falls back along the order: blockdepend refuses, sz runs, hp is not tried.
        let output = auto.run_on(&problem, &config(1024), "a GPU").unwrap();
        assert_eq!(output.details.found["auto_choice"], "sz");
        let reason = output.details.found["auto_reason"].as_str().unwrap();
        assert!(
            reason.contains("blockdepend refused, so sz ran"),
            "{reason}"
        );
        assert!(output.details.found["auto_refused"]["blockdepend"].is_string());
        assert_eq!(*sz.runs.lock().unwrap(), vec![5000]);
        assert!(
            hp.runs.lock().unwrap().is_empty(),
            "hp is not tried after sz ran"
        );
    }

    #[test]
    fn shares_keep_two_significant_digits() {
        assert_eq!(percent(0.62), "62");
        assert_eq!(percent(0.031), "3.1");
        assert_eq!(percent(0.00049), "0.049");
        assert_eq!(percent(0.0), "0");
    }

    #[test]
    fn the_cache_key_follows_the_content() {
        let net = network(32, 2, 4);
        let rows = input(10, 32);
        let problem = Problem {
            network: &net,
            input: &rows,
            bias: -0.3,
            upper_bound: 32.0,
        };
        let key = cache_key(&problem, "H100");
        assert_eq!(key, cache_key(&problem, "H100"));
        assert_ne!(key, cache_key(&problem, "H200"));
        let other = network(32, 2, 5);
        assert_ne!(
            key,
            cache_key(
                &Problem {
                    network: &other,
                    ..problem
                },
                "H100"
            )
        );
        let fewer = input(9, 32);
        assert_ne!(
            key,
            cache_key(
                &Problem {
                    input: &fewer,
                    ..problem
                },
                "H100"
            )
        );
    }

    #[test]
    fn a_cached_choice_of_another_version_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let choice = Choice {
            version: MODEL_VERSION,
            method: "dense".into(),
            reason: "r".into(),
            model_ms: vec![("dense".into(), 1.0)],
            trial_ms: Vec::new(),
            refused: Vec::new(),
            features: Features {
                rows: 1,
                layers: 1,
                dense_per_row: 1.0,
                stored_per_row: 1.0,
                share: 1.0,
            },
        };
        std::fs::write(&path, serde_json::to_string(&choice).unwrap()).unwrap();
        assert_eq!(read_cached(&path), Some(choice.clone()));
        let old = Choice {
            version: MODEL_VERSION + 1,
            ..choice
        };
        std::fs::write(&path, serde_json::to_string(&old).unwrap()).unwrap();
        assert_eq!(read_cached(&path), None);
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(read_cached(&path), None);
    }
}
