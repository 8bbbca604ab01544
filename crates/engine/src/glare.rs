//! GLARE as a modifier: the `+glare` variant of every kernel family that implements
//! [`GlareKernel`], its settings, the activation profile the access model reads, and the
//! choice of the segment length `m` for a run.
//!
//! `m` is either given by hand ([`GlareSettings::segment`], checked against what the
//! kernel accepts) or chosen by the paper's access model ([`spdnn_glare::model`], each
//! kernel's row of it written beside the kernel) from the CPU reference's statistics of
//! the first [`GlareSettings::model_rows`] input rows ([`Profile`]). The profile depends
//! only on the problem, so the methods of one run share it through
//! [`crate::method::SharedWork`].

use std::any::TypeId;
use std::marker::PhantomData;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;
use spdnn_cuda::method::MethodOptions;
use spdnn_glare::model::{self, LayerProfile, Shape};
use spdnn_glare::{Glare, GlareKernel};
use spdnn_reference::{Activation, Inference, LayerStats, Options};

use crate::gpu::{checked_options, open_gpu, reads, run_kernel};
use crate::method::{
    Candidate, ChosenBy, Details, GlareOutcome, Method, MethodOutput, Problem, RunConfig,
};
use crate::options::OptionSet;

/// Suffix of the GLARE variant of a method's name (`bf` → `bf+glare`).
pub const SUFFIX: &str = "+glare";

/// Input rows the access model reads by default.
pub const DEFAULT_MODEL_ROWS: usize = 512;

/// What the user chose for the `+glare` methods.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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

impl MethodOptions for GlareSettings {
    /// What does not depend on the kernel: `model_rows ≥ 1`, a given segment ≥ 1.
    fn validate(&self) -> Result<(), String> {
        if self.model_rows == 0 {
            return Err("GLARE model rows must be at least 1, not 0".into());
        }
        if self.segment == Some(0) {
            return Err("the GLARE segment length must be at least 1, not 0".into());
        }
        Ok(())
    }
}

impl GlareSettings {
    /// [`MethodOptions::validate`], and a given segment must be a power of two unless
    /// `K` takes any length (SNIG: its section width).
    pub fn validate_for<K: GlareKernel>(&self) -> Result<()> {
        self.validate().map_err(anyhow::Error::msg)?;
        if let Some(m) = self.segment
            && !K::ANY_LENGTH
            && !m.is_power_of_two()
        {
            bail!(
                "{}{SUFFIX}: the GLARE segment length must be a power of two, not {m} \
                 (only a kernel whose unit is its section, snig{SUFFIX}, takes any width)",
                K::NAME
            );
        }
        Ok(())
    }
}

/// The `+glare` variant of kernel family `K`.
pub struct GlareRow<K> {
    name: String,
    description: String,
    kernel: PhantomData<fn() -> K>,
}

impl<K: GlareKernel> Default for GlareRow<K> {
    fn default() -> Self {
        Self {
            name: format!("{}{SUFFIX}", K::NAME),
            description: format!("GLARE on {}: {}", K::NAME, K::UNIT),
            kernel: PhantomData,
        }
    }
}

impl<K: GlareKernel> GlareRow<K> {
    /// `K`'s options and the checked settings; a hand-given segment is checked against
    /// what `K` accepts on `neurons` neurons.
    fn checked(&self, options: &OptionSet, neurons: usize) -> Result<(K::Options, GlareSettings)> {
        let kernel_options = checked_options::<K>(options)?;
        let settings: GlareSettings = options.get();
        settings.validate_for::<K>()?;
        if let Some(m) = settings.segment {
            model::check_segment::<K>(&K::shape(&kernel_options, neurons), m)
                .map_err(anyhow::Error::msg)?;
        }
        Ok((kernel_options, settings))
    }
}

impl<K: GlareKernel> Method for GlareRow<K> {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn needs_gpu(&self) -> bool {
        true
    }

    fn in_default_run(&self) -> bool {
        false
    }

    fn reads(&self) -> Vec<TypeId> {
        let mut types = reads::<K::Options>();
        types.push(TypeId::of::<GlareSettings>());
        types
    }

    fn check(&self, options: &OptionSet, neurons: usize) -> Result<()> {
        self.checked(options, neurons).map(|_| ())
    }

    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput> {
        if problem.network.biases().is_some() {
            anyhow::bail!(
                "{}: GLARE's recorders and access model take one bias for all neurons, and this \
                 network has a bias per neuron: run the method without GLARE",
                self.name()
            );
        }
        // A bad hand-given segment fails here, before a GPU is looked for.
        let (options, settings) = self.checked(&config.options, widest(problem))?;
        let gpu = open_gpu(&config.options)?;
        // The model runs on the CPU before any GPU work: not part of total_ms.
        let choice = choose_segment::<K>(problem, config, &options, &settings)?;
        let recorder = Glare {
            segment: choice.segment,
            census: settings.census,
        };
        let mut output =
            run_kernel::<K>(&gpu, problem, config, &K::with_recorder(&options, recorder))?;
        output.details.glare = Some(GlareOutcome {
            reduction: overall_reduction(&output.details),
            census: settings.census,
            ..choice
        });
        Ok(output)
    }
}

/// The widest layer of `problem`'s network (N for the challenge's square networks; the
/// recorder's units are laid out over it, see each kernel's `GlareKernel::shape`).
fn widest(problem: &Problem<'_>) -> usize {
    problem
        .network
        .layers()
        .iter()
        .map(spdnn_formats::SparseMatrix::ncols)
        .fold(problem.network.neurons(), usize::max)
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

/// Chooses `m` for `K` with `options` on `problem`: the hand-given segment when there is
/// one (checked), else the access model's choice on the problem's profile (shared with
/// the run's other methods through `config.shared`). The outcome's `census` and
/// `reduction` are left for the caller.
pub fn choose_segment<K: GlareKernel>(
    problem: &Problem<'_>,
    config: &RunConfig,
    options: &K::Options,
    settings: &GlareSettings,
) -> Result<GlareOutcome> {
    settings.validate_for::<K>()?;
    let shape: Shape = K::shape(options, widest(problem));
    if let Some(m) = settings.segment {
        model::check_segment::<K>(&shape, m).map_err(anyhow::Error::msg)?;
        return Ok(GlareOutcome {
            segment: m,
            chosen_by: ChosenBy::Option,
            model_rows: None,
            model: Vec::new(),
            census: settings.census,
            profile_ms: 0.0,
            reduction: None,
        });
    }
    let key = format!("glare-profile/{}", settings.model_rows);
    let (profile, computed) = config
        .shared
        .get_or_compute(&key, || Profile::compute(problem, settings.model_rows))?;
    let choice = model::choose::<K>(&shape, &profile.layers).ok_or_else(|| {
        anyhow!(
            "{}{SUFFIX} accepts no segment length for N = {}",
            K::NAME,
            shape.neurons
        )
    })?;
    Ok(GlareOutcome {
        segment: choice.segment,
        chosen_by: ChosenBy::Model,
        model_rows: Some(profile.rows),
        model: choice
            .expected
            .into_iter()
            .map(|(m, expected_accesses)| Candidate {
                m,
                expected_accesses,
            })
            .collect(),
        census: settings.census,
        profile_ms: if computed { profile.compute_ms } else { 0.0 },
        reduction: None,
    })
}

/// Σ avoided / Σ without recorder over the layers of a run's census; `None` when nothing
/// was counted.
pub fn overall_reduction(details: &Details) -> Option<f64> {
    let without: u64 = details.accesses.iter().map(|a| a.without_recorder).sum();
    let avoided: i64 = details.accesses.iter().map(|a| a.avoided).sum();
    (without > 0).then(|| avoided as f64 / without as f64)
}

/// What a terminal says about a GLARE run.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// `m`.
    pub segment: usize,
    /// How `m` was chosen.
    pub chosen_by: ChosenBy,
    /// Rows the model read.
    pub model_rows: Option<usize>,
    /// Σ avoided / Σ without recorder, when a census was taken.
    pub reduction: Option<f64>,
    /// Layers that ran with the recorder (nonzero counts).
    pub recorded_layers: usize,
}

impl Summary {
    /// The summary of a run's details; `None` for runs without GLARE.
    pub fn of(details: &Details) -> Option<Self> {
        let glare = details.glare.as_ref()?;
        Some(Self {
            segment: glare.segment,
            chosen_by: glare.chosen_by,
            model_rows: glare.model_rows,
            reduction: glare.reduction,
            recorded_layers: details
                .accesses
                .iter()
                .filter(|a| a.without_recorder > 0)
                .count(),
        })
    }

    /// One line: `m = M (model, R rows); X% fewer global accesses over K layers`.
    pub fn text(&self) -> String {
        let chosen_by = match self.chosen_by {
            ChosenBy::Model => "model",
            ChosenBy::Option => "option",
        };
        let how = match self.model_rows {
            Some(rows) => format!("{chosen_by}, {rows} rows"),
            None => chosen_by.to_string(),
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
    use std::sync::Arc;

    use proptest::prelude::*;
    use spdnn_bf::{Bf, BfOptions};
    use spdnn_cuda::slab_weights::{DEFAULT_SHARED_BYTES, slab_width_for};
    use spdnn_formats::Csr;
    use spdnn_glare::AccessCounts;
    use spdnn_sdgc::{Input, InputOrigin, Network};
    use spdnn_snicit::{Snicit, SnicitOptions};
    use spdnn_snig::{Snig, SnigOptions};
    use spdnn_xy::{Xy, XyOptions};

    use super::*;
    use crate::gpu::layer_accesses;

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

    fn settings(segment: Option<usize>, model_rows: usize) -> GlareSettings {
        GlareSettings {
            segment,
            model_rows,
            census: true,
        }
    }

    fn shape(n: usize, slab: usize, first: usize) -> Shape {
        Shape {
            neurons: n,
            slab_width: slab,
            first_layer: first,
        }
    }

    fn flat(p: f64, q: f64, layers: usize) -> Vec<LayerProfile> {
        vec![
            LayerProfile {
                value_at_bound: p,
                row_at_bound: q,
            };
            layers + 1
        ]
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
        assert!(bad_rows.validate().unwrap_err().contains("model rows"));
        let zero = GlareSettings {
            segment: Some(0),
            ..d.clone()
        };
        assert!(zero.validate().is_err());
        let odd = GlareSettings {
            segment: Some(10944),
            ..d
        };
        odd.validate_for::<Snig>().unwrap();
        for message in [
            odd.validate_for::<Bf>().unwrap_err().to_string(),
            odd.validate_for::<Xy>().unwrap_err().to_string(),
            odd.validate_for::<Snicit>().unwrap_err().to_string(),
        ] {
            assert!(message.contains("power of two"), "{message}");
        }
    }

    #[test]
    fn shapes_follow_the_options() {
        let bf = Bf::shape(&BfOptions::default(), 65536);
        assert_eq!(bf.slab_width, slab_width_for(65536, DEFAULT_SHARED_BYTES));
        assert_eq!(bf.first_layer, 0);
        assert_eq!(Snig::shape(&SnigOptions::default(), 1024).slab_width, 1024);
        let mut xy = XyOptions::default();
        let mut snicit = SnicitOptions::default();
        assert_eq!(Xy::shape(&xy, 1024).first_layer, 22);
        assert_eq!(Snicit::shape(&snicit, 1024).first_layer, 30);
        xy.delete_at = None;
        snicit.threshold = 7;
        assert_eq!(Xy::shape(&xy, 1024).first_layer, 0);
        assert_eq!(Snicit::shape(&snicit, 1024).first_layer, 7);
        // A hand-given slab width reaches the model.
        let narrow = BfOptions {
            slab_width: Some(512),
            ..BfOptions::default()
        };
        assert_eq!(Bf::shape(&narrow, 1024).slab_width, 512);
    }

    #[test]
    fn candidates_follow_each_kernels_layout() {
        assert_eq!(Bf::candidates(&shape(1024, 1024, 0)), vec![1024]);
        assert_eq!(Bf::candidates(&shape(16384, 8192, 0)), vec![8192, 16384]);
        assert_eq!(
            Bf::candidates(&shape(65536, 10944, 0)),
            vec![16384, 32768, 65536]
        );
        assert_eq!(Snig::candidates(&shape(65536, 10944, 0)), vec![10944]);
        assert_eq!(Xy::candidates(&shape(64, 0, 0)), vec![16, 32, 64]);
        assert_eq!(
            Snicit::candidates(&shape(1024, 0, 0)),
            vec![128, 256, 512, 1024]
        );
        assert_eq!(Snicit::candidates(&shape(65536, 0, 0)).first(), Some(&1024));
        // N not a power of two: the last unit is partial.
        assert_eq!(Xy::candidates(&shape(96, 0, 0)), vec![16, 32, 64, 128]);
    }

    #[test]
    fn hand_given_segments_are_checked() {
        assert!(model::check_segment::<Bf>(&shape(1024, 1024, 0), 1024).is_ok());
        let err = model::check_segment::<Bf>(&shape(1024, 1024, 0), 512).unwrap_err();
        assert!(err.contains("accepts 1024"), "{err}");
        assert!(model::check_segment::<Xy>(&shape(1024, 0, 0), 48).is_err());
    }

    #[test]
    fn saturated_rows_want_the_longest_units() {
        // Every live value at the bound: only the recorder traffic n/m is left.
        let profile = flat(1.0, 1.0, 10);
        let s = shape(4096, 1024, 0);
        assert_eq!(model::choose::<Bf>(&s, &profile).unwrap().segment, 4096);
        assert_eq!(model::choose::<Xy>(&s, &profile).unwrap().segment, 4096);
        assert_eq!(model::choose::<Snicit>(&s, &profile).unwrap().segment, 4096);
    }

    #[test]
    fn bf_prefers_shorter_units_when_a_few_values_miss_the_bound() {
        // p just below 1: long units are rarely all at the bound.
        let profile = flat(0.9999, 0.0, 100);
        let choice = model::choose::<Bf>(&shape(65536, 10944, 0), &profile).unwrap();
        assert_eq!(choice.segment, 16384);
        assert_eq!(choice.expected.len(), 3);
        assert!(choice.expected[0].1 < choice.expected[2].1);
    }

    #[test]
    fn layers_before_the_first_recorded_one_do_not_count() {
        let mut profile = flat(1.0, 1.0, 30);
        for layer in profile.iter_mut().take(22) {
            layer.row_at_bound = 0.5;
        }
        let late = model::choose::<Xy>(&shape(1024, 0, 22), &profile).unwrap();
        assert_eq!(late.segment, 1024);
        let early = model::choose::<Xy>(&shape(1024, 0, 0), &profile).unwrap();
        assert!(early.expected[0].1 > late.expected[0].1);
    }

    fn choice_is_a_best_candidate<K: GlareKernel>(
        s: &Shape,
        profile: &[LayerProfile],
    ) -> Result<(), TestCaseError> {
        let choice = model::choose::<K>(s, profile).unwrap();
        prop_assert!(K::candidates(s).contains(&choice.segment));
        let best = choice
            .expected
            .iter()
            .map(|e| e.1)
            .fold(f64::INFINITY, f64::min);
        let chosen = choice
            .expected
            .iter()
            .find(|e| e.0 == choice.segment)
            .unwrap()
            .1;
        prop_assert!(chosen <= best);
        prop_assert!(
            choice
                .expected
                .iter()
                .all(|e| e.1.is_finite() && e.1 >= 0.0)
        );
        Ok(())
    }

    proptest! {
        #[test]
        fn the_choice_is_a_candidate_with_the_least_expected_accesses(
            log_n in 5u32..17, p in 0.0f64..=1.0, q in 0.0f64..=1.0, layers in 1usize..40,
            kernel in 0usize..4,
        ) {
            let n = 1usize << log_n;
            let s = shape(n, (n / 4).max(32), 0);
            let profile = flat(p, q, layers);
            match kernel {
                0 => choice_is_a_best_candidate::<Bf>(&s, &profile)?,
                1 => choice_is_a_best_candidate::<Snig>(&s, &profile)?,
                2 => choice_is_a_best_candidate::<Xy>(&s, &profile)?,
                _ => choice_is_a_best_candidate::<Snicit>(&s, &profile)?,
            }
        }
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

    fn model_choice<K: GlareKernel>(
        p: &Problem<'_>,
        config: &RunConfig,
        options: &K::Options,
        settings: &GlareSettings,
    ) {
        let choice = choose_segment::<K>(p, config, options, settings).unwrap();
        let s = K::shape(options, 64);
        assert_eq!(choice.chosen_by, ChosenBy::Model);
        assert_eq!(choice.model_rows, Some(16));
        assert!(K::candidates(&s).contains(&choice.segment), "{}", K::NAME);
        let listed: Vec<usize> = choice.model.iter().map(|c| c.m).collect();
        assert_eq!(listed, K::candidates(&s));
    }

    #[test]
    fn the_model_chooses_a_candidate_on_a_generated_network() {
        let (network, input) = generated(64, 12, 40);
        let p = problem(&network, &input);
        let config = RunConfig::default();
        let s = settings(None, 16);
        let xy = XyOptions {
            delete_at: Some(3),
            ..XyOptions::default()
        };
        let snicit = SnicitOptions {
            threshold: 3,
            ..SnicitOptions::default()
        };
        model_choice::<Bf>(&p, &config, &BfOptions::default(), &s);
        model_choice::<Snig>(&p, &config, &SnigOptions::default(), &s);
        model_choice::<Xy>(&p, &config, &xy, &s);
        model_choice::<Snicit>(&p, &config, &snicit, &s);
        // More model rows than the input has: all of them.
        let all = choose_segment::<Xy>(&p, &RunConfig::default(), &xy, &settings(None, 1000));
        assert_eq!(all.unwrap().model_rows, Some(40));
    }

    #[test]
    fn a_hand_given_segment_is_checked_not_modelled() {
        let (network, input) = generated(64, 4, 8);
        let p = problem(&network, &input);
        let config = RunConfig::default();
        let given = |m| settings(Some(m), 512);
        let choice = choose_segment::<Xy>(&p, &config, &XyOptions::default(), &given(32)).unwrap();
        assert_eq!(choice.segment, 32);
        assert_eq!(choice.chosen_by, ChosenBy::Option);
        assert!(choice.model.is_empty() && choice.model_rows.is_none());
        // BF on N = 64 takes one unit per row only.
        let message = choose_segment::<Bf>(&p, &config, &BfOptions::default(), &given(32))
            .unwrap_err()
            .to_string();
        assert!(message.contains("accepts 64"), "{message}");
        assert!(
            choose_segment::<Snicit>(&p, &config, &SnicitOptions::default(), &given(48)).is_err()
        );
        let mut options = OptionSet::default();
        options.set(given(32));
        let bf = GlareRow::<Bf>::default();
        assert!(bf.check(&options, 64).is_err());
        options.set(given(64));
        assert!(bf.check(&options, 64).is_ok());
        assert!(bf.description().starts_with("GLARE on bf: "));
    }

    #[test]
    fn the_shared_profile_is_used_and_computed_once() {
        let (network, input) = generated(64, 6, 20);
        let p = problem(&network, &input);
        let config = RunConfig::default();
        let xy = XyOptions {
            delete_at: None,
            ..XyOptions::default()
        };
        // A profile of saturated rows sends XY to the longest unit.
        let mut fake = Profile::compute(&p, 10).unwrap();
        for layer in &mut fake.layers {
            *layer = LayerProfile {
                value_at_bound: 1.0,
                row_at_bound: 1.0,
            };
        }
        let (stored, computed) = config
            .shared
            .get_or_compute("glare-profile/10", || Ok(fake.clone()))
            .unwrap();
        assert!(computed && Arc::strong_count(&stored) >= 2);
        let choice = choose_segment::<Xy>(&p, &config, &xy, &settings(None, 10)).unwrap();
        // Six layers of n/m recorder reads each, nothing else.
        let expected: Vec<(usize, f64)> = choice
            .model
            .iter()
            .map(|c| (c.m, c.expected_accesses))
            .collect();
        assert_eq!(expected, vec![(16, 24.0), (32, 12.0), (64, 6.0)]);
        assert_eq!(choice.segment, 64);
        assert_eq!(choice.profile_ms, 0.0);
        // Other model rows: the statistics are taken (once) for them.
        let own = choose_segment::<Xy>(&p, &config, &xy, &settings(None, 11)).unwrap();
        assert_eq!(own.model_rows, Some(11));
        let again = choose_segment::<Xy>(&p, &config, &xy, &settings(None, 11)).unwrap();
        assert_eq!(again.profile_ms, 0.0);
        assert_eq!(own.model, again.model);
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

    fn details_with(outcome: GlareOutcome, accesses: &[AccessCounts]) -> Details {
        let mut details = Details {
            accesses: layer_accesses(accesses),
            ..Details::default()
        };
        details.glare = Some(GlareOutcome {
            reduction: overall_reduction(&details),
            ..outcome
        });
        details
    }

    fn model_outcome() -> GlareOutcome {
        GlareOutcome {
            segment: 256,
            chosen_by: ChosenBy::Model,
            model_rows: Some(512),
            model: vec![
                Candidate {
                    m: 128,
                    expected_accesses: 10.0,
                },
                Candidate {
                    m: 256,
                    expected_accesses: 8.5,
                },
            ],
            census: true,
            profile_ms: 3.0,
            reduction: None,
        }
    }

    #[test]
    fn json_holds_the_choice_and_every_layers_counts() {
        let details = details_with(
            model_outcome(),
            &[AccessCounts::default(), counts(40, 60, 10)],
        );
        let value = serde_json::to_value(&details).unwrap();
        let glare = &value["glare"];
        assert_eq!(glare["segment"], 256);
        assert_eq!(glare["chosen_by"], "model");
        assert_eq!(glare["model_rows"], 512);
        assert_eq!(
            glare["model"][1],
            serde_json::json!({ "m": 256, "expected_accesses": 8.5 })
        );
        assert_eq!(glare["reduction"], 0.25);
        let layers = value["accesses"].as_array().unwrap();
        assert_eq!(layers.len(), 2);
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

        let given = details_with(
            GlareOutcome {
                chosen_by: ChosenBy::Option,
                model_rows: None,
                model: Vec::new(),
                census: false,
                ..model_outcome()
            },
            &[],
        );
        let glare = serde_json::to_value(&given).unwrap()["glare"].clone();
        assert_eq!(glare["chosen_by"], "option");
        assert!(glare["model_rows"].is_null() && glare["reduction"].is_null());
    }

    #[test]
    fn overall_reduction_sums_over_layers() {
        let of = |accesses: &[AccessCounts]| {
            overall_reduction(&Details {
                accesses: layer_accesses(accesses),
                ..Details::default()
            })
        };
        // without: 200 + 200, avoided: 50 − 20.
        assert_eq!(
            of(&[counts(40, 60, 10), counts(100, 0, 20)]),
            Some(30.0 / 400.0)
        );
        assert_eq!(of(&[AccessCounts::default()]), None);
        assert_eq!(of(&[]), None);
    }

    #[test]
    fn summaries_read_back_the_details() {
        let details = details_with(
            GlareOutcome {
                segment: 1024,
                model: vec![Candidate {
                    m: 1024,
                    expected_accesses: 1.0,
                }],
                profile_ms: 0.0,
                ..model_outcome()
            },
            &[AccessCounts::default(), counts(40, 60, 10)],
        );
        let summary = Summary::of(&details).unwrap();
        assert_eq!(summary.recorded_layers, 1);
        assert_eq!(
            summary.text(),
            "m = 1024 (model, 512 rows); 25.0% fewer global accesses over 1 layer"
        );
        let worse = Summary {
            reduction: Some(-0.05),
            model_rows: None,
            chosen_by: ChosenBy::Option,
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
        assert!(Summary::of(&Details::default()).is_none());
    }

    #[test]
    fn parameters_are_the_options_as_data() {
        let mut options = SnicitOptions::default();
        let value = serde_json::to_value(&options).unwrap();
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
        // An f32 parameter prints as given (0.03, not 0.0299999…).
        assert_eq!(value["epsilon"].to_string(), "0.03");
        assert_eq!(value["batch"], "all");
        assert_eq!(value["xy"]["delete_at"], 22);
        assert_eq!(value["xy"]["row_major_layers"], "detect");
        assert!(value["xy"].get("glare").is_none());
        options.pre_convergence = spdnn_snicit::PreConvergence::Bf;
        options.batch = Some(4096);
        options.xy.delete_at = None;
        let value = serde_json::to_value(&options).unwrap();
        assert_eq!(value["pre_convergence"], "bf");
        assert_eq!(value["batch"], 4096);
        assert!(value.get("xy").is_none());
        let xy = serde_json::to_value(&options.xy).unwrap();
        assert_eq!(xy["delete_at"], "never");
    }
}
