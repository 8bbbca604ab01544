//! BF-2019 (Bisson & Fatica, "A GPU Implementation of the Sparse Deep Neural Network
//! Graph Challenge", HPEC 2019): the weights of each layer as CSR in column slabs sized to
//! shared memory, dense row-major activations, and work only on the list of non-empty rows.
//!
//! Per layer two kernels run (`kernels-cu/bf.cu`): `bf_layer`, one block per non-empty row
//! and output slab, accumulates `Σ_j y_j·W_j*` over its slab in shared memory, adds the
//! bias and clips; `bf_compact_rows` lists the rows that stayed non-empty for the next
//! layer. The row count stays on the device, so the host never waits between layers.
//! Weights are resident when they fit, otherwise the next layer is copied from pinned host
//! memory on a second stream into one of two device buffers while the current layer runs.
//!
//! Any chain of widths runs (`N_{l-1} × N_l` layers, as compression makes them): each
//! layer's slabs cut its own outputs, its input rows hold `N_{l-1}` values and its output
//! rows `N_l`; the activation buffers hold rows of the widest width.

use spdnn_cuda::memory::{MemoryModel, Streaming, WeightPlacement};
use spdnn_cuda::method::{self, DeviceRun, KernelMethod, LayerChain, MethodOptions, Probe};
use spdnn_cuda::rows::{self, GpuInference, PingPong, RowList, RunSpec};
use spdnn_cuda::slab_weights::{
    DEFAULT_SHARED_BYTES, DeviceSlabWeights, Residency, SlabLayout, SlabProblem, chosen_slab_width,
    packed_layer_bytes, slab_width_for,
};
use spdnn_cuda::{
    CudaError, CudaViewMut, DeviceBuffer, DriverResultExt, Gpu, Kernel, KernelDecl, KernelSource,
    PushKernelArg,
};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_glare::{AccessCounts, Census, Glare, GlareKernel, Recorder, model};

/// `kernels-cu/bf.cu`, compiled with glare.cuh's definitions.
pub const BF: KernelSource = KernelSource::new("bf.cu", include_str!("../../../kernels-cu/bf.cu"))
    .with_defines(&[spdnn_glare::DEFINES]);

/// Threads per block of the layer kernels.
const LAYER_THREADS: u32 = 256;
/// Threads per block of `bf_compact_rows`.
const LIST_THREADS: u32 = 256;

/// `bf_layer`: one block per list slot and output slab (grid = the list's capacity × the
/// layer's output slabs, [`layer_grid`]; blocks past the count exit); dynamic shared: one
/// float per column of the layer's widest slab (`min(slab width, N_out)`,
/// [`spdnn_cuda::slab_weights::SlabLayer::shared`]).
pub const LAYER: KernelDecl = KernelDecl::new(&BF, "bf_layer", LAYER_THREADS).with_shared_array(4);
/// `bf_layer_neurons`: [`LAYER`] with a bias per output neuron.
pub const LAYER_NEURONS: KernelDecl =
    KernelDecl::new(&BF, "bf_layer_neurons", LAYER_THREADS).with_shared_array(4);
/// `bf_layer_glare`: [`LAYER`] with the GLARE recorder, a block per list slot taking every
/// slab in turn (a recorder unit may span two slabs).
pub const LAYER_GLARE: KernelDecl =
    KernelDecl::new(&BF, "bf_layer_glare", LAYER_THREADS).with_shared_array(4);
/// `bf_layer_glare_census`: [`LAYER_GLARE`] counting its accesses.
pub const LAYER_GLARE_CENSUS: KernelDecl =
    KernelDecl::new(&BF, "bf_layer_glare_census", LAYER_THREADS).with_shared_array(4);
/// `bf_compact_rows`: one thread per list slot (grid = ceil(capacity / block)).
pub const COMPACT_ROWS: KernelDecl = KernelDecl::new(&BF, "bf_compact_rows", LIST_THREADS);

/// Every kernel this crate declares (`bf.cu`), checked against the source by the
/// kernel-table test.
pub const KERNELS: &[KernelDecl] = &[
    LAYER,
    LAYER_NEURONS,
    LAYER_GLARE,
    LAYER_GLARE_CENSUS,
    COMPACT_ROWS,
];

/// Tuning of a BF run.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct BfOptions {
    /// Columns per slab (default: all of the widest layer's width when they fit in 48 KiB
    /// of shared memory).
    pub slab_width: Option<usize>,
    /// Resident or streamed weights (default: resident when they fit).
    pub residency: Residency,
    /// How streamed weights stream: layers a batch, buffer bytes, online tuning (default:
    /// one layer a batch, as BF-2019).
    pub streaming: Streaming,
    /// Run the GLARE variant of the layer kernel (units of `segment` neurons of a row).
    #[serde(skip)]
    pub glare: Option<Glare>,
}

/// BF's per-layer kernels.
pub struct BfKernels {
    layer: Kernel,
    layer_neurons: Kernel,
    layer_glare: Kernel,
    layer_glare_census: Kernel,
    compact: Kernel,
    all_rows: Kernel,
}

/// Every kernel [`BfKernels::load`] loads, the layer kernels first.
pub const BF_KERNELS: [&KernelDecl; 6] = [
    &LAYER_GLARE_CENSUS,
    &LAYER_GLARE,
    &LAYER_NEURONS,
    &LAYER,
    &COMPACT_ROWS,
    &rows::ALL_ROWS,
];

impl BfKernels {
    /// Loads BF's kernels (bf.cu's and rows.cu's), each compiled alone, side by side on
    /// worker threads ([`BF_KERNELS`]).
    pub fn load(gpu: &Gpu) -> Result<Self, CudaError> {
        gpu.compile_ahead(BF_KERNELS);
        Ok(Self {
            layer: gpu.kernel(&LAYER)?,
            layer_neurons: gpu.kernel(&LAYER_NEURONS)?,
            layer_glare: gpu.kernel(&LAYER_GLARE)?,
            layer_glare_census: gpu.kernel(&LAYER_GLARE_CENSUS)?,
            compact: gpu.kernel(&COMPACT_ROWS)?,
            all_rows: gpu.kernel(&rows::ALL_ROWS)?,
        })
    }
}

/// The shape of the slab weights and the activation: the chain's widths and slabs, the
/// bias and the bound.
#[derive(Debug, Clone)]
pub struct SlabShape {
    /// The widths `N_0, …, N_L` and their slabs.
    pub layout: SlabLayout,
    /// Bias.
    pub bias: f32,
    /// Upper bound.
    pub upper: f32,
}

/// The buffers of one BF layer.
pub struct LayerStep<'b> {
    /// Input activations, rows × `N_in` row-major.
    pub y_in: &'b DeviceBuffer<f32>,
    /// Output activations, rows × `N_out` (only listed rows are written).
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
    /// A bias per output neuron (`N_out` values) instead of [`SlabShape::bias`]; not with
    /// GLARE.
    pub biases: Option<&'b DeviceBuffer<f32>>,
}

/// The recorders of one BF layer with GLARE: one flag per unit of `2^shift` neurons of a
/// row, `in_units` per input row and `out_units` per output row.
pub struct GlareStep<'b> {
    /// Flags of the input activations, rows × `in_units`.
    pub in_flags: &'b DeviceBuffer<u8>,
    /// Flags of the output activations, rows × `out_units` (written for every listed row).
    pub out_flags: &'b mut DeviceBuffer<u8>,
    /// `log2` of the unit length.
    pub shift: u32,
    /// Units per input row, `ceil(N_in / 2^shift)`.
    pub in_units: u32,
    /// Units per output row, `ceil(N_out / 2^shift)`.
    pub out_units: u32,
    /// The layer's census counters; counted only when `counting`.
    pub census: CudaViewMut<'b, u64>,
    /// Run the census variant.
    pub counting: bool,
}

/// The grid of the layer kernels: a block per list slot and output slab, or (GLARE, whose
/// recorder units may span two slabs) a block per list slot taking the slabs in turn.
pub fn layer_grid(capacity: u32, slabs_out: u32, glare: bool) -> (u32, u32) {
    (capacity, if glare { 1 } else { slabs_out.max(1) })
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
    let widths = shape.layout.checked_layer(layer)?;
    let (n_in, n_out, width_u32, slabs_u32, capacity_u32) = (
        widths.n_in as u32,
        widths.n_out as u32,
        shape.layout.slab_width() as u32,
        widths.slabs_out as u32,
        step.capacity as u32,
    );
    // The online tuning reads the rows this layer reads against those the layer before
    // read (waiting for the device, once a weight batch).
    let ratio = if weights.tunes_at(layer) {
        let now = gpu.download(&**step.count_in)?[0] as f64;
        let before = gpu.download(&**step.count_out)?[0] as f64;
        Some(if before > 0.0 { now / before } else { 1.0 })
    } else {
        None
    };
    let views = weights.layer_tuned(layer, ratio)?;
    let kernel = match (&step.glare, step.biases) {
        (None, None) => &kernels.layer,
        (None, Some(_)) => &kernels.layer_neurons,
        (Some(_), Some(_)) => {
            return Err(CudaError::InvalidArgument(
                "bf+glare takes one bias for all neurons, not a bias per neuron".into(),
            ));
        }
        (Some(g), None) if g.counting => &kernels.layer_glare_census,
        (Some(_), None) => &kernels.layer_glare,
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
        .arg(&n_in)
        .arg(&n_out)
        .arg(&width_u32)
        .arg(&slabs_u32)
        .arg(&shape.bias)
        .arg(&shape.upper);
    if let Some(biases) = step.biases {
        launch.arg(&**biases);
    }
    let grid = layer_grid(capacity_u32, slabs_u32, step.glare.is_some());
    let mut glare = step.glare;
    if let Some(g) = glare.as_mut() {
        launch
            .arg(&**g.in_flags)
            .arg(&mut **g.out_flags)
            .arg(&g.shift)
            .arg(&g.in_units)
            .arg(&g.out_units)
            .arg(&mut g.census);
    }
    let config = kernel.config_shared(grid, widths.shared)?;
    unsafe { launch.launch(config) }.context("launching bf_layer")?;
    stream
        .memset_zeros(&mut **step.count_out)
        .context("clearing the row count")?;
    let mut compact = stream.launch_builder(&kernels.compact);
    compact
        .arg(&**step.list_in)
        .arg(&**step.count_in)
        .arg(&mut **step.alive)
        .arg(&mut **step.list_out)
        .arg(&mut **step.count_out);
    let config = kernels
        .compact
        .config(capacity_u32.div_ceil(kernels.compact.decl().threads()))?;
    unsafe { compact.launch(config) }.context("launching bf_compact_rows")?;
    Ok(())
}

/// BF-2019 as a method of the registry.
pub struct Bf;

impl MethodOptions for BfOptions {
    fn validate(&self) -> Result<(), String> {
        if self.slab_width == Some(0) {
            return Err("the slab width must be at least 1 column".into());
        }
        Ok(())
    }
}

impl KernelMethod for Bf {
    const NAME: &'static str = "bf";
    const DESCRIPTION: &'static str =
        "BF-2019: column-slab CSR, non-empty row lists, double-buffered weights";
    type Options = BfOptions;
    const ACCEPTS_PER_NEURON_BIAS: bool = true;

    /// Per row: two activation buffers of the widest rows, two row lists, the `alive` and
    /// category flags (and GLARE's two recorders); per layer: the packed slabs; fixed: the
    /// two counts (and GLARE's census). Streams.
    fn memory(chain: &LayerChain<'_>, options: &BfOptions) -> MemoryModel {
        let widest = spdnn_cuda::memory::widest(chain);
        let slab_width = chosen_slab_width(chain.layers, options.slab_width);
        let glare = options.glare.map_or((0, 0), |g| {
            let units = widest.div_ceil(g.segment.max(1));
            // Recorder::new(rows · units, 0): per row its two flag arrays.
            (
                2 * units,
                Recorder::bytes(1, 0) - 2 + Census::bytes(chain.layers.len()),
            )
        });
        // The batch's buffers and the category flag a row.
        let (per_row, fixed) =
            spdnn_cuda::memory::linear(|rows| BfBatch::bytes(rows, widest) + rows);
        MemoryModel {
            per_row: per_row + glare.0,
            layers: chain.with_bias_bytes(packed_layer_bytes(chain.layers, slab_width)),
            fixed: fixed + glare.1,
            streaming: true,
            exact: true,
            binary_input: None,
        }
    }

    fn place_weights(options: &BfOptions, placement: &WeightPlacement) -> Option<BfOptions> {
        Some(match placement {
            WeightPlacement::Resident => BfOptions {
                residency: Residency::Resident,
                ..*options
            },
            WeightPlacement::Streamed(streaming) => BfOptions {
                residency: Residency::Streamed,
                streaming: *streaming,
                ..*options
            },
        })
    }

    fn prepare<'g>(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &BfOptions,
    ) -> Result<Box<dyn DeviceRun + 'g>, CudaError> {
        // The kernels compile on worker threads while the weights are laid out.
        gpu.compile_ahead(BF_KERNELS);
        let SlabProblem {
            layout,
            rows: rows_count,
            weights,
        } = SlabProblem::prepare_streaming(
            gpu,
            chain,
            rows,
            options.slab_width,
            options.residency,
            &options.streaming,
        )?;
        let widest = layout.max_width();
        let shape = SlabShape {
            layout,
            bias: chain.bias,
            upper: chain.upper,
        };
        if options.glare.is_some() && chain.biases.is_some() {
            return Err(CudaError::InvalidArgument(
                "bf+glare takes one bias for all neurons, and this network has a bias per \
                 neuron: run bf without GLARE"
                    .into(),
            ));
        }
        let biases = match chain.biases {
            Some(all) => Some(
                all.iter()
                    .map(|b| gpu.upload(b))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            None => None,
        };
        let glare = match &options.glare {
            Some(g) => Some(BfGlare::new(
                gpu,
                g,
                &shape,
                rows_count,
                chain.layers.len(),
            )?),
            None => None,
        };
        Ok(Box::new(Run {
            gpu,
            kernels: BfKernels::load(gpu)?,
            mark: gpu.kernel(&rows::MARK_ROWS)?,
            weights,
            shape,
            batch: BfBatch::new(gpu, rows_count, widest)?,
            row_flags: gpu.alloc_zeros::<u8>(rows_count)?,
            loaded: 0,
            glare,
            counting: false,
            biases,
        }))
    }
}

/// GLARE on BF: the unit is `m` neurons of a row, `m` at least the slab width (a slab
/// then overlaps at most two units) and at most [`model::MAX_ROW_UNITS`] units a row.
/// On a chain of several widths each layer's input rows have `ceil(N_in / m)` units and
/// its output rows `ceil(N_out / m)`; `m` is checked against the widest width.
impl GlareKernel for Bf {
    const UNIT: &'static str = "row segments of m neurons all at the bound are neither read nor written (m from the access model)";

    fn candidates(shape: &model::Shape) -> Vec<usize> {
        model::row_unit_lengths(shape.slab_width.min(shape.neurons).max(1), shape.neurons)
    }

    /// `2n/m + n(1 − p_I^m) + n(1 − p_O^m)`.
    fn expected_accesses(
        shape: &model::Shape,
        m: usize,
        input: &model::LayerProfile,
        output: &model::LayerProfile,
    ) -> f64 {
        let n = shape.neurons as f64;
        let units = shape.neurons.div_ceil(m.max(1)) as f64;
        2.0 * units
            + n * model::not_at_bound(input.value_at_bound, m as f64)
            + n * model::not_at_bound(output.value_at_bound, m as f64)
    }

    fn shape(options: &BfOptions, neurons: usize) -> model::Shape {
        model::Shape {
            neurons,
            slab_width: options
                .slab_width
                .unwrap_or_else(|| slab_width_for(neurons, DEFAULT_SHARED_BYTES)),
            first_layer: 0,
        }
    }

    fn with_recorder(options: &BfOptions, glare: Glare) -> BfOptions {
        BfOptions {
            glare: Some(glare),
            ..*options
        }
    }
}

/// Runs BF on `input` (rows × `N_0`) through `layers` (`N_{l-1} × N_l`), `spec.warmup`
/// untimed and `spec.repetitions` timed runs, one profiled run for the per-layer times;
/// with GLARE and a census, one more run counts the accesses of every layer.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &BfOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<Bf>(
        gpu,
        &LayerChain::new(layers, bias, upper),
        input,
        options,
        spec,
    )
}

/// BF's GLARE state: the recorders (rows × units of the widest width) and the census
/// counters.
struct BfGlare {
    settings: Glare,
    recorder: Recorder,
    census: Census,
    shift: u32,
}

impl BfGlare {
    /// Checks the segment against the widest width of the chain (every width then has at
    /// most [`model::MAX_ROW_UNITS`] units, and each slab, at most the slab width and at
    /// most `N_out`, overlaps at most two).
    fn new(
        gpu: &Gpu,
        settings: &Glare,
        shape: &SlabShape,
        rows: usize,
        layers: usize,
    ) -> Result<Self, CudaError> {
        let widest = shape.layout.max_width();
        let shift = settings.checked_shift::<Bf>(&model::Shape {
            neurons: widest,
            slab_width: shape.layout.slab_width(),
            first_layer: 0,
        })?;
        Ok(Self {
            settings: *settings,
            recorder: Recorder::new(gpu, rows * widest.div_ceil(settings.segment), 0)?,
            census: Census::new(gpu, layers)?,
            shift,
        })
    }

    /// Units of a row of `width` values.
    fn units(&self, width: usize) -> usize {
        width.div_ceil(self.settings.segment)
    }
}

/// Everything one BF run keeps on the device.
struct Run<'g> {
    gpu: &'g Gpu,
    kernels: BfKernels,
    mark: Kernel,
    weights: DeviceSlabWeights,
    shape: SlabShape,
    batch: BfBatch,
    row_flags: DeviceBuffer<u8>,
    /// Rows of the loaded batch.
    loaded: usize,
    glare: Option<BfGlare>,
    /// Run the census kernels.
    counting: bool,
    /// Per-neuron biases of every layer (trained networks).
    biases: Option<Vec<DeviceBuffer<f32>>>,
}

impl DeviceRun for Run<'_> {
    fn load(&mut self, input: &Csr) -> Result<(), CudaError> {
        self.batch.load(self.gpu, &self.kernels, input)?;
        self.loaded = input.nrows();
        if let Some(g) = self.glare.as_mut() {
            g.recorder.clear(self.gpu)?;
        }
        Ok(())
    }

    /// Every layer, then the rows of the last list flagged as categories.
    fn run(&mut self, probe: &mut Probe) -> Result<(), CudaError> {
        let gpu = self.gpu;
        for layer in 0..self.weights.layers() {
            let counting = self.counting;
            let widths = self.shape.layout.checked_layer(layer)?;
            let glare = self.glare.as_mut().map(|g| {
                let (in_units, out_units) = (g.units(widths.n_in), g.units(widths.n_out));
                let (in_flags, out_flags) = g.recorder.flags.split();
                GlareStep {
                    in_flags,
                    out_flags,
                    shift: g.shift,
                    in_units: in_units as u32,
                    out_units: out_units as u32,
                    census: g.census.layer(layer),
                    counting,
                }
            });
            self.batch.layer_with_biases(
                gpu,
                &self.kernels,
                &mut self.weights,
                layer,
                &self.shape,
                glare,
                self.biases.as_ref().map(|b| &b[layer]),
            )?;
            if let Some(g) = self.glare.as_mut() {
                g.recorder.flags.swap();
            }
            probe.layer("layers")?;
        }
        self.batch
            .lists
            .current()
            .mark_flags(gpu, &self.mark, &mut self.row_flags, self.batch.rows)
    }

    fn row_flags(&mut self) -> Result<Vec<u8>, CudaError> {
        rows::download_row_flags(self.gpu, &self.row_flags, self.loaded)
    }

    fn output(&mut self) -> Result<Vec<f32>, CudaError> {
        self.fill_recorded_units()?;
        let flags = self.row_flags()?;
        rows::final_output(
            self.gpu,
            self.batch.y(),
            self.shape.layout.output_width(),
            &flags,
        )
    }

    fn start_census(&mut self) -> Result<bool, CudaError> {
        let Some(g) = self.glare.as_mut().filter(|g| g.settings.census) else {
            return Ok(false);
        };
        g.census.clear(self.gpu)?;
        self.counting = true;
        Ok(true)
    }

    fn finish_census(&mut self) -> Result<Vec<AccessCounts>, CudaError> {
        self.counting = false;
        self.glare
            .as_ref()
            .map_or(Ok(Vec::new()), |g| g.census.read(self.gpu))
    }

    fn details(&self) -> Vec<(String, String)> {
        let layout = &self.shape.layout;
        let mut details = vec![
            ("slab_width".into(), layout.slab_width().to_string()),
            ("slabs".into(), layout.max_slabs().to_string()),
            (
                "weights".into(),
                if self.weights.is_resident() {
                    "resident"
                } else {
                    "streamed"
                }
                .into(),
            ),
        ];
        if let Some(s) = self.weights.stream_stats() {
            details.push((
                "weight_batches".into(),
                format!(
                    "{} batches of {}..={} layers ({} tuned), buffers of {} bytes",
                    s.batches, s.min_layers, s.max_layers, s.tuned, s.buffer_bytes
                ),
            ));
        }
        if let Some(g) = &self.glare {
            details.push(("glare_segment".into(), g.settings.segment.to_string()));
        }
        details
    }
}

impl Run<'_> {
    /// With GLARE, writes the bound into the units the last layer recorded instead of
    /// writing, so the activations can be read back.
    fn fill_recorded_units(&mut self) -> Result<(), CudaError> {
        let Some(g) = &self.glare else {
            return Ok(());
        };
        let batch = &mut self.batch;
        let n = self.shape.layout.output_width();
        g.recorder.fill_listed_rows(
            self.gpu,
            batch.y.current_mut(),
            batch.lists.current(),
            batch.rows,
            n,
            (g.shift, g.units(n)),
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
    /// Most values a row holds (the widest width of the chain).
    capacity_width: usize,
    /// Values per row of the current activations (the input's, then each layer's output).
    width: usize,
}

impl BfBatch {
    /// Device bytes of [`Self::new`]`(gpu, rows, n)`: two activation buffers, two row
    /// lists and a flag per row.
    pub fn bytes(rows: usize, n: usize) -> usize {
        2 * 4 * rows * n + 2 * RowList::bytes(rows) + rows.max(1)
    }

    /// Buffers for `rows` rows of at most `n` values (the widest width of the chain).
    pub fn new(gpu: &Gpu, rows: usize, n: usize) -> Result<Self, CudaError> {
        Ok(Self {
            y: PingPong::new(gpu.alloc_zeros(rows * n)?, gpu.alloc_zeros(rows * n)?),
            lists: PingPong::new(RowList::new(gpu, rows)?, RowList::new(gpu, rows)?),
            alive: gpu.alloc_zeros(rows.max(1))?,
            rows,
            capacity_width: n,
            width: n,
        })
    }

    /// Loads `input` (at most the batch's rows and values a row): zeroed activations
    /// holding it, every row listed.
    pub fn load(&mut self, gpu: &Gpu, kernels: &BfKernels, input: &Csr) -> Result<(), CudaError> {
        if input.nrows() > self.rows || input.ncols() > self.capacity_width {
            return Err(CudaError::InvalidArgument(format!(
                "{} rows of {} values do not fit a batch of {} rows of {}",
                input.nrows(),
                input.ncols(),
                self.rows,
                self.capacity_width
            )));
        }
        let stream = gpu.stream();
        self.y.reset();
        self.lists.reset();
        stream
            .memset_zeros(&mut **self.y.current_mut())
            .context("clearing the activations")?;
        // bf_layer only sets a row's flag; bf_compact_rows clears the listed ones.
        stream
            .memset_zeros(&mut *self.alive)
            .context("clearing the row flags")?;
        rows::scatter_rows(gpu, input, self.y.current_mut())?;
        self.width = input.ncols();
        let rows_u32 = input.nrows() as u32;
        let list = self.lists.current_mut();
        let mut start_list = stream.launch_builder(&kernels.all_rows);
        start_list
            .arg(&mut *list.rows)
            .arg(&mut *list.count)
            .arg(&rows_u32);
        let config = kernels.all_rows.config_for(input.nrows())?;
        unsafe { start_list.launch(config) }.context("launching spdnn_all_rows")?;
        Ok(())
    }

    /// Enqueues `layer` on the listed rows (with `glare`'s recorders when given); its
    /// outputs and list become current. The layer must read rows of the current width
    /// and write rows that fit the buffers.
    pub fn layer(
        &mut self,
        gpu: &Gpu,
        kernels: &BfKernels,
        weights: &mut DeviceSlabWeights,
        layer: usize,
        shape: &SlabShape,
        glare: Option<GlareStep<'_>>,
    ) -> Result<(), CudaError> {
        self.layer_with_biases(gpu, kernels, weights, layer, shape, glare, None)
    }

    /// [`Self::layer`] with a bias per output neuron (`N_out` values) when `biases` is set.
    #[allow(clippy::too_many_arguments)]
    pub fn layer_with_biases(
        &mut self,
        gpu: &Gpu,
        kernels: &BfKernels,
        weights: &mut DeviceSlabWeights,
        layer: usize,
        shape: &SlabShape,
        glare: Option<GlareStep<'_>>,
        biases: Option<&DeviceBuffer<f32>>,
    ) -> Result<(), CudaError> {
        let widths = shape.layout.checked_layer(layer)?;
        if widths.n_in != self.width || widths.n_out > self.capacity_width {
            return Err(CudaError::InvalidArgument(format!(
                "layer {} ({} × {}) does not follow activations of {} values in rows of at most {}",
                layer + 1,
                widths.n_in,
                widths.n_out,
                self.width,
                self.capacity_width
            )));
        }
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
                biases,
            },
            shape,
        )?;
        self.y.swap();
        self.lists.swap();
        self.width = widths.n_out;
        Ok(())
    }

    /// The activations after the last layer run, rows × [`Self::width`] row-major.
    pub fn y(&self) -> &DeviceBuffer<f32> {
        self.y.current()
    }

    /// Values per row of [`Self::y`]: the input's width after a load, then the output
    /// width of the last layer run.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The two activation buffers (`rows × n` floats each, [`Self::new`]): the current one
    /// ([`Self::y`]) and the spare; the lists and flags are freed.
    pub fn into_activations(self) -> (DeviceBuffer<f32>, DeviceBuffer<f32>) {
        self.y.into_parts()
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

#[cfg(test)]
mod tests;
