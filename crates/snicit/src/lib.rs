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
//! Unlike the paper, residues are kept as the row's own values (the difference from the
//! centroid is implied): `σ(W(c + δ) + b)` is then computed exactly as the reference
//! does, instead of `σ(Wc + Wδ + b) − σ(Wc + b)`, whose rounding could change values
//! and categories. The saving is the same: empty residues cost nothing.

pub mod cluster;

mod bf_pre;
mod run;

use std::time::Instant;

use spdnn_cuda::rows::{self, GpuInference, RunSpec};
use spdnn_cuda::{CudaError, Gpu, Timeline};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_glare::Glare;
use spdnn_xy::gpu::DeviceXyNetwork;
use spdnn_xy::{XyNetwork, XyOptions};

use run::{Context, Kernels, Outcome, Pre};

/// The spMM of the layers before the threshold layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PreConvergence {
    /// XY-2021's kernels (the paper's choice).
    #[default]
    Xy,
    /// BF-2019's kernel.
    Bf,
}

/// SNICIT's parameters (paper §4.1 defaults).
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
        }
    }
}

/// Runs SNICIT on `input` (rows × N) through `layers`: preparation, `spec.warmup`
/// untimed and `spec.repetitions` timed runs, and one profiled run for the stage and
/// per-layer breakdown. Batches (when `options.batch` is set) run one after another
/// inside the timed region.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &SnicitOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    let wall = Instant::now();
    let n = rows::check_problem(layers, input, bias, upper)?;
    check_options(options)?;
    let prepare = Instant::now();
    let (network, _) = XyNetwork::load_or_prepare(layers, options.xy.cache_dir.as_deref())
        .map_err(|e| CudaError::InvalidArgument(format!("XY preprocessing: {e}")))?;
    let prepare_ms = prepare.elapsed().as_secs_f64() * 1e3;
    let threshold = options.threshold.min(layers.len());
    let pre = match options.pre_convergence {
        PreConvergence::Xy => Pre::Xy {
            layers: DeviceXyNetwork::upload(gpu, &network, 0..threshold)?,
            row_major: options
                .xy
                .row_major_layers
                .unwrap_or_else(|| spdnn_xy::gpu::detect_row_major_layers(&network)),
        },
        PreConvergence::Bf => Pre::Bf(Box::new(bf_pre::BfPre::new(
            gpu,
            &layers[..threshold],
            n,
            bias,
            upper,
        )?)),
    };
    let post = DeviceXyNetwork::upload(gpu, &network, threshold..layers.len())?;
    let kernels = Kernels::load(gpu)?;
    let rows_count = input.nrows();
    let batch = options.batch.unwrap_or(rows_count).clamp(1, rows_count);
    let batches: Vec<Csr> = (0..rows_count)
        .step_by(batch)
        .map(|start| input.rows_slice(start..start + batch))
        .collect();
    let mut context = Context {
        gpu,
        kernels: &kernels,
        network: &network,
        pre,
        post: &post,
        options,
        threshold,
        n,
        activation: (bias, upper),
        glare: match &options.glare {
            Some(g) => Some(run::PostGlare::new(gpu, g, n, threshold, layers.len())?),
            None => None,
        },
    };
    let mut batch_flags = gpu.alloc_zeros::<u8>(batch)?;
    let stream = gpu.stream().clone();
    let mut timer = gpu.timer()?;
    let mut infer_ms = Vec::new();
    let mut flags = vec![0u8; rows_count];
    for repetition in 0..spec.warmup + spec.repetitions.max(1) {
        let mut elapsed = 0.0;
        for (index, rows_of_batch) in batches.iter().enumerate() {
            let mut run = context.start(rows_of_batch)?;
            timer.start(&stream)?;
            context.run(&mut run, &mut batch_flags, None)?;
            elapsed += timer.stop(&stream)?;
            let batch_result = gpu.download(&*batch_flags)?;
            let first = index * batch;
            flags[first..first + rows_of_batch.nrows()]
                .copy_from_slice(&batch_result[..rows_of_batch.nrows()]);
        }
        if repetition >= spec.warmup {
            infer_ms.push(elapsed);
        }
    }

    // The profiled run: stages and layers summed over batches.
    let mut stages: Vec<(String, f64)> = STAGES.iter().map(|s| (s.to_string(), 0.0)).collect();
    let mut layer_ms = vec![0.0; layers.len()];
    let mut outcome = Outcome::default();
    let mut dense = spec.keep_output.then(|| vec![0.0f32; rows_count * n]);
    for (index, rows_of_batch) in batches.iter().enumerate() {
        let mut run = context.start(rows_of_batch)?;
        let mut timeline = Timeline::new(gpu.context());
        timeline.mark(&stream, "start")?;
        let batch_outcome = context.run(&mut run, &mut batch_flags, Some(&mut timeline))?;
        let mut layer = 0;
        for (label, ms) in timeline.intervals()? {
            if label == "layer" {
                layer_ms[layer] += ms;
                layer += 1;
            }
            let stage = STAGES
                .iter()
                .position(|s| *s == label)
                .unwrap_or(if layer <= threshold { 0 } else { 2 });
            stages[stage].1 += ms;
        }
        if let Some(dense) = dense.as_mut() {
            context.write_output(&mut run, index * batch, dense)?;
        }
        outcome.add(&batch_outcome);
    }

    // With GLARE, one more pass counts the accesses of every layer (summed over batches).
    let mut accesses = Vec::new();
    if options.glare.is_some_and(|g| g.census)
        && let Some(glare) = context.glare.as_mut()
    {
        glare.counting = true;
        glare.census.clear(gpu)?;
        for rows_of_batch in &batches {
            let mut run = context.start(rows_of_batch)?;
            context.run(&mut run, &mut batch_flags, None)?;
        }
        if let Some(glare) = context.glare.as_mut() {
            glare.counting = false;
            accesses = glare.census.read(gpu)?;
        }
    }

    // The options themselves are the caller's; these are what the run found.
    let details = vec![
        ("batch".into(), batch.to_string()),
        (
            "rows_at_threshold".into(),
            outcome.rows_at_threshold.to_string(),
        ),
        ("centroids".into(), outcome.centroids.to_string()),
        (
            "nonempty_rows_after_conversion".into(),
            outcome.nonempty_after_conversion.to_string(),
        ),
        ("preprocessing_ms".into(), format!("{prepare_ms:.1}")),
    ];
    let mut details = details;
    if let Some(glare) = &options.glare {
        details.push(("glare_segment".into(), glare.segment.to_string()));
    }
    Ok(GpuInference {
        categories: rows::categories_from_flags(&flags),
        output: dense,
        infer_ms,
        total_ms: wall.elapsed().as_secs_f64() * 1e3,
        details,
        stages,
        layer_ms,
        accesses,
    })
}

/// The stages of the breakdown, as the paper's Fig. 7 names them.
const STAGES: [&str; 4] = [
    "pre-convergence",
    "conversion",
    "post-convergence",
    "recovery",
];

fn check_options(options: &SnicitOptions) -> Result<(), CudaError> {
    let bad = |what: &str| Err(CudaError::InvalidArgument(format!("SNICIT: {what}")));
    if options.threshold == 0 {
        return bad("the threshold layer must be at least 1");
    }
    if options.samples == 0 || options.bins == 0 {
        return bad("samples and bins must be at least 1");
    }
    let valid = |v: f32| v.is_finite() && v >= 0.0;
    if !valid(options.epsilon) || !valid(options.eta) {
        return bad("epsilon and eta must be finite and not negative");
    }
    if options.refresh_interval == 0 {
        return bad("the refresh interval must be at least 1");
    }
    if options.batch == Some(0) {
        return bad("the batch must hold at least one row");
    }
    Ok(())
}
