//! T4-adaptive's memory-aware partition (seed 001 §III-A) for every method, over GPUs and
//! processes: any network in any memory budget.
//!
//! - Each method states what it holds on the device (`KernelMethod::memory`, a
//!   [`MemoryModel`] written beside its `prepare`).
//! - [`plan`]: the linear program (2) in closed form: the input batch `N_B` and the weight
//!   batch `N_L` under the budget `M_G`, with `T_0` and `T_L` measured on the device at the
//!   start ([`probe`]).
//! - [`run`]: a method through the one harness under its plan: input in batches, weights
//!   resident or streamed in batches of `N_L` layers (where the method streams: BF), the
//!   weight batch retuned online, the peak measured; an allocation refused is retried with
//!   half the batch, and at one row ends in an error naming the bytes needed. Several GPUs
//!   of a host take slabs of the input, one thread, context handle and plan each.
//! - [`ranks`]: the same slabs over processes ([`ranks::Ranks`]; MPI behind the `mpi`
//!   feature), rank 0 gathering the categories.

pub mod plan;
pub mod ranks;

use std::time::Instant;

use spdnn_cuda::memory::{MemoryModel, WeightPlacement};
use spdnn_cuda::method::{self, KernelMethod, LayerChain, MethodOptions};
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_cuda::{CudaError, Gpu};
use spdnn_formats::{Csr, SparseMatrix};

pub use plan::{Bound, DoesNotFit, Plan, Timing, bytes_text, parse_size};
pub use spdnn_cuda::memory;

/// Bytes of free device memory left alone when no budget is given (the context, modules,
/// library handles and the allocator's slack are not in any method's accounting).
pub const DEFAULT_RESERVE: usize = 512 << 20;

/// Rows of the probe batch, `N_0` (fewer when the input or the budget is smaller).
pub const PROBE_ROWS: usize = 1024;

/// Layers the probe runs (the first ones: every row is live there, the heaviest layers; fewer
/// when their weights and one row do not fit half the budget).
pub const PROBE_LAYERS: usize = 4;

/// What a run may use: the budget, the GPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemorySettings {
    /// Bytes the run's buffers may hold on each GPU entry (`--gpu-memory`); `None`: the
    /// device's free memory, less [`DEFAULT_RESERVE`], shared by the entries on it.
    pub gpu_memory: Option<usize>,
    /// The GPUs that take slabs of the input (`--gpus 0,1`; an ordinal given twice puts two
    /// handles on one device); empty: GPU 0.
    pub gpus: Vec<usize>,
}

impl MethodOptions for MemorySettings {
    fn validate(&self) -> Result<(), String> {
        if self.gpu_memory == Some(0) {
            return Err("--gpu-memory must be at least one byte".into());
        }
        Ok(())
    }
}

/// One GPU's part of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GpuPlan {
    /// Device ordinal.
    pub ordinal: usize,
    /// First row of its slab (0-based) and its rows.
    pub first_row: usize,
    /// The plan it ran (after any retries).
    pub plan: Plan,
    /// Whether the model was the method's exact accounting.
    pub exact_model: bool,
    /// What the probe measured (streaming plans only).
    pub timing: Option<Timing>,
    /// The most bytes its buffers held at once over the whole run.
    pub measured_peak: usize,
    /// Plans refused by an allocation before this one ran.
    pub retries: usize,
}

/// What the partition did: one entry per GPU (or per rank's GPU).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PlanReport {
    /// The GPUs in order of their slabs.
    pub gpus: Vec<GpuPlan>,
}

impl PlanReport {
    /// One line per GPU: the plan, the predicted and the measured peak.
    pub fn lines(&self) -> Vec<String> {
        self.gpus
            .iter()
            .map(|g| {
                format!(
                    "GPU {} rows {}..{}: {}; measured peak {}{}{}",
                    g.ordinal,
                    g.first_row,
                    g.first_row + g.plan.rows,
                    g.plan.describe(),
                    bytes_text(g.measured_peak),
                    if g.exact_model {
                        ""
                    } else {
                        " (the prediction is the method's estimate, not its exact accounting)"
                    },
                    if g.retries > 0 {
                        format!(", after {} refused plan(s)", g.retries)
                    } else {
                        String::new()
                    }
                )
            })
            .collect()
    }
}

/// A run's result and what the partition did.
#[derive(Debug, Clone)]
pub struct AdaptiveRun {
    /// The merged result (categories of every slab; per-pass time of the slowest GPU;
    /// stages, layers and accesses of the first GPU).
    pub result: GpuInference,
    /// The plans.
    pub report: PlanReport,
}

/// Runs `K` on `input` through `chain` under `settings`: on `gpu` alone, or over the GPUs
/// `settings.gpus` names (slabs of rows, one thread each).
pub fn run<K: KernelMethod>(
    gpu: &Gpu,
    chain: &LayerChain<'_>,
    input: &Csr,
    options: &K::Options,
    spec: &RunSpec,
    settings: &MemorySettings,
) -> Result<AdaptiveRun, CudaError> {
    let wall = Instant::now();
    chain.check(input)?;
    settings
        .validate()
        .map_err(|e| CudaError::InvalidArgument(format!("{}: {e}", K::NAME)))?;
    let ordinals = if settings.gpus.is_empty() {
        vec![gpu.ordinal()]
    } else {
        settings.gpus.clone()
    };
    let budgets = budgets(gpu, &ordinals, settings.gpu_memory)?;
    let given = settings.gpu_memory.is_some();
    let rows = input.nrows();
    let parts: Vec<(usize, usize, std::ops::Range<usize>)> = ordinals
        .iter()
        .zip(&budgets)
        .enumerate()
        .map(|(i, (&o, &b))| (o, b, ranks::slab(rows, i, ordinals.len())))
        .filter(|(_, _, r)| !r.is_empty())
        .collect();
    let results: Vec<Result<(GpuInference, GpuPlan), CudaError>> = if parts.len() == 1 {
        let (ordinal, budget, range) = parts[0].clone();
        let own = (ordinal == gpu.ordinal()).then(|| gpu.clone());
        let device = match own {
            Some(g) => g,
            None => Gpu::new(ordinal)?,
        };
        vec![run_one::<K>(
            &device, chain, input, range, options, spec, budget, given,
        )]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = parts
                .iter()
                .cloned()
                .map(|(ordinal, budget, range)| {
                    scope.spawn(move || {
                        let device = Gpu::new(ordinal)?;
                        run_one::<K>(&device, chain, input, range, options, spec, budget, given)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(CudaError::InvalidArgument("a GPU's thread panicked".into()))
                    })
                })
                .collect()
        })
    };
    let mut merged = GpuInference::default();
    let mut report = PlanReport::default();
    let mut outputs = Some(Vec::new());
    for (i, result) in results.into_iter().enumerate() {
        let (part, plan) = result?;
        let first = plan.first_row as u32;
        merged
            .categories
            .extend(part.categories.iter().map(|&c| c + first));
        if merged.infer_ms.is_empty() {
            merged.infer_ms = part.infer_ms.clone();
        } else {
            for (m, p) in merged.infer_ms.iter_mut().zip(&part.infer_ms) {
                *m = m.max(*p);
            }
        }
        outputs = match (outputs, part.output) {
            (Some(mut all), Some(values)) => {
                all.extend(values);
                Some(all)
            }
            _ => None,
        };
        if i == 0 {
            merged.details = part.details;
            merged.stages = part.stages;
            merged.layer_ms = part.layer_ms;
            merged.accesses = part.accesses;
            merged.compile = part.compile;
        } else {
            merged.compile = merged.compile.alongside(&part.compile);
        }
        report.gpus.push(plan);
    }
    merged.output = if spec.keep_output { outputs } else { None };
    if report.gpus.len() > 1 {
        merged
            .details
            .push(("gpus".into(), report.gpus.len().to_string()));
    }
    merged.total_ms = wall.elapsed().as_secs_f64() * 1e3;
    Ok(AdaptiveRun {
        result: merged,
        report,
    })
}

/// Each entry's budget: the one given (checked against the device's free memory shared by
/// the entries on it), or that free memory less [`DEFAULT_RESERVE`], shared.
fn budgets(gpu: &Gpu, ordinals: &[usize], given: Option<usize>) -> Result<Vec<usize>, CudaError> {
    let mut free_of = std::collections::HashMap::new();
    for &o in ordinals {
        if let std::collections::hash_map::Entry::Vacant(e) = free_of.entry(o) {
            let free = if o == gpu.ordinal() {
                gpu.memory()?.free
            } else {
                Gpu::new(o)?.memory()?.free
            };
            e.insert(free);
        }
    }
    ordinals
        .iter()
        .map(|o| {
            let sharing = ordinals.iter().filter(|x| *x == o).count();
            let free = free_of[o];
            match given {
                Some(budget) if budget.saturating_mul(sharing) > free => {
                    Err(CudaError::InvalidArgument(format!(
                        "--gpu-memory {} is more than GPU {o} has free ({}{})",
                        bytes_text(budget),
                        bytes_text(free),
                        if sharing > 1 {
                            format!(", shared by {sharing} entries")
                        } else {
                            String::new()
                        }
                    )))
                }
                Some(budget) => Ok(budget),
                None => Ok(free.saturating_sub(DEFAULT_RESERVE) / sharing),
            }
        })
        .collect()
}

/// `K` on rows `range` of `input` on `gpu` under `budget` bytes (`given`: by the user;
/// otherwise the device's free memory, and a plan that does not fit is out of memory).
#[allow(clippy::too_many_arguments)]
fn run_one<K: KernelMethod>(
    gpu: &Gpu,
    chain: &LayerChain<'_>,
    input: &Csr,
    range: std::ops::Range<usize>,
    options: &K::Options,
    spec: &RunSpec,
    budget: usize,
    given: bool,
) -> Result<(GpuInference, GpuPlan), CudaError> {
    let first_row = range.start;
    // Compiling counts over the probe and any refused plan too.
    let compile_before = gpu.compile_stats();
    let slab;
    let input = if range.len() == input.nrows() {
        input
    } else {
        slab = input.rows_slice(range);
        &slab
    };
    let gpu = gpu.with_budget(budget);
    let model = K::memory_on(&gpu, chain, options)?;
    let requested = match (spec.batch, K::batch(options)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let mut problem = plan::Problem {
        model: &model,
        uploads: plan::Uploads {
            offsets: input.row_offsets(),
            binary: input.values().iter().all(|&v| v == 1.0),
            bytes: K::upload_bytes,
        },
        budget,
        max_batch: requested,
        timing: None,
    };
    let not_fit = |e: DoesNotFit| {
        if !given {
            // No budget was asked for: the device itself has too little free (`free` is
            // what a run may use: the free memory less the reserve).
            return CudaError::OutOfMemory {
                requested: e.needed,
                free: e.budget,
            };
        }
        CudaError::InvalidArgument(format!(
            "{}: {e} (GPU {}); give a larger --gpu-memory, fewer rows, or a method that \
             streams its weights (bf; snicit streams its post-convergence layers)",
            K::NAME,
            gpu.ordinal()
        ))
    };
    let mut chosen = Plan::choose(&problem).map_err(not_fit)?;
    let mut timing = None;
    if matches!(chosen.weights, WeightPlacement::Streamed(_)) {
        timing = Some(probe::<K>(&gpu, chain, input, options, budget)?);
        problem.timing = timing;
        chosen = Plan::choose(&problem).map_err(not_fit)?;
    }
    let mut retries = 0;
    loop {
        let placed = match K::place_weights(options, &chosen.weights) {
            Some(placed) => placed,
            None if chosen.weights == WeightPlacement::Resident => options.clone(),
            None => {
                return Err(CudaError::InvalidArgument(format!(
                    "{}: its memory model says it streams weights, but it took no streamed \
                     placement",
                    K::NAME
                )));
            }
        };
        let run_spec = RunSpec {
            batch: Some(chosen.batch),
            ..*spec
        };
        gpu.take_refusal();
        gpu.reset_peak();
        match method::run::<K>(&gpu, chain, input, &placed, &run_spec) {
            Ok(mut result) => {
                result.compile = gpu.compile_stats().since(&compile_before);
                let measured_peak = gpu.budget().map_or(0, |b| b.peak);
                return Ok((
                    result,
                    GpuPlan {
                        ordinal: gpu.ordinal(),
                        first_row,
                        plan: chosen,
                        exact_model: model.exact,
                        timing,
                        measured_peak,
                        retries,
                    },
                ));
            }
            Err(error) => {
                let Some(refusal) = gpu.take_refusal() else {
                    return Err(error);
                };
                match chosen.halved(&problem) {
                    Some(next) => {
                        chosen = next;
                        retries += 1;
                    }
                    None => {
                        return Err(CudaError::InvalidArgument(format!(
                            "{}: does not fit the budget of {} on GPU {} even one row a batch: \
                             it held {} when {} more were asked ({} needed at least); {error}",
                            K::NAME,
                            bytes_text(budget),
                            gpu.ordinal(),
                            bytes_text(refusal.held),
                            bytes_text(refusal.requested),
                            bytes_text(refusal.held.saturating_add(refusal.requested)),
                        )));
                    }
                }
            }
        }
    }
}

/// Measures `T_L` (a copy of the largest layer's bytes, at most 64 MiB, from pinned memory;
/// the fastest of three) and `T_0` (a layer's time over the first `N_0` rows, from a run of
/// the first [`PROBE_LAYERS`] layers with their weights resident) on `gpu`.
pub fn probe<K: KernelMethod>(
    gpu: &Gpu,
    chain: &LayerChain<'_>,
    input: &Csr,
    options: &K::Options,
    budget: usize,
) -> Result<Timing, CudaError> {
    let model = K::memory_on(gpu, chain, options)?;
    let bytes = model.largest_layer().clamp(4, 64 << 20);
    let ms_per_mib = {
        let pinned = gpu.alloc_pinned_write_combined::<u8>(bytes)?;
        let mut device = gpu.alloc_zeros::<u8>(bytes)?;
        let stream = gpu.new_stream()?;
        // The buffers' allocation (and zeroing) on the main stream comes first.
        spdnn_cuda::order::join(gpu, gpu.stream(), &stream)?;
        let mut timer = gpu.timer()?;
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            timer.start(&stream)?;
            stream
                .memcpy_htod(&*pinned, &mut *device)
                .map_err(|e| CudaError::driver("timing a weight copy", e))?;
            best = best.min(timer.stop(&stream)?);
        }
        // The buffers are freed next.
        stream
            .synchronize()
            .map_err(|e| CudaError::driver("waiting for the timed copies", e))?;
        best / (bytes as f64 / (1u64 << 20) as f64)
    };
    let upload = |rows: usize| {
        let nnz = input.row_offsets()[rows] as usize;
        K::upload_bytes(rows, nnz, false)
    };
    // The head's layers resident and its rows must fit half the budget; in a budget that
    // holds little more than the streaming buffers (two of the largest layer), fewer layers.
    let mut layers = chain.layers.len().clamp(1, PROBE_LAYERS);
    let (head, rows) = loop {
        let head = LayerChain::new(&chain.layers[..layers], chain.bias, chain.upper);
        let head_model: MemoryModel = K::memory_on(gpu, &head, options)?;
        let bytes = |rows: usize| {
            head_model
                .bytes(rows, &WeightPlacement::Resident)
                .saturating_add(upload(rows))
        };
        let mut rows = input.nrows().clamp(1, PROBE_ROWS);
        while rows > 1 && bytes(rows) > budget / 2 {
            rows /= 2;
        }
        if layers == 1 || bytes(rows) <= budget / 2 {
            break (head, rows);
        }
        layers -= 1;
    };
    let resident =
        K::place_weights(options, &WeightPlacement::Resident).unwrap_or_else(|| options.clone());
    let spec = RunSpec {
        warmup: 1,
        repetitions: 1,
        keep_output: false,
        batch: None,
        profiled_only: false,
    };
    let result = method::run::<K>(gpu, &head, &input.rows_slice(0..rows), &resident, &spec)?;
    let layer_ms = result.infer_ms.first().copied().unwrap_or(0.0) / layers as f64;
    Ok(Timing {
        probe_rows: rows,
        layer_ms,
        transfer_ms_per_mib: ms_per_mib,
    })
}
