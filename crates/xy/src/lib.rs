//! XY-2021, the HPEC 2021 Sparse DNN Graph Challenge champion (published code:
//! CGCL-codes/Graphchallenge21; facts in `shared/research/sdgc-facts.md` §1a, §3).
//!
//! The network is preprocessed once (in parallel, cached on disk): the outputs of each
//! layer that share one input set are found from the data and stored as blocks (see
//! [`mod@format`]). Inference then runs in three phases (`kernels-cu/xy.cu`):
//! 1. the first layer, row-major, from the scattered input rows;
//! 2. the *stride layers* that follow while each block reads at most two windows of
//!    neighbouring inputs, still row-major, on the list of non-empty rows;
//! 3. after a transpose that keeps only the rows still listed, every other layer
//!    neuron-major (one thread per sample, the block's weights in shared memory, one
//!    accumulator per block output in registers), with the dead samples deleted once
//!    more at a configurable layer (default 22).

pub mod cache;
pub mod error;
pub mod format;
pub mod gpu;

use std::path::PathBuf;
use std::time::Instant;

use spdnn_cuda::rows::{self, GpuInference, RunSpec};
use spdnn_cuda::{CudaError, Gpu, Timeline};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_glare::Glare;

use gpu::{DeviceXyNetwork, XyKernels, XyRun};

pub use cache::{CacheUse, cache_path, fingerprint};
pub use error::XyError;
pub use format::{GROUP, XyLayer, XyNetwork};

/// Tuning of an XY run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XyOptions {
    /// The layer (1-based count of layers done) after which dead samples are deleted from
    /// the neuron-major activations; `None` never deletes. Default 22, as XY-2021.
    pub delete_at: Option<usize>,
    /// Row-major layers before the transpose; `None` detects them from the data (the
    /// first layer and the stride layers that follow it).
    pub row_major_layers: Option<usize>,
    /// Where preprocessed networks are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Run the GLARE variant of the neuron-major kernel on the layers after the deletion
    /// (all neuron-major layers when `delete_at` is `None`).
    pub glare: Option<Glare>,
}

impl Default for XyOptions {
    fn default() -> Self {
        Self {
            delete_at: Some(22),
            row_major_layers: None,
            cache_dir: None,
            glare: None,
        }
    }
}

/// Runs XY on `input` (rows × N) through `layers`: preprocessing (or the cache), the
/// upload, `spec.warmup` untimed and `spec.repetitions` timed runs, then one profiled run
/// for the per-layer and per-stage times.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &XyOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    let wall = Instant::now();
    let n = rows::check_problem(layers, input, bias, upper)?;
    let prepare = Instant::now();
    let (network, cache_use) = XyNetwork::load_or_prepare(layers, options.cache_dir.as_deref())
        .map_err(|e| CudaError::InvalidArgument(format!("XY preprocessing: {e}")))?;
    let prepare_ms = prepare.elapsed().as_secs_f64() * 1e3;
    let row_major = options
        .row_major_layers
        .unwrap_or_else(|| gpu::detect_row_major_layers(&network))
        .min(layers.len());
    let device = DeviceXyNetwork::upload(gpu, &network, 0..layers.len())?;
    let kernels = XyKernels::load(gpu)?;
    let rows_count = input.nrows();
    let mut run = XyRun::new(
        gpu,
        &kernels,
        n,
        rows_count,
        row_major,
        options.delete_at,
        (bias, upper),
    )?;
    if let Some(glare) = &options.glare {
        run = run.with_glare(glare, layers.len())?;
    }
    let mut row_flags = gpu.alloc_zeros::<u8>(rows_count)?;
    let stream = gpu.stream().clone();
    let mut timer = gpu.timer()?;
    let mut infer_ms = Vec::new();
    for repetition in 0..spec.warmup + spec.repetitions.max(1) {
        run.load_input(input)?;
        timer.start(&stream)?;
        for layer in &device.layers {
            run.layer(layer, None)?;
        }
        run.mark_categories(&mut row_flags)?;
        let ms = timer.stop(&stream)?;
        if repetition >= spec.warmup {
            infer_ms.push(ms);
        }
    }

    // One more run with an event after every step, for the breakdown.
    run.load_input(input)?;
    let mut timeline = Timeline::new(gpu.context());
    timeline.mark(&stream, "start")?;
    for layer in &device.layers {
        run.layer(layer, Some(&mut timeline))?;
    }
    run.mark_categories(&mut row_flags)?;
    timeline.mark(&stream, "categories")?;
    let (stages, layer_ms) = breakdown(&timeline.intervals()?, row_major);

    // With GLARE, one more run counts every layer's accesses.
    let mut accesses = Vec::new();
    if options.glare.is_some_and(|g| g.census) {
        run.set_counting(true);
        run.load_input(input)?;
        for layer in &device.layers {
            run.layer(layer, None)?;
        }
        run.mark_categories(&mut row_flags)?;
        accesses = run.accesses()?;
        run.set_counting(false);
    }

    let flags = gpu.download(&*row_flags)?;
    let output = if spec.keep_output {
        let exported = run.export_rows()?;
        let values = gpu.download(&*exported.y)?;
        let mut dense = vec![0.0f32; rows_count * n];
        for (j, &row) in exported.ids.iter().enumerate() {
            let original = network.to_original(&values[j * n..(j + 1) * n]);
            dense[row as usize * n..(row as usize + 1) * n].copy_from_slice(&original);
        }
        Some(dense)
    } else {
        None
    };
    let grouped = network.layers.iter().filter(|l| l.is_grouped()).count();
    // The options themselves are the caller's; these are what the run found or used.
    let details = vec![
        ("row_major_layers".into(), row_major.to_string()),
        (
            "grouped_layers".into(),
            format!("{grouped} of {}", layers.len()),
        ),
        ("preprocessing_ms".into(), format!("{prepare_ms:.1}")),
        ("cache".into(), format!("{cache_use:?}").to_lowercase()),
    ];
    let mut details = details;
    if let Some(glare) = &options.glare {
        details.push(("glare_segment".into(), glare.segment.to_string()));
    }
    Ok(GpuInference {
        categories: rows::categories_from_flags(&flags),
        output,
        infer_ms,
        total_ms: wall.elapsed().as_secs_f64() * 1e3,
        details,
        stages,
        layer_ms,
        accesses,
    })
}

/// Per-stage and per-layer times from a profiled run's timeline (labels `layer`,
/// `transpose`, `delete`, `categories`).
fn breakdown(intervals: &[(String, f64)], row_major: usize) -> (Vec<(String, f64)>, Vec<f64>) {
    let mut layer_ms = Vec::new();
    let (mut row_ms, mut transpose_ms, mut column_ms, mut delete_ms, mut categories_ms) =
        (0.0, 0.0, 0.0, 0.0, 0.0);
    for (label, ms) in intervals {
        match label.as_str() {
            "layer" => {
                if layer_ms.len() < row_major {
                    row_ms += ms;
                } else {
                    column_ms += ms;
                }
                layer_ms.push(*ms);
            }
            "transpose" => transpose_ms += ms,
            "delete" => delete_ms += ms,
            _ => categories_ms += ms,
        }
    }
    let stages = vec![
        ("row-major layers".to_string(), row_ms),
        ("transpose".to_string(), transpose_ms),
        ("neuron-major layers".to_string(), column_ms),
        ("delete dead rows".to_string(), delete_ms),
        ("categories".to_string(), categories_ms),
    ];
    (stages, layer_ms)
}
