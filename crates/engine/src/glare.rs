//! GLARE in the engine: the settings of the `+glare` methods, the activation profile the
//! access model reads, and the choice of the segment length `m` for a run.
//!
//! `m` is either given by hand ([`GlareSettings::segment`], checked with
//! [`Kernel::check_segment`]) or chosen by the paper's access model
//! ([`spdnn_glare::model`]) from the CPU reference's statistics of the first
//! [`GlareSettings::model_rows`] input rows ([`Profile`]). The profile depends only on the
//! problem, so a caller running several GLARE methods on one problem computes it once and
//! hands it over in [`RunConfig::glare_profile`]; without it each method computes its own.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use spdnn_cuda::slab_weights::{DEFAULT_SHARED_BYTES, slab_width_for};
use spdnn_glare::AccessCounts;
use spdnn_glare::model::{Kernel, LayerProfile, Shape};
use spdnn_reference::{Activation, Inference, LayerStats, Options};

use crate::method::Problem;
use crate::run::{MethodOptions, RunConfig};

/// Suffix of the GLARE variant of a method's name (`bf` → `bf+glare`).
pub const SUFFIX: &str = "+glare";

/// Input rows the access model reads by default.
pub const DEFAULT_MODEL_ROWS: usize = 512;

/// What the user chose for the `+glare` methods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlareSettings {
    /// Segment length `m` given by hand; `None` lets the access model choose.
    pub segment: Option<usize>,
    /// Input rows the access model's statistics are taken on (at most the run's rows).
    pub model_rows: usize,
    /// Run the census after the timed runs and report the accesses of every layer.
    pub census: bool,
}

impl Default for GlareSettings {
    fn default() -> Self {
        Self {
            segment: None,
            model_rows: DEFAULT_MODEL_ROWS,
            census: true,
        }
    }
}

impl GlareSettings {
    /// Checks what does not depend on the kernel: `model_rows ≥ 1`, a given segment ≥ 1.
    pub fn validate(&self) -> Result<()> {
        if self.model_rows == 0 {
            bail!("GLARE model rows must be at least 1, not 0");
        }
        if self.segment == Some(0) {
            bail!("the GLARE segment length must be at least 1, not 0");
        }
        Ok(())
    }

    /// [`Self::validate`], and for every kernel but SNIG (whose unit is its section, of
    /// any width) a given segment must be a power of two.
    pub fn validate_for(&self, kernel: Kernel) -> Result<()> {
        self.validate()?;
        if let Some(m) = self.segment
            && kernel != Kernel::Snig
            && !m.is_power_of_two()
        {
            bail!(
                "{}{SUFFIX}: the GLARE segment length must be a power of two, not {m} \
                 (only snig{SUFFIX} takes its section width, which may be any)",
                kernel.method()
            );
        }
        Ok(())
    }
}

/// The GLARE kernel behind a method name (`bf+glare` → BF); `None` for other methods.
pub fn kernel_of(method: &str) -> Option<Kernel> {
    let base = method.strip_suffix(SUFFIX)?;
    Kernel::ALL.into_iter().find(|k| k.method() == base)
}

/// The name of the GLARE variant of `method` (itself when it is one); `None` when the
/// method has none.
pub fn variant_of(method: &str) -> Option<String> {
    if kernel_of(method).is_some() {
        return Some(method.to_string());
    }
    Kernel::ALL
        .into_iter()
        .find(|k| k.method() == method)
        .map(|k| format!("{}{SUFFIX}", k.method()))
}

/// The shape the access model sees for `kernel` on an `neurons`-neuron network:
/// BF and SNIG use the default slab (section) width; the recorder starts after XY's
/// deletion layer (`delete_at`, 0 when never) and after SNICIT's threshold layer.
pub fn shape(kernel: Kernel, neurons: usize, options: &MethodOptions) -> Shape {
    let (slab_width, first_layer) = match kernel {
        Kernel::Bf | Kernel::Snig => (slab_width_for(neurons, DEFAULT_SHARED_BYTES), 0),
        Kernel::Xy => (0, options.xy.delete_at.unwrap_or(0)),
        Kernel::Snicit => (0, options.snicit.threshold),
    };
    Shape {
        neurons,
        slab_width,
        first_layer,
    }
}

/// Checks a hand-given segment (if any) of the GLARE method `method` against an
/// `neurons`-neuron network before anything runs; other methods pass.
pub fn check_method(method: &str, neurons: usize, options: &MethodOptions) -> Result<()> {
    let Some(kernel) = kernel_of(method) else {
        return Ok(());
    };
    options.glare.validate_for(kernel)?;
    if let Some(m) = options.glare.segment {
        kernel
            .check_segment(&shape(kernel, neurons, options), m)
            .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// The activations of the first rows of a problem as the access model sees them.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Input rows the statistics were taken on.
    pub rows: usize,
    /// Neurons per layer.
    pub neurons: usize,
    /// Index 0: the input; index `l`: the output of layer `l`.
    pub layers: Vec<LayerProfile>,
    /// Time the CPU reference took, ms.
    pub compute_ms: f64,
}

impl Profile {
    /// Runs the CPU reference (f32) with statistics on the first `min(model_rows, rows)`
    /// rows of `problem`, with segments of N neurons (a whole row).
    pub fn compute(problem: &Problem<'_>, model_rows: usize) -> Result<Self> {
        let start = Instant::now();
        let neurons = problem.network.neurons();
        let rows = model_rows.min(problem.input.rows());
        let head = problem.input.head(rows);
        let activation = Activation::new(problem.bias, problem.upper_bound)?;
        let options = Options {
            keep_output: false,
            collect_stats: true,
            segment_lengths: vec![neurons.max(1)],
        };
        let out: Inference<f32> = spdnn_reference::infer(
            problem.network.layers(),
            &head.features,
            activation,
            &options,
        )
        .context("computing the GLARE access model's statistics")?;
        let input =
            spdnn_reference::input_stats(&head.features, problem.upper_bound, &[neurons.max(1)]);
        let layers = std::iter::once(&input)
            .chain(&out.stats)
            .map(|stats| layer_profile(stats, neurons))
            .collect();
        Ok(Self {
            rows,
            neurons,
            layers,
            compute_ms: start.elapsed().as_secs_f64() * 1e3,
        })
    }

    /// Whether this profile describes `problem` with `model_rows` (its rows, N and number
    /// of layers agree; the data itself is the caller's promise).
    pub fn fits(&self, problem: &Problem<'_>, model_rows: usize) -> bool {
        self.rows == model_rows.min(problem.input.rows())
            && self.neurons == problem.network.neurons()
            && self.layers.len() == problem.network.num_layers() + 1
    }
}

/// `p` = values at the bound / (live rows · N), `q` = rows all at the bound / live rows
/// (0 when no row is alive); `stats` must hold segments of `neurons`.
fn layer_profile(stats: &LayerStats, neurons: usize) -> LayerProfile {
    let live = stats.active_rows as f64;
    if stats.active_rows == 0 {
        return LayerProfile {
            value_at_bound: 0.0,
            row_at_bound: 0.0,
        };
    }
    let full_rows = stats
        .segment(neurons.max(1))
        .map_or(0, |s| s.all_upper_bound);
    LayerProfile {
        value_at_bound: stats.at_upper_bound as f64 / (live * neurons.max(1) as f64),
        row_at_bound: full_rows as f64 / live,
    }
}

/// How a run's segment length was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChosenBy {
    /// By the access model from the statistics.
    Model,
    /// Given by hand (`--glare-segment`).
    Option,
}

/// A run's segment length and how it was found.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentChoice {
    /// `m`.
    pub segment: usize,
    /// Model or option.
    pub chosen_by: ChosenBy,
    /// Rows the model's statistics were taken on (`None` when given by hand).
    pub model_rows: Option<usize>,
    /// `(m, expected accesses summed over the recorded layers)` of every candidate
    /// (empty when given by hand).
    pub expected: Vec<(usize, f64)>,
    /// Time the statistics took, ms (0 when reused or given by hand).
    pub profile_ms: f64,
}

/// Chooses `m` for `kernel` on `problem`: the hand-given segment when there is one
/// (checked), else the access model's choice on the profile in `config` when it fits the
/// problem, else on a profile computed here.
pub fn choose_segment(
    kernel: Kernel,
    problem: &Problem<'_>,
    config: &RunConfig,
) -> Result<SegmentChoice> {
    let settings = &config.methods.glare;
    settings.validate_for(kernel)?;
    let shape = shape(kernel, problem.network.neurons(), &config.methods);
    if let Some(m) = settings.segment {
        kernel
            .check_segment(&shape, m)
            .map_err(anyhow::Error::msg)?;
        return Ok(SegmentChoice {
            segment: m,
            chosen_by: ChosenBy::Option,
            model_rows: None,
            expected: Vec::new(),
            profile_ms: 0.0,
        });
    }
    let computed;
    let (profile, profile_ms) = match &config.glare_profile {
        Some(profile) if profile.fits(problem, settings.model_rows) => (profile.as_ref(), 0.0),
        _ => {
            computed = Profile::compute(problem, settings.model_rows)?;
            (&computed, computed.compute_ms)
        }
    };
    let Some(choice) = kernel.choose(&shape, &profile.layers) else {
        bail!(
            "{}{SUFFIX} accepts no segment length for N = {}",
            kernel.method(),
            shape.neurons
        );
    };
    Ok(SegmentChoice {
        segment: choice.segment,
        chosen_by: ChosenBy::Model,
        model_rows: Some(profile.rows),
        expected: choice.expected,
        profile_ms,
    })
}

/// Whether running `methods` with `settings` runs the access model: some GLARE method
/// and no hand-given segment.
pub fn needs_profile(methods: &[&str], settings: &GlareSettings) -> bool {
    settings.segment.is_none() && methods.iter().any(|m| kernel_of(m).is_some())
}

/// Computes the profile that [`choose_segment`] would, when [`needs_profile`], for
/// [`RunConfig::glare_profile`].
pub fn shared_profile(
    methods: &[&str],
    problem: &Problem<'_>,
    settings: &GlareSettings,
) -> Result<Option<Arc<Profile>>> {
    if !needs_profile(methods, settings) {
        return Ok(None);
    }
    settings.validate()?;
    Profile::compute(problem, settings.model_rows).map(|p| Some(Arc::new(p)))
}

/// Key of the GLARE facts in a run's details.
pub(crate) const GLARE_KEY: &str = "glare";
/// Key of the per-layer access counts in a run's details.
pub(crate) const ACCESSES_KEY: &str = "accesses";

/// The `glare` object of a run's details: `segment`, `chosen_by`, `model_rows`, `model`
/// (`[{"m", "expected_accesses"}]`), `census`, `profile_ms`, and `reduction` (over all
/// layers; null without census).
pub(crate) fn choice_json(
    choice: &SegmentChoice,
    census: bool,
    accesses: &[AccessCounts],
) -> serde_json::Value {
    let model: Vec<serde_json::Value> = choice
        .expected
        .iter()
        .map(|&(m, expected)| serde_json::json!({ "m": m, "expected_accesses": expected }))
        .collect();
    serde_json::json!({
        "segment": choice.segment,
        "chosen_by": choice.chosen_by,
        "model_rows": choice.model_rows,
        "model": model,
        "census": census,
        "profile_ms": choice.profile_ms,
        "reduction": overall_reduction(accesses),
    })
}

/// One object per layer (1-based `layer`): the eight counts, `without_recorder`,
/// `with_recorder`, `avoided` and `reduction`.
pub(crate) fn accesses_json(accesses: &[AccessCounts]) -> serde_json::Value {
    accesses
        .iter()
        .enumerate()
        .map(|(i, a)| {
            serde_json::json!({
                "layer": i + 1,
                "activation_reads": a.activation_reads,
                "activation_reads_skipped": a.activation_reads_skipped,
                "activation_writes": a.activation_writes,
                "activation_writes_skipped": a.activation_writes_skipped,
                "weight_reads": a.weight_reads,
                "recorder_reads": a.recorder_reads,
                "recorder_writes": a.recorder_writes,
                "write_backs": a.write_backs,
                "without_recorder": a.without_recorder(),
                "with_recorder": a.with_recorder(),
                "avoided": a.avoided(),
                "reduction": a.reduction(),
            })
        })
        .collect()
}

/// Σ avoided / Σ without recorder over the layers; `None` when nothing was counted.
pub fn overall_reduction(accesses: &[AccessCounts]) -> Option<f64> {
    let without: u64 = accesses.iter().map(AccessCounts::without_recorder).sum();
    let avoided: i64 = accesses.iter().map(AccessCounts::avoided).sum();
    (without > 0).then(|| avoided as f64 / without as f64)
}

/// What a terminal says about a GLARE run, read back from its details.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// `m`.
    pub segment: usize,
    /// `"model"` or `"option"`.
    pub chosen_by: String,
    /// Rows the model read.
    pub model_rows: Option<usize>,
    /// Σ avoided / Σ without recorder, when a census was taken.
    pub reduction: Option<f64>,
    /// Layers that ran with the recorder (nonzero counts).
    pub recorded_layers: usize,
}

impl Summary {
    /// The summary of a run's details; `None` for runs without GLARE.
    pub fn from_details(details: &serde_json::Value) -> Option<Self> {
        let glare = details.get(GLARE_KEY)?;
        let recorded_layers =
            details
                .get(ACCESSES_KEY)
                .and_then(|a| a.as_array())
                .map_or(0, |layers| {
                    layers
                        .iter()
                        .filter(|l| l.get("without_recorder").and_then(|v| v.as_u64()) > Some(0))
                        .count()
                });
        Some(Self {
            segment: glare.get("segment")?.as_u64()? as usize,
            chosen_by: glare.get("chosen_by")?.as_str()?.to_string(),
            model_rows: glare
                .get("model_rows")
                .and_then(|v| v.as_u64())
                .map(|r| r as usize),
            reduction: glare.get("reduction").and_then(|v| v.as_f64()),
            recorded_layers,
        })
    }

    /// One line: `m = M (model, R rows); X% fewer global accesses over K layers`.
    pub fn text(&self) -> String {
        let how = match self.model_rows {
            Some(rows) => format!("{}, {rows} rows", self.chosen_by),
            None => self.chosen_by.clone(),
        };
        let layers = match self.recorded_layers {
            1 => "1 layer".to_string(),
            n => format!("{n} layers"),
        };
        let accesses = match self.reduction {
            Some(r) if r >= 0.0 => {
                format!("{:.1}% fewer global accesses over {layers}", 100.0 * r)
            }
            Some(r) => format!("{:.1}% more global accesses over {layers}", -100.0 * r),
            None => "no census".to_string(),
        };
        format!("m = {} ({how}); {accesses}", self.segment)
    }
}

#[cfg(test)]
mod tests {
    use spdnn_formats::Csr;
    use spdnn_sdgc::{Input, InputOrigin, Network};

    use super::*;

    const BIAS: f32 = -0.3;
    const BOUND: f32 = 32.0;

    fn problem<'a>(network: &'a Network, input: &'a Input) -> Problem<'a> {
        Problem {
            network,
            input,
            bias: BIAS,
            upper_bound: BOUND,
        }
    }

    /// N = 4, two layers of 40·I: a live value saturates at once.
    fn saturating() -> (Network, Input) {
        let identity: Vec<(u32, u32, f32)> = (0..4).map(|i| (i, i, 40.0)).collect();
        let layer = Csr::from_triplets(4, 4, &identity).unwrap();
        let network = Network::new(4, vec![layer.clone(), layer]).unwrap();
        // Row 0: one input; row 1: all four; row 2: none (dead).
        let features = Csr::from_triplets(
            3,
            4,
            &[
                (0, 0, 1.0),
                (1, 0, 1.0),
                (1, 1, 1.0),
                (1, 2, 1.0),
                (1, 3, 1.0),
            ],
        )
        .unwrap();
        let input = Input {
            features,
            origin: InputOrigin::Synthetic { seed: 0 },
        };
        (network, input)
    }

    fn generated(neurons: usize, layers: usize, rows: usize) -> (Network, Input) {
        let network = spdnn_sdgc::generator::network(neurons, layers, 0).unwrap();
        let input = spdnn_sdgc::images::synthetic(rows, neurons, 1).unwrap();
        (network, input)
    }

    fn config(settings: GlareSettings) -> RunConfig {
        RunConfig {
            methods: MethodOptions {
                glare: settings,
                ..MethodOptions::default()
            },
            ..RunConfig::default()
        }
    }

    #[test]
    fn defaults_and_validation() {
        let d = GlareSettings::default();
        assert_eq!((d.segment, d.model_rows, d.census), (None, 512, true));
        d.validate().unwrap();
        let bad_rows = GlareSettings {
            model_rows: 0,
            ..d.clone()
        };
        assert!(
            bad_rows
                .validate()
                .unwrap_err()
                .to_string()
                .contains("model rows")
        );
        let zero = GlareSettings {
            segment: Some(0),
            ..d.clone()
        };
        assert!(zero.validate().is_err());
        let odd = GlareSettings {
            segment: Some(10944),
            ..d
        };
        odd.validate_for(Kernel::Snig).unwrap();
        for kernel in [Kernel::Bf, Kernel::Xy, Kernel::Snicit] {
            let message = odd.validate_for(kernel).unwrap_err().to_string();
            assert!(message.contains("power of two"), "{message}");
        }
    }

    #[test]
    fn names_map_to_kernels_and_variants() {
        assert_eq!(kernel_of("bf+glare"), Some(Kernel::Bf));
        assert_eq!(kernel_of("snicit+glare"), Some(Kernel::Snicit));
        assert_eq!(kernel_of("bf"), None);
        assert_eq!(kernel_of("cusparse+glare"), None);
        assert_eq!(variant_of("xy").as_deref(), Some("xy+glare"));
        assert_eq!(variant_of("snig+glare").as_deref(), Some("snig+glare"));
        assert_eq!(variant_of("cpu"), None);
        assert_eq!(variant_of("cusparse"), None);
    }

    #[test]
    fn shapes_follow_the_options() {
        let mut options = MethodOptions::default();
        let bf = shape(Kernel::Bf, 65536, &options);
        assert_eq!(bf.slab_width, slab_width_for(65536, DEFAULT_SHARED_BYTES));
        assert_eq!(bf.first_layer, 0);
        assert_eq!(shape(Kernel::Snig, 1024, &options).slab_width, 1024);
        assert_eq!(shape(Kernel::Xy, 1024, &options).first_layer, 22);
        assert_eq!(shape(Kernel::Snicit, 1024, &options).first_layer, 30);
        options.xy.delete_at = None;
        options.snicit.threshold = 7;
        assert_eq!(shape(Kernel::Xy, 1024, &options).first_layer, 0);
        assert_eq!(shape(Kernel::Snicit, 1024, &options).first_layer, 7);
    }

    #[test]
    fn the_profile_counts_live_rows_and_values_at_the_bound() {
        let (network, input) = saturating();
        let profile = Profile::compute(&problem(&network, &input), 512).unwrap();
        assert_eq!((profile.rows, profile.neurons), (3, 4));
        assert_eq!(profile.layers.len(), 3);
        // The input is binary: nothing at the bound.
        assert_eq!(profile.layers[0].value_at_bound, 0.0);
        assert_eq!(profile.layers[0].row_at_bound, 0.0);
        // Two live rows; 5 of their 8 values at 32; row 1 entirely.
        for layer in &profile.layers[1..] {
            assert_eq!(layer.value_at_bound, 5.0 / 8.0);
            assert_eq!(layer.row_at_bound, 0.5);
        }
        assert!(profile.fits(&problem(&network, &input), 512));
        assert!(!profile.fits(&problem(&network, &input), 2));
        // Only the first rows are read.
        let head = Profile::compute(&problem(&network, &input), 1).unwrap();
        assert_eq!(head.rows, 1);
        assert_eq!(head.layers[1].value_at_bound, 0.25);
        assert_eq!(head.layers[1].row_at_bound, 0.0);
    }

    #[test]
    fn dead_layers_profile_as_zero() {
        let (network, _) = saturating();
        let input = Input {
            features: Csr::from_triplets(2, 4, &[]).unwrap(),
            origin: InputOrigin::Synthetic { seed: 0 },
        };
        let profile = Profile::compute(&problem(&network, &input), 512).unwrap();
        assert!(
            profile
                .layers
                .iter()
                .all(|l| l.value_at_bound == 0.0 && l.row_at_bound == 0.0)
        );
    }

    #[test]
    fn the_model_chooses_a_candidate_on_a_generated_network() {
        let (network, input) = generated(64, 12, 40);
        let p = problem(&network, &input);
        let mut settings = GlareSettings {
            model_rows: 16,
            ..GlareSettings::default()
        };
        for kernel in Kernel::ALL {
            let mut config = config(settings.clone());
            config.methods.xy.delete_at = Some(3);
            config.methods.snicit.threshold = 3;
            let choice = choose_segment(kernel, &p, &config).unwrap();
            let s = shape(kernel, 64, &config.methods);
            assert_eq!(choice.chosen_by, ChosenBy::Model);
            assert_eq!(choice.model_rows, Some(16));
            assert!(
                kernel.candidates(&s).contains(&choice.segment),
                "{kernel:?}"
            );
            let listed: Vec<usize> = choice.expected.iter().map(|e| e.0).collect();
            assert_eq!(listed, kernel.candidates(&s));
        }
        // More model rows than the input has: all of them.
        settings.model_rows = 1000;
        let choice = choose_segment(Kernel::Xy, &p, &config(settings)).unwrap();
        assert_eq!(choice.model_rows, Some(40));
    }

    #[test]
    fn a_hand_given_segment_is_checked_not_modelled() {
        let (network, input) = generated(64, 4, 8);
        let p = problem(&network, &input);
        let given = |m| {
            config(GlareSettings {
                segment: Some(m),
                ..GlareSettings::default()
            })
        };
        let choice = choose_segment(Kernel::Xy, &p, &given(32)).unwrap();
        assert_eq!(choice.segment, 32);
        assert_eq!(choice.chosen_by, ChosenBy::Option);
        assert!(choice.expected.is_empty() && choice.model_rows.is_none());
        // BF on N = 64 takes one unit per row only.
        let message = choose_segment(Kernel::Bf, &p, &given(32))
            .unwrap_err()
            .to_string();
        assert!(message.contains("accepts 64"), "{message}");
        assert!(choose_segment(Kernel::Snicit, &p, &given(48)).is_err());
        assert!(check_method("bf+glare", 64, &given(32).methods).is_err());
        assert!(check_method("bf+glare", 64, &given(64).methods).is_ok());
        assert!(check_method("bf", 64, &given(32).methods).is_ok());
    }

    #[test]
    fn a_shared_profile_is_used_when_it_fits() {
        let (network, input) = generated(64, 6, 20);
        let p = problem(&network, &input);
        let settings = GlareSettings {
            model_rows: 10,
            ..GlareSettings::default()
        };
        assert!(
            shared_profile(&["bf", "cpu"], &p, &settings)
                .unwrap()
                .is_none()
        );
        let shared = shared_profile(&["bf", "xy+glare"], &p, &settings)
            .unwrap()
            .unwrap();
        assert_eq!(shared.rows, 10);
        // A profile of saturated rows sends XY to the longest unit; a fitting one is used.
        let mut fake = (*shared).clone();
        for layer in &mut fake.layers {
            *layer = LayerProfile {
                value_at_bound: 1.0,
                row_at_bound: 1.0,
            };
        }
        let mut config = config(settings.clone());
        config.methods.xy.delete_at = None;
        config.glare_profile = Some(Arc::new(fake.clone()));
        let choice = choose_segment(Kernel::Xy, &p, &config).unwrap();
        // Six layers of n/m recorder reads each, nothing else.
        assert_eq!(choice.expected, vec![(16, 24.0), (32, 12.0), (64, 6.0)]);
        assert_eq!(choice.segment, 64);
        assert_eq!(choice.profile_ms, 0.0);
        // One of other rows does not fit: the statistics are taken again.
        fake.rows = 11;
        config.glare_profile = Some(Arc::new(fake));
        let own = choose_segment(Kernel::Xy, &p, &config).unwrap();
        let fresh = choose_segment(
            Kernel::Xy,
            &p,
            &RunConfig {
                glare_profile: Some(shared),
                ..config.clone()
            },
        )
        .unwrap();
        assert_eq!(own.expected, fresh.expected);
        let given = GlareSettings {
            segment: Some(64),
            ..settings
        };
        assert!(shared_profile(&["xy+glare"], &p, &given).unwrap().is_none());
    }

    fn counts(reads: u64, skipped: u64, recorder: u64) -> AccessCounts {
        AccessCounts {
            activation_reads: reads,
            activation_reads_skipped: skipped,
            weight_reads: 100,
            recorder_reads: recorder,
            ..AccessCounts::default()
        }
    }

    #[test]
    fn json_holds_the_choice_and_every_layers_counts() {
        let choice = SegmentChoice {
            segment: 256,
            chosen_by: ChosenBy::Model,
            model_rows: Some(512),
            expected: vec![(128, 10.0), (256, 8.5)],
            profile_ms: 3.0,
        };
        let accesses = [AccessCounts::default(), counts(40, 60, 10)];
        let glare = choice_json(&choice, true, &accesses);
        assert_eq!(glare["segment"], 256);
        assert_eq!(glare["chosen_by"], "model");
        assert_eq!(glare["model_rows"], 512);
        assert_eq!(
            glare["model"][1],
            serde_json::json!({ "m": 256, "expected_accesses": 8.5 })
        );
        assert_eq!(glare["reduction"], 0.25);
        let layers = accesses_json(&accesses);
        assert_eq!(layers.as_array().unwrap().len(), 2);
        let second = &layers[1];
        assert_eq!(second["layer"], 2);
        for key in [
            "activation_reads",
            "activation_reads_skipped",
            "activation_writes",
            "activation_writes_skipped",
            "weight_reads",
            "recorder_reads",
            "recorder_writes",
            "write_backs",
        ] {
            assert!(second.get(key).is_some(), "{key}");
        }
        assert_eq!(second["without_recorder"], 200);
        assert_eq!(second["with_recorder"], 150);
        assert_eq!(second["avoided"], 50);
        assert_eq!(second["reduction"], 0.25);

        let given = SegmentChoice {
            chosen_by: ChosenBy::Option,
            model_rows: None,
            expected: Vec::new(),
            ..choice
        };
        let glare = choice_json(&given, false, &[]);
        assert_eq!(glare["chosen_by"], "option");
        assert!(glare["model_rows"].is_null() && glare["reduction"].is_null());
    }

    #[test]
    fn overall_reduction_sums_over_layers() {
        let layers = [counts(40, 60, 10), counts(100, 0, 20)];
        // without: 200 + 200, avoided: 50 − 20.
        assert_eq!(overall_reduction(&layers), Some(30.0 / 400.0));
        assert_eq!(overall_reduction(&[AccessCounts::default()]), None);
        assert_eq!(overall_reduction(&[]), None);
    }

    #[test]
    fn summaries_read_back_the_details() {
        let details = serde_json::json!({
            "glare": choice_json(
                &SegmentChoice {
                    segment: 1024,
                    chosen_by: ChosenBy::Model,
                    model_rows: Some(512),
                    expected: vec![(1024, 1.0)],
                    profile_ms: 0.0,
                },
                true,
                &[AccessCounts::default(), counts(40, 60, 10)],
            ),
            "accesses": accesses_json(&[AccessCounts::default(), counts(40, 60, 10)]),
        });
        let summary = Summary::from_details(&details).unwrap();
        assert_eq!(summary.recorded_layers, 1);
        assert_eq!(
            summary.text(),
            "m = 1024 (model, 512 rows); 25.0% fewer global accesses over 1 layer"
        );
        let worse = Summary {
            reduction: Some(-0.05),
            model_rows: None,
            chosen_by: "option".into(),
            ..summary.clone()
        };
        assert!(
            worse.text().contains("(option); 5.0% more"),
            "{}",
            worse.text()
        );
        let none = Summary {
            reduction: None,
            ..summary
        };
        assert!(none.text().ends_with("no census"));
        assert!(Summary::from_details(&serde_json::json!({ "gpu": "x" })).is_none());
    }
}
