//! BF-2019 (Bisson & Fatica, "A GPU Implementation of the Sparse Deep Neural Network
//! Graph Challenge", HPEC 2019): the weights of each layer as CSR in column slabs sized to
//! shared memory, dense row-major activations, and work only on the list of non-empty rows.
//!
//! Per layer two kernels run (`kernels-cu/bf.cu`): `bf_layer`, one block per non-empty row,
//! accumulates `Σ_j y_j·W_j*` slab by slab in shared memory, adds the bias and clips;
//! `bf_compact_rows` lists the rows that stayed non-empty for the next layer. The row count
//! stays on the device, so the host never waits between layers. Weights are resident when
//! they fit, otherwise the next layer is copied from pinned host memory on a second stream
//! into one of two device buffers while the current layer runs.

use std::time::Instant;

use spdnn_cuda::rows::{self, GpuInference, RunSpec};
use spdnn_cuda::slab_weights::{DeviceSlabWeights, Residency, SlabProblem};
use spdnn_cuda::{
    CudaError, CudaFunction, DeviceBuffer, DriverResultExt, Gpu, KernelSource, LaunchConfig,
    PushKernelArg,
};
use spdnn_formats::Csr;

/// `kernels-cu/bf.cu`.
pub const BF: KernelSource = KernelSource {
    name: "bf.cu",
    source: include_str!("../../../kernels-cu/bf.cu"),
};

/// Threads per block of `bf_layer`.
const LAYER_THREADS: u32 = 256;
/// Threads per block of the compaction and marking kernels.
const LIST_THREADS: u32 = 256;

/// Tuning of a BF run.
#[derive(Debug, Clone, Copy, Default)]
pub struct BfOptions {
    /// Columns per slab (default: all N when they fit in 48 KiB of shared memory).
    pub slab_width: Option<usize>,
    /// Resident or streamed weights (default: resident when they fit).
    pub residency: Residency,
}

/// BF's two per-layer kernels.
pub struct BfKernels {
    layer: CudaFunction,
    compact: CudaFunction,
}

impl BfKernels {
    /// Compiles (or loads from the PTX cache) bf.cu.
    pub fn load(gpu: &Gpu) -> Result<Self, CudaError> {
        Ok(Self {
            layer: gpu.function(&BF, "bf_layer")?,
            compact: gpu.function(&BF, "bf_compact_rows")?,
        })
    }
}

/// The shape of the slab weights and the activation.
#[derive(Debug, Clone, Copy)]
pub struct SlabShape {
    /// N.
    pub n: usize,
    /// Columns per slab.
    pub slab_width: usize,
    /// Number of slabs.
    pub slabs: usize,
    /// Bias.
    pub bias: f32,
    /// Upper bound.
    pub upper: f32,
}

/// The buffers of one BF layer.
pub struct LayerStep<'b> {
    /// Input activations, rows × N row-major.
    pub y_in: &'b DeviceBuffer<f32>,
    /// Output activations (only listed rows are written).
    pub y_out: &'b mut DeviceBuffer<f32>,
    /// The non-empty rows.
    pub list_in: &'b DeviceBuffer<u32>,
    /// Their count (on the device).
    pub count_in: &'b DeviceBuffer<u32>,
    /// Receives the rows that stay non-empty.
    pub list_out: &'b mut DeviceBuffer<u32>,
    /// Receives their count.
    pub count_out: &'b mut DeviceBuffer<u32>,
    /// Scratch: one flag per list position.
    pub alive: &'b mut DeviceBuffer<u8>,
    /// Most rows a list holds (sizes the grids).
    pub capacity: usize,
}

/// Enqueues one BF layer (`bf_layer` then `bf_compact_rows`) on the listed rows; the next
/// list and its count stay on the device.
pub fn enqueue_layer(
    gpu: &Gpu,
    kernels: &BfKernels,
    weights: &mut DeviceSlabWeights,
    layer: usize,
    step: LayerStep<'_>,
    shape: &SlabShape,
) -> Result<(), CudaError> {
    let stream = gpu.stream();
    let (n_u32, width_u32, slabs_u32, capacity_u32) = (
        shape.n as u32,
        shape.slab_width as u32,
        shape.slabs as u32,
        step.capacity as u32,
    );
    let views = weights.layer(layer)?;
    let mut launch = stream.launch_builder(&kernels.layer);
    launch
        .arg(&**step.y_in)
        .arg(&mut **step.y_out)
        .arg(&**step.list_in)
        .arg(&**step.count_in)
        .arg(&mut **step.alive)
        .arg(&views.offsets)
        .arg(&views.cols)
        .arg(&views.values)
        .arg(&n_u32)
        .arg(&width_u32)
        .arg(&slabs_u32)
        .arg(&shape.bias)
        .arg(&shape.upper);
    // Launch: grid (rows; blocks past the active count exit), block 256, shared slab_width floats.
    let config = LaunchConfig {
        grid_dim: (capacity_u32, 1, 1),
        block_dim: (LAYER_THREADS, 1, 1),
        shared_mem_bytes: (shape.slab_width * 4) as u32,
    };
    unsafe { launch.launch(config) }.context("launching bf_layer")?;
    stream
        .memset_zeros(&mut **step.count_out)
        .context("clearing the row count")?;
    let mut compact = stream.launch_builder(&kernels.compact);
    compact
        .arg(&**step.list_in)
        .arg(&**step.count_in)
        .arg(&**step.alive)
        .arg(&mut **step.list_out)
        .arg(&mut **step.count_out);
    // Launch: grid ceil(rows / 256), block 256, no shared memory.
    let config = LaunchConfig {
        grid_dim: (capacity_u32.div_ceil(LIST_THREADS), 1, 1),
        block_dim: (LIST_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    unsafe { compact.launch(config) }.context("launching bf_compact_rows")?;
    Ok(())
}

/// Runs BF on `input` (rows × N) through `layers`, `spec.warmup` untimed and
/// `spec.repetitions` timed runs.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &BfOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    let wall = Instant::now();
    let SlabProblem {
        neurons: n,
        rows: rows_count,
        slab_width,
        slabs: num_slabs,
        mut weights,
    } = SlabProblem::prepare(
        gpu,
        layers,
        input,
        bias,
        upper,
        options.slab_width,
        options.residency,
    )?;

    let kernels = BfKernels::load(gpu)?;
    let shape = SlabShape {
        n,
        slab_width,
        slabs: num_slabs,
        bias,
        upper,
    };
    let all_rows_kernel = gpu.function(&rows::ROWS, "spdnn_all_rows")?;
    let mark_kernel = gpu.function(&rows::ROWS, "spdnn_mark_rows")?;

    let mut y_a = gpu.alloc_zeros::<f32>(rows_count * n)?;
    let mut y_b = gpu.alloc_zeros::<f32>(rows_count * n)?;
    let mut rows_a = gpu.alloc_zeros::<u32>(rows_count)?;
    let mut rows_b = gpu.alloc_zeros::<u32>(rows_count)?;
    let mut count_a = gpu.alloc_zeros::<u32>(1)?;
    let mut count_b = gpu.alloc_zeros::<u32>(1)?;
    let mut alive = gpu.alloc_zeros::<u8>(rows_count)?;
    let mut row_flags = gpu.alloc_zeros::<u8>(rows_count)?;
    let stream = gpu.stream().clone();
    let rows_u32 = rows_count as u32;
    let list_grid = (rows_count as u32).div_ceil(LIST_THREADS);
    let mut timer = gpu.timer()?;
    let mut infer_ms = Vec::new();

    for run in 0..spec.warmup + spec.repetitions.max(1) {
        // Untimed: the input into buffer A, every row in the first list.
        stream
            .memset_zeros(&mut *y_a)
            .context("clearing the activations")?;
        rows::scatter_rows(gpu, input, &mut y_a)?;
        let mut start_list = stream.launch_builder(&all_rows_kernel);
        start_list
            .arg(&mut *rows_a)
            .arg(&mut *count_a)
            .arg(&rows_u32);
        // Launch: grid ceil(rows / 256), block 256, no shared memory.
        unsafe {
            start_list.launch(LaunchConfig {
                grid_dim: (list_grid, 1, 1),
                block_dim: (LIST_THREADS, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .context("launching spdnn_all_rows")?;

        timer.start(&stream)?;
        for layer in 0..layers.len() {
            let even = layer.is_multiple_of(2);
            let (y_in, y_out) = if even {
                (&y_a, &mut y_b)
            } else {
                (&y_b, &mut y_a)
            };
            let (list_in, list_out) = if even {
                (&rows_a, &mut rows_b)
            } else {
                (&rows_b, &mut rows_a)
            };
            let (count_in, count_out) = if even {
                (&count_a, &mut count_b)
            } else {
                (&count_b, &mut count_a)
            };
            enqueue_layer(
                gpu,
                &kernels,
                &mut weights,
                layer,
                LayerStep {
                    y_in,
                    y_out,
                    list_in,
                    count_in,
                    list_out,
                    count_out,
                    alive: &mut alive,
                    capacity: rows_count,
                },
                &shape,
            )?;
        }
        // Categories: flag the rows of the last list.
        let last_even = layers.len().is_multiple_of(2);
        let (final_list, final_count) = if last_even {
            (&rows_a, &count_a)
        } else {
            (&rows_b, &count_b)
        };
        stream
            .memset_zeros(&mut *row_flags)
            .context("clearing the row flags")?;
        let mut mark = stream.launch_builder(&mark_kernel);
        mark.arg(&**final_list)
            .arg(&**final_count)
            .arg(&mut *row_flags);
        // Launch: grid ceil(rows / 256), block 256, no shared memory.
        let config = LaunchConfig {
            grid_dim: (list_grid, 1, 1),
            block_dim: (LIST_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { mark.launch(config) }.context("launching spdnn_mark_rows")?;
        let ms = timer.stop(&stream)?;
        if run >= spec.warmup {
            infer_ms.push(ms);
        }
    }

    let final_y = if layers.len().is_multiple_of(2) {
        &y_a
    } else {
        &y_b
    };
    let details = vec![
        ("slab_width".into(), slab_width.to_string()),
        ("slabs".into(), num_slabs.to_string()),
        (
            "weights".into(),
            if weights.is_resident() {
                "resident"
            } else {
                "streamed"
            }
            .into(),
        ),
    ];
    Ok(GpuInference {
        details,
        ..rows::finish(gpu, &row_flags, final_y, n, spec, infer_ms, wall)?
    })
}
