//! One batch through SNICIT's four stages.

use spdnn_cuda::method::Probe;
use spdnn_cuda::rows::{self, PingPong, RowList};
use spdnn_cuda::{
    CudaError, Define, DeviceBuffer, DevicePtr, DriverResultExt, Gpu, Kernel, KernelDecl,
    KernelSource, PushKernelArg,
};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_glare::model;
use spdnn_glare::{Census, Glare, Recorder};
use spdnn_xy::XyNetwork;
use spdnn_xy::gpu::ROW_THREADS as ROW_BLOCK;
use spdnn_xy::gpu::{
    DeviceXyLayer, DeviceXyNetwork, ExportedRows, RecorderStep, RowMajorStep, XyKernels, XyRun,
    XyVariants, launch_gather_rows, launch_row_major,
};

use spdnn_xy::stream::{StreamedXyLayers, XyStreamStats};

use crate::SnicitOptions;
use crate::bf_pre::BfPre;
use crate::cluster;
use crate::held::{Held, HeldGroup};
use spdnn_bf::BfBatch;

/// Threads per block of the SNICIT kernels (`SNICIT_THREADS`: the block sums' scratch).
pub const THREADS: u32 = 256;

/// snicit.cu's own definitions (it is compiled with glare.cuh's too).
pub const SNICIT_DEFINES: &[Define] = &[Define::new("SNICIT_THREADS", THREADS as u64)];

/// `kernels-cu/snicit.cu`, compiled with glare.cuh's definitions and [`SNICIT_DEFINES`].
pub const SNICIT: KernelSource =
    KernelSource::new("snicit.cu", include_str!("../../../kernels-cu/snicit.cu"))
        .with_defines(&[spdnn_glare::DEFINES, SNICIT_DEFINES]);

/// `snicit_sum_bins`: one block per (sample, bin), grid (samples, bins).
pub const SUM_BINS: KernelDecl = KernelDecl::new(&SNICIT, "snicit_sum_bins", THREADS);
/// `snicit_assign`: one block per exported row, grid (count).
pub const ASSIGN: KernelDecl = KernelDecl::new(&SNICIT, "snicit_assign", THREADS);
/// `snicit_update`: one block per list slot (grid = the first list's length; blocks past
/// the count exit).
pub const UPDATE: KernelDecl = KernelDecl::new(&SNICIT, "snicit_update", THREADS);
/// `snicit_update_glare`: [`UPDATE`] reading through the GLARE recorder.
pub const UPDATE_GLARE: KernelDecl = KernelDecl::new(&SNICIT, "snicit_update_glare", THREADS);
/// `snicit_hold_rows`: one block per row held back, grid (count).
pub const HOLD_ROWS: KernelDecl = KernelDecl::new(&SNICIT, "snicit_hold_rows", THREADS);
/// `snicit_match_held`: one block per candidate row, grid (count).
pub const MATCH_HELD: KernelDecl = KernelDecl::new(&SNICIT, "snicit_match_held", THREADS);
/// `snicit_recover`: one thread per exported row ([`KernelDecl::config_for`] the count).
pub const RECOVER: KernelDecl = KernelDecl::new(&SNICIT, "snicit_recover", THREADS);
/// `snicit_recover_values`: one block per exported row, grid (count).
pub const RECOVER_VALUES: KernelDecl = KernelDecl::new(&SNICIT, "snicit_recover_values", THREADS);

/// Every kernel this crate declares (`snicit.cu`), checked against the source by the
/// kernel-table test.
pub const KERNELS: &[KernelDecl] = &[
    SUM_BINS,
    ASSIGN,
    UPDATE,
    UPDATE_GLARE,
    HOLD_ROWS,
    MATCH_HELD,
    RECOVER,
    RECOVER_VALUES,
];

/// The pre-convergence spMM, prepared.
pub(crate) enum Pre {
    /// XY's layers `1..=t` and its row-major layer count.
    Xy {
        layers: DeviceXyNetwork,
        row_major: usize,
    },
    /// BF's layers `1..=t`.
    Bf(Box<BfPre>),
}

/// Every kernel a run uses.
pub(crate) struct Kernels {
    xy: XyKernels,
    sum_bins: Kernel,
    assign: Kernel,
    update: Kernel,
    update_glare: Kernel,
    pub(crate) hold_rows: Kernel,
    pub(crate) match_held: Kernel,
    recover: Kernel,
    recover_values: Kernel,
    all_rows: Kernel,
    compact: Kernel,
    mark_rows: Kernel,
}

/// SNICIT's own kernels, in the order they are compiled ahead.
const OWN: [&KernelDecl; 11] = [
    &SUM_BINS,
    &ASSIGN,
    &UPDATE,
    &UPDATE_GLARE,
    &HOLD_ROWS,
    &MATCH_HELD,
    &RECOVER,
    &RECOVER_VALUES,
    &rows::ALL_ROWS,
    &rows::COMPACT_FLAGGED_ROWS,
    &rows::MARK_ROWS,
];

impl Kernels {
    /// The XY variants a run with `options` on a network with (`neurons`) or without
    /// per-neuron biases launches: GLARE's serve the post-convergence layers.
    pub(crate) fn variants(options: &SnicitOptions, neurons: bool) -> XyVariants {
        XyVariants {
            neurons,
            glare: options.glare.is_some(),
            census: options.glare.is_some_and(|g| g.census),
        }
    }

    /// Every kernel a run with `variants` loads (XY's, then SNICIT's that XY does not load
    /// too), each once.
    pub(crate) fn decls(variants: XyVariants) -> Vec<&'static KernelDecl> {
        let mut decls = XyKernels::decls(variants);
        for own in OWN {
            if !decls.contains(&own) {
                decls.push(own);
            }
        }
        decls
    }

    pub(crate) fn load(gpu: &Gpu, variants: XyVariants) -> Result<Self, CudaError> {
        Ok(Self {
            xy: XyKernels::load(gpu, variants)?,
            sum_bins: gpu.kernel(&SUM_BINS)?,
            assign: gpu.kernel(&ASSIGN)?,
            update: gpu.kernel(&UPDATE)?,
            update_glare: gpu.kernel(&UPDATE_GLARE)?,
            hold_rows: gpu.kernel(&HOLD_ROWS)?,
            match_held: gpu.kernel(&MATCH_HELD)?,
            recover: gpu.kernel(&RECOVER)?,
            recover_values: gpu.kernel(&RECOVER_VALUES)?,
            all_rows: gpu.kernel(&rows::ALL_ROWS)?,
            compact: gpu.kernel(&rows::COMPACT_FLAGGED_ROWS)?,
            mark_rows: gpu.kernel(&rows::MARK_ROWS)?,
        })
    }
}

/// Facts about a batch's conversion.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Outcome {
    /// Non-empty rows at the threshold layer.
    pub rows_at_threshold: usize,
    /// Centroids chosen.
    pub centroids: usize,
    /// Centroids plus rows with a non-empty residue right after the conversion.
    pub nonempty_after_conversion: usize,
    /// Centroids plus rows with a non-empty residue after the last layer (counted in the
    /// profiled pass only, after its recovery step; what pruning reduces).
    pub nonempty_at_end: usize,
    /// Batches whose rows were held back for a pass over several batches.
    pub held_batches: usize,
    /// Batches that ran alone (their non-empty rows did not fit the held rows' slots).
    pub alone_batches: usize,
    /// Post-convergence passes over held rows.
    pub held_passes: usize,
    /// Centroids that took a held centroid's slot (equal to it at every position).
    pub held_matches: usize,
}

impl Outcome {
    pub(crate) fn add(&mut self, other: &Outcome) {
        self.rows_at_threshold += other.rows_at_threshold;
        self.centroids += other.centroids;
        self.nonempty_after_conversion += other.nonempty_after_conversion;
        self.nonempty_at_end += other.nonempty_at_end;
        self.held_batches += other.held_batches;
        self.alone_batches += other.alone_batches;
        self.held_passes += other.held_passes;
        self.held_matches += other.held_matches;
    }
}

/// The post-convergence layers: resident, or streamed from pinned host memory.
pub(crate) enum PostLayers {
    Resident(DeviceXyNetwork),
    Streamed(Box<StreamedXyLayers>),
}

impl PostLayers {
    fn len(&self) -> usize {
        match self {
            Self::Resident(network) => network.layers.len(),
            Self::Streamed(streamed) => streamed.len(),
        }
    }

    /// Layer `index` on the device (streamed: its copy issued, and the next one's).
    fn layer(&mut self, index: usize) -> Result<&DeviceXyLayer, CudaError> {
        match self {
            Self::Resident(network) => network.layers.get(index).ok_or_else(|| {
                CudaError::InvalidArgument(format!("no post-convergence layer {index}"))
            }),
            Self::Streamed(streamed) => streamed.layer(index),
        }
    }

    /// What the streaming copied (`None` when resident).
    pub(crate) fn stream_stats(&self) -> Option<XyStreamStats> {
        match self {
            Self::Resident(_) => None,
            Self::Streamed(streamed) => Some(streamed.stats()),
        }
    }
}

/// What is shared by every batch.
pub(crate) struct Context<'a> {
    pub gpu: &'a Gpu,
    pub kernels: Kernels,
    pub network: std::sync::Arc<XyNetwork>,
    pub pre: Pre,
    pub post: PostLayers,
    pub options: SnicitOptions,
    pub threshold: usize,
    /// The widths `N_0, …, N_L` of the chain.
    pub widths: Vec<usize>,
    pub activation: (f32, f32),
    /// GLARE on the post-convergence layers, when set.
    pub glare: Option<PostGlare>,
}

/// GLARE's settings for the post-convergence layers and the census of a run.
pub(crate) struct PostGlare {
    /// `log2` of the unit length.
    pub shift: u32,
    /// Units per row: the flags' stride, from the widest post-convergence layer (a
    /// narrower layer uses the first units of each row).
    pub units: usize,
    /// Per-layer access counters (all layers; the pre-convergence ones stay zero).
    pub census: Census,
    /// Run the census kernels.
    pub counting: bool,
}

impl PostGlare {
    /// Checks `settings` against the widest layer of the chain of `widths` (`N_0, …, N_L`;
    /// the segments the model offers for its N), and sizes the recorder's rows for the
    /// post-convergence layers and the census for every layer.
    pub(crate) fn new(
        gpu: &Gpu,
        settings: &Glare,
        widths: &[usize],
        threshold: usize,
    ) -> Result<Self, CudaError> {
        let widest = widths.iter().copied().max().unwrap_or(1);
        let shift = settings.checked_shift::<crate::Snicit>(&model::Shape {
            neurons: widest,
            slab_width: 0,
            first_layer: threshold,
        })?;
        Ok(Self {
            shift,
            units: post_widest(widths, threshold).div_ceil(settings.segment),
            census: Census::new(gpu, widths.len().saturating_sub(1))?,
            counting: false,
        })
    }
}

/// The widest activations from the threshold layer's on (`N_t`, …, `N_L`): what the
/// exported rows and the post-convergence buffers hold.
pub(crate) fn post_widest(widths: &[usize], threshold: usize) -> usize {
    widths
        .get(threshold..)
        .and_then(|w| w.iter().copied().max())
        .unwrap_or(1)
}

/// The post-convergence buffers of a batch, allocated with it (untimed) for its rows.
struct PostBuffers {
    /// The activations' other buffer: the pre-convergence spMM's spare activations, taken
    /// over at the conversion (the exported rows are in its other buffer).
    y_other: Option<DeviceBuffer<f32>>,
    /// Whether each row's last outputs had a nonzero.
    row_alive: DeviceBuffer<u8>,
    /// The non-empty rows and the next list.
    lists: PingPong<RowList>,
    /// GLARE's recorders over rows × units (and the block parts of 128 positions).
    recorder: Option<Recorder>,
}

/// The pre-convergence state of a batch.
// One per batch, moved rarely: the size difference does not matter.
#[allow(clippy::large_enum_variant)]
enum PreRun<'a> {
    Xy(XyRun<'a>),
    Bf(BfBatch),
}

/// The clustered rows after the conversion.
pub(crate) struct Clustered {
    /// The activations of the exported rows (count × `N_l` after layer `l`, in a buffer of
    /// count × the widest post-convergence width), current after the last layer.
    pub y: DeviceBuffer<f32>,
    pub live: DeviceBuffer<u8>,
    pub dead: DeviceBuffer<u8>,
    pub centroid_of: DeviceBuffer<u32>,
    /// Batch-local row of each exported row.
    pub ids: Vec<u32>,
    /// The length of the first non-empty list (bounds every later one).
    listed: usize,
}

/// What one pass of the post-convergence layers runs on: a batch's clustered rows, or the
/// rows held back from several batches ([`Held`]).
pub(crate) struct PostState<'s> {
    /// The rows' activations (current after the pass) and the other buffer.
    pub y: &'s mut DeviceBuffer<f32>,
    pub y_other: &'s mut DeviceBuffer<f32>,
    /// The non-empty rows (current: the first list) and the next list.
    pub lists: &'s mut PingPong<RowList>,
    pub row_alive: &'s mut DeviceBuffer<u8>,
    pub centroid_of: &'s DeviceBuffer<u32>,
    pub live: &'s mut DeviceBuffer<u8>,
    pub dead: &'s mut DeviceBuffer<u8>,
    pub recorder: Option<&'s mut Recorder>,
    /// The first list's length (bounds every later one).
    pub listed: usize,
}

/// What became of a batch [`Context::run`] ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ran {
    /// Its rows are finished: its flags and output are the batch's own.
    Finished,
    /// Its rows are held back ([`Held`]) for a later pass over several batches.
    HeldBack,
}

impl Clustered {
    /// The rows' flags and centroids.
    fn clusters(&self) -> Clusters<'_> {
        Clusters {
            live: &self.live,
            dead: &self.dead,
            centroid_of: &self.centroid_of,
        }
    }
}

/// The flags and centroids of a block of clustered rows (a batch's exported rows, or the
/// held slots): what the recovery reads.
pub(crate) struct Clusters<'c> {
    /// Whether each row is a centroid or has a non-empty residue.
    pub live: &'c DeviceBuffer<u8>,
    /// Whether each row died.
    pub dead: &'c DeviceBuffer<u8>,
    /// Each row's centroid (a row of the same block).
    pub centroid_of: &'c DeviceBuffer<u32>,
}

impl Kernels {
    /// Enqueues `snicit_recover` for rows `0..count` of a block: `flags[ids[j]] = 1` for
    /// every non-empty row (its own last flag in `row_alive` when live, its centroid's when
    /// its residue is empty, none when dead).
    pub(crate) fn launch_recover(
        &self,
        gpu: &Gpu,
        row_alive: &DeviceBuffer<u8>,
        clusters: Clusters<'_>,
        ids: &DeviceBuffer<u32>,
        count: usize,
        flags: &mut DeviceBuffer<u8>,
    ) -> Result<(), CudaError> {
        let count_u32 = count as u32;
        let mut launch = gpu.stream().launch_builder(&self.recover);
        launch
            .arg(&**row_alive)
            .arg(&**clusters.live)
            .arg(&**clusters.dead)
            .arg(&**clusters.centroid_of)
            .arg(&**ids)
            .arg(&count_u32)
            .arg(&mut **flags);
        let config = self.recover.config_for(count)?;
        unsafe { launch.launch(config) }.context("launching snicit_recover")?;
        Ok(())
    }

    /// Enqueues `snicit_recover_values` for rows `0..count` of a block (rows of `n` values
    /// in `y`): into `out` (`count` × `n`), each row's own values when live, its centroid's
    /// when its residue is empty, zeros when dead.
    pub(crate) fn launch_recover_values(
        &self,
        gpu: &Gpu,
        y: &DeviceBuffer<f32>,
        n: usize,
        clusters: Clusters<'_>,
        count: usize,
        out: &mut DeviceBuffer<f32>,
    ) -> Result<(), CudaError> {
        let (n_u32, count_u32) = (n as u32, count as u32);
        let mut launch = gpu.stream().launch_builder(&self.recover_values);
        launch
            .arg(&**y)
            .arg(&n_u32)
            .arg(&**clusters.live)
            .arg(&**clusters.dead)
            .arg(&**clusters.centroid_of)
            .arg(&count_u32)
            .arg(&mut **out);
        let config = self.recover_values.config(count_u32)?;
        unsafe { launch.launch(config) }.context("launching snicit_recover_values")?;
        Ok(())
    }
}

/// How many of the device flags `flags` are set (waits).
pub(crate) fn count_set(gpu: &Gpu, flags: &impl DevicePtr<u8>) -> Result<usize, CudaError> {
    Ok(gpu.download(flags)?.iter().filter(|&&f| f != 0).count())
}

/// One batch in flight.
pub(crate) struct BatchRun<'a> {
    /// Rows of the batch.
    rows: usize,
    /// The pre-convergence state, until the conversion takes its activation buffers.
    pre: Option<PreRun<'a>>,
    clustered: Option<Clustered>,
    post: PostBuffers,
}

impl<'a> Context<'a> {
    /// The output width `N_L`.
    pub(crate) fn output_width(&self) -> usize {
        self.widths.last().copied().unwrap_or(0)
    }

    /// The width of the rows at the threshold layer, `N_t` (exported and clustered).
    pub(crate) fn threshold_width(&self) -> usize {
        self.widths.get(self.threshold).copied().unwrap_or(0)
    }

    /// The widest activations from the threshold layer on.
    fn post_widest(&self) -> usize {
        post_widest(&self.widths, self.threshold)
    }

    /// The widest activations of the chain: what the two activation buffers of a batch
    /// hold, before the threshold layer and after it.
    fn widest(&self) -> usize {
        self.widths.iter().copied().max().unwrap_or(1)
    }

    /// Loads a batch (untimed).
    pub(crate) fn start(&self, input: &Csr) -> Result<BatchRun<'a>, CudaError> {
        let pre = match &self.pre {
            Pre::Xy { row_major, .. } => {
                // Sized for the whole chain's widths: the post-convergence layers run on its
                // two activation buffers.
                let mut run = XyRun::new(
                    self.gpu,
                    &self.kernels.xy,
                    &self.widths,
                    input.nrows(),
                    *row_major,
                    self.options.xy.delete_at,
                    self.activation,
                )?;
                run.load_input(input)?;
                PreRun::Xy(run)
            }
            Pre::Bf(bf) => PreRun::Bf(bf.start(self.gpu, input, self.widest())?),
        };
        let rows_count = input.nrows().max(1);
        let widest = self.post_widest();
        let recorder = match &self.glare {
            Some(g) => Some(Recorder::new(
                self.gpu,
                rows_count * g.units,
                rows_count * widest.div_ceil(ROW_BLOCK as usize),
            )?),
            None => None,
        };
        Ok(BatchRun {
            rows: input.nrows(),
            pre: Some(pre),
            clustered: None,
            post: PostBuffers {
                y_other: None,
                row_alive: self.gpu.alloc_zeros(rows_count)?,
                lists: PingPong::new(
                    RowList::new(self.gpu, rows_count)?,
                    RowList::new(self.gpu, rows_count)?,
                ),
                recorder,
            },
        })
    }

    /// Runs a loaded batch through every layer and writes its category flags
    /// (batch-local rows) into `flags`; or, with `held`, holds back its rows after the
    /// conversion for one post-convergence pass over several batches, when its non-empty
    /// rows fit the held rows' slots (a batch whose rows do not runs alone, after the rows
    /// held so far are finished). Groups of held rows this finishes go to `finished`, in
    /// order. Marks each layer and step on `probe` (stages [`crate::STAGES`]).
    pub(crate) fn run(
        &mut self,
        batch: &mut BatchRun<'a>,
        flags: &mut DeviceBuffer<u8>,
        held: Option<&mut Held>,
        finished: &mut Vec<HeldGroup>,
        probe: &mut Probe,
    ) -> Result<(Outcome, Ran), CudaError> {
        let gpu = self.gpu;
        let stream = gpu.stream().clone();
        let mut outcome = Outcome::default();
        let [pre_stage, conversion, _, recovery] = crate::STAGES;
        // Pre-convergence: whatever the spMM marks belongs to this stage.
        probe.within(Some(pre_stage));
        let pre = match (&mut self.pre, &mut batch.pre) {
            (Pre::Xy { layers, .. }, Some(PreRun::Xy(run))) => layers
                .layers
                .iter()
                .try_for_each(|layer| run.layer(layer, probe)),
            (Pre::Bf(bf), Some(PreRun::Bf(run))) => bf.run(gpu, run, probe),
            _ => Err(CudaError::InvalidArgument(
                "SNICIT: the batch was loaded for another pre-convergence spMM".into(),
            )),
        };
        probe.within(None);
        pre?;
        stream
            .memset_zeros(&mut **flags)
            .context("clearing the row flags")?;
        if self.post.len() == 0 {
            // The threshold is at or past the last layer: no conversion.
            // No rows are held: a run holds rows back only with post-convergence layers
            // (`SnicitOptions::holds_back`).
            self.mark_pre_categories(batch, flags)?;
            probe.step(recovery)?;
            return Ok((outcome, Ran::Finished));
        }

        // Conversion at the threshold layer: the rows alive there go into the spare
        // activation buffer, and the post-convergence layers take over both buffers.
        let pre = batch.pre.take().ok_or_else(exported_twice)?;
        let (exported, spare) = self.export(pre)?;
        batch.post.y_other = Some(spare);
        let count = exported.ids.len();
        outcome.rows_at_threshold = count;
        if count == 0 {
            probe.step(conversion)?;
            if let Some(held) = held {
                // Nothing to compute: the rows are held (all zero) to keep their order.
                held.hold_empty(batch.rows);
                outcome.held_batches = 1;
                return Ok((outcome, Ran::HeldBack));
            }
            probe.step(recovery)?;
            return Ok((outcome, Ran::Finished));
        }
        let (clustered, centroids) = self.convert(exported, &mut batch.post.lists)?;
        outcome.centroids = centroids;
        if let Some(held) = held {
            match self.hold(held, &clustered, batch.rows, finished, &mut outcome, probe)? {
                Some(listed) => {
                    probe.step(conversion)?;
                    outcome.nonempty_after_conversion = listed;
                    outcome.held_batches = 1;
                    return Ok((outcome, Ran::HeldBack));
                }
                // Too many non-empty rows: the batch runs alone (the rows held before it
                // are finished).
                None => outcome.alone_batches = 1,
            }
        }
        probe.step(conversion)?;

        // Post-convergence: the load-reduced spMM on the non-empty rows, then the update.
        let mut clustered = clustered;
        let post = &mut batch.post;
        let y_other = post.y_other.as_mut().ok_or_else(exported_twice)?;
        // The list only shrinks: its first length sizes every later grid.
        let listed = gpu.download(&*post.lists.current().count)?[0] as usize;
        outcome.nonempty_after_conversion = listed;
        self.post_layers(
            PostState {
                y: &mut clustered.y,
                y_other,
                lists: &mut post.lists,
                row_alive: &mut post.row_alive,
                centroid_of: &clustered.centroid_of,
                live: &mut clustered.live,
                dead: &mut clustered.dead,
                recorder: post.recorder.as_mut(),
                listed,
            },
            probe,
        )?;
        clustered.listed = listed;

        // Recovery.
        let ids = gpu.upload(&clustered.ids)?;
        self.kernels.launch_recover(
            gpu,
            &batch.post.row_alive,
            clustered.clusters(),
            &ids,
            count,
            flags,
        )?;
        probe.step(recovery)?;
        if probe.is_recording() {
            // Outside the timed stages: the rows still non-empty after the last layer.
            outcome.nonempty_at_end = count_set(gpu, &*clustered.live)?;
        }
        batch.clustered = Some(clustered);
        Ok((outcome, Ran::Finished))
    }

    /// The post-convergence layers over `state`'s listed rows: each layer the load-reduced
    /// spMM (XY's row-major kernel) on the listed rows, then the update; the list is
    /// compacted every `refresh_interval` layers. Marks each layer on `probe`.
    pub(crate) fn post_layers(
        &mut self,
        state: PostState<'_>,
        probe: &mut Probe,
    ) -> Result<(), CudaError> {
        let PostState {
            y,
            y_other,
            lists,
            row_alive,
            centroid_of,
            live,
            dead,
            mut recorder,
            listed,
        } = state;
        let gpu = self.gpu;
        let stream = gpu.stream().clone();
        let post_stage = crate::STAGES[2];
        // The pass's layers are the chain's after the threshold layer, whichever step runs
        // it (a batch's, after a pass over held rows in the same step, or the finishing one).
        probe.next_layer_is(self.threshold);
        let listed_u32 = listed.max(1) as u32;
        let layers_total = self.threshold + self.post.len();
        if let Some(recorder) = recorder.as_deref_mut() {
            // The exported rows are all in memory: no unit recorded yet (R_0).
            recorder.clear(gpu)?;
        }
        let upper = self.activation.1;
        // GLARE refuses pruning: its update never prunes.
        let prune = if self.glare.is_some() {
            0.0f32
        } else {
            self.options.prune
        };
        for index in 0..self.post.len() {
            let layer = self.post.layer(index)?;
            let absolute = self.threshold + index + 1;
            let list = lists.current();
            let step = match (self.glare.as_mut(), recorder.as_deref_mut()) {
                (Some(g), Some(r)) => Some(RecorderStep::new(
                    r,
                    &mut g.census,
                    absolute - 1,
                    g.shift,
                    g.units,
                    g.counting,
                )),
                _ => None,
            };
            launch_row_major(
                gpu,
                &self.kernels.xy,
                layer,
                RowMajorStep {
                    y_in: y,
                    y_out: y_other,
                    list: &list.rows,
                    count: &list.count,
                    row_alive,
                    capacity: listed,
                    activation: self.activation,
                    recorder: step,
                },
            )?;
            std::mem::swap(&mut *y, &mut *y_other);
            let clear_flags = i32::from(absolute < layers_total);
            let glare = match (&self.glare, recorder.as_deref_mut()) {
                (Some(g), Some(r)) => {
                    r.flags.swap();
                    Some((g, &*r))
                }
                _ => None,
            };
            let kernel = if glare.is_some() {
                &self.kernels.update_glare
            } else {
                &self.kernels.update
            };
            // The rows now have the layer's output width.
            let n_u32 = layer.widths().1 as u32;
            let mut update = stream.launch_builder(kernel);
            update
                .arg(&mut **y)
                .arg(&n_u32)
                .arg(&*list.rows)
                .arg(&*list.count)
                .arg(&**centroid_of)
                .arg(&mut **row_alive)
                .arg(&mut **live)
                .arg(&mut **dead)
                .arg(&clear_flags);
            let units_u32 = glare.map_or(0, |(g, _)| g.units as u32);
            if let Some((g, r)) = glare {
                update
                    .arg(&**r.flags.current())
                    .arg(&g.shift)
                    .arg(&units_u32)
                    .arg(&upper);
            } else {
                update.arg(&prune);
            }
            let config = kernel.config(listed_u32)?;
            unsafe { update.launch(config) }.context("launching snicit_update")?;
            if absolute.is_multiple_of(self.options.refresh_interval) && absolute < layers_total {
                refresh(gpu, &self.kernels, lists, live, listed)?;
            }
            probe.layer(post_stage)?;
        }
        Ok(())
    }

    /// Category flags straight from the pre-convergence state.
    fn mark_pre_categories(
        &self,
        batch: &mut BatchRun<'a>,
        flags: &mut DeviceBuffer<u8>,
    ) -> Result<(), CudaError> {
        match batch.pre.as_mut().ok_or_else(exported_twice)? {
            PreRun::Xy(run) => run.mark_categories(flags),
            PreRun::Bf(run) => {
                let live = run.live_rows(self.gpu)?;
                if live.is_empty() {
                    return Ok(());
                }
                let list = self.gpu.upload(&live)?;
                let count = self.gpu.upload(&[live.len() as u32])?;
                let mut mark = self.gpu.stream().launch_builder(&self.kernels.mark_rows);
                mark.arg(&*list).arg(&*count).arg(&mut **flags);
                let config = self.kernels.mark_rows.config_for(live.len())?;
                unsafe { mark.launch(config) }.context("launching spdnn_mark_rows")?;
                Ok(())
            }
        }
    }

    /// The rows alive at the threshold layer as a compact row-major block of `N_t` values
    /// a row, positions in the order of layer t's XY outputs (BF's original order is
    /// permuted into it), written into the spare activation buffer of the pre-convergence
    /// state (which has room for rows of the widest later layer); returns them and the
    /// other activation buffer. The rest of the state is freed.
    fn export(&self, pre: PreRun<'a>) -> Result<(ExportedRows, DeviceBuffer<f32>), CudaError> {
        let room = self.post_widest();
        let width = self.threshold_width();
        let (exported, other) = match pre {
            PreRun::Xy(mut run) => {
                let (width, ids) = run.export_rows(room)?;
                let (y, other) = run.into_activations();
                (ExportedRows { y, width, ids }, other)
            }
            PreRun::Bf(run) => {
                // BF's activations after layer t are rows × N_t, original neuron order.
                let ids = run.live_rows(self.gpu)?;
                let (current, mut y) = run.into_activations();
                if !ids.is_empty() {
                    // Position p of layer t's XY order holds original neuron outputs[p].
                    let perm = self
                        .gpu
                        .upload(&self.network.layers[self.threshold - 1].outputs)?;
                    let list = self.gpu.upload(&ids)?;
                    launch_gather_rows(
                        self.gpu,
                        &self.kernels.xy,
                        &current,
                        &mut y,
                        &list,
                        width,
                        &perm,
                    )?;
                }
                (ExportedRows { y, width, ids }, current)
            }
        };
        if exported.width != width {
            return Err(CudaError::InvalidArgument(format!(
                "SNICIT: rows of {} values at the threshold layer, whose width is {width}",
                exported.width
            )));
        }
        Ok((exported, other))
    }

    /// Sampling, sum downsampling, pruning (on the host: s × n sums), nearest centroids,
    /// and the first non-empty list. Waits for the device once (the sums).
    fn convert(
        &self,
        exported: ExportedRows,
        lists: &mut PingPong<RowList>,
    ) -> Result<(Clustered, usize), CudaError> {
        let gpu = self.gpu;
        let stream = gpu.stream().clone();
        let count = exported.ids.len();
        let samples = self.options.samples.min(count);
        let bins = self.options.bins;
        let mut sums = gpu.alloc_zeros::<f32>(samples * bins)?;
        let (n_u32, bins_u32, count_u32) = (exported.width as u32, bins as u32, count as u32);
        let mut launch = stream.launch_builder(&self.kernels.sum_bins);
        launch
            .arg(&*exported.y)
            .arg(&n_u32)
            .arg(&bins_u32)
            .arg(&mut *sums);
        let config = self.kernels.sum_bins.config((samples as u32, bins_u32))?;
        unsafe { launch.launch(config) }.context("launching snicit_sum_bins")?;
        let host_sums = gpu.download(&*sums)?;
        let centroids = cluster::prune_samples(
            &host_sums,
            samples,
            bins,
            self.options.epsilon,
            self.options.eta,
        );
        let mut is_centroid = vec![0u8; count];
        for &c in &centroids {
            is_centroid[c] = 1;
        }
        let is_centroid = gpu.upload(&is_centroid)?;
        let centroid_rows: Vec<u32> = centroids.iter().map(|&c| c as u32).collect();
        let centroid_list = gpu.upload(&centroid_rows)?;
        let mut live = gpu.alloc_zeros::<u8>(count)?;
        let mut dead = gpu.alloc_zeros::<u8>(count)?;
        let mut centroid_of = gpu.alloc_zeros::<u32>(count)?;
        let centroid_count = centroid_rows.len() as u32;
        let mut assign = stream.launch_builder(&self.kernels.assign);
        assign
            .arg(&*exported.y)
            .arg(&count_u32)
            .arg(&n_u32)
            .arg(&*centroid_list)
            .arg(&centroid_count)
            .arg(&*is_centroid)
            .arg(&mut *centroid_of)
            .arg(&mut *live)
            .arg(&mut *dead);
        let config = self.kernels.assign.config(count_u32)?;
        unsafe { assign.launch(config) }.context("launching snicit_assign")?;
        first_lists(gpu, &self.kernels, lists, &live, count)?;
        Ok((
            Clustered {
                y: exported.y,
                live,
                dead,
                centroid_of,
                ids: exported.ids,
                listed: count,
            },
            centroids.len(),
        ))
    }

    /// Writes the final values of a finished batch (rows offset by `first_row`) into
    /// `dense` (all rows × `N_L`, the last layer's original neuron order).
    pub(crate) fn write_output(
        &self,
        batch: &mut BatchRun<'a>,
        first_row: usize,
        dense: &mut [f32],
    ) -> Result<(), CudaError> {
        let n = self.output_width();
        let (values, ids) = match &mut batch.clustered {
            Some(clustered) => {
                if let (Some(g), Some(recorder)) = (&self.glare, &batch.post.recorder) {
                    // Units the last layer recorded at the bound were not written.
                    recorder.fill_listed_rows(
                        self.gpu,
                        &mut clustered.y,
                        batch.post.lists.current(),
                        clustered.listed,
                        n,
                        (g.shift, g.units),
                        self.activation.1,
                    )?;
                }
                let count = clustered.ids.len();
                // The recovered values go into the spare activation buffer (count × n fits:
                // it holds the batch's rows of the widest width).
                let out = batch.post.y_other.as_mut().ok_or_else(exported_twice)?;
                self.kernels.launch_recover_values(
                    self.gpu,
                    &clustered.y,
                    n,
                    clustered.clusters(),
                    count,
                    out,
                )?;
                (
                    self.gpu.download(&out.slice(..count * n))?,
                    clustered.ids.clone(),
                )
            }
            None if self.post.len() == 0 => {
                let pre = batch.pre.take().ok_or_else(exported_twice)?;
                let (exported, _) = self.export(pre)?;
                let values = if exported.ids.is_empty() {
                    Vec::new()
                } else {
                    let count = exported.ids.len();
                    self.gpu.download(&exported.y.slice(..count * n))?
                };
                (values, exported.ids)
            }
            // Every row died before the threshold layer.
            None => return Ok(()),
        };
        for (j, &row) in ids.iter().enumerate() {
            let start = (first_row + row as usize) * n;
            dense[start..start + n]
                .copy_from_slice(&self.network.to_original(&values[j * n..(j + 1) * n]));
        }
        Ok(())
    }
}

/// The error of a batch whose pre-convergence state was already exported (a batch runs
/// once after it is loaded).
fn exported_twice() -> CudaError {
    CudaError::InvalidArgument("SNICIT: the batch was already converted; load it again".into())
}

/// Lists the live rows of `0..count` (centroids and non-empty residues), current in the
/// returned pair; a refresh compacts into the other list.
pub(crate) fn first_lists(
    gpu: &Gpu,
    kernels: &Kernels,
    lists: &mut PingPong<RowList>,
    live: &DeviceBuffer<u8>,
    count: usize,
) -> Result<(), CudaError> {
    lists.reset();
    let all = lists.current_mut();
    let count_u32 = count as u32;
    let mut launch = gpu.stream().launch_builder(&kernels.all_rows);
    launch
        .arg(&mut *all.rows)
        .arg(&mut *all.count)
        .arg(&count_u32);
    let config = kernels.all_rows.config_for(count)?;
    unsafe { launch.launch(config) }.context("launching spdnn_all_rows")?;
    refresh(gpu, kernels, lists, live, count)?;
    Ok(())
}

/// Keeps the listed rows whose `live` flag is set, in the other list, which becomes current.
fn refresh(
    gpu: &Gpu,
    kernels: &Kernels,
    lists: &mut PingPong<RowList>,
    live: &DeviceBuffer<u8>,
    capacity: usize,
) -> Result<(), CudaError> {
    let (from, to) = lists.split();
    from.compact_into(gpu, &kernels.compact, live, to, capacity)?;
    lists.swap();
    Ok(())
}
