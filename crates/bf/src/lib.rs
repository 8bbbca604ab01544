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

use spdnn_cuda::rows::{self, GpuInference, PingPong, RowList, RunSpec, grid_for};
use spdnn_cuda::slab_weights::{DeviceSlabWeights, Residency, SlabProblem};
use spdnn_cuda::{
    CudaError, CudaFunction, CudaViewMut, DeviceBuffer, DriverResultExt, EventTimer, Gpu,
    KernelSource, LaunchConfig, PushKernelArg,
};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_glare::{Census, Glare, Recorder, model};

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
    /// Run the GLARE variant of the layer kernel (units of `segment` neurons of a row).
    pub glare: Option<Glare>,
}

/// BF's per-layer kernels.
pub struct BfKernels {
    layer: CudaFunction,
    layer_glare: CudaFunction,
    layer_glare_census: CudaFunction,
    compact: CudaFunction,
    all_rows: CudaFunction,
}

impl BfKernels {
    /// Compiles (or loads from the PTX cache) bf.cu.
    pub fn load(gpu: &Gpu) -> Result<Self, CudaError> {
        Ok(Self {
            layer: gpu.function(&BF, "bf_layer")?,
            layer_glare: gpu.function(&BF, "bf_layer_glare")?,
            layer_glare_census: gpu.function(&BF, "bf_layer_glare_census")?,
            compact: gpu.function(&BF, "bf_compact_rows")?,
            all_rows: gpu.function(&rows::ROWS, "spdnn_all_rows")?,
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
    /// The GLARE recorders, when the layer runs with them.
    pub glare: Option<GlareStep<'b>>,
}

/// The recorders of one BF layer with GLARE: one flag per unit of `2^shift` neurons of a
/// row, `row_units` per row.
pub struct GlareStep<'b> {
    /// Flags of the input activations.
    pub in_flags: &'b DeviceBuffer<u8>,
    /// Flags of the output activations (written for every listed row).
    pub out_flags: &'b mut DeviceBuffer<u8>,
    /// `log2` of the unit length.
    pub shift: u32,
    /// Units per row.
    pub row_units: u32,
    /// The layer's census counters; counted only when `counting`.
    pub census: CudaViewMut<'b, u64>,
    /// Run the census variant.
    pub counting: bool,
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
    let kernel = match &step.glare {
        None => &kernels.layer,
        Some(g) if g.counting => &kernels.layer_glare_census,
        Some(_) => &kernels.layer_glare,
    };
    let mut launch = stream.launch_builder(kernel);
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
    let mut glare = step.glare;
    if let Some(g) = glare.as_mut() {
        launch
            .arg(&**g.in_flags)
            .arg(&mut **g.out_flags)
            .arg(&g.shift)
            .arg(&g.row_units)
            .arg(&mut g.census);
    }
    // Launch: grid (rows; blocks past the active count exit), block 256, shared slab_width floats (+ 64 static bytes with GLARE).
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
/// `spec.repetitions` timed runs; with GLARE and a census, one more run counts the
/// accesses of every layer.
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
        weights,
    } = SlabProblem::prepare(
        gpu,
        layers,
        input,
        bias,
        upper,
        options.slab_width,
        options.residency,
    )?;
    let shape = SlabShape {
        n,
        slab_width,
        slabs: num_slabs,
        bias,
        upper,
    };
    let glare = match &options.glare {
        Some(g) => Some(BfGlare::new(gpu, g, &shape, rows_count, layers.len())?),
        None => None,
    };
    let mut run = Run {
        gpu,
        kernels: BfKernels::load(gpu)?,
        mark: gpu.function(&rows::ROWS, "spdnn_mark_rows")?,
        weights,
        shape,
        batch: BfBatch::new(gpu, rows_count, n)?,
        row_flags: gpu.alloc_zeros::<u8>(rows_count)?,
        glare,
    };
    let mut timer = gpu.timer()?;
    let mut infer_ms = Vec::new();
    for repetition in 0..spec.warmup + spec.repetitions.max(1) {
        let ms = run.pass(input, Some(&mut timer), false)?;
        if repetition >= spec.warmup {
            infer_ms.extend(ms);
        }
    }
    let mut accesses = Vec::new();
    if let Some(g) = &run.glare
        && g.settings.census
    {
        run.pass(input, None, true)?;
        accesses = run
            .glare
            .as_ref()
            .map_or(Ok(Vec::new()), |g| g.census.read(gpu))?;
    }
    run.fill_recorded_units()?;

    let mut details = vec![
        ("slab_width".into(), slab_width.to_string()),
        ("slabs".into(), num_slabs.to_string()),
        (
            "weights".into(),
            if run.weights.is_resident() {
                "resident"
            } else {
                "streamed"
            }
            .into(),
        ),
    ];
    if let Some(g) = &run.glare {
        details.push(("glare_segment".into(), g.settings.segment.to_string()));
    }
    Ok(GpuInference {
        details,
        accesses,
        ..rows::finish(gpu, &run.row_flags, run.batch.y(), n, spec, infer_ms, wall)?
    })
}

/// BF's GLARE state: the recorders (rows × units) and the census counters.
struct BfGlare {
    settings: Glare,
    recorder: Recorder,
    census: Census,
    shift: u32,
    row_units: u32,
}

impl BfGlare {
    fn new(
        gpu: &Gpu,
        settings: &Glare,
        shape: &SlabShape,
        rows: usize,
        layers: usize,
    ) -> Result<Self, CudaError> {
        let shift = settings.checked_shift(
            model::Kernel::Bf,
            &model::Shape {
                neurons: shape.n,
                slab_width: shape.slab_width,
                first_layer: 0,
            },
        )?;
        let row_units = shape.n.div_ceil(settings.segment);
        Ok(Self {
            settings: *settings,
            recorder: Recorder::new(gpu, rows * row_units, 0)?,
            census: Census::new(gpu, layers)?,
            shift,
            row_units: row_units as u32,
        })
    }
}

/// Everything one BF run keeps on the device.
struct Run<'g> {
    gpu: &'g Gpu,
    kernels: BfKernels,
    mark: CudaFunction,
    weights: DeviceSlabWeights,
    shape: SlabShape,
    batch: BfBatch,
    row_flags: DeviceBuffer<u8>,
    glare: Option<BfGlare>,
}

impl Run<'_> {
    /// Loads `input` (untimed), runs every layer and flags the categories; the time of
    /// the layers and the flags when a timer is given. `counting` runs the census kernels.
    fn pass(
        &mut self,
        input: &Csr,
        timer: Option<&mut EventTimer>,
        counting: bool,
    ) -> Result<Option<f64>, CudaError> {
        let gpu = self.gpu;
        let stream = gpu.stream().clone();
        self.batch.load(gpu, &self.kernels, input)?;
        if let Some(g) = self.glare.as_mut() {
            g.recorder.clear(gpu)?;
            if counting {
                g.census.clear(gpu)?;
            }
        }

        let mut timer = timer;
        if let Some(t) = timer.as_deref_mut() {
            t.start(&stream)?;
        }
        for layer in 0..self.weights.layers() {
            let glare = self.glare.as_mut().map(|g| {
                let (in_flags, out_flags) = g.recorder.flags.split();
                GlareStep {
                    in_flags,
                    out_flags,
                    shift: g.shift,
                    row_units: g.row_units,
                    census: g.census.layer(layer),
                    counting,
                }
            });
            self.batch.layer(
                gpu,
                &self.kernels,
                &mut self.weights,
                layer,
                &self.shape,
                glare,
            )?;
            if let Some(g) = self.glare.as_mut() {
                g.recorder.flags.swap();
            }
        }
        // Categories: flag the rows of the last list.
        stream
            .memset_zeros(&mut *self.row_flags)
            .context("clearing the row flags")?;
        let list = self.batch.lists.current();
        let mut mark = stream.launch_builder(&self.mark);
        mark.arg(&*list.rows)
            .arg(&*list.count)
            .arg(&mut *self.row_flags);
        // Launch: grid ceil(rows / 256), block 256, no shared memory.
        unsafe { mark.launch(list_config(self.batch.rows)) }
            .context("launching spdnn_mark_rows")?;
        match timer {
            Some(t) => Ok(Some(t.stop(&stream)?)),
            None => Ok(None),
        }
    }

    /// With GLARE, writes the bound into the units the last layer recorded instead of
    /// writing, so the activations can be read back.
    fn fill_recorded_units(&mut self) -> Result<(), CudaError> {
        let Some(g) = &self.glare else {
            return Ok(());
        };
        let batch = &mut self.batch;
        g.recorder.fill_listed_rows(
            self.gpu,
            batch.y.current_mut(),
            batch.lists.current(),
            batch.rows,
            self.shape.n,
            (g.shift, g.row_units as usize),
            self.shape.upper,
        )
    }
}

/// One batch of rows in BF's layer chain, on the device: the activations and the list of
/// non-empty rows (each the current one and the next).
pub struct BfBatch {
    y: PingPong<DeviceBuffer<f32>>,
    lists: PingPong<RowList>,
    alive: DeviceBuffer<u8>,
    rows: usize,
}

impl BfBatch {
    /// Buffers for `rows` rows of `n` neurons.
    pub fn new(gpu: &Gpu, rows: usize, n: usize) -> Result<Self, CudaError> {
        Ok(Self {
            y: PingPong::new(gpu.alloc_zeros(rows * n)?, gpu.alloc_zeros(rows * n)?),
            lists: PingPong::new(RowList::new(gpu, rows)?, RowList::new(gpu, rows)?),
            alive: gpu.alloc_zeros(rows.max(1))?,
            rows,
        })
    }

    /// Loads `input` (at most the batch's rows): zeroed activations holding it, every
    /// row listed.
    pub fn load(&mut self, gpu: &Gpu, kernels: &BfKernels, input: &Csr) -> Result<(), CudaError> {
        if input.nrows() > self.rows {
            return Err(CudaError::InvalidArgument(format!(
                "{} rows do not fit a batch of {}",
                input.nrows(),
                self.rows
            )));
        }
        let stream = gpu.stream();
        self.y.reset();
        self.lists.reset();
        stream
            .memset_zeros(&mut **self.y.current_mut())
            .context("clearing the activations")?;
        rows::scatter_rows(gpu, input, self.y.current_mut())?;
        let rows_u32 = input.nrows() as u32;
        let list = self.lists.current_mut();
        let mut start_list = stream.launch_builder(&kernels.all_rows);
        start_list
            .arg(&mut *list.rows)
            .arg(&mut *list.count)
            .arg(&rows_u32);
        // Launch: grid ceil(rows / 256), block 256, no shared memory.
        unsafe { start_list.launch(list_config(input.nrows())) }
            .context("launching spdnn_all_rows")?;
        Ok(())
    }

    /// Enqueues `layer` on the listed rows (with `glare`'s recorders when given); its
    /// outputs and list become current.
    pub fn layer(
        &mut self,
        gpu: &Gpu,
        kernels: &BfKernels,
        weights: &mut DeviceSlabWeights,
        layer: usize,
        shape: &SlabShape,
        glare: Option<GlareStep<'_>>,
    ) -> Result<(), CudaError> {
        let (y_in, y_out) = self.y.split();
        let (list_in, list_out) = self.lists.split();
        enqueue_layer(
            gpu,
            kernels,
            weights,
            layer,
            LayerStep {
                y_in,
                y_out,
                list_in: &list_in.rows,
                count_in: &list_in.count,
                list_out: &mut list_out.rows,
                count_out: &mut list_out.count,
                alive: &mut self.alive,
                capacity: self.rows,
                glare,
            },
            shape,
        )?;
        self.y.swap();
        self.lists.swap();
        Ok(())
    }

    /// The activations after the last layer run.
    pub fn y(&self) -> &DeviceBuffer<f32> {
        self.y.current()
    }

    /// The non-empty rows after the last layer run, ascending (waits for the device).
    pub fn live_rows(&self, gpu: &Gpu) -> Result<Vec<u32>, CudaError> {
        let current = self.lists.current();
        let count = gpu.download(&*current.count)?[0] as usize;
        let list = gpu.download(&*current.rows)?;
        let mut rows: Vec<u32> = list[..count.min(list.len())].to_vec();
        rows.sort_unstable();
        Ok(rows)
    }
}

/// Launch shape of the list kernels over `rows`.
fn list_config(rows: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid_for(rows, LIST_THREADS as usize), 1, 1),
        block_dim: (LIST_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}
