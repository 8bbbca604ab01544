//! The XY layer chain on the device: weights resident, activations row-major for the first
//! and stride layers, neuron-major afterwards, dead samples deleted once.
//!
//! Layers may be rectangular (`N_{l-1} × N_l`): the activations after layer `l` are
//! `rows × N_l` row-major (or `N_l × stride` neuron-major), the buffers hold the widest
//! layer, and each layer knows its input and output widths ([`DeviceXyLayer::widths`]).
//!
//! A layer may carry a bias per output neuron (trained networks, biases ≤ 0), uploaded in
//! its position order ([`DeviceXyLayer::upload_with_biases`]); it then runs the `_neurons`
//! instances of the layer kernels, which read `biases[p]` where the others add the one
//! bias (the others pass a null pointer that the compiler folds away: the one-bias kernels
//! are unchanged). Not with GLARE.

use spdnn_cuda::method::Probe;
use spdnn_cuda::rows::{self, PingPong, RowList, upload_in_position_order};
use spdnn_cuda::{
    CudaError, CudaViewMut, Define, DeviceBuffer, DriverResultExt, Gpu, Kernel, KernelDecl,
    KernelSource, PushKernelArg,
};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_glare::{AccessCounts, Census, Glare, Recorder, model};

use crate::format::{GROUP, XyLayer, XyNetwork};

/// Samples (rows) per block of the row-major kernels (`XY_ROW_TILE` in xy.cu).
pub const ROW_TILE: u32 = 8;
/// Threads per block of the row-major kernels.
pub const ROW_THREADS: u32 = 128;
/// Threads per block of the neuron-major kernels (one per sample column).
pub const COLUMN_THREADS: u32 = 256;
/// Input entries of a row-major block's outputs staged in shared memory when they fit
/// (`XY_ROW_STAGE`: 4 KiB; a grouped challenge layer's block needs 8 × 32).
pub const ROW_STAGE: u32 = 1024;
/// Edge of the square tile of the transposes (`XY_TRANSPOSE_TILE`), and their blocks' width.
pub const TRANSPOSE_TILE: u32 = 32;
/// Rows of threads in a block of the transposes (`XY_TRANSPOSE_ROWS`).
pub const TRANSPOSE_ROWS: u32 = 8;
/// Threads per block of the gathers, the fill and the flag kernel.
const THREADS: u32 = 256;

/// xy.cu's own definitions (it is compiled with glare.cuh's too).
pub const XY_DEFINES: &[Define] = &[
    Define::new("XY_ROW_TILE", ROW_TILE as u64),
    Define::new("XY_ROW_STAGE", ROW_STAGE as u64),
    Define::new("XY_TRANSPOSE_TILE", TRANSPOSE_TILE as u64),
    Define::new("XY_TRANSPOSE_ROWS", TRANSPOSE_ROWS as u64),
];

/// `kernels-cu/xy.cu`, compiled with glare.cuh's definitions and [`XY_DEFINES`].
pub const XY: KernelSource = KernelSource::new("xy.cu", include_str!("../../../kernels-cu/xy.cu"))
    .with_defines(&[spdnn_glare::DEFINES, XY_DEFINES]);

/// A row-major layer kernel: grid (ceil(capacity / [`ROW_TILE`]), ceil(N_l / block)), `N_l`
/// the layer's output width.
const fn row_major(name: &'static str) -> KernelDecl {
    KernelDecl::new(&XY, name, ROW_THREADS)
}

/// A neuron-major layer kernel: one block per (output block, tile of sample columns),
/// grid (blocks, ceil(columns / block)).
const fn neuron_major(name: &'static str) -> KernelDecl {
    KernelDecl::new(&XY, name, COLUMN_THREADS)
}

/// The row-major layer kernels, `[g1, g16]`.
pub const ROW_MAJOR: [KernelDecl; 2] = [
    row_major("xy_row_major_layer_g1"),
    row_major("xy_row_major_layer_g16"),
];
/// The row-major layer kernels with a bias per output position, `[g1, g16]`.
pub const ROW_MAJOR_NEURONS: [KernelDecl; 2] = [
    row_major("xy_row_major_layer_neurons_g1"),
    row_major("xy_row_major_layer_neurons_g16"),
];
/// Their GLARE variants, `[[g1, g16] plain, [g1, g16] counting accesses]`.
pub const ROW_MAJOR_GLARE: [[KernelDecl; 2]; 2] = [
    [
        row_major("xy_row_major_layer_g1_glare"),
        row_major("xy_row_major_layer_g16_glare"),
    ],
    [
        row_major("xy_row_major_layer_g1_glare_census"),
        row_major("xy_row_major_layer_g16_glare_census"),
    ],
];
/// The neuron-major layer kernels, `[g1, g16]`.
pub const NEURON_MAJOR: [KernelDecl; 2] = [
    neuron_major("xy_neuron_major_layer_g1"),
    neuron_major("xy_neuron_major_layer_g16"),
];
/// The neuron-major layer kernels with a bias per output position, `[g1, g16]`.
pub const NEURON_MAJOR_NEURONS: [KernelDecl; 2] = [
    neuron_major("xy_neuron_major_layer_neurons_g1"),
    neuron_major("xy_neuron_major_layer_neurons_g16"),
];
/// Their GLARE variants, `[[g1, g16] plain, [g1, g16] counting accesses]`.
pub const NEURON_MAJOR_GLARE: [[KernelDecl; 2]; 2] = [
    [
        neuron_major("xy_neuron_major_layer_g1_glare"),
        neuron_major("xy_neuron_major_layer_g16_glare"),
    ],
    [
        neuron_major("xy_neuron_major_layer_g1_glare_census"),
        neuron_major("xy_neuron_major_layer_g16_glare_census"),
    ],
];
/// `xy_glare_fill_columns`: grid (ceil(columns / block), min(N_l, 65535)), `N_l` the width
/// of the activations.
pub const GLARE_FILL_COLUMNS: KernelDecl = KernelDecl::new(&XY, "xy_glare_fill_columns", THREADS);
/// The transposes' block: [`TRANSPOSE_TILE`] × [`TRANSPOSE_ROWS`].
const TRANSPOSE_BLOCK: (u32, u32, u32) = (TRANSPOSE_TILE, TRANSPOSE_ROWS, 1);
/// `xy_rows_to_columns`: grid (ceil(count / [`TRANSPOSE_TILE`]), ceil(N_l / [`TRANSPOSE_TILE`])).
pub const ROWS_TO_COLUMNS: KernelDecl =
    KernelDecl::new(&XY, "xy_rows_to_columns", TRANSPOSE_TILE).with_block(TRANSPOSE_BLOCK);
/// `xy_columns_to_rows`: grid (ceil(count / [`TRANSPOSE_TILE`]), ceil(N_l / [`TRANSPOSE_TILE`])).
pub const COLUMNS_TO_ROWS: KernelDecl =
    KernelDecl::new(&XY, "xy_columns_to_rows", TRANSPOSE_TILE).with_block(TRANSPOSE_BLOCK);
/// `xy_gather_columns`: grid (ceil(count / block), min(N_l, 65535)).
pub const GATHER_COLUMNS: KernelDecl = KernelDecl::new(&XY, "xy_gather_columns", THREADS);
/// `xy_gather_rows`: one block per gathered row, grid (count).
pub const GATHER_ROWS: KernelDecl = KernelDecl::new(&XY, "xy_gather_rows", THREADS);
/// `xy_column_flags_to_rows`: one thread per column ([`KernelDecl::config_for`]).
pub const COLUMN_FLAGS_TO_ROWS: KernelDecl =
    KernelDecl::new(&XY, "xy_column_flags_to_rows", THREADS);

/// Every kernel this crate declares (`xy.cu`), checked against the source by the
/// kernel-table test.
pub const KERNELS: &[KernelDecl] = &[
    ROW_MAJOR[0],
    ROW_MAJOR[1],
    ROW_MAJOR_NEURONS[0],
    ROW_MAJOR_NEURONS[1],
    ROW_MAJOR_GLARE[0][0],
    ROW_MAJOR_GLARE[0][1],
    ROW_MAJOR_GLARE[1][0],
    ROW_MAJOR_GLARE[1][1],
    NEURON_MAJOR[0],
    NEURON_MAJOR[1],
    NEURON_MAJOR_NEURONS[0],
    NEURON_MAJOR_NEURONS[1],
    NEURON_MAJOR_GLARE[0][0],
    NEURON_MAJOR_GLARE[0][1],
    NEURON_MAJOR_GLARE[1][0],
    NEURON_MAJOR_GLARE[1][1],
    GLARE_FILL_COLUMNS,
    ROWS_TO_COLUMNS,
    COLUMNS_TO_ROWS,
    GATHER_COLUMNS,
    GATHER_ROWS,
    COLUMN_FLAGS_TO_ROWS,
];

/// The number of row-major layers XY-2021 would run on this network: the first layer,
/// then every following grouped layer whose blocks read at most two runs of neighbouring
/// positions (the challenge's first-cycle "stride" layers).
pub fn detect_row_major_layers(network: &XyNetwork) -> usize {
    1 + network
        .layers
        .iter()
        .skip(1)
        .take_while(|layer| layer.is_grouped() && layer.max_input_runs <= 2)
        .count()
}

/// A slot's offsets, inputs, values and biases, to copy a streamed layer into.
pub(crate) type SlotArrays<'a> = (
    &'a mut DeviceBuffer<u32>,
    &'a mut DeviceBuffer<u32>,
    &'a mut DeviceBuffer<f32>,
    Option<&'a mut DeviceBuffer<f32>>,
);

/// One layer on the device.
pub struct DeviceXyLayer {
    group: u32,
    blocks: u32,
    /// Positions it reads (`N_{l-1}`).
    in_width: u32,
    /// Positions it writes (`N_l = blocks · group`).
    out_width: u32,
    offsets: DeviceBuffer<u32>,
    inputs: DeviceBuffer<u32>,
    /// Every entry's weight, or one weight that every entry has
    /// ([`crate::format::stored_values`]).
    values: DeviceBuffer<f32>,
    /// 1 when `values` holds every entry's weight, 0 when it holds the one they share (the
    /// kernels read `values[entry * value_step]`).
    value_step: u32,
    /// A bias per output position (`N_l` values, the layer's position order), for a
    /// network with a bias per neuron.
    biases: Option<DeviceBuffer<f32>>,
}

/// A layer's shape as the kernels take it: what a streaming slot is told with each copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LayerShape {
    pub group: u32,
    pub blocks: u32,
    pub in_width: u32,
    pub out_width: u32,
    pub value_step: u32,
}

/// `width` as a `u32` index bound, or an error naming it.
pub(crate) fn width_u32(width: usize) -> Result<u32, CudaError> {
    u32::try_from(width).map_err(|_| {
        CudaError::InvalidArgument(format!("a width of {width} neurons does not fit u32"))
    })
}

impl DeviceXyLayer {
    /// Uploads one layer, which reads `inputs` positions (the width before it).
    pub fn upload(gpu: &Gpu, layer: &XyLayer, inputs: usize) -> Result<Self, CudaError> {
        Self::upload_with_biases(gpu, layer, inputs, None)
    }

    /// [`Self::upload`] with a bias per output neuron when `biases` is given
    /// (`biases[k]` for original neuron `k`, `N_l` values ≤ 0: `clip(Z + b)` is the
    /// structural rule only then, which the harness checks), uploaded in the layer's
    /// position order ([`XyLayer::position_biases`]).
    pub fn upload_with_biases(
        gpu: &Gpu,
        layer: &XyLayer,
        inputs: usize,
        biases: Option<&[f32]>,
    ) -> Result<Self, CudaError> {
        let biases = upload_in_position_order(gpu, biases, &layer.outputs, "an XY layer")?;
        let (values, value_step) = crate::format::stored_values(&layer.values);
        Ok(Self {
            group: layer.group,
            blocks: layer.blocks() as u32,
            in_width: width_u32(inputs)?,
            out_width: width_u32(layer.width())?,
            offsets: gpu.upload(&layer.block_offsets)?,
            inputs: gpu.upload_nonempty(&layer.inputs)?,
            values: gpu.upload_nonempty(values)?,
            value_step,
            biases,
        })
    }

    /// An empty layer whose arrays hold `lens` (offsets, inputs, values; at least one
    /// element each) and, when `biases` is set, that many biases: a slot that streamed
    /// layers are copied into ([`crate::stream::StreamedXyLayers`]).
    pub(crate) fn slot(
        gpu: &Gpu,
        lens: [usize; 3],
        biases: Option<usize>,
    ) -> Result<Self, CudaError> {
        Ok(Self {
            group: 1,
            blocks: 0,
            in_width: 0,
            out_width: 0,
            offsets: gpu.alloc_zeros(lens[0].max(1))?,
            inputs: gpu.alloc_zeros(lens[1].max(1))?,
            values: gpu.alloc_zeros(lens[2].max(1))?,
            value_step: 1,
            biases: biases.map(|n| gpu.alloc_zeros(n.max(1))).transpose()?,
        })
    }

    /// Sets the shape of the layer a slot now holds.
    pub(crate) fn set_shape(&mut self, shape: LayerShape) {
        (
            self.group,
            self.blocks,
            self.in_width,
            self.out_width,
            self.value_step,
        ) = (
            shape.group,
            shape.blocks,
            shape.in_width,
            shape.out_width,
            shape.value_step,
        );
    }

    /// The arrays, to copy a layer into a slot.
    pub(crate) fn arrays_mut(&mut self) -> SlotArrays<'_> {
        (
            &mut self.offsets,
            &mut self.inputs,
            &mut self.values,
            self.biases.as_mut(),
        )
    }

    /// Its input and output widths `(N_{l-1}, N_l)`.
    pub fn widths(&self) -> (usize, usize) {
        (self.in_width as usize, self.out_width as usize)
    }

    /// Whether it has a bias per output neuron (it runs the `_neurons` kernels).
    pub fn has_biases(&self) -> bool {
        self.biases.is_some()
    }
}

/// The error of a layer with per-neuron biases asked to run with GLARE's recorder.
fn glare_biases_error() -> CudaError {
    CudaError::InvalidArgument(
        "XY's GLARE kernels take one bias for all neurons, and this layer has a bias per \
         neuron: run without GLARE"
            .into(),
    )
}

/// Layers resident on the device.
pub struct DeviceXyNetwork {
    /// The widths through the uploaded layers: the first one's input width, then each
    /// one's output width (one width when no layer was uploaded).
    pub widths: Vec<usize>,
    /// The layers, in order.
    pub layers: Vec<DeviceXyLayer>,
}

impl DeviceXyNetwork {
    /// Uploads the layers `range` of `network` (a range past its layers is an error).
    pub fn upload(
        gpu: &Gpu,
        network: &XyNetwork,
        range: std::ops::Range<usize>,
    ) -> Result<Self, CudaError> {
        Self::upload_with_biases(gpu, network, range, None)
    }

    /// [`Self::upload`] with a bias per output neuron of every layer when `biases` is
    /// given (`biases[l][k]` for layer `l` of the whole network, original neuron `k`; the
    /// layers of `range` take theirs, [`DeviceXyLayer::upload_with_biases`]).
    pub fn upload_with_biases(
        gpu: &Gpu,
        network: &XyNetwork,
        range: std::ops::Range<usize>,
        biases: Option<&[Vec<f32>]>,
    ) -> Result<Self, CudaError> {
        let (chosen, widths) = layer_range(network, &range, biases)?;
        let layers = chosen
            .into_iter()
            .map(|(layer, inputs, own)| DeviceXyLayer::upload_with_biases(gpu, layer, inputs, own))
            .collect::<Result<_, _>>()?;
        Ok(Self { widths, layers })
    }
}

/// One layer of a range: the layer, the width it reads and its biases when there are any.
pub(crate) type RangeLayer<'n, 'b> = (&'n XyLayer, usize, Option<&'b [f32]>);

/// The layers `range` of `network`, each with the width it reads and its own biases (from
/// `biases`, a vector per layer of the whole network, checked), and the widths through them
/// (the first one's input width, then each one's output width); an error names a range
/// past the layers.
pub(crate) fn layer_range<'n, 'b>(
    network: &'n XyNetwork,
    range: &std::ops::Range<usize>,
    biases: Option<&'b [Vec<f32>]>,
) -> Result<(Vec<RangeLayer<'n, 'b>>, Vec<usize>), CudaError> {
    if let Some(b) = biases
        && b.len() != network.layers.len()
    {
        return Err(CudaError::InvalidArgument(format!(
            "{} bias vectors for an XY network of {} layers",
            b.len(),
            network.layers.len()
        )));
    }
    let all = network.widths();
    match (
        network.layers.get(range.clone()),
        all.get(range.start..=range.end),
    ) {
        (Some(chosen), Some(widths)) => {
            let layers = chosen
                .iter()
                .zip(widths)
                .enumerate()
                .map(|(i, (layer, &inputs))| {
                    let own = biases.map(|b| b[range.start + i].as_slice());
                    (layer, inputs, own)
                })
                .collect();
            Ok((layers, widths.to_vec()))
        }
        _ => Err(CudaError::InvalidArgument(format!(
            "layers {}..{} of a network of {} layers",
            range.start,
            range.end,
            network.layers.len()
        ))),
    }
}

/// The stages of XY's breakdown: its two layouts, the transpose between them, the
/// deletion of the dead rows and the category flags.
pub const STAGES: [&str; 5] = [
    "row-major layers",
    "transpose",
    "neuron-major layers",
    "delete dead rows",
    "categories",
];

/// Which of XY's kernel variants a run launches besides the plain layers, transposes and
/// row kernels (which every run loads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XyVariants {
    /// The `_neurons` layer kernels (a bias per neuron).
    pub neurons: bool,
    /// GLARE's layer kernels and the column fill.
    pub glare: bool,
    /// GLARE's counting layer kernels (its census).
    pub census: bool,
}

/// The loaded kernels: the plain ones, and the variants the run asked for.
#[derive(Clone)]
pub struct XyKernels {
    row_major: [Kernel; 2],
    neuron_major: [Kernel; 2],
    row_major_neurons: Option<[Kernel; 2]>,
    neuron_major_neurons: Option<[Kernel; 2]>,
    /// Without counting, with (`None`: not loaded).
    row_major_glare: [Option<[Kernel; 2]>; 2],
    neuron_major_glare: [Option<[Kernel; 2]>; 2],
    fill_columns: Option<Kernel>,
    rows_to_columns: Kernel,
    columns_to_rows: Kernel,
    gather_columns: Kernel,
    gather_rows: Kernel,
    column_flags: Kernel,
    compact: Kernel,
    all_rows: Kernel,
}

/// Loads the kernels of `decls`, in order.
fn load_all<const N: usize>(gpu: &Gpu, decls: &[KernelDecl; N]) -> Result<[Kernel; N], CudaError> {
    let kernels: Vec<Kernel> = decls
        .iter()
        .map(|decl| gpu.kernel(decl))
        .collect::<Result<_, _>>()?;
    Ok(kernels
        .try_into()
        .unwrap_or_else(|_| unreachable!("one kernel per declaration")))
}

/// [`load_all`] when `wanted`.
fn load_if<const N: usize>(
    gpu: &Gpu,
    wanted: bool,
    decls: &[KernelDecl; N],
) -> Result<Option<[Kernel; N]>, CudaError> {
    wanted.then(|| load_all(gpu, decls)).transpose()
}

/// Instance `grouped` of a variant the run loaded, or an error naming it.
fn loaded<'k>(
    variant: &'k Option<[Kernel; 2]>,
    grouped: usize,
    what: &str,
) -> Result<&'k Kernel, CudaError> {
    variant.as_ref().map(|k| &k[grouped]).ok_or_else(|| {
        CudaError::InvalidArgument(format!(
            "xy: the {what} kernels are not loaded for this run"
        ))
    })
}

impl XyKernels {
    /// The declarations a run with `variants` loads, the layer kernels first (the longest
    /// to compile).
    pub fn decls(variants: XyVariants) -> Vec<&'static KernelDecl> {
        let mut decls: Vec<&'static KernelDecl> = Vec::new();
        if variants.glare && variants.census {
            decls.extend(ROW_MAJOR_GLARE[1].iter().chain(&NEURON_MAJOR_GLARE[1]));
        }
        if variants.glare {
            decls.extend(ROW_MAJOR_GLARE[0].iter().chain(&NEURON_MAJOR_GLARE[0]));
            decls.push(&GLARE_FILL_COLUMNS);
        }
        if variants.neurons {
            decls.extend(ROW_MAJOR_NEURONS.iter().chain(&NEURON_MAJOR_NEURONS));
        }
        decls.extend(ROW_MAJOR.iter().chain(&NEURON_MAJOR));
        decls.extend([
            &ROWS_TO_COLUMNS,
            &COLUMNS_TO_ROWS,
            &GATHER_COLUMNS,
            &GATHER_ROWS,
            &COLUMN_FLAGS_TO_ROWS,
            &rows::COMPACT_FLAGGED_ROWS,
            &rows::ALL_ROWS,
        ]);
        decls
    }

    /// Loads the kernels a run with `variants` launches (xy.cu's and rows.cu's), each
    /// compiled alone on a worker thread (or found compiled by an earlier
    /// [`Gpu::compile_ahead`] of [`XyKernels::decls`]).
    pub fn load(gpu: &Gpu, variants: XyVariants) -> Result<Self, CudaError> {
        gpu.compile_ahead(Self::decls(variants));
        let census = variants.glare && variants.census;
        Ok(Self {
            row_major: load_all(gpu, &ROW_MAJOR)?,
            neuron_major: load_all(gpu, &NEURON_MAJOR)?,
            row_major_neurons: load_if(gpu, variants.neurons, &ROW_MAJOR_NEURONS)?,
            neuron_major_neurons: load_if(gpu, variants.neurons, &NEURON_MAJOR_NEURONS)?,
            row_major_glare: [
                load_if(gpu, variants.glare, &ROW_MAJOR_GLARE[0])?,
                load_if(gpu, census, &ROW_MAJOR_GLARE[1])?,
            ],
            neuron_major_glare: [
                load_if(gpu, variants.glare, &NEURON_MAJOR_GLARE[0])?,
                load_if(gpu, census, &NEURON_MAJOR_GLARE[1])?,
            ],
            fill_columns: variants
                .glare
                .then(|| gpu.kernel(&GLARE_FILL_COLUMNS))
                .transpose()?,
            rows_to_columns: gpu.kernel(&ROWS_TO_COLUMNS)?,
            columns_to_rows: gpu.kernel(&COLUMNS_TO_ROWS)?,
            gather_columns: gpu.kernel(&GATHER_COLUMNS)?,
            gather_rows: gpu.kernel(&GATHER_ROWS)?,
            column_flags: gpu.kernel(&COLUMN_FLAGS_TO_ROWS)?,
            compact: gpu.kernel(&rows::COMPACT_FLAGGED_ROWS)?,
            all_rows: gpu.kernel(&rows::ALL_ROWS)?,
        })
    }

    /// The row-major layer kernel for `layer`'s block width (the `_neurons` one when the
    /// layer has a bias per neuron).
    pub fn row_major_kernel(&self, layer: &DeviceXyLayer) -> Result<&Kernel, CudaError> {
        let grouped = usize::from(layer.group as usize == GROUP);
        if layer.has_biases() {
            loaded(&self.row_major_neurons, grouped, "per-neuron bias")
        } else {
            Ok(&self.row_major[grouped])
        }
    }

    /// The GLARE row-major kernel for `layer` (the census variant when `counting`).
    fn row_major_glare_kernel(
        &self,
        layer: &DeviceXyLayer,
        counting: bool,
    ) -> Result<&Kernel, CudaError> {
        loaded(
            &self.row_major_glare[usize::from(counting)],
            usize::from(layer.group as usize == GROUP),
            if counting { "GLARE census" } else { "GLARE" },
        )
    }
}

/// A layer's GLARE recorders as the XY kernels take them (`XyRecorder` in xy.cu).
pub struct RecorderStep<'b> {
    /// Flags of the input activations.
    pub in_flags: &'b DeviceBuffer<u8>,
    /// Flags of the output activations.
    pub out_flags: &'b mut DeviceBuffer<u8>,
    /// Unit bookkeeping words (zero between layers).
    pub arrivals: &'b mut DeviceBuffer<u64>,
    /// One byte per block part.
    pub skipped: &'b mut DeviceBuffer<u8>,
    /// `log2` of the unit length.
    pub shift: u32,
    /// Units per row (row-major) or per tile of 256 columns (neuron-major): the flags'
    /// stride, from the widest layer the recorder serves; a layer of `N_l` outputs uses the
    /// first `ceil(N_l / 2^shift)` of them.
    pub units: u32,
    /// The layer's census counters.
    pub census: CudaViewMut<'b, u64>,
    /// Run the census variant.
    pub counting: bool,
}

impl<'b> RecorderStep<'b> {
    /// The recorders of the next layer from `recorder` (current flags in, next out).
    pub fn new(
        recorder: &'b mut Recorder,
        census: &'b mut Census,
        layer: usize,
        shift: u32,
        units: usize,
        counting: bool,
    ) -> Self {
        let (in_flags, out_flags) = recorder.flags.split();
        Self {
            in_flags,
            out_flags,
            arrivals: &mut recorder.arrivals,
            skipped: &mut recorder.skipped,
            shift,
            units: units as u32,
            census: census.layer(layer),
            counting,
        }
    }

    fn push<'a>(&'a mut self, launch: &mut spdnn_cuda::cudarc::driver::LaunchArgs<'a>) {
        launch
            .arg(&**self.in_flags)
            .arg(&mut **self.out_flags)
            .arg(&mut **self.arrivals)
            .arg(&mut **self.skipped)
            .arg(&self.shift)
            .arg(&self.units)
            .arg(&mut self.census);
    }
}

/// Where the activations are (`N_l` the width after the last layer run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// `rows × N_l` row-major, the rows in the current list.
    RowMajor,
    /// `N_l × stride` neuron-major, `columns` sample columns.
    NeuronMajor,
}

/// Rows kept after some layers, as a compact row-major block on the device.
pub struct ExportedRows {
    /// `count × width` row-major, positions in the order of the last layer run (the
    /// buffer may hold more: room asked for by the caller).
    pub y: DeviceBuffer<f32>,
    /// The width of each row: `N_l` after layer `l` (the input's before any layer).
    pub width: usize,
    /// The original (0-based) input row of each exported row, ascending.
    pub ids: Vec<u32>,
}

/// One batch of rows going through the layers.
pub struct XyRun<'a> {
    gpu: &'a Gpu,
    kernels: XyKernels,
    /// The input's width `N_0`.
    input_width: usize,
    /// The widest activations the buffers hold.
    widest: usize,
    /// The width of the current activations (`N_l` after layer `l`).
    width: usize,
    capacity: usize,
    row_major_layers: usize,
    delete_at: Option<usize>,
    /// The activations: the current ones and the next layer's.
    y: PingPong<DeviceBuffer<f32>>,
    /// The rows still listed (row-major phase) and the next list.
    lists: PingPong<RowList>,
    /// Row (row-major) or column (neuron-major) flags of the last layer.
    alive: DeviceBuffer<u8>,
    /// The original row of each neuron-major column (device copy of `column_ids`).
    ids: DeviceBuffer<u32>,
    column_ids: Vec<u32>,
    columns: usize,
    stride: usize,
    layout: Layout,
    layers_done: usize,
    /// Whether `alive` describes the current activations (false before any layer).
    alive_valid: bool,
    /// Rows of the loaded input.
    rows_count: usize,
    /// (bias, upper bound).
    activation: (f32, f32),
    /// GLARE on the neuron-major layers after the deletion, when set.
    glare: Option<XyGlare>,
}

/// XY's GLARE state: recorders over tiles of 256 columns × units of `2^shift` positions.
struct XyGlare {
    shift: u32,
    units: usize,
    recorder: Recorder,
    census: Census,
    /// Run the census kernels.
    counting: bool,
    /// Whether a layer ran with the recorder since the input was loaded.
    used: bool,
}

impl<'a> XyRun<'a> {
    /// Runs the neuron-major layers after the deletion (all of them when nothing is
    /// deleted) with GLARE's recorder; `layers` sizes the census. The segment is checked
    /// against the widest layer, whose units set the flags' stride (a narrower layer uses
    /// the first units of each tile).
    pub fn with_glare(mut self, settings: &Glare, layers: usize) -> Result<Self, CudaError> {
        let shift = settings.checked_shift::<crate::Xy>(&model::Shape {
            neurons: self.widest,
            slab_width: 0,
            first_layer: self.delete_at.unwrap_or(0),
        })?;
        let tiles = self.capacity.div_ceil(COLUMN_THREADS as usize);
        let units = self.widest.div_ceil(settings.segment);
        self.glare = Some(XyGlare {
            shift,
            units,
            recorder: Recorder::new(self.gpu, tiles * units, tiles * self.widest)?,
            census: Census::new(self.gpu, layers)?,
            counting: false,
            used: false,
        });
        Ok(self)
    }

    /// Whether the next runs count their accesses (GLARE's census kernels); turning it on
    /// clears the counters.
    pub fn set_counting(&mut self, counting: bool) -> Result<(), CudaError> {
        if let Some(g) = self.glare.as_mut() {
            if counting && !g.counting {
                g.census.clear(self.gpu)?;
            }
            g.counting = counting;
        }
        Ok(())
    }

    /// Whether this run has GLARE's recorder and counts its accesses when asked.
    pub fn has_census(&self) -> bool {
        self.glare.is_some()
    }

    /// The accesses counted per layer since counting was turned on (empty without GLARE).
    pub fn accesses(&self) -> Result<Vec<AccessCounts>, CudaError> {
        match &self.glare {
            Some(g) => g.census.read(self.gpu),
            None => Ok(Vec::new()),
        }
    }

    /// Buffers for up to `capacity` rows going through layers of `widths` (`N_0` the
    /// input's, then the output width of each layer the run will see, e.g.
    /// [`DeviceXyNetwork::widths`]): the activations hold the widest.
    pub fn new(
        gpu: &'a Gpu,
        kernels: &XyKernels,
        widths: &[usize],
        capacity: usize,
        row_major_layers: usize,
        delete_at: Option<usize>,
        activation: (f32, f32),
    ) -> Result<Self, CudaError> {
        let (Some(&input_width), Some(&widest)) = (widths.first(), widths.iter().max()) else {
            return Err(CudaError::InvalidArgument(
                "an XY run needs the input width".into(),
            ));
        };
        for &width in widths {
            width_u32(width)?;
        }
        let capacity = capacity.max(1);
        let identity: Vec<u32> = (0..capacity as u32).collect();
        let elements = capacity.checked_mul(widest).ok_or_else(|| {
            CudaError::InvalidArgument(format!("{capacity} rows × {widest} neurons overflow"))
        })?;
        Ok(Self {
            gpu,
            kernels: kernels.clone(),
            input_width,
            widest,
            width: input_width,
            capacity,
            row_major_layers,
            delete_at,
            y: PingPong::new(gpu.alloc_zeros(elements)?, gpu.alloc_zeros(elements)?),
            lists: PingPong::new(RowList::new(gpu, capacity)?, RowList::new(gpu, capacity)?),
            alive: gpu.alloc_zeros(capacity)?,
            ids: gpu.upload(&identity)?,
            column_ids: identity,
            columns: capacity,
            stride: capacity,
            layout: Layout::RowMajor,
            layers_done: 0,
            alive_valid: false,
            rows_count: 0,
            activation,
            glare: None,
        })
    }

    /// Loads `input` (at most `capacity` rows): zeroed row-major activations holding the
    /// input, every row listed. Untimed preparation.
    pub fn load_input(&mut self, input: &Csr) -> Result<(), CudaError> {
        if input.nrows() > self.capacity {
            return Err(CudaError::InvalidArgument(format!(
                "{} rows do not fit a run sized for {}",
                input.nrows(),
                self.capacity
            )));
        }
        if input.ncols() != self.input_width {
            return Err(CudaError::InvalidArgument(format!(
                "the input has {} features, the first layer reads {}",
                input.ncols(),
                self.input_width
            )));
        }
        let rows_count = input.nrows();
        let stream = self.gpu.stream().clone();
        self.y.reset();
        self.lists.reset();
        let y = self.y.current_mut();
        stream
            .memset_zeros(&mut **y)
            .context("clearing the activations")?;
        rows::scatter_rows(self.gpu, input, y)?;
        let rows_u32 = rows_count as u32;
        let list = self.lists.current_mut();
        let mut launch = stream.launch_builder(&self.kernels.all_rows);
        launch
            .arg(&mut *list.rows)
            .arg(&mut *list.count)
            .arg(&rows_u32);
        let config = self.kernels.all_rows.config_for(rows_count)?;
        unsafe { launch.launch(config) }.context("launching spdnn_all_rows")?;
        let identity: Vec<u32> = (0..rows_count as u32).collect();
        if !identity.is_empty() {
            self.gpu.upload_into(&identity, &mut self.ids)?;
        }
        self.column_ids = identity;
        self.columns = rows_count;
        self.stride = rows_count.max(1);
        self.layout = Layout::RowMajor;
        self.width = self.input_width;
        self.layers_done = 0;
        self.alive_valid = false;
        self.rows_count = rows_count;
        if let Some(g) = self.glare.as_mut() {
            g.recorder.clear(self.gpu)?;
            g.used = false;
        }
        Ok(())
    }

    /// Enqueues `layer` (which must be the next layer: it reads the current width and
    /// writes at most the widest one this run was sized for), with the transpose before it
    /// or the deletion after it when they fall here. Marks each step on `probe` (stages
    /// [`STAGES`]). Deletion waits for the device once (the host builds the ordered column
    /// list).
    pub fn layer(&mut self, layer: &DeviceXyLayer, probe: &mut Probe) -> Result<(), CudaError> {
        let (reads, writes) = layer.widths();
        if reads != self.width || writes > self.widest {
            return Err(CudaError::InvalidArgument(format!(
                "an XY layer of {reads} × {writes} after activations of {} neurons (buffers of {})",
                self.width, self.widest
            )));
        }
        if self.layout == Layout::RowMajor && self.layers_done >= self.row_major_layers {
            self.transpose()?;
            probe.step(STAGES[1])?;
        }
        match self.layout {
            Layout::RowMajor => self.row_major_layer(layer)?,
            Layout::NeuronMajor => self.neuron_major_layer(layer)?,
        }
        self.layers_done += 1;
        self.width = writes;
        self.alive_valid = true;
        probe.layer(match self.layout {
            Layout::RowMajor => STAGES[0],
            Layout::NeuronMajor => STAGES[2],
        })?;
        if self.layout == Layout::NeuronMajor && self.delete_at == Some(self.layers_done) {
            self.delete_dead_columns()?;
            probe.step(STAGES[3])?;
        }
        Ok(())
    }

    fn row_major_layer(&mut self, layer: &DeviceXyLayer) -> Result<(), CudaError> {
        let stream = self.gpu.stream().clone();
        stream
            .memset_zeros(&mut *self.alive)
            .context("clearing the row flags")?;
        let capacity = self.capacity;
        let (y_in, y_out) = self.y.split();
        let list = self.lists.current();
        launch_row_major(
            self.gpu,
            &self.kernels,
            layer,
            RowMajorStep {
                y_in,
                y_out,
                list: &list.rows,
                count: &list.count,
                row_alive: &mut self.alive,
                capacity,
                activation: self.activation,
                recorder: None,
            },
        )?;
        self.y.swap();
        // The next list: the listed rows that stayed non-empty.
        let (list_in, list_out) = self.lists.split();
        list_in.compact_into(
            self.gpu,
            &self.kernels.compact,
            &self.alive,
            list_out,
            capacity,
        )?;
        self.lists.swap();
        Ok(())
    }

    /// Row-major → neuron-major, keeping only the rows still listed (the host reads the
    /// list once and orders it): the neuron-major layers run on live samples only.
    fn transpose(&mut self) -> Result<(), CudaError> {
        let rows_list: Vec<u32> = if self.alive_valid {
            let list = self.lists.current();
            let count = self.gpu.download(&*list.count)?[0] as usize;
            let mut rows_list = self.gpu.download(&*list.rows)?;
            rows_list.truncate(count);
            rows_list.sort_unstable();
            rows_list
        } else {
            (0..self.rows_count as u32).collect()
        };
        let count = rows_list.len();
        let n_u32 = self.width as u32;
        let stream = self.gpu.stream().clone();
        if count > 0 {
            self.gpu.upload_into(&rows_list, &mut self.ids)?;
            let (y_in, y_out) = self.y.split();
            let count_u32 = count as u32;
            let mut launch = stream.launch_builder(&self.kernels.rows_to_columns);
            launch
                .arg(&**y_in)
                .arg(&mut **y_out)
                .arg(&*self.ids)
                .arg(&count_u32)
                .arg(&n_u32)
                .arg(&count_u32);
            let config = self.kernels.rows_to_columns.config((
                count_u32.div_ceil(TRANSPOSE_TILE),
                n_u32.div_ceil(TRANSPOSE_TILE),
            ))?;
            unsafe { launch.launch(config) }.context("launching xy_rows_to_columns")?;
        }
        self.y.swap();
        self.column_ids = rows_list;
        self.columns = count;
        self.stride = count.max(1);
        self.layout = Layout::NeuronMajor;
        // Every kept column is alive (flags of the last layer, or the input's rows).
        if count > 0 {
            let ones = vec![1u8; count];
            self.gpu.upload_into(&ones, &mut self.alive)?;
        }
        Ok(())
    }

    fn neuron_major_layer(&mut self, layer: &DeviceXyLayer) -> Result<(), CudaError> {
        let stream = self.gpu.stream().clone();
        stream
            .memset_zeros(&mut *self.alive)
            .context("clearing the column flags")?;
        if self.columns == 0 || layer.blocks == 0 {
            self.y.swap();
            return Ok(());
        }
        let grouped = usize::from(layer.group as usize == GROUP);
        let layer_index = self.layers_done;
        let recorded = self.delete_at.is_none_or(|d| layer_index >= d);
        let mut recorder = match self.glare.as_mut() {
            Some(g) if recorded => {
                g.used = true;
                Some(RecorderStep::new(
                    &mut g.recorder,
                    &mut g.census,
                    layer_index,
                    g.shift,
                    g.units,
                    g.counting,
                ))
            }
            _ => None,
        };
        let kernel = match (&recorder, &layer.biases) {
            (Some(_), Some(_)) => return Err(glare_biases_error()),
            (Some(r), None) => loaded(
                &self.kernels.neuron_major_glare[usize::from(r.counting)],
                grouped,
                if r.counting { "GLARE census" } else { "GLARE" },
            )?,
            (None, Some(_)) => loaded(
                &self.kernels.neuron_major_neurons,
                grouped,
                "per-neuron bias",
            )?,
            (None, None) => &self.kernels.neuron_major[grouped],
        };
        let (columns_u32, stride_u32) = (self.columns as u32, self.stride as u32);
        let (bias, upper) = self.activation;
        let (y_in, y_out) = self.y.split();
        let mut launch = stream.launch_builder(kernel);
        launch
            .arg(&**y_in)
            .arg(&mut **y_out)
            .arg(&columns_u32)
            .arg(&stride_u32)
            .arg(&mut *self.alive)
            .arg(&*layer.offsets)
            .arg(&*layer.inputs)
            .arg(&*layer.values)
            .arg(&layer.value_step)
            .arg(&bias)
            .arg(&upper);
        if let Some(biases) = &layer.biases {
            launch.arg(&**biases);
        }
        if let Some(r) = recorder.as_mut() {
            r.push(&mut launch);
        }
        let config =
            kernel.config((layer.blocks, columns_u32.div_ceil(kernel.decl().threads())))?;
        unsafe { launch.launch(config) }.context("launching xy_neuron_major_layer")?;
        self.y.swap();
        if recorded && let Some(g) = self.glare.as_mut() {
            g.recorder.flags.swap();
        }
        Ok(())
    }

    /// Writes the bound into the units the last GLARE layer recorded instead of writing,
    /// so the neuron-major activations can be read without the recorder.
    fn fill_recorded_units(&mut self) -> Result<(), CudaError> {
        let Some(g) = self.glare.as_ref().filter(|g| g.used) else {
            return Ok(());
        };
        if self.layout != Layout::NeuronMajor || self.columns == 0 {
            return Ok(());
        }
        let (columns_u32, stride_u32, n_u32) =
            (self.columns as u32, self.stride as u32, self.width as u32);
        let units_u32 = g.units as u32;
        let upper = self.activation.1;
        let fill = self.kernels.fill_columns.as_ref().ok_or_else(|| {
            CudaError::InvalidArgument("xy: the GLARE kernels are not loaded for this run".into())
        })?;
        let mut launch = self.gpu.stream().launch_builder(fill);
        launch
            .arg(&mut **self.y.current_mut())
            .arg(&columns_u32)
            .arg(&stride_u32)
            .arg(&n_u32)
            .arg(&**g.recorder.flags.current())
            .arg(&g.shift)
            .arg(&units_u32)
            .arg(&upper);
        let config = fill.config((
            columns_u32.div_ceil(fill.decl().threads()),
            n_u32.min(65535),
        ))?;
        unsafe { launch.launch(config) }.context("launching xy_glare_fill_columns")?;
        Ok(())
    }

    /// Drops the columns whose samples died: the host reads the flags once, builds the
    /// ordered list of live columns, and the columns are gathered into the other buffer
    /// with a stride equal to their count.
    fn delete_dead_columns(&mut self) -> Result<(), CudaError> {
        let flags = self.gpu.download(&*self.alive)?;
        let live: Vec<u32> = (0..self.columns as u32)
            .filter(|&c| flags[c as usize] != 0)
            .collect();
        let count = live.len();
        if count > 0 {
            let list = self.gpu.upload(&live)?;
            let stream = self.gpu.stream().clone();
            let (n_u32, count_u32, stride_u32) =
                (self.width as u32, count as u32, self.stride as u32);
            let (y_in, y_out) = self.y.split();
            let mut launch = stream.launch_builder(&self.kernels.gather_columns);
            launch
                .arg(&**y_in)
                .arg(&mut **y_out)
                .arg(&*list)
                .arg(&count_u32)
                .arg(&n_u32)
                .arg(&stride_u32);
            let gather = &self.kernels.gather_columns;
            let config = gather.config((
                count_u32.div_ceil(gather.decl().threads()),
                n_u32.min(65535),
            ))?;
            unsafe { launch.launch(config) }.context("launching xy_gather_columns")?;
            self.y.swap();
        }
        let ids: Vec<u32> = live.iter().map(|&c| self.column_ids[c as usize]).collect();
        if !ids.is_empty() {
            self.gpu.upload_into(&ids, &mut self.ids)?;
        }
        // Every remaining column is alive (the flags of the layer just run).
        let ones = vec![1u8; count];
        if count > 0 {
            self.gpu.upload_into(&ones, &mut self.alive)?;
        }
        self.column_ids = ids;
        self.columns = count;
        self.stride = count.max(1);
        Ok(())
    }

    /// Sets `row_flags[row]` (zeroed here first) for every row that is non-empty after
    /// the layers run so far.
    pub fn mark_categories(&mut self, row_flags: &mut DeviceBuffer<u8>) -> Result<(), CudaError> {
        let stream = self.gpu.stream().clone();
        stream
            .memset_zeros(&mut **row_flags)
            .context("clearing the row flags")?;
        match self.layout {
            Layout::RowMajor => {
                if self.alive_valid {
                    stream
                        .memcpy_dtod(&*self.alive, &mut **row_flags)
                        .context("copying the row flags")?;
                } else {
                    rows::row_nonzero_flags(
                        self.gpu,
                        self.y.current(),
                        self.columns,
                        self.width,
                        row_flags,
                    )?;
                }
            }
            Layout::NeuronMajor => {
                if self.columns > 0 {
                    let columns_u32 = self.columns as u32;
                    let mut launch = stream.launch_builder(&self.kernels.column_flags);
                    launch
                        .arg(&*self.alive)
                        .arg(&*self.ids)
                        .arg(&columns_u32)
                        .arg(&mut **row_flags);
                    let config = self.kernels.column_flags.config_for(self.columns)?;
                    unsafe { launch.launch(config) }
                        .context("launching xy_column_flags_to_rows")?;
                }
            }
        }
        Ok(())
    }

    /// The rows alive after the layers run so far, as a compact row-major block of the
    /// current width (positions in the order of the last layer, or in the input's order
    /// before any layer) at the start of the activations' spare buffer ([`Self::spare`]),
    /// with room for rows of `room` values when that is more (a caller running wider layers
    /// on it; at most the widest width the run was sized for). Returns the width and the
    /// original row ids, ascending. Allocates only a flag per row and the lists of the
    /// gather; waits for the device once.
    pub fn export_rows(&mut self, room: usize) -> Result<(usize, Vec<u32>), CudaError> {
        if room > self.widest {
            return Err(CudaError::InvalidArgument(format!(
                "an XY run sized for rows of {} values cannot export rows with room for {room}",
                self.widest
            )));
        }
        let flags = {
            let mut flags = self.gpu.alloc_zeros::<u8>(self.capacity)?;
            self.mark_categories(&mut flags)?;
            self.gpu.download(&*flags)?
        };
        let ids: Vec<u32> = (0..self.rows_count as u32)
            .filter(|&r| flags[r as usize] != 0)
            .collect();
        let count = ids.len();
        let width = self.width;
        if count == 0 {
            return Ok((width, ids));
        }
        let stream = self.gpu.stream().clone();
        let (n_u32, count_u32) = (width as u32, count as u32);
        match self.layout {
            Layout::RowMajor => {
                let identity: Vec<u32> = (0..width as u32).collect();
                let perm = self.gpu.upload(&identity)?;
                let list = self.gpu.upload(&ids)?;
                let (y, spare) = self.y.split();
                launch_gather_rows(self.gpu, &self.kernels, y, spare, &list, width, &perm)?;
            }
            Layout::NeuronMajor => {
                self.fill_recorded_units()?;
                // The columns of the wanted rows, in ascending row order.
                let mut column_of_row = std::collections::HashMap::with_capacity(count);
                for (c, &row) in self.column_ids.iter().enumerate().take(self.columns) {
                    column_of_row.insert(row, c as u32);
                }
                let columns: Vec<u32> = ids
                    .iter()
                    .map(|row| {
                        column_of_row.get(row).copied().ok_or_else(|| {
                            CudaError::InvalidArgument(format!("row {row} has no column"))
                        })
                    })
                    .collect::<Result<_, _>>()?;
                let list = self.gpu.upload(&columns)?;
                let stride_u32 = self.stride as u32;
                let (y, spare) = self.y.split();
                let mut launch = stream.launch_builder(&self.kernels.columns_to_rows);
                launch
                    .arg(&**y)
                    .arg(&mut **spare)
                    .arg(&*list)
                    .arg(&count_u32)
                    .arg(&n_u32)
                    .arg(&stride_u32);
                let config = self.kernels.columns_to_rows.config((
                    count_u32.div_ceil(TRANSPOSE_TILE),
                    n_u32.div_ceil(TRANSPOSE_TILE),
                ))?;
                unsafe { launch.launch(config) }.context("launching xy_columns_to_rows")?;
            }
        }
        Ok((width, ids))
    }

    /// The activations' buffer the layers do not hold now: where [`Self::export_rows`]
    /// writes.
    pub fn spare(&mut self) -> &DeviceBuffer<f32> {
        self.y.split().1
    }

    /// The run's two activation buffers (`capacity × widest` floats each), the spare one
    /// (holding what [`Self::export_rows`] wrote) first; the run's other buffers are freed.
    pub fn into_activations(self) -> (DeviceBuffer<f32>, DeviceBuffer<f32>) {
        let (current, spare) = self.y.into_parts();
        (spare, current)
    }

    /// Device bytes of a run sized for `capacity` rows of at most `widest` values, as
    /// [`Self::new`] allocates them: two activation buffers, two row lists, the flags and
    /// the row ids (GLARE's recorder apart).
    pub fn bytes(capacity: usize, widest: usize) -> usize {
        let capacity = capacity.max(1);
        2 * 4 * capacity * widest + 2 * RowList::bytes(capacity) + capacity + 4 * capacity
    }

    /// Device bytes [`Self::export_rows`] allocates for a run of `capacity` rows of at most
    /// `widest` values, at most (every row exported): a flag per row, the list of rows (or
    /// columns) and the identity permutation of a row.
    pub fn export_bytes(capacity: usize, widest: usize) -> usize {
        let capacity = capacity.max(1);
        capacity + 4 * capacity + 4 * widest
    }
}

/// The buffers of one row-major layer over a row list (the widths are the layer's).
pub struct RowMajorStep<'b> {
    /// Input activations, rows × `N_{l-1}`.
    pub y_in: &'b DeviceBuffer<f32>,
    /// Output activations, rows × `N_l` (only listed rows are written).
    pub y_out: &'b mut DeviceBuffer<f32>,
    /// The listed rows.
    pub list: &'b DeviceBuffer<u32>,
    /// How many rows are listed (on the device).
    pub count: &'b DeviceBuffer<u32>,
    /// Set to 1 for every listed row with a nonzero output (zeroed by the caller).
    pub row_alive: &'b mut DeviceBuffer<u8>,
    /// The most rows the list can hold (sizes the grid; blocks past the count exit).
    pub capacity: usize,
    /// (bias, upper bound); the bias is unused for a layer with a bias per neuron
    /// ([`DeviceXyLayer::has_biases`]).
    pub activation: (f32, f32),
    /// GLARE's recorders (units of a row), when the layer runs with them (not for a layer
    /// with a bias per neuron).
    pub recorder: Option<RecorderStep<'b>>,
}

/// Enqueues one row-major XY layer on the listed rows (`xy_row_major_layer_g*`): the
/// outputs of a row are a deterministic function of its inputs, whatever its slot. Rows
/// are read with the layer's input width as their stride and written with its output
/// width.
pub fn launch_row_major(
    gpu: &Gpu,
    kernels: &XyKernels,
    layer: &DeviceXyLayer,
    step: RowMajorStep<'_>,
) -> Result<(), CudaError> {
    let (bias, upper) = step.activation;
    let (n_in, n_out) = (layer.in_width, layer.out_width);
    let mut recorder = step.recorder;
    let kernel = match &recorder {
        Some(_) if layer.has_biases() => return Err(glare_biases_error()),
        Some(r) => kernels.row_major_glare_kernel(layer, r.counting)?,
        None => kernels.row_major_kernel(layer)?,
    };
    let mut launch = gpu.stream().launch_builder(kernel);
    launch
        .arg(&**step.y_in)
        .arg(&mut **step.y_out)
        .arg(&**step.list)
        .arg(&**step.count)
        .arg(&mut **step.row_alive)
        .arg(&*layer.offsets)
        .arg(&*layer.inputs)
        .arg(&*layer.values)
        .arg(&layer.value_step)
        .arg(&layer.blocks)
        .arg(&n_in)
        .arg(&n_out)
        .arg(&bias)
        .arg(&upper);
    if let Some(biases) = &layer.biases {
        launch.arg(&**biases);
    }
    if let Some(r) = recorder.as_mut() {
        r.push(&mut launch);
    }
    let config = kernel.config((
        (step.capacity.max(1) as u32).div_ceil(ROW_TILE),
        n_out.div_ceil(kernel.decl().threads()),
    ))?;
    unsafe { launch.launch(config) }.context("launching xy_row_major_layer")?;
    Ok(())
}

/// Enqueues `xy_gather_rows`: `out[j][p] = y[rows[j]][perm[p]]` for every listed row
/// (`out` is `rows.len() × n`, row-major).
pub fn launch_gather_rows(
    gpu: &Gpu,
    kernels: &XyKernels,
    y: &DeviceBuffer<f32>,
    out: &mut DeviceBuffer<f32>,
    rows: &DeviceBuffer<u32>,
    n: usize,
    perm: &DeviceBuffer<u32>,
) -> Result<(), CudaError> {
    let (count_u32, n_u32) = (rows.len() as u32, n as u32);
    let mut launch = gpu.stream().launch_builder(&kernels.gather_rows);
    launch
        .arg(&**y)
        .arg(&mut **out)
        .arg(&**rows)
        .arg(&count_u32)
        .arg(&n_u32)
        .arg(&**perm);
    let config = kernels.gather_rows.config(count_u32)?;
    unsafe { launch.launch(config) }.context("launching xy_gather_rows")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_range_gives_its_layers_and_widths_or_names_the_mistake() {
        let widths = [6usize, 5, 7, 3];
        let layers: Vec<Csr> = widths
            .windows(2)
            .map(|w| Csr::from_triplets(w[0], w[1], &[(0, 0, 1.0)]).unwrap())
            .collect();
        let network = XyNetwork::prepare(&layers).unwrap();
        let (chosen, through) = layer_range(&network, &(1..3), None).unwrap();
        assert_eq!(chosen.len(), 2);
        for (i, (layer, inputs, own)) in chosen.into_iter().enumerate() {
            assert_eq!(layer, &network.layers[1 + i]);
            assert_eq!((inputs, own), (widths[1 + i], None));
        }
        assert_eq!(through, [5, 7, 3]);
        let biases: Vec<Vec<f32>> = widths[1..].iter().map(|&w| vec![-0.5; w]).collect();
        let (chosen, _) = layer_range(&network, &(1..3), Some(&biases)).unwrap();
        let own: Vec<_> = chosen.iter().map(|c| c.2.map(<[f32]>::len)).collect();
        assert_eq!(own, [Some(7), Some(3)]);
        let (none, through) = layer_range(&network, &(3..3), None).unwrap();
        assert!(none.is_empty());
        assert_eq!(through, [3]);
        let past = layer_range(&network, &(2..4), None).unwrap_err();
        assert!(
            past.to_string()
                .contains("layers 2..4 of a network of 3 layers"),
            "{past}"
        );
        let biases = vec![vec![-0.5f32; 5]; 2];
        let short = layer_range(&network, &(0..3), Some(&biases)).unwrap_err();
        assert!(
            short
                .to_string()
                .contains("2 bias vectors for an XY network of 3 layers"),
            "{short}"
        );
    }
}
