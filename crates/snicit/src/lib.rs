//! SNICIT (Jiang, Huang, Yu and Ho, ICPP 2023): sparse inference by compressing the
//! activations at inference time.
//!
//! Layers `1..=t` run with XY-2021 (or BF-2019). At the threshold layer t the live rows
//! are exported row-major and clustered (`kernels-cu/snicit.cu`): the first s rows are
//! sampled and summed into n bins, near-duplicate samples are pruned (ε, η), and every
//! row takes the centroid nearest in L0 distance. A row equal to its centroid has an empty
//! residue and is never computed again; the others (and the centroids) form the
//! non-empty list. After t, each layer runs XY's row-major kernel on that list only (the
//! load-reduced spMM), then an update marks rows whose residue became empty or that
//! died; the list is compacted every `refresh_interval` layers. Recovery gives every
//! row its own result, its centroid's, or none.
//!
//! Layers may be rectangular (`N_{l-1} × N_l`, as compression makes them): the rows are
//! exported and clustered at the threshold layer's width `N_t`, the post-convergence
//! buffers hold the widest of the layers after it, and the output is `rows × N_L`.
//!
//! Unlike the paper, residues are kept as the row's own values (the difference from the
//! centroid is implied): `σ(W(c + δ) + b)` is then computed exactly as the reference
//! does, instead of `σ(Wc + Wδ + b) − σ(Wc + b)`, whose rounding could change values
//! and categories. The saving is the same: empty residues cost nothing.
//!
//! The paper also prunes residue elements close to zero (§3.3.1), which is where its
//! accuracy loss on trained networks comes from (§4.2.2, Table 4). Here that is an option,
//! off by default: with [`SnicitOptions::prune`] = ε > 0, the update after each
//! post-convergence layer sets every element of a non-centroid row within ε of its
//! centroid's to the centroid's value (the residue element becomes zero); a row that then
//! equals its centroid has an empty residue (and one left all zero is dead). The run is
//! then lossy: its details say so, and its categories are compared with the truth or the
//! reference like any other run's. With ε = 0 (the default) nothing is written and the
//! run is exact, bit for bit.
//!
//! Trained networks, with a bias per output neuron of every layer
//! ([`LayerChain::biases`], all ≤ 0), run too: XY's layers (before and after the threshold)
//! take their biases in XY's position order and run XY's `_neurons` kernels, BF's stage
//! runs BF's per-neuron kernel. The conversion needs nothing more: a bias belongs to an
//! output neuron, not to a row, so every row gets the same bias at a position, and a row
//! equal to its centroid (an empty residue) still gives the centroid's outputs bit for bit
//! at every later layer; a row whose outputs are all zero stays zero (`clip(0 + b) = 0`
//! for `b ≤ 0`), so dead rows stay dead. Positive biases are refused (the kernels compute
//! `clip(Z + b)`, the structural rule only for `b ≤ 0`), and so is GLARE with per-neuron
//! biases.

pub mod cluster;

mod bf_pre;
mod held;
mod run;

use std::any::Any;
use std::path::Path;

use rayon::prelude::*;
use spdnn_cuda::memory::{MemoryModel, WeightPlacement};
use spdnn_cuda::method::{self, DeviceRun, KernelMethod, LayerChain, MethodOptions, Probe};
use spdnn_cuda::rows::{self, GpuInference, RowList, RunSpec};
use spdnn_cuda::{CudaError, Gpu};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_glare::{Glare, GlareKernel, Recorder, model};
use spdnn_xy::gpu::{DeviceXyNetwork, XyRun};
use spdnn_xy::stream::StreamedXyLayers;
use spdnn_xy::{XyNetwork, XyOptions};

use held::{Held, HeldGroup};
use run::{Context, Kernels, Outcome, Pre, Ran};

pub use held::{HELD_SHARE, held_bytes, held_slots};
pub use run::{KERNELS, SNICIT, SNICIT_DEFINES};

/// The kernels a run with `options` compiles ahead (on a network with a bias per neuron
/// when `per_neuron_biases`): XY's (the variants the run launches: `_neurons`, GLARE's and
/// its census on the post-convergence layers), SNICIT's own, and BF's when BF runs the
/// pre-convergence layers.
pub fn plan_kernels(
    options: &SnicitOptions,
    per_neuron_biases: bool,
) -> Vec<&'static spdnn_cuda::KernelDecl> {
    let mut decls = Kernels::decls(Kernels::variants(options, per_neuron_biases));
    if options.pre_convergence == PreConvergence::Bf {
        decls.extend(spdnn_bf::BF_KERNELS);
    }
    decls
}

/// The spMM of the layers before the threshold layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PreConvergence {
    /// XY-2021's kernels (the paper's choice).
    #[default]
    Xy,
    /// BF-2019's kernel.
    Bf,
}

/// SNICIT's parameters (paper §4.1 defaults). Reported as the run's parameters: XY's
/// only when XY runs the pre-convergence layers, `batch` as `"all"` when unset, the
/// recorder apart (the engine's GLARE outcome).
#[derive(Debug, Clone, PartialEq)]
pub struct SnicitOptions {
    /// Threshold layer t: layers `1..=t` run before the conversion.
    pub threshold: usize,
    /// Sampled rows s.
    pub samples: usize,
    /// Bins n of the sum downsampling.
    pub bins: usize,
    /// ε: a sample is pruned when fewer than `ε·n` of its bins differ from a base sample.
    pub epsilon: f32,
    /// η: a bin differs from the base's when their sums differ by more than η.
    pub eta: f32,
    /// Layers between refreshes of the non-empty row index.
    pub refresh_interval: usize,
    /// Rows per batch (`None`: all rows in one batch).
    pub batch: Option<usize>,
    /// The pre-convergence spMM.
    pub pre_convergence: PreConvergence,
    /// XY's options when XY runs the pre-convergence layers.
    pub xy: XyOptions,
    /// Run the GLARE variant of the post-convergence spMM (units of `segment` neurons of a
    /// row). The pre-convergence layers run without it.
    pub glare: Option<Glare>,
    /// Lossy residue pruning (the paper's §3.3.1), off at 0: after each post-convergence
    /// layer, a non-centroid row's elements within this distance of its centroid's are set
    /// to the centroid's. Finite and ≥ 0; not with GLARE.
    pub prune: f32,
    /// Stream the post-convergence layers from pinned host memory through two device
    /// slots, one layer a copy (off: every layer resident). The partitioner sets it when
    /// the layers do not fit beside the rows.
    pub stream_post_layers: bool,
    /// Hold back each batch's non-empty rows after its conversion and run the
    /// post-convergence layers once over the rows of several batches (slots for
    /// ⌈batch / `held_share`⌉ rows; a batch with more runs alone). On by default; not
    /// with GLARE.
    pub hold_back: bool,
    /// Batch rows per held slot, at least 1 ([`HELD_SHARE`] by default).
    pub held_share: usize,
}

impl SnicitOptions {
    /// Whether a run with these options on a chain of `layers` layers holds rows back:
    /// asked for, without GLARE, and with post-convergence layers.
    pub fn holds_back(&self, layers: usize) -> bool {
        self.hold_back && self.glare.is_none() && self.threshold < layers
    }
}

impl Default for SnicitOptions {
    fn default() -> Self {
        Self {
            threshold: 30,
            samples: 32,
            bins: 16,
            epsilon: 0.03,
            eta: 0.03,
            refresh_interval: 200,
            batch: None,
            pre_convergence: PreConvergence::Xy,
            xy: XyOptions::default(),
            glare: None,
            prune: 0.0,
            stream_post_layers: false,
            hold_back: true,
            held_share: HELD_SHARE,
        }
    }
}

impl serde::Serialize for SnicitOptions {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Parameters<'a> {
            threshold: usize,
            samples: usize,
            bins: usize,
            epsilon: report::Shortest,
            eta: report::Shortest,
            refresh_interval: usize,
            batch: report::CountOrAll,
            pre_convergence: PreConvergence,
            #[serde(skip_serializing_if = "Option::is_none")]
            xy: Option<&'a XyOptions>,
            prune: report::Shortest,
            #[serde(skip_serializing_if = "std::ops::Not::not")]
            streamed: bool,
            #[serde(skip_serializing_if = "report::is_on")]
            hold_back: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            held_share: Option<usize>,
        }
        Parameters {
            threshold: self.threshold,
            samples: self.samples,
            bins: self.bins,
            epsilon: report::Shortest(self.epsilon),
            eta: report::Shortest(self.eta),
            refresh_interval: self.refresh_interval,
            batch: report::CountOrAll(self.batch),
            pre_convergence: self.pre_convergence,
            xy: (self.pre_convergence == PreConvergence::Xy).then_some(&self.xy),
            prune: report::Shortest(self.prune),
            streamed: self.stream_post_layers,
            hold_back: self.hold_back,
            held_share: (self.hold_back && self.held_share != HELD_SHARE)
                .then_some(self.held_share),
        }
        .serialize(s)
    }
}

/// Serialisation helpers of the parameters.
mod report {
    /// An `f32` written as its shortest decimal (0.03, not 0.0299999…) also where the
    /// serialiser widens it to `f64` (JSON values).
    pub struct Shortest(pub f32);

    impl serde::Serialize for Shortest {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self.0.to_string().parse::<f64>() {
                Ok(value) if value.is_finite() => s.serialize_f64(value),
                _ => s.serialize_none(),
            }
        }
    }

    /// A count, or `"all"` when unset.
    pub struct CountOrAll(pub Option<usize>);

    /// Whether a switch is on (a switch reported only when off).
    pub fn is_on(switch: &bool) -> bool {
        *switch
    }

    impl serde::Serialize for CountOrAll {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self.0 {
                Some(count) => s.serialize_u64(count as u64),
                None => s.serialize_str("all"),
            }
        }
    }
}

/// SNICIT as a method of the registry.
pub struct Snicit;

/// Why pruning and GLARE do not run together.
const GLARE_PRUNE: &str = "SNICIT prune > 0 runs without GLARE (a pruned element would change \
                           a unit the recorder holds at the bound): give one or the other";

impl MethodOptions for SnicitOptions {
    /// t, s, n, the refresh interval and the batch at least 1; ε, η and the prune distance
    /// finite and ≥ 0 (pruning not with GLARE); XY's options valid. A threshold t ≥ L is allowed: the pre-convergence spMM then runs
    /// through every layer.
    fn validate(&self) -> Result<(), String> {
        let counts = [
            ("threshold layer t", self.threshold),
            ("samples s", self.samples),
            ("bins n", self.bins),
            ("refresh interval", self.refresh_interval),
            ("batch", self.batch.unwrap_or(1)),
            ("held share", self.held_share),
        ];
        for (what, value) in counts {
            if value == 0 {
                return Err(format!("SNICIT {what} must be at least 1, not 0"));
            }
        }
        for (what, value) in [
            ("epsilon ε", self.epsilon),
            ("eta η", self.eta),
            ("prune", self.prune),
        ] {
            if !value.is_finite() || value < 0.0 {
                return Err(format!(
                    "SNICIT {what} must be a finite number ≥ 0, not {value}"
                ));
            }
        }
        if self.prune > 0.0 && self.glare.is_some() {
            return Err(GLARE_PRUNE.into());
        }
        self.xy.validate()
    }

    /// XY's stage caches its preprocessing like `xy`.
    fn default_in(data_dir: &Path) -> Self {
        Self {
            xy: XyOptions::default_in(data_dir),
            ..Self::default()
        }
    }

    fn embedded_mut(&mut self) -> Vec<&mut dyn Any> {
        vec![&mut self.xy]
    }
}

impl KernelMethod for Snicit {
    const NAME: &'static str = "snicit";
    const DESCRIPTION: &'static str = "SNICIT: XY (or BF) before layer t, then centroids + \
                                       residues and the load-reduced update";
    type Options = SnicitOptions;
    const ACCEPTS_PER_NEURON_BIAS: bool = true;

    /// The batch's two activation buffers of the widest rows serve both spMMs (the
    /// conversion exports the rows alive at layer t into the pre-convergence spMM's spare
    /// buffer and frees the rest of its state), so a batch holds, per row: the two buffers,
    /// the pre-convergence state's lists and flags ([`XyRun::bytes`] or
    /// [`spdnn_bf::BfBatch::bytes`]) until the conversion, the post-convergence lists and
    /// flags, the category flag, and per phase what it allocates for a while: the deletion's
    /// list or the export ([`XyRun::export_bytes`]; BF's row list and permutation), then the
    /// cluster arrays and the recovery's ids. The model is the largest phase, each count of
    /// rows (alive at t, exported, centroids) at its bound. Per layer: XY's layout
    /// ([`spdnn_xy::format::layer_device_bytes`]) or, before t with `--pre-convergence bf`,
    /// BF's packed slabs, and the per-neuron biases; the model's layers are the
    /// post-convergence ones, which stream in a tight budget ([`StreamedXyLayers`]), while
    /// the pre-convergence layers stay resident and count as fixed. Fixed: those, the
    /// samples' sums and centroid list (GLARE: the census), and what the two streaming
    /// slots hold beyond two of the largest layer.
    fn memory(chain: &LayerChain<'_>, options: &SnicitOptions) -> MemoryModel {
        let layers = chain.layers;
        let mut widths = vec![chain.neurons()];
        widths.extend(layers.iter().map(SparseMatrix::ncols));
        let t = options.threshold.min(layers.len());
        let widest = widths.iter().copied().max().unwrap_or(1);
        let w_post = widths[t..].iter().copied().max().unwrap_or(1);
        let samples = options.samples;
        let pre = |rows: usize| match options.pre_convergence {
            PreConvergence::Xy => XyRun::bytes(rows, widest),
            PreConvergence::Bf => spdnn_bf::BfBatch::bytes(rows, widest),
        };
        let glare = |rows: usize| {
            options.glare.map_or(0, |g| {
                let units = w_post.div_ceil(g.segment.max(1));
                let parts = w_post.div_ceil(spdnn_xy::gpu::ROW_THREADS as usize);
                Recorder::bytes(rows.max(1) * units, rows.max(1) * parts)
            })
        };
        // Post-convergence lists and flags, the category flags, GLARE's recorders.
        let post = |rows: usize| rows.max(1) + 2 * RowList::bytes(rows) + rows.max(1) + glare(rows);
        let buffers = |rows: usize| 2 * 4 * rows.max(1) * widest;
        let phases: [&dyn Fn(usize) -> usize; 4] = [
            // The pre-convergence layers: XY's deletion list.
            &|rows| {
                pre(rows)
                    + post(rows)
                    + match options.pre_convergence {
                        PreConvergence::Xy => 4 * rows,
                        PreConvergence::Bf => 0,
                    }
            },
            // The export: XY's, or BF's row list and permutation of N_t.
            &|rows| {
                pre(rows)
                    + post(rows)
                    + match options.pre_convergence {
                        PreConvergence::Xy => XyRun::export_bytes(rows, widest),
                        PreConvergence::Bf => 4 * rows + 4 * widths[t],
                    }
            },
            // The conversion: the samples' sums and centroids, the centroid flags, the
            // live, dead and centroid arrays.
            &|rows| buffers(rows) + post(rows) + 4 * samples * (options.bins + 1) + rows + 6 * rows,
            // The recovery: the cluster arrays and the rows' ids.
            &|rows| buffers(rows) + post(rows) + 6 * rows + 4 * rows,
        ];
        let (per_row, fixed) = phases
            .iter()
            .map(spdnn_cuda::memory::linear)
            .fold((0, 0), |(r, f), (pr, pf)| (r.max(pr), f.max(pf)));
        let slab_width = spdnn_cuda::slab_weights::chosen_slab_width(&layers[..t], None);
        let slabs = spdnn_cuda::slab_weights::packed_layer_bytes(&layers[..t], slab_width);
        // Each layer's arrays (offsets, inputs, values, biases) as the device holds them.
        let arrays: Vec<[usize; 4]> = layers
            .par_iter()
            .enumerate()
            .map(|(l, w)| {
                let biases = chain.bias_bytes(l) / 4;
                match options.pre_convergence {
                    PreConvergence::Bf if l < t => [slabs[l] / 4, 0, 0, biases],
                    _ => {
                        let [offsets, inputs, values] = spdnn_xy::format::layer_device_arrays(w);
                        [offsets, inputs, values, biases]
                    }
                }
            })
            .collect();
        let bytes = |a: &[usize; 4]| 4 * a.iter().sum::<usize>();
        // The pre-convergence layers stay resident; the post-convergence ones may stream
        // through two slots that hold the largest of every array: beyond two of the largest
        // layer (the streamed bytes the plan counts), held either way (0 when the layers
        // are alike, as in the challenge's networks).
        let pre: usize = arrays[..t].iter().map(bytes).sum();
        let post: Vec<usize> = arrays[t..].iter().map(bytes).collect();
        let largest = post.iter().copied().max().unwrap_or(0);
        let slots = spdnn_xy::stream::slot_bytes(arrays[t..].iter().copied());
        let census = options
            .glare
            .map_or(0, |_| spdnn_glare::Census::bytes(layers.len()));
        // The held rows' slots, ⌈rows / HELD_SHARE⌉ of them: at most one slot more than a
        // share of a slot a row.
        let (held_per_row, held_fixed) = if options.holds_back(layers.len()) {
            let (one, two) = (held_bytes(1, w_post), held_bytes(2, w_post));
            let slot = two - one;
            (slot.div_ceil(options.held_share.max(1)), one)
        } else {
            (0, 0)
        };
        MemoryModel {
            per_row: per_row + held_per_row,
            streaming: post.len() > 1,
            layers: post,
            fixed: fixed + census + pre + slots.saturating_sub(2 * largest) + held_fixed,
            exact: options.glare.is_none(),
            binary_input: None,
        }
    }

    fn place_weights(
        options: &SnicitOptions,
        placement: &WeightPlacement,
    ) -> Option<SnicitOptions> {
        // One layer a copy whatever the plan's layers a batch: the slots hold no more than
        // the plan counts for its streamed layers.
        Some(SnicitOptions {
            stream_post_layers: matches!(placement, WeightPlacement::Streamed(_)),
            ..options.clone()
        })
    }

    /// XY's preprocessing (also for BF's stage: the post-convergence layers run XY's
    /// row-major kernel), the uploads and the kernels.
    fn prepare<'g>(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &SnicitOptions,
    ) -> Result<Box<dyn DeviceRun + 'g>, CudaError> {
        let layers = chain.layers;
        let widths = rows::check_widths(layers, chain.bias, chain.upper)?;
        let (bias, upper) = (chain.bias, chain.upper);
        if options.glare.is_some() && chain.biases.is_some() {
            return Err(CudaError::InvalidArgument(
                "snicit+glare takes one bias for all neurons, and this network has a bias per \
                 neuron: run snicit without GLARE"
                    .into(),
            ));
        }
        if options.prune > 0.0 && options.glare.is_some() {
            return Err(CudaError::InvalidArgument(GLARE_PRUNE.into()));
        }
        // The kernels compile on worker threads during the preprocessing; the clock leaves
        // out any wait for them (the run's compile_ms).
        let variants = Kernels::variants(options, chain.biases.is_some());
        gpu.compile_ahead(plan_kernels(options, chain.biases.is_some()));
        let prepare = gpu.preparation_clock();
        // Shared with every other run of this network in the process (each GPU, each count).
        let (network, _) =
            XyNetwork::load_or_prepare_shared(layers, options.xy.cache_dir.as_deref())
                .map_err(|e| CudaError::InvalidArgument(format!("XY preprocessing: {e}")))?;
        let prepare_ms = prepare.elapsed_ms();
        let threshold = options.threshold.min(layers.len());
        let pre = match options.pre_convergence {
            PreConvergence::Xy => Pre::Xy {
                layers: DeviceXyNetwork::upload_with_biases(
                    gpu,
                    &network,
                    0..threshold,
                    chain.biases,
                )?,
                row_major: options
                    .xy
                    .row_major_layers
                    .unwrap_or_else(|| spdnn_xy::gpu::detect_row_major_layers(&network)),
            },
            PreConvergence::Bf => {
                let bf = bf_pre::BfPre::new(
                    gpu,
                    &layers[..threshold],
                    widths[0],
                    (bias, chain.biases.map(|b| b.get(..threshold).unwrap_or(b))),
                    upper,
                )?;
                // The conversion reads BF's rows as rows of N_t values.
                if bf.output_width() != widths[threshold] {
                    return Err(CudaError::InvalidArgument(format!(
                        "SNICIT: BF's stage gives rows of {} values after layer {threshold}, \
                         whose width is {}",
                        bf.output_width(),
                        widths[threshold]
                    )));
                }
                Pre::Bf(Box::new(bf))
            }
        };
        let post_range = threshold..layers.len();
        let post = if options.stream_post_layers {
            run::PostLayers::Streamed(Box::new(StreamedXyLayers::new(
                gpu,
                &network,
                post_range,
                chain.biases,
            )?))
        } else {
            run::PostLayers::Resident(DeviceXyNetwork::upload_with_biases(
                gpu,
                &network,
                post_range,
                chain.biases,
            )?)
        };
        let context = Context {
            gpu,
            kernels: Kernels::load(gpu, variants)?,
            network,
            pre,
            post,
            options: options.clone(),
            threshold,
            activation: (bias, upper),
            glare: match &options.glare {
                Some(g) => Some(run::PostGlare::new(gpu, g, &widths, threshold)?),
                None => None,
            },
            widths,
        };
        let held = if options.holds_back(layers.len()) {
            Some(Held::new(
                gpu,
                held_slots(rows, options.held_share),
                run::post_widest(&context.widths, threshold),
            )?)
        } else {
            None
        };
        Ok(Box::new(SnicitRun {
            held,
            finished: Vec::new(),
            batch_flags: gpu.alloc_zeros::<u8>(rows.max(1))?,
            context,
            batch: None,
            loaded: 0,
            batch_rows: rows,
            outcome: Outcome::default(),
            prepare_ms,
        }))
    }

    fn batch(options: &SnicitOptions) -> Option<usize> {
        options.batch
    }
}

/// Runs SNICIT on `input` (rows × `N_0`) through `layers` (`N_{l-1} × N_l`): preparation,
/// `spec.warmup` untimed and `spec.repetitions` timed runs, and one profiled run for the
/// stage and per-layer breakdown. Batches (when `options.batch` is set) run one after
/// another inside the timed region.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &SnicitOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<Snicit>(
        gpu,
        &LayerChain::new(layers, bias, upper),
        input,
        options,
        spec,
    )
}

/// The stages of the breakdown, as the paper's Fig. 7 names them.
pub const STAGES: [&str; 4] = [
    "pre-convergence",
    "conversion",
    "post-convergence",
    "recovery",
];

/// Rows a `run` or `finish` finished.
enum Finished {
    /// The loaded batch's rows.
    Loaded,
    /// Rows held back, finished by one pass over their slots.
    Held(HeldGroup),
}

/// The error of results asked of held rows in a run that holds none.
fn no_held_rows() -> CudaError {
    CudaError::InvalidArgument("SNICIT: held rows finished in a run that holds none".into())
}

impl SnicitRun<'_> {
    /// Forgets what the last step finished; frees the held slots when no rows wait in
    /// them.
    fn start_step(&mut self) {
        self.finished.clear();
        if let Some(held) = self.held.as_mut().filter(|h| !h.holds_rows()) {
            held.clear();
        }
    }
}

/// Everything one SNICIT run keeps: the shared context and the loaded batch.
struct SnicitRun<'g> {
    context: Context<'g>,
    /// The rows held back for one post-convergence pass over several batches.
    held: Option<Held>,
    /// What the last `run` or `finish` finished, in load order.
    finished: Vec<Finished>,
    /// The loaded batch (its buffers are allocated with it, untimed).
    batch: Option<run::BatchRun<'g>>,
    batch_flags: spdnn_cuda::DeviceBuffer<u8>,
    /// Rows of the loaded batch.
    loaded: usize,
    /// Rows per batch.
    batch_rows: usize,
    /// What the conversions of the profiled pass found, summed over its batches.
    outcome: Outcome,
    prepare_ms: f64,
}

impl DeviceRun for SnicitRun<'_> {
    fn load(&mut self, input: &Csr) -> Result<(), CudaError> {
        // Drop the previous batch's buffers before allocating the next ones.
        self.batch = None;
        self.batch = Some(self.context.start(input)?);
        self.loaded = input.nrows();
        Ok(())
    }

    fn run(&mut self, probe: &mut Probe) -> Result<(), CudaError> {
        self.start_step();
        let batch = self
            .batch
            .as_mut()
            .ok_or_else(|| CudaError::InvalidArgument("SNICIT: no batch was loaded".into()))?;
        let mut groups = Vec::new();
        let (outcome, ran) = self.context.run(
            batch,
            &mut self.batch_flags,
            self.held.as_mut(),
            &mut groups,
            probe,
        )?;
        self.finished.extend(groups.into_iter().map(Finished::Held));
        if ran == Ran::Finished {
            self.finished.push(Finished::Loaded);
        }
        if probe.is_recording() {
            self.outcome.add(&outcome);
        }
        Ok(())
    }

    fn holds_back(&self) -> bool {
        self.held.as_ref().is_some_and(Held::holds_rows)
    }

    fn finish(&mut self, probe: &mut Probe) -> Result<(), CudaError> {
        self.start_step();
        if let Some(held) = self.held.as_mut().filter(|h| h.holds_rows()) {
            let mut outcome = Outcome::default();
            let group = self.context.finish_held(held, &mut outcome, probe)?;
            if probe.is_recording() {
                self.outcome.add(&outcome);
            }
            self.finished.push(Finished::Held(group));
        }
        Ok(())
    }

    fn row_flags(&mut self) -> Result<Vec<u8>, CudaError> {
        let mut flags = Vec::new();
        for finished in &self.finished {
            match (finished, &self.held) {
                (Finished::Loaded, _) => flags.extend(rows::download_row_flags(
                    self.context.gpu,
                    &self.batch_flags,
                    self.loaded,
                )?),
                (Finished::Held(group), Some(held)) => {
                    flags.extend(self.context.held_row_flags(held, group)?)
                }
                (Finished::Held(_), None) => return Err(no_held_rows()),
            }
        }
        Ok(flags)
    }

    fn output(&mut self) -> Result<Vec<f32>, CudaError> {
        let n = self.context.output_width();
        let mut dense = Vec::new();
        for finished in &self.finished {
            match (finished, self.held.as_mut()) {
                (Finished::Loaded, _) => {
                    let start = dense.len();
                    dense.resize(start + self.loaded * n, 0.0);
                    if let Some(batch) = self.batch.as_mut() {
                        self.context.write_output(batch, 0, &mut dense[start..])?;
                    }
                }
                (Finished::Held(group), Some(held)) => {
                    dense.extend(self.context.held_output(held, group)?)
                }
                (Finished::Held(_), None) => return Err(no_held_rows()),
            }
        }
        Ok(dense)
    }

    fn stages(&self) -> &'static [&'static str] {
        &STAGES
    }

    fn start_census(&mut self) -> Result<bool, CudaError> {
        let census = self.context.options.glare.is_some_and(|g| g.census);
        match self.context.glare.as_mut() {
            Some(glare) if census => {
                glare.census.clear(self.context.gpu)?;
                glare.counting = true;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn finish_census(&mut self) -> Result<Vec<spdnn_glare::AccessCounts>, CudaError> {
        match self.context.glare.as_mut() {
            Some(glare) => {
                glare.counting = false;
                glare.census.read(self.context.gpu)
            }
            None => Ok(Vec::new()),
        }
    }

    /// The options themselves are the caller's; these are what the run found.
    fn details(&self) -> Vec<(String, String)> {
        let outcome = &self.outcome;
        let mut details = vec![
            ("batch".into(), self.batch_rows.to_string()),
            (
                "rows_at_threshold".into(),
                outcome.rows_at_threshold.to_string(),
            ),
            ("centroids".into(), outcome.centroids.to_string()),
            (
                "nonempty_rows_after_conversion".into(),
                outcome.nonempty_after_conversion.to_string(),
            ),
            (
                "nonempty_rows_at_end".into(),
                outcome.nonempty_at_end.to_string(),
            ),
            ("preprocessing_ms".into(), format!("{:.1}", self.prepare_ms)),
            (
                "held_back".into(),
                match &self.held {
                    Some(_) => format!(
                        "{} batches held back, {} ran alone, {} post-convergence passes over \
                         held rows, {} centroids equal to held ones",
                        outcome.held_batches,
                        outcome.alone_batches,
                        outcome.held_passes,
                        outcome.held_matches
                    ),
                    None if !self.context.options.hold_back => "off".into(),
                    None if self.context.options.glare.is_some() => "off: not with GLARE".into(),
                    None => "off: no post-convergence layers".into(),
                },
            ),
            ("prune".into(), self.context.options.prune.to_string()),
        ];
        if self.context.options.prune > 0.0 {
            details.push((
                "lossy".into(),
                "yes: residue elements within prune of the centroid's were set to it; the \
                 categories may differ from the reference's"
                    .into(),
            ));
        }
        if let Some(glare) = &self.context.options.glare {
            details.push(("glare_segment".into(), glare.segment.to_string()));
        }
        if let Some(s) = self.context.post.stream_stats() {
            details.push((
                "weights".into(),
                format!(
                    "post-convergence layers streamed: {} copies, {} bytes, slots of {} bytes",
                    s.copies, s.bytes, s.slot_bytes
                ),
            ));
        }
        details
    }
}

/// GLARE on SNICIT's post-convergence spMM (XY's row-major kernel on the non-empty rows):
/// the unit is `m` neurons of a row, `m` a power of two from one block's outputs
/// ([`spdnn_xy::gpu::ROW_THREADS`]) up, at most [`model::MAX_ROW_UNITS`] units a row; the
/// recorder serves the layers after the threshold.
impl GlareKernel for Snicit {
    const UNIT: &'static str =
        "row segments all at the bound skipped after layer t (m from the access model)";

    fn candidates(shape: &model::Shape) -> Vec<usize> {
        model::row_unit_lengths(spdnn_xy::gpu::ROW_THREADS as usize, shape.neurons)
    }

    /// `n/m`: the recorder's reads; the rows' own accesses do not depend on `m`.
    fn expected_accesses(
        shape: &model::Shape,
        m: usize,
        _input: &model::LayerProfile,
        _output: &model::LayerProfile,
    ) -> f64 {
        shape.neurons.div_ceil(m.max(1)) as f64
    }

    fn shape(options: &SnicitOptions, neurons: usize) -> model::Shape {
        model::Shape {
            neurons,
            slab_width: 0,
            first_layer: options.threshold,
        }
    }

    /// The recorder serves the post-convergence layers; `xy.glare` stays as given.
    fn with_recorder(options: &SnicitOptions, glare: Glare) -> SnicitOptions {
        SnicitOptions {
            glare: Some(glare),
            ..options.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pruning is off by default (the exact run), checked like ε and η, refused with GLARE,
    /// and reported among the parameters.
    #[test]
    fn prune_defaults_to_off_and_is_validated() {
        let options = SnicitOptions::default();
        assert_eq!(options.prune, 0.0);
        assert_eq!(options.validate(), Ok(()));
        let small = SnicitOptions {
            prune: 0.01,
            ..SnicitOptions::default()
        };
        assert_eq!(small.validate(), Ok(()));
        for bad in [-0.01, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let error = SnicitOptions {
                prune: bad,
                ..SnicitOptions::default()
            }
            .validate()
            .unwrap_err();
            assert!(error.contains("prune"), "{bad}: {error}");
        }
        let with_glare = SnicitOptions {
            glare: Some(Glare::new(256)),
            ..small.clone()
        };
        let error = with_glare.validate().unwrap_err();
        assert!(
            error.contains("prune") && error.contains("GLARE"),
            "{error}"
        );
        // GLARE alone, and GLARE with pruning off, stay valid.
        let glare_exact = SnicitOptions {
            prune: 0.0,
            ..with_glare
        };
        assert_eq!(glare_exact.validate(), Ok(()));
    }

    #[test]
    fn prune_is_a_parameter() {
        let value = serde_json::to_value(SnicitOptions::default()).unwrap();
        assert_eq!(value["prune"], 0.0);
        let value = serde_json::to_value(SnicitOptions {
            prune: 0.01,
            ..SnicitOptions::default()
        })
        .unwrap();
        // As given (0.01, not 0.009999…).
        assert_eq!(value["prune"].to_string(), "0.01");
    }

    /// A trained network's per-neuron biases are device bytes of their layer, whichever
    /// spMM runs it (BF's slabs before the threshold, XY's layout after).
    #[test]
    fn the_memory_model_counts_per_neuron_biases() {
        let widths = [6usize, 5, 7, 3];
        let layers: Vec<Csr> = widths
            .windows(2)
            .map(|w| Csr::from_triplets(w[0], w[1], &[(0, 0, 1.0)]).unwrap())
            .collect();
        let biases: Vec<Vec<f32>> = layers.iter().map(|w| vec![-0.5; w.ncols()]).collect();
        let plain = LayerChain::new(&layers, -0.5, 1.0);
        let trained = LayerChain::with_biases(&layers, &biases, 1.0);
        for pre_convergence in [PreConvergence::Xy, PreConvergence::Bf] {
            let options = SnicitOptions {
                threshold: 2,
                pre_convergence,
                ..SnicitOptions::default()
            };
            let (without, with) = (
                Snicit::memory(&plain, &options),
                Snicit::memory(&trained, &options),
            );
            let added: Vec<usize> = with
                .layers
                .iter()
                .zip(&without.layers)
                .map(|(a, b)| a - b)
                .collect();
            // The post-convergence layer (the model's layers, which stream) takes its 3
            // biases; the two pre-convergence layers' 5 and 7 count as fixed.
            assert_eq!(added, [12], "{pre_convergence:?}");
            assert_eq!(with.fixed - without.fixed, 20 + 28, "{pre_convergence:?}");
            assert_eq!(with.per_row, without.per_row);
        }
    }
}
