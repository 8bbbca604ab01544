//! The seam every GPU method plugs into, and the one harness that runs them all.
//!
//! A method is a [`KernelMethod`]: its name, its options ([`MethodOptions`]: the paper's
//! defaults, the one validation, serialisation as report parameters) and `prepare`, which
//! puts everything a run needs on the device for batches of up to a given number of rows
//! and returns a [`DeviceRun`]. A `DeviceRun` knows how to load a batch of rows (untimed)
//! and run the layer chain over it (timed), and how to hand back the categories, the final
//! activations, its access counts and what it found.
//!
//! [`run`] drives every method the same way:
//!
//! 1. prepare once (preprocessing, uploads; the kernels' modules, compiled ahead while the
//!    method preprocesses: [`crate::modules`]);
//! 2. `warmup` untimed passes, then `repetitions` timed ones: every batch is loaded, then
//!    run between two CUDA events; a pass's time is the sum over its batches; the last
//!    timed pass also collects the categories (and the final activations when asked);
//! 3. one profiled pass, with an event after every step the method marks on its [`Probe`]
//!    (per-layer times; per-stage times for methods that name their stages); with
//!    `RunSpec::profiled_only` the only pass, which then does what step 2's last pass does;
//! 4. when the run counts its accesses (GLARE's census), one more pass with the counting
//!    kernels.
//!
//! Input batching, weight streaming, several GPUs and fused chains plug in here once,
//! instead of into every method.

use std::any::Any;
use std::path::Path;
use std::time::Instant;

use cudarc::driver::CudaStream;
use spdnn_formats::{Csr, SparseMatrix};

use crate::census::AccessCounts;
use crate::memory::{MemoryModel, WeightPlacement};
use crate::rows::{GpuInference, RunSpec, categories_from_flags};
use crate::{CudaError, Gpu, Timeline};

pub use crate::chain::LayerChain;

/// Checks that `K` takes the chain's biases: per-neuron ones only when it declares them,
/// positive ones only when it implements the structural rule for them.
pub fn check_bias_support<K: KernelMethod>(chain: &LayerChain<'_>) -> Result<(), CudaError> {
    if chain.biases.is_none() {
        return Ok(());
    }
    if !K::ACCEPTS_PER_NEURON_BIAS {
        return Err(CudaError::InvalidArgument(format!(
            "{} takes one bias for all neurons, and this network has a bias per neuron: \
             run it with a method that takes per-neuron biases",
            K::NAME
        )));
    }
    if !K::ACCEPTS_POSITIVE_BIAS
        && let Some((layer, neuron, value)) = chain.first_positive_bias()
    {
        return Err(CudaError::InvalidArgument(format!(
            "{} computes clip(Z + b), which equals the structural rule (the bias only where \
             Y·W is structurally nonzero) only for biases ≤ 0, and neuron {neuron} of layer \
             {layer} has bias {value}: run a method that takes positive biases",
            K::NAME
        )));
    }
    Ok(())
}

/// A method's options: the paper's values by default, checked in one place.
pub trait MethodOptions:
    Any + Clone + std::fmt::Debug + Default + PartialEq + serde::Serialize + Send + Sync
{
    /// Checks the options on their own (counts ≥ 1, finite reals, …); `Err` says what is
    /// wrong, naming the parameter. The default accepts everything.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }

    /// The defaults for a run whose data lives under `data_dir` (where caches go);
    /// `Default` unless the method caches something.
    fn default_in(data_dir: &Path) -> Self {
        let _ = data_dir;
        Self::default()
    }

    /// The option groups this one embeds (SNICIT's XY stage), so that what sets such a
    /// group (a flag, a default) reaches the embedded copy too. One level deep.
    fn embedded_mut(&mut self) -> Vec<&mut dyn Any> {
        Vec::new()
    }
}

/// A method without parameters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct NoOptions;

impl MethodOptions for NoOptions {}

/// A kernel family as a method of the registry.
pub trait KernelMethod: 'static {
    /// Registry name, as given to `--method` (`bf`, `xy`, …).
    const NAME: &'static str;
    /// One line for `spdnn methods` and `--help`.
    const DESCRIPTION: &'static str;
    /// The method's options.
    type Options: MethodOptions;
    /// Whether the kernels take a bias per output neuron ([`LayerChain::biases`]); the
    /// harness refuses such a chain to a method that does not.
    const ACCEPTS_PER_NEURON_BIAS: bool = false;
    /// Whether they also take positive per-neuron biases, with the structural rule (the
    /// bias only where `Y·W` is structurally nonzero); `clip(Z + b)` alone is right only for
    /// biases ≤ 0.
    const ACCEPTS_POSITIVE_BIAS: bool = false;

    /// Everything a run of `chain` needs on `gpu`, for batches of at most `rows` rows:
    /// preprocessing, uploads, buffers. Errors name what is wrong (bad options, shapes the
    /// method cannot take, memory).
    fn prepare<'g>(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &Self::Options,
    ) -> Result<Box<dyn DeviceRun + 'g>, CudaError>;

    /// Rows per batch these options ask for (`None`: every row in one batch); the harness
    /// takes the smaller of this and the run's `RunSpec::batch`.
    fn batch(options: &Self::Options) -> Option<usize> {
        let _ = options;
        None
    }

    /// The device bytes a run of `chain` with `options` holds, from this method's own
    /// accounting of what `prepare`, `load` and `run` allocate ([`MemoryModel`]): per row of
    /// a batch, per layer, fixed, and whether the weights can stream. The default is
    /// [`MemoryModel::conservative`].
    fn memory(chain: &LayerChain<'_>, options: &Self::Options) -> MemoryModel {
        let _ = options;
        MemoryModel::conservative(chain)
    }

    /// [`Self::memory`] for a run on `gpu`, when the sizes come out of preparation the
    /// device-free model cannot repeat cheaply (a compression, a layout, a plan sized from
    /// the device's limits or its free memory under the budget): the method runs the same
    /// size computations its `prepare` does, without allocating. The planner calls this;
    /// the default is [`Self::memory`].
    fn memory_on(
        gpu: &Gpu,
        chain: &LayerChain<'_>,
        options: &Self::Options,
    ) -> Result<MemoryModel, CudaError> {
        let _ = gpu;
        Ok(Self::memory(chain, options))
    }

    /// Device bytes `load` allocates for a batch of `rows` input rows with `nnz` nonzeros
    /// (`binary`: every value is 1), beside [`Self::memory`]'s per-row bytes. The default is
    /// [`crate::rows::scatter_rows`]'s upload ([`crate::memory::scatter_upload_bytes`]).
    fn upload_bytes(rows: usize, nnz: usize, binary: bool) -> usize {
        let _ = binary;
        crate::memory::scatter_upload_bytes(rows, nnz)
    }

    /// `options` with the weights placed as `placement` says, for a method whose model says
    /// it can stream ([`MemoryModel::streaming`]); `None` (the default) keeps every layer
    /// resident whatever is asked.
    fn place_weights(
        options: &Self::Options,
        placement: &WeightPlacement,
    ) -> Option<Self::Options> {
        let _ = (options, placement);
        None
    }
}

/// A method prepared on the device, ready to run batches of rows.
pub trait DeviceRun {
    /// Loads a batch of input rows (at most the prepared capacity); untimed.
    fn load(&mut self, rows: &Csr) -> Result<(), CudaError>;

    /// Runs every layer over the loaded rows and flags their categories on the device:
    /// the timed region. In a profiled pass, marks each step on `probe`. A method may hold
    /// back part of a batch's work to do it once for several batches
    /// ([`Self::holds_back`]); the rows this call finished are then those of
    /// [`Self::row_flags`], which may be none, or earlier batches' too.
    fn run(&mut self, probe: &mut Probe) -> Result<(), CudaError>;

    /// Whether rows already run are held back, unfinished, until [`Self::finish`].
    fn holds_back(&self) -> bool {
        false
    }

    /// Finishes every row held back (timed, after a pass's last batch); their results are
    /// then those of [`Self::row_flags`] and [`Self::output`]. Marks its steps on `probe`.
    fn finish(&mut self, _probe: &mut Probe) -> Result<(), CudaError> {
        Ok(())
    }

    /// For each row the last [`Self::run`] or [`Self::finish`] finished (without holding
    /// back: the loaded rows), in the order the rows were loaded, whether it has a nonzero
    /// after the last layer (waits).
    fn row_flags(&mut self) -> Result<Vec<u8>, CudaError>;

    /// The final activations of the rows of [`Self::row_flags`], rows × `N_L` row-major
    /// (the last layer's width) in the network's neuron order; rows that are not
    /// categories are zero (waits).
    fn output(&mut self) -> Result<Vec<f32>, CudaError>;

    /// The stages of the breakdown, in order, each reported even when a pass spends
    /// nothing in it (one-stage methods: none).
    fn stages(&self) -> &'static [&'static str] {
        &[]
    }

    /// Starts counting global-memory accesses (clears the counters); `false` when this
    /// run counts nothing.
    fn start_census(&mut self) -> Result<bool, CudaError> {
        Ok(false)
    }

    /// Stops counting and returns the accesses of every layer since
    /// [`Self::start_census`].
    fn finish_census(&mut self) -> Result<Vec<AccessCounts>, CudaError> {
        Ok(Vec::new())
    }

    /// What the run found or chose (name, value), for reports.
    fn details(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// Where a pass's steps are marked: nothing outside a profiled pass; in one, an event
/// after each step, labelled with its stage and whether it ends a layer.
pub struct Probe {
    profile: Option<Profile>,
}

struct Profile {
    stream: std::sync::Arc<CudaStream>,
    timeline: Timeline,
    /// Per mark after the first: (stage, the layer it ends, if it ends one).
    marks: Vec<(&'static str, Option<usize>)>,
    /// The layer the next layer mark ends (0-based).
    next_layer: usize,
    /// Stage every mark goes to while set (a method running another's layers).
    within: Option<&'static str>,
}

impl Probe {
    /// A probe that records nothing (warm-up, timed and census passes).
    pub fn off() -> Self {
        Self { profile: None }
    }

    /// A probe recording events on `gpu`'s stream, starting now.
    pub fn recording(gpu: &Gpu) -> Result<Self, CudaError> {
        let stream = gpu.stream().clone();
        let mut timeline = Timeline::new(gpu.context());
        timeline.mark(&stream, "start")?;
        Ok(Self {
            profile: Some(Profile {
                stream,
                timeline,
                marks: Vec::new(),
                next_layer: 0,
                within: None,
            }),
        })
    }

    /// Whether this pass is profiled.
    pub fn is_recording(&self) -> bool {
        self.profile.is_some()
    }

    /// Marks the end of one layer of stage `stage`.
    pub fn layer(&mut self, stage: &'static str) -> Result<(), CudaError> {
        self.mark(stage, true)
    }

    /// Marks the end of a step of stage `stage` that is not a layer (a transpose, a
    /// conversion, the categories).
    pub fn step(&mut self, stage: &'static str) -> Result<(), CudaError> {
        self.mark(stage, false)
    }

    /// Sends every mark to `stage` until called with `None` (SNICIT running XY's layers
    /// as its pre-convergence stage).
    pub fn within(&mut self, stage: Option<&'static str>) {
        if let Some(p) = self.profile.as_mut() {
            p.within = stage;
        }
    }

    /// The next layer marked is layer `index` (0-based; marks count on from it): a step
    /// that finishes rows held back from earlier batches, whose first layer is not the
    /// chain's first.
    pub fn next_layer_is(&mut self, index: usize) {
        if let Some(p) = self.profile.as_mut() {
            p.next_layer = index;
        }
    }

    fn mark(&mut self, stage: &'static str, layer: bool) -> Result<(), CudaError> {
        let Some(p) = self.profile.as_mut() else {
            return Ok(());
        };
        let stage = p.within.unwrap_or(stage);
        p.timeline.mark(&p.stream, stage)?;
        let index = layer.then(|| {
            p.next_layer += 1;
            p.next_layer - 1
        });
        p.marks.push((stage, index));
        Ok(())
    }

    /// Waits for the marks and adds their times to `breakdown`.
    fn add_to(self, breakdown: &mut Breakdown) -> Result<(), CudaError> {
        let Some(p) = self.profile else {
            return Ok(());
        };
        let intervals = p.timeline.intervals()?;
        for (&(stage, layer), (_, ms)) in p.marks.iter().zip(&intervals) {
            if let Some(layer) = layer {
                if breakdown.layer_ms.len() <= layer {
                    breakdown.layer_ms.resize(layer + 1, 0.0);
                }
                breakdown.layer_ms[layer] += ms;
            }
            match breakdown.stages.iter_mut().find(|(s, _)| s == stage) {
                Some((_, total)) => *total += ms,
                None => breakdown.stages.push((stage.to_string(), *ms)),
            }
        }
        Ok(())
    }
}

/// The times of one profiled pass, summed over its batches.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Breakdown {
    /// (stage, ms) in order of the method's [`DeviceRun::stages`], then of appearance.
    pub stages: Vec<(String, f64)>,
    /// ms of each layer.
    pub layer_ms: Vec<f64>,
}

/// Rows per batch for `rows` input rows and a requested batch (`None`: all at once).
pub fn batch_rows(rows: usize, batch: Option<usize>) -> usize {
    batch.unwrap_or(rows).clamp(1, rows.max(1))
}

/// Runs `K` on `input` through `chain` with `options` as the module docs describe. The
/// result's `compile` is what compiling and loading kernel modules cost the whole run
/// (`gpu`'s [`Gpu::compile_stats`] over it).
pub fn run<K: KernelMethod>(
    gpu: &Gpu,
    chain: &LayerChain<'_>,
    input: &Csr,
    options: &K::Options,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    let wall = Instant::now();
    let compile_before = gpu.compile_stats();
    chain.check(input)?;
    check_bias_support::<K>(chain)?;
    options
        .validate()
        .map_err(|e| CudaError::InvalidArgument(format!("{}: {e}", K::NAME)))?;
    let requested = match (spec.batch, K::batch(options)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let batch = batch_rows(input.nrows(), requested);
    let mut prepared = K::prepare(gpu, chain, batch, options)?;
    let mut result = drive(gpu, input, batch, prepared.as_mut(), spec)?;
    result.compile = gpu.compile_stats().since(&compile_before);
    result.total_ms = wall.elapsed().as_secs_f64() * 1e3;
    Ok(result)
}

/// The passes of [`run`] over a prepared method (`total_ms` is left to the caller).
pub fn drive(
    gpu: &Gpu,
    input: &Csr,
    batch: usize,
    prepared: &mut dyn DeviceRun,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    let rows = input.nrows();
    let batches: Vec<Csr> = (0..rows)
        .step_by(batch.max(1))
        .map(|start| input.rows_slice(start..(start + batch).min(rows)))
        .collect();
    let stream = gpu.stream().clone();
    let mut timer = gpu.timer()?;
    let mut infer_ms = Vec::new();
    let mut flags = Vec::with_capacity(rows);
    let mut output = spec
        .keep_output
        .then(|| Vec::with_capacity(rows * input.ncols()));
    // Runs the loaded batch (or finishes the rows held back) between two events, ms;
    // `keep`: the categories (and output) of the rows it finished are the run's.
    let mut timed = |prepared: &mut dyn DeviceRun, step: Step, probe: &mut Probe, keep: bool| {
        timer.start(&stream)?;
        step.take(prepared, probe)?;
        let ms = timer.stop(&stream)?;
        if keep {
            flags.extend(prepared.row_flags()?);
            if let Some(values) = output.as_mut() {
                values.extend(prepared.output()?);
            }
        }
        Ok::<f64, CudaError>(ms)
    };
    let passes = if spec.profiled_only {
        0
    } else {
        spec.warmup + spec.repetitions.max(1)
    };
    for pass in 0..passes {
        let last = pass + 1 == passes;
        let mut elapsed = 0.0;
        each_step(&mut *prepared, &batches, |prepared, step| {
            elapsed += timed(prepared, step, &mut Probe::off(), last)?;
            Ok(())
        })?;
        if pass >= spec.warmup {
            infer_ms.push(elapsed);
        }
    }

    let mut breakdown = Breakdown {
        stages: prepared
            .stages()
            .iter()
            .map(|s| (s.to_string(), 0.0))
            .collect(),
        layer_ms: Vec::new(),
    };
    let mut profiled_ms = 0.0;
    each_step(&mut *prepared, &batches, |prepared, step| {
        let mut probe = Probe::recording(gpu)?;
        if spec.profiled_only {
            profiled_ms += timed(prepared, step, &mut probe, true)?;
        } else {
            step.take(prepared, &mut probe)?;
        }
        probe.add_to(&mut breakdown)
    })?;
    if spec.profiled_only {
        infer_ms.push(profiled_ms);
    }

    let mut accesses = Vec::new();
    if prepared.start_census()? {
        each_step(&mut *prepared, &batches, |prepared, step| {
            step.take(prepared, &mut Probe::off())
        })?;
        accesses = prepared.finish_census()?;
    }

    if flags.len() != rows {
        return Err(CudaError::InvalidArgument(format!(
            "the method returned {} row flags for {rows} rows",
            flags.len()
        )));
    }
    Ok(GpuInference {
        categories: categories_from_flags(&flags),
        output,
        infer_ms,
        total_ms: 0.0,
        details: prepared.details(),
        stages: if prepared.stages().is_empty() {
            Vec::new()
        } else {
            breakdown.stages
        },
        layer_ms: breakdown.layer_ms,
        accesses,
        compile: crate::CompileStats::default(),
    })
}

/// One pass over `batches`: each loaded and run, then the rows held back finished; `take`
/// takes each step.
fn each_step(
    prepared: &mut dyn DeviceRun,
    batches: &[Csr],
    mut take: impl FnMut(&mut dyn DeviceRun, Step) -> Result<(), CudaError>,
) -> Result<(), CudaError> {
    for rows_of_batch in batches {
        prepared.load(rows_of_batch)?;
        take(&mut *prepared, Step::Run)?;
    }
    if prepared.holds_back() {
        take(&mut *prepared, Step::Finish)?;
    }
    Ok(())
}

/// What a step of [`drive`] does.
#[derive(Clone, Copy)]
enum Step {
    /// Runs the loaded batch.
    Run,
    /// Finishes the rows held back.
    Finish,
}

impl Step {
    fn take(self, prepared: &mut dyn DeviceRun, probe: &mut Probe) -> Result<(), CudaError> {
        match self {
            Self::Run => prepared.run(probe),
            Self::Finish => prepared.finish(probe),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_cover_the_rows() {
        assert_eq!(batch_rows(10, None), 10);
        assert_eq!(batch_rows(10, Some(4)), 4);
        assert_eq!(batch_rows(10, Some(40)), 10);
        assert_eq!(batch_rows(10, Some(0)), 1);
        assert_eq!(batch_rows(0, None), 1);
    }

    #[test]
    fn an_off_probe_records_nothing() {
        let mut probe = Probe::off();
        assert!(!probe.is_recording());
        probe.layer("x").unwrap();
        probe.step("y").unwrap();
        let mut breakdown = Breakdown::default();
        probe.add_to(&mut breakdown).unwrap();
        assert_eq!(breakdown, Breakdown::default());
    }
}
