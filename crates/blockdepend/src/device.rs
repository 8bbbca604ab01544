//! The fused chain on the device: the layout resident, one launch per segment, the states
//! and final values read back and expanded.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use spdnn_cuda::cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use spdnn_cuda::memory::{MemoryModel, RowBytes};
use spdnn_cuda::method::{DeviceRun, LayerChain, MethodOptions, Probe};
use spdnn_cuda::{
    CapturedGraph, CudaError, DeviceBuffer, DriverResultExt, Gpu, GraphSpan, Kernel, KernelDecl,
    PushKernelArg,
};
use spdnn_formats::{Csr, SparseMatrix};

use crate::layout::{FormatChoice, Layout, WARP};
use crate::plan::{self, Limits, MAX_TILE, Placement, Segment, Spread};
use crate::{
    Bias, BlockDependOptions, CHAIN_GLOBAL, CHAIN_LANES, CHAIN_SHARED, CHAIN_SHARED_WIDE,
    CHAIN_SPLIT, CHAIN_SPLIT_WIDE, CHAIN_WARPS, Chain, Compression, Expansion, Retire,
    SPREAD_CHAIN, SPREAD_CHAIN_WIDE, SPREAD_SPLIT, SPREAD_SPLIT_WIDE, for_formats, plan_kernels,
    spread_kernel, tile_kernel,
};

/// Stage names of the profiled run: one per launch, in order (a chain cut more often than
/// this reports its later launches under the last name).
const STAGES: [&str; 16] = [
    "launch 1",
    "launch 2",
    "launch 3",
    "launch 4",
    "launch 5",
    "launch 6",
    "launch 7",
    "launch 8",
    "launch 9",
    "launch 10",
    "launch 11",
    "launch 12",
    "launch 13",
    "launch 14",
    "launch 15",
    "launch 16+",
];

/// Global memory the scratch tiles may take: this share of the free memory.
const SCRATCH_SHARE: usize = 4;

/// An upload that ran out of memory, said plainly.
fn resident_error(e: CudaError, what: &str) -> CudaError {
    match e {
        CudaError::OutOfMemory { requested, free } => CudaError::InvalidArgument(format!(
            "blockdepend keeps {what} resident on the GPU: {requested} bytes did not fit \
             ({free} free); run a smaller batch, compress the network, or use a GPU with more memory"
        )),
        other => other,
    }
}

fn invalid(message: impl std::fmt::Display) -> CudaError {
    CudaError::InvalidArgument(format!("blockdepend: {message}"))
}

/// The fused kernel's eleven instances, with their names in the details, in the order the
/// details list them.
const INSTANCES: [(&str, &KernelDecl); 11] = [
    ("shared", &CHAIN_SHARED),
    ("wide", &CHAIN_SHARED_WIDE),
    ("split", &CHAIN_SPLIT),
    ("split wide", &CHAIN_SPLIT_WIDE),
    ("global", &CHAIN_GLOBAL),
    ("lanes", &CHAIN_LANES),
    ("warps", &CHAIN_WARPS),
    ("spread", &SPREAD_CHAIN),
    ("spread wide", &SPREAD_CHAIN_WIDE),
    ("spread split", &SPREAD_SPLIT),
    ("spread split wide", &SPREAD_SPLIT_WIDE),
];

/// The instances a run loaded: those its launches use, and `bd_chain_shared`, whose static
/// shared memory is an input of the plan. Each is compiled alone (its own module).
struct Kernels {
    loaded: Vec<(&'static str, Kernel)>,
}

impl Kernels {
    /// `shared` and the instances `segments` launch, compiled for the layer formats
    /// `formats` ([`for_formats`]) side by side on worker threads.
    fn load(
        gpu: &Gpu,
        shared: Kernel,
        segments: &[Segment],
        formats: u32,
    ) -> Result<Self, CudaError> {
        let wanted: Vec<KernelDecl> = plan_kernels(segments)
            .into_iter()
            .map(|decl| for_formats(decl, formats))
            .collect();
        gpu.compile_ahead(&wanted);
        let mut loaded = Vec::new();
        for (name, decl) in INSTANCES {
            if decl.name == CHAIN_SHARED.name {
                loaded.push((name, shared.clone()));
            } else if let Some(wanted) = wanted.iter().find(|w| w.name == decl.name) {
                loaded.push((name, gpu.kernel(wanted)?));
            }
        }
        Ok(Self { loaded })
    }

    fn find(&self, decl: &KernelDecl) -> Result<&Kernel, CudaError> {
        self.loaded
            .iter()
            .map(|(_, kernel)| kernel)
            .find(|kernel| kernel.decl().name == decl.name)
            .ok_or_else(|| invalid(format!("{} is not loaded for this plan", decl.name)))
    }

    /// The loaded instance that runs a segment's tiles.
    fn of(&self, segment: &Segment) -> Result<&Kernel, CudaError> {
        self.find(tile_kernel(segment))
    }

    /// The loaded instance that spreads a segment's rows, if it spreads them.
    fn spread_of(&self, segment: &Segment) -> Result<Option<&Kernel>, CudaError> {
        spread_kernel(segment)
            .map(|decl| self.find(decl))
            .transpose()
    }

    /// The loaded instances that take dynamic shared memory (all but the global one).
    fn with_shared(&self) -> impl Iterator<Item = &Kernel> {
        self.loaded
            .iter()
            .map(|(_, kernel)| kernel)
            .filter(|kernel| kernel.decl().name != CHAIN_GLOBAL.name)
    }

    /// `per_instance(kernel)` of every loaded instance, as the details list them
    /// (`shared 70 / wide 70 / …`).
    fn each(&self, per_instance: impl Fn(&Kernel) -> i32) -> String {
        self.loaded
            .iter()
            .map(|(name, kernel)| format!("{name} {}", per_instance(kernel)))
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

/// Blocks of `kernel` (with `dynamic` bytes of dynamic shared memory a block) resident on
/// one SM.
fn blocks_per_sm(kernel: &Kernel, dynamic: usize) -> Result<usize, CudaError> {
    let blocks = kernel
        .occupancy_max_active_blocks_per_multiprocessor(kernel.decl().threads(), dynamic, None)
        .context(&format!("querying {}'s occupancy", kernel.decl().name))?;
    Ok(blocks as usize)
}

/// One launch as the device runs it (two kernels when it spreads).
pub(crate) struct Launch {
    segment: Segment,
    /// Blocks of the persistent grid.
    grid: u32,
    /// Blocks of the spread kernel's grid (all resident; 0 when it does not spread).
    spread_grid: u32,
}

impl Launch {
    /// Rows a spread launch runs spread (more run as tiles): a chunk a block.
    fn spread_rows(&self) -> usize {
        match self.segment.spread {
            Spread::Spread => self.spread_grid as usize * self.segment.spread_chunk(),
            Spread::Tiles => 0,
        }
    }

    /// Floats of its spread buffers (two of `spread_rows` rows).
    fn spread_floats(&self) -> usize {
        2 * self.spread_rows() * self.segment.stride
    }
}

/// What a launch asked of the device, for the message when the driver refuses it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LaunchShape {
    /// 0-based launch index.
    pub index: usize,
    /// The kernel's name.
    pub kernel: &'static str,
    /// Layers it covers, as stages name them.
    pub layers: String,
    pub grid: u32,
    pub threads: u32,
    /// Dynamic shared memory of a block, bytes.
    pub dynamic: usize,
    /// The kernel's static shared memory, bytes.
    pub static_shared: usize,
    /// What the device allows a block with the opt-in, bytes (static included).
    pub limit: usize,
}

impl LaunchShape {
    /// The message for a launch the driver refused with `cause`: what was asked, what the
    /// device allows, and what to try.
    pub(crate) fn refusal(&self, cause: &dyn std::fmt::Display) -> String {
        let mut message = format!(
            "launch {} ({} for layers {}) was refused: {} blocks × {} threads",
            self.index + 1,
            self.kernel,
            self.layers,
            self.grid,
            self.threads
        );
        if self.dynamic > 0 {
            message.push_str(&format!(
                " with {} bytes of dynamic shared memory a block (+{} static; the device allows \
                 {} with the opt-in). A tool that keeps shared memory for itself (e.g. \
                 compute-sanitizer racecheck) can leave too little: try a smaller --bd-tile, or \
                 --bd-placement global",
                self.dynamic, self.static_shared, self.limit
            ));
        }
        message.push_str(&format!(" ({cause})"));
        message
    }
}

/// The layout on the device.
struct DeviceLayout {
    desc: DeviceBuffer<u32>,
    dense: DeviceBuffer<f32>,
    ell: DeviceBuffer<[u32; 2]>,
    group_starts: DeviceBuffer<u32>,
    w1_offsets: DeviceBuffer<u32>,
    w1_entries: DeviceBuffer<[u32; 2]>,
    /// Per-neuron biases of every layer (one placeholder with one bias for all).
    biases: DeviceBuffer<f32>,
}

/// How a loaded batch lies on the device: the kernels' `x_form` (`BD_INPUT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputForm {
    /// CSR with its values.
    Values,
    /// CSR columns only: every value is 1.
    Columns,
    /// Every value is 1, one bit an input: [`bitmap`]'s words in place of the columns, for a
    /// launch 1 that counts a folded layer 1's bins from them ([`counts_bins`]).
    Bitmap,
}

impl InputForm {
    /// The code the kernels read.
    pub(crate) const fn code(self) -> u32 {
        match self {
            Self::Values => 0,
            Self::Columns => 1,
            Self::Bitmap => 2,
        }
    }

    /// The form `input` (`binary`: every value is 1) is loaded in: a bitmap where launch 1
    /// counts bins from one (`counts_bins`) and it is no larger than the columns, else a CSR.
    /// The planner takes the same smaller of [`input_bytes`] and [`bitmap_bytes`] ([`model`]'s
    /// `binary_input`).
    fn of(input: &Csr, binary: bool, counts_bins: bool) -> Self {
        let (rows, nnz) = (input.nrows(), input.nnz());
        if !binary {
            Self::Values
        } else if counts_bins && bitmap_bytes(rows, input.ncols()) <= input_bytes(rows, nnz, true) {
            Self::Bitmap
        } else {
            Self::Columns
        }
    }

    fn describe(self, ncols: usize) -> String {
        match self {
            Self::Values => "CSR with values".into(),
            Self::Columns => "CSR columns (every value 1)".into(),
            Self::Bitmap => format!(
                "bitmap, {} words a row (every value 1; layer 1's bins counted from it)",
                bitmap_words(ncols)
            ),
        }
    }
}

/// Words of a bitmap row of `ncols` inputs: ⌈ncols / 32⌉.
fn bitmap_words(ncols: usize) -> usize {
    ncols.div_ceil(32)
}

/// The rows of `input` as a bitmap (its values taken as 1): [`bitmap_words`] words a row,
/// input `k` of a row at bit `k % 32` of its word `k / 32`.
pub(crate) fn bitmap(input: &Csr) -> Vec<u32> {
    use rayon::prelude::*;
    let words = bitmap_words(input.ncols());
    let mut bits = vec![0u32; input.nrows() * words];
    if words > 0 {
        bits.par_chunks_mut(words).enumerate().for_each(|(r, row)| {
            for &k in input.row(r).0 {
                row[k as usize / 32] |= 1 << (k % 32);
            }
        });
    }
    bits
}

/// Device bytes of a batch of `rows` rows of `ncols` inputs loaded as a bitmap: its words
/// (one when none) and the placeholders of the offsets and the values.
pub(crate) fn bitmap_bytes(rows: usize, ncols: usize) -> usize {
    4 * (rows * bitmap_words(ncols)).max(1) + 4 + 4
}

/// The loaded batch of input rows: CSR, or a bitmap in place of its columns.
struct Input {
    rows: usize,
    form: InputForm,
    /// The row offsets; one placeholder for a bitmap.
    offsets: DeviceBuffer<u32>,
    /// The columns, or the bitmap's words.
    cols: DeviceBuffer<u32>,
    /// The values; one placeholder when every value is 1.
    vals: DeviceBuffer<f32>,
}

impl Input {
    /// Whether a batch of `rows` rows in `form`, `cols` words of columns or bitmap and `vals`
    /// values, can be copied into these buffers in place (the row count too: the launches
    /// take it, and a captured graph holds it).
    fn holds(&self, rows: usize, form: InputForm, cols: usize, vals: usize) -> bool {
        self.rows == rows
            && self.form == form
            && self.cols.len() >= cols
            && (form != InputForm::Values || self.vals.len() >= vals)
    }
}

/// How the timed passes enqueue a run: the queues' memset and every launch captured once as
/// a CUDA graph and replayed with one call, or enqueued call by call.
enum Replay {
    /// Call by call (`BlockDependOptions::graph` off, or the capture failed: why).
    Calls(Option<String>),
    /// The graph of the loaded batch, captured when the batch was loaded into new buffers
    /// or with a new row count (its launches hold the buffers' addresses and the rows).
    Graph(Option<CapturedGraph>),
}

/// The graph's span ([`GraphSpan`]: the events its first and last nodes record) and the
/// replays' spans read so far. A replay's span is read at the next load (untimed) or in the
/// details.
struct ReplaySpans {
    span: GraphSpan,
    /// Whether the last replay's span is still to be read.
    pending: bool,
    read_ms: Vec<f64>,
}

impl ReplaySpans {
    /// Reads the last replay's span if it is still to be read.
    fn read(&mut self) -> Result<(), CudaError> {
        if std::mem::take(&mut self.pending) {
            self.read_ms.push(self.span.elapsed_ms()?);
        }
        Ok(())
    }

    /// The spans read so far, and the last one if it is still to be read: their median and
    /// the fastest, or `None` without a replay (or when the last one cannot be read).
    fn summary(&self) -> Option<String> {
        let mut spans = self.read_ms.clone();
        if self.pending {
            spans.push(self.span.elapsed_ms().ok()?);
        }
        spans.sort_by(f64::total_cmp);
        let median = *spans.get(spans.len() / 2)?;
        Some(format!(
            "median {median:.4} of {} replays, fastest {:.4}: the GPU from the graph's first node \
             to its last (the bench's events add the host's enqueue of the graph)",
            spans.len(),
            spans[0]
        ))
    }
}

/// Everything one BlockDepend run keeps on the device.
pub(crate) struct BdRun<'g> {
    gpu: &'g Gpu,
    kernels: Kernels,
    expansion: Expansion,
    launches: Vec<Launch>,
    layout: DeviceLayout,
    input: Option<Input>,
    capacity: usize,
    loaded: usize,
    state: DeviceBuffer<u8>,
    out: DeviceBuffer<f32>,
    out_width: usize,
    carry_ids: [DeviceBuffer<u32>; 2],
    carry_vals: [DeviceBuffer<f32>; 2],
    /// `[queue of each launch | rows entering each launch (and one more: the rows the last
    /// one appends) | barrier of each launch]`.
    counters: DeviceBuffer<u32>,
    scratch: DeviceBuffer<f32>,
    /// The spread launches' two buffers of rows (`2 · spread_rows · stride` floats) and their
    /// flag words (`3 · spread_rows`).
    spread_vals: DeviceBuffer<f32>,
    spread_flags: DeviceBuffer<u32>,
    bias: f32,
    /// Floats per layer of the per-neuron biases (0: the scalar `bias` for every neuron).
    bias_stride: u32,
    upper: f32,
    suffix_start: u32,
    details: Vec<(String, String)>,
    /// Rows entering each launch in the last run read back.
    entered: Vec<u32>,
    /// The device's shared memory a block with the opt-in, and the kernel's static part.
    limits: Limits,
    replay: Replay,
    /// With a graph: its span and the replays' spans.
    spans: Option<ReplaySpans>,
    /// Whether launch 1 counts a folded layer 1's bins from a bitmap where the batch is binary
    /// (`BlockDependOptions::input_bitmap`, [`counts_bins`]).
    bitmap: bool,
}

/// Whether `launches` begin with a launch of layer 1 a row a lane (`bd_lanes_fold` folds it
/// there when its rows repeat).
fn lanes_first(launches: &[Launch]) -> bool {
    launches
        .first()
        .is_some_and(|l| l.segment.first == 0 && l.segment.placement == Placement::Lanes)
}

/// Whether launch 1 of `launches` can count layer 1's bins from a bitmap
/// (`bd_lanes_bins_bitmap`): it runs a row a lane, and `layout`'s layer 1 folds into a power
/// of two from 32 to 1024 bins (32 inputs a lane, 1024 a warp: whole periods).
fn counts_bins(layout: &Layout, launches: &[Launch]) -> bool {
    let width = layout.first.width;
    lanes_first(launches)
        && layout.first.fold_table != 0
        && width.is_power_of_two()
        && (WARP..=WARP * WARP).contains(&width)
}

/// Elements of every buffer a run allocates beside the layout and the loaded input, for
/// batches of up to `capacity` rows ([`sizes`]): the one source of the sizes
/// for [`BdRun::prepare`]'s allocations and for the memory model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sizes {
    /// `u8`: each row's state.
    pub state: usize,
    /// `f32`: the final values, rows × the output width.
    pub out: usize,
    /// `u32`, each of two: the rows carried between launches.
    pub carry_ids: usize,
    /// `f32`, each of two: their values.
    pub carry_vals: usize,
    /// `u32`: queues, entry counts and barriers of the launches.
    pub counters: usize,
    /// `f32`: the tiles placed in global memory.
    pub scratch: usize,
    /// `f32`: the spread launches' two buffers of rows.
    pub spread_vals: usize,
    /// `u32`: their flag words.
    pub spread_flags: usize,
}

impl Sizes {
    /// Device bytes of the buffers.
    pub(crate) fn bytes(&self) -> usize {
        self.state
            + 4 * self.out
            + 2 * 4 * self.carry_ids
            + 2 * 4 * self.carry_vals
            + 4 * self.counters
            + 4 * self.scratch
            + 4 * self.spread_vals
            + 4 * self.spread_flags
    }
}

/// Device bytes of the layout's arrays as [`BdRun::prepare`] uploads them (one element for
/// an empty array).
pub(crate) fn layout_bytes(layout: &Layout) -> usize {
    use spdnn_cuda::memory::nonempty_bytes;
    nonempty_bytes::<u32>(layout.descriptors().len())
        + nonempty_bytes::<f32>(layout.dense.len())
        + nonempty_bytes::<[u32; 2]>(layout.ell.len())
        + nonempty_bytes::<u32>(layout.group_starts.len())
        + nonempty_bytes::<u32>(layout.first.offsets.len())
        + nonempty_bytes::<[u32; 2]>(layout.first.device_units().len())
        + nonempty_bytes::<f32>(layout.biases.len())
}

/// Device bytes of a loaded batch of `rows` rows and `nnz` nonzeros ([`BdRun`]'s `load`):
/// the offsets, the columns (one when empty) and the values (one when every value is 1). A
/// binary batch loaded as a bitmap takes at most this ([`bitmap_bytes`]; `load` picks it only
/// then, and the model says when it may: `MemoryModel::binary_input`).
pub(crate) fn input_bytes(rows: usize, nnz: usize, binary: bool) -> usize {
    4 * (rows + 1) + 4 * nnz.max(1) + if binary { 4 } else { 4 * nnz.max(1) }
}

/// Sizes `segments` for the device: each launch's persistent grid (`sms` SMs, `per_sm`
/// blocks of a segment's kernel resident on one, `spread` for its spread kernel), its tile
/// and grid shrunk so that the tiles in global memory take at most a quarter of `free`
/// bytes, and its spread grid (tiles instead when the spread buffers would take more than a
/// quarter of `free`, or no spread block fits). `grid_blocks`, when given, caps both grids
/// (a cooperative launch needs its blocks resident, not every resident block). Returns the
/// launches and the floats of global scratch.
pub(crate) fn size_launches(
    segments: Vec<Segment>,
    sms: usize,
    grid_blocks: Option<usize>,
    free: usize,
    mut per_sm: impl FnMut(&Segment, bool) -> Result<usize, CudaError>,
) -> Result<(Vec<Launch>, usize), CudaError> {
    let cap = grid_blocks.unwrap_or(usize::MAX);
    let mut launches = Vec::with_capacity(segments.len());
    let mut scratch_floats = 0usize;
    for mut segment in segments {
        let mut blocks = per_sm(&segment, false)?;
        if segment.placement == Placement::Warps {
            blocks = blocks.min(plan::WARPS_BLOCKS_PER_SM);
        }
        if blocks == 0 {
            return Err(invalid(format!(
                "no block of layers {} fits an SM ({} bytes of dynamic shared memory)",
                segment.label(),
                4 * segment.shared_floats()
            )));
        }
        let mut grid = (sms * blocks).min(cap);
        if segment.scratch_floats() > 0 {
            // Scratch for every block: shrink the tile, then the grid, to a share of the
            // free memory (a smaller split tile only needs less shared memory).
            let budget = free / SCRATCH_SHARE / 4;
            while segment.tile > 1 && grid * segment.scratch_floats() > budget {
                segment.tile = segment.tile.div_ceil(2);
            }
            while grid > 1 && grid * segment.scratch_floats() > budget {
                grid = grid.div_ceil(2);
            }
            scratch_floats = scratch_floats.max(grid * segment.scratch_floats());
        }
        // The spread kernel's grid: every block resident (a cooperative launch), or the cap.
        let spread_grid = match segment.spread {
            Spread::Spread if segment.placement != Placement::Global => {
                (sms * per_sm(&segment, true)?).min(cap)
            }
            _ => 0,
        };
        let mut launch = Launch {
            segment,
            grid: grid.clamp(1, i32::MAX as usize) as u32,
            spread_grid: spread_grid.min(i32::MAX as usize) as u32,
        };
        // The spread buffers take a share of the free memory too; a launch whose buffers
        // would not fit, or whose spread kernel fits no block, runs its tiles.
        if spread_grid == 0 || launch.spread_floats() > free / SCRATCH_SHARE / 4 {
            launch.segment.spread = Spread::Tiles;
            launch.spread_grid = 0;
        }
        launches.push(launch);
    }
    Ok((launches, scratch_floats))
}

/// What the host prepares for a chain, whatever the device: the chain as the kernels run
/// it (compressed, retirement proved) reduced to what a run keeps of it, and its layout.
pub(crate) struct Host {
    layout: Layout,
    expansion: Expansion,
    suffix_start: Option<usize>,
    compression: Compression,
    retire: Retire,
    compress_ms: f64,
    retire_ms: f64,
    /// The chain's and the layout's preparation, ms (the first time, when memoized).
    preprocess_ms: f64,
}

/// What identifies a [`Host`]: the contents of the layers and biases (xxh3 of every
/// array), the bias and bound's bits, and the options that change the preparation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HostKey {
    layers: u64,
    biases: u64,
    bias: u32,
    upper: u32,
    compress: bool,
    retire: bool,
    format: FormatChoice,
}

impl HostKey {
    fn of(chain: &LayerChain<'_>, options: &BlockDependOptions) -> Self {
        use rayon::prelude::*;
        use xxhash_rust::xxh3::Xxh3;
        let combine = |parts: Vec<u64>| {
            let mut sum = Xxh3::new();
            sum.update(&(parts.len() as u64).to_le_bytes());
            for part in parts {
                sum.update(&part.to_le_bytes());
            }
            sum.digest()
        };
        let layers = chain.layers.par_iter().map(|w| w.content_hash()).collect();
        let biases = chain.biases.map_or(Vec::new(), |b| {
            b.par_iter()
                .map(|v| xxhash_rust::xxh3::xxh3_64(bytemuck::cast_slice(v)))
                .collect()
        });
        Self {
            layers: combine(layers),
            biases: combine(biases),
            bias: chain.bias.to_bits(),
            upper: chain.upper.to_bits(),
            compress: options.compress,
            retire: options.retire,
            format: options.format,
        }
    }
}

impl Host {
    /// Compresses `chain`, proves the retirement and lays it out.
    fn build(chain: &LayerChain<'_>, options: &BlockDependOptions) -> Result<Self, CudaError> {
        let bias = match chain.biases {
            Some(biases) => Bias::PerNeuron(biases),
            None if chain.bias.is_finite() && chain.bias < 0.0 => Bias::One(chain.bias),
            None => {
                return Err(invalid(format!(
                    "the bias must be negative and finite, got {}",
                    chain.bias
                )));
            }
        };
        if !(chain.upper.is_finite() && chain.upper > 0.0) {
            return Err(invalid(format!(
                "the upper bound must be positive and finite, got {}",
                chain.upper
            )));
        }
        options.validate().map_err(invalid)?;
        let started = Instant::now();
        let network = Chain::build(
            chain.layers,
            bias,
            chain.upper,
            options.compress,
            options.retire,
        )
        .map_err(invalid)?;
        let layout = Layout::build(&network, options.format).map_err(invalid)?;
        Ok(Self {
            layout,
            expansion: network.expansion(),
            suffix_start: network.suffix_start(),
            compression: network.compression().clone(),
            retire: network.retire().clone(),
            compress_ms: network.compress_ms(),
            retire_ms: network.retire_ms(),
            preprocess_ms: started.elapsed().as_secs_f64() * 1e3,
        })
    }

    /// [`Self::build`], or the last one built when `chain` and `options` are the same (the
    /// planner's model and `prepare` then compress once; GPUs of one run share it). One
    /// chain is kept, until another is asked for.
    pub(crate) fn shared(
        chain: &LayerChain<'_>,
        options: &BlockDependOptions,
    ) -> Result<Arc<Self>, CudaError> {
        static LAST: Mutex<Option<(HostKey, Arc<Host>)>> = Mutex::new(None);
        let key = HostKey::of(chain, options);
        // Held while building: a second GPU's thread waits for the first's preparation.
        let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((k, host)) = last.as_ref()
            && *k == key
        {
            return Ok(host.clone());
        }
        *last = None;
        let host = Arc::new(Self::build(chain, options)?);
        *last = Some((key, host.clone()));
        Ok(host)
    }
}

/// What a run prepares before it allocates anything: the chain as the kernels run it
/// (compressed, retirement proved), its layout, the kernels, and the launches sized for the
/// device and for the free memory it sees (under a budget, the budget's). The memory model
/// ([`Preparation::model`]) and [`BdRun::prepare`]'s allocations both take their sizes from
/// here ([`sizes`]).
pub(crate) struct Preparation {
    host: Arc<Host>,
    kernels: Kernels,
    launches: Vec<Launch>,
    scratch_floats: usize,
    limits: Limits,
    /// Whether launch 1 counts a folded layer 1's bins from a bitmap where the batch is binary
    /// (`BlockDependOptions::input_bitmap`, [`counts_bins`]): `load` then picks the bitmap
    /// where it is no larger than the columns ([`InputForm::of`]).
    bitmap: bool,
}

impl Preparation {
    pub(crate) fn build(
        gpu: &Gpu,
        chain: &LayerChain<'_>,
        options: &BlockDependOptions,
    ) -> Result<Self, CudaError> {
        // bd_chain_shared's static shared memory is an input of the plan: its module, for
        // the layers' formats, compiles while the cuts are chosen (the host's preprocessing
        // time leaves the wait out: it does not wait for a module).
        let host = Host::shared(chain, options)?;
        let layout = &host.layout;
        let formats = options.kernel_formats.set(layout.formats());
        let shared_decl = for_formats(&CHAIN_SHARED, formats);
        gpu.compile_ahead([&shared_decl]);
        // The cuts are checked before anything waits on the compiler.
        plan::cut_points(layout.layers.len(), options.cuts.as_deref()).map_err(invalid)?;

        let shared = gpu.kernel(&shared_decl)?;
        let static_shared = shared
            .shared_size_bytes()
            .context("querying bd_chain_shared's static shared memory")?
            .max(0) as usize;
        let limits = Limits {
            shared_per_block: gpu.attribute_count(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            shared_per_sm: gpu.attribute_count(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            )?,
            reserved_per_block: gpu.attribute_count(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
            )?,
            static_shared,
            // The narrow blocks an SM the compiled kernel's registers allow (its static
            // shared memory too; the tile's dynamic memory is what the plan sizes).
            narrow_blocks: blocks_per_sm(&shared, 0)?,
            bulk_copies: gpu.attribute_count(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            )? >= 9,
        };
        let mut segments = plan::launches(
            layout,
            &limits,
            options.cuts.as_deref(),
            options.placement,
            options.tile_rows,
        )
        .map_err(invalid)?;
        plan::choose_items(&mut segments, options.items);
        plan::choose_spread(&mut segments, layout, options.spread);
        let kernels = Kernels::load(gpu, shared, &segments, formats)?;

        // Opt in to all the dynamic shared memory the device allows a block (at least the
        // largest shared tile's), then size each grid to the blocks that stay resident. The
        // attribute belongs to the loaded function, which every run in the process shares:
        // a run opting in to only its own largest tile would refuse another thread's run
        // that needs more (seen with two GPU tests at a time).
        let sms = gpu
            .attribute_count(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
            .max(1);
        for kernel in kernels.with_shared() {
            let max_dynamic = segments
                .iter()
                .filter(|s| {
                    let name = kernel.decl().name;
                    tile_kernel(s).name == name || spread_kernel(s).is_some_and(|d| d.name == name)
                })
                .map(|s| 4 * s.shared_floats())
                .max()
                .unwrap_or(0);
            if max_dynamic > 0 {
                let allowed = limits
                    .shared_per_block
                    .saturating_sub(limits.static_shared)
                    .max(max_dynamic);
                kernel
                    .set_attribute(
                        CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        allowed as i32,
                    )
                    .map_err(|e| {
                        invalid(format!(
                            "opting {} into {max_dynamic} bytes of dynamic shared memory a block \
                             (+{} static; the device allows {}) failed ({e}); try a smaller \
                             --bd-tile, or --bd-placement global",
                            kernel.decl().name,
                            limits.static_shared,
                            limits.shared_per_block
                        ))
                    })?;
            }
        }
        let free = gpu.memory()?.free;
        let (launches, scratch_floats) = size_launches(
            segments,
            sms,
            options.grid_blocks,
            free,
            |segment, spread| {
                let kernel = if spread {
                    kernels.spread_of(segment)?
                } else {
                    Some(kernels.of(segment)?)
                };
                match kernel {
                    Some(kernel) => blocks_per_sm(kernel, 4 * segment.shared_floats()),
                    None => Ok(0),
                }
            },
        )?;
        let bitmap = options.input_bitmap && counts_bins(layout, &launches);
        Ok(Self {
            host,
            kernels,
            launches,
            scratch_floats,
            limits,
            bitmap,
        })
    }

    /// The memory model ([`model`]).
    pub(crate) fn model(&self) -> MemoryModel {
        let expansion = &self.host.expansion;
        model(
            &self.launches,
            self.scratch_floats,
            expansion.output_width(),
            &self.host.layout,
            self.bitmap.then_some(expansion.input_width()),
        )
    }
}

/// The memory model of a run of `launches` over `layout`: [`sizes`] per row and fixed, the
/// layout's bytes (one entry: the layers share their arrays), resident; exact. The loaded
/// input is the planner's to add: [`input_bytes`], or for a binary batch where launch 1
/// counts bins from a bitmap of `bitmap_width` inputs a row, the smaller of that and
/// [`bitmap_bytes`] ([`MemoryModel::binary_input`]; [`InputForm::of`] picks the same).
pub(crate) fn model(
    launches: &[Launch],
    scratch_floats: usize,
    out_width: usize,
    layout: &Layout,
    bitmap_width: Option<usize>,
) -> MemoryModel {
    let (per_row, fixed) =
        spdnn_cuda::memory::linear(|rows| sizes(launches, scratch_floats, out_width, rows).bytes());
    MemoryModel {
        per_row,
        layers: vec![layout_bytes(layout)],
        fixed,
        streaming: false,
        exact: true,
        binary_input: bitmap_width.map(|width| RowBytes::of(|rows| bitmap_bytes(rows, width))),
    }
}

/// The buffers of a run of `launches` (`scratch_floats` of global tiles, final values of
/// `out_width`) for batches of up to `rows` rows.
pub(crate) fn sizes(
    launches: &[Launch],
    scratch_floats: usize,
    out_width: usize,
    rows: usize,
) -> Sizes {
    let capacity = rows.max(1);
    let carry_floats = launches
        .iter()
        .map(|l| l.segment.carry_out)
        .max()
        .unwrap_or(0);
    let carry_rows = if carry_floats > 0 { capacity } else { 1 };
    Sizes {
        state: capacity,
        out: (capacity * out_width).max(1),
        carry_ids: carry_rows,
        carry_vals: (carry_rows * carry_floats).max(1),
        counters: 3 * launches.len() + 1,
        scratch: scratch_floats.max(1),
        spread_vals: launches
            .iter()
            .map(Launch::spread_floats)
            .max()
            .unwrap_or(0)
            .max(1),
        spread_flags: (3 * launches.iter().map(Launch::spread_rows).max().unwrap_or(0)).max(1),
    }
}

/// How layer 1 is scattered, for the `formats` detail: from scaled entries (integer sums on
/// binary input) or pairs (empty), and whether its rows repeat and are folded (`lanes_first`:
/// layer 1 runs a row a lane, where bd_lanes_fold folds it).
fn first_layer_form(layout: &Layout, lanes_first: bool) -> String {
    let Some(scaled) = &layout.first.scaled else {
        return String::new();
    };
    let width = layout.first.width;
    let fold = match &scaled.fold {
        Some(fold) if lanes_first => {
            format!(
                "; folded into {width} bins, {} slots, on binary input",
                fold.len()
            )
        }
        Some(fold) => format!(
            "; its rows repeat every {width} inputs, {} slots, folded only a row a lane",
            fold.len()
        ),
        None => String::new(),
    };
    format!(" from scaled entries (integer sums on binary input{fold})")
}

/// The circulant layers of `layout`, counted from 1, in runs (`2-8 12`), or `None`.
fn circulant_layers(layout: &Layout) -> Option<String> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for l in layout.circulant_layers() {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == l => *end = l,
            _ => runs.push((l, l)),
        }
    }
    (!runs.is_empty()).then(|| {
        runs.iter()
            .map(|&(first, last)| plan::layers_label(first, last))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

impl<'g> BdRun<'g> {
    pub(crate) fn prepare(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &BlockDependOptions,
    ) -> Result<Self, CudaError> {
        let Preparation {
            host,
            kernels,
            launches,
            scratch_floats,
            limits,
            bitmap,
        } = Preparation::build(gpu, chain, options)?;
        let layout = &host.layout;
        let capacity = rows.max(1);
        let stride_max = launches
            .iter()
            .map(|l| l.segment.stride)
            .max()
            .unwrap_or(WARP);
        if stride_max.saturating_mul(MAX_TILE) > u32::MAX as usize
            // The queue counts past the rows by at most a tile per block.
            || capacity.saturating_add(1 << 24) > u32::MAX as usize
        {
            return Err(invalid(format!(
                "{capacity} rows of up to {stride_max} activations are too large to index"
            )));
        }
        let out_width = host.expansion.output_width();
        let sizes = sizes(&launches, scratch_floats, out_width, capacity);

        let weights = |e| resident_error(e, "every layer's weights");
        // `[u32; 2]` units are eight plain bytes, read by the kernel as `uint2` pairs or as
        // packed 16- or 32-bit indices (little-endian, as the device).
        let device_layout = DeviceLayout {
            desc: gpu
                .upload_nonempty(&layout.descriptors())
                .map_err(weights)?,
            dense: gpu.upload_nonempty(&layout.dense).map_err(weights)?,
            ell: gpu.upload_nonempty(&layout.ell).map_err(weights)?,
            group_starts: gpu.upload_nonempty(&layout.group_starts).map_err(weights)?,
            w1_offsets: gpu
                .upload_nonempty(&layout.first.offsets)
                .map_err(weights)?,
            w1_entries: gpu
                .upload_nonempty(layout.first.device_units())
                .map_err(weights)?,
            biases: gpu.upload_nonempty(&layout.biases).map_err(weights)?,
        };
        let alloc_f32 = |n: usize, what: &str| {
            gpu.alloc_zeros::<f32>(n)
                .map_err(|e| resident_error(e, what))
        };
        let carried = "the rows carried between launches";
        let mut run = Self {
            gpu,
            layout: device_layout,
            input: None,
            capacity,
            loaded: 0,
            state: gpu.alloc_zeros::<u8>(sizes.state)?,
            out: alloc_f32(sizes.out, "the final values")?,
            out_width,
            carry_ids: [
                gpu.alloc_zeros::<u32>(sizes.carry_ids)?,
                gpu.alloc_zeros::<u32>(sizes.carry_ids)?,
            ],
            carry_vals: [
                alloc_f32(sizes.carry_vals, carried)?,
                alloc_f32(sizes.carry_vals, carried)?,
            ],
            counters: gpu.alloc_zeros::<u32>(sizes.counters)?,
            scratch: alloc_f32(sizes.scratch, "the tiles in global memory")?,
            spread_vals: alloc_f32(sizes.spread_vals, "the spread launches' rows")?,
            spread_flags: gpu.alloc_zeros::<u32>(sizes.spread_flags)?,
            bias: chain.bias,
            bias_stride: layout.bias_stride as u32,
            upper: chain.upper,
            suffix_start: host
                .suffix_start
                .map_or(u32::MAX, |s| s.min(u32::MAX as usize) as u32),
            details: Vec::new(),
            entered: Vec::new(),
            limits,
            replay: if options.graph {
                Replay::Graph(None)
            } else {
                Replay::Calls(None)
            },
            spans: options
                .graph
                .then(|| gpu.graph_span())
                .transpose()?
                .map(|span| ReplaySpans {
                    span,
                    pending: false,
                    read_ms: Vec::new(),
                }),
            bitmap,
            launches,
            kernels,
            expansion: host.expansion.clone(),
        };
        run.details = run.describe(&host);
        Ok(run)
    }

    fn describe(&self, host: &Host) -> Vec<(String, String)> {
        let layout = &host.layout;
        let (_, dense, ell) = layout.format_counts();
        let compression = match &host.compression {
            Compression::Off => "off".to_string(),
            Compression::Identity => "identity (no classes)".to_string(),
            Compression::Compressed {
                width_ratio,
                nnz_ratio,
            } => format!("widths ×{width_ratio:.2}, entries ×{nnz_ratio:.2}"),
            Compression::FellBack { reason } => format!("fell back: {reason}"),
        };
        let retire = match &host.retire {
            Retire::Off => "off".to_string(),
            Retire::Proved { suffix_start } => format!("after {suffix_start} layers"),
            Retire::None { reason } => format!("none: {reason}"),
        };
        let widths: Vec<usize> = layout.layers.iter().map(|l| l.out_width).collect();
        let (min_w, max_w) = (
            widths.iter().copied().min().unwrap_or(0),
            widths.iter().copied().max().unwrap_or(0),
        );
        let launches: Vec<String> = self
            .launches
            .iter()
            .map(|l| {
                format!(
                    "{}:{}{}×{}@{}x{}",
                    l.segment.label(),
                    l.segment.placement.name(),
                    match l.segment.spread {
                        Spread::Spread => "+spread",
                        Spread::Tiles => "",
                    },
                    l.segment.tile,
                    l.grid,
                    l.segment.threads
                )
            })
            .collect();
        let lanes_first = lanes_first(&self.launches);
        let regs = |k: &Kernel| k.num_regs().map_or(-1, |r| r);
        let local = |k: &Kernel| k.local_size_bytes().map_or(-1, |r| r);
        vec![
            (
                "preprocessing_ms".into(),
                format!("{:.1}", host.preprocess_ms),
            ),
            ("compress_ms".into(), format!("{:.1}", host.compress_ms)),
            ("retire_ms".into(), format!("{:.1}", host.retire_ms)),
            ("compression".into(), compression),
            ("retirement".into(), retire),
            (
                "biases".into(),
                if layout.bias_stride == 0 {
                    "one for every neuron".to_string()
                } else {
                    format!(
                        "per neuron ({} floats a layer, padding 0)",
                        layout.bias_stride
                    )
                },
            ),
            ("widths".into(), format!("{min_w}..{max_w}")),
            (
                "formats".into(),
                format!(
                    "{dense} dense, {ell} ell ({} scaled: multiples of one value), layer 1 \
                     scattered{}",
                    layout.scaled_count(),
                    first_layer_form(layout, lanes_first)
                ),
            ),
            (
                "circulant".into(),
                circulant_layers(layout).unwrap_or_else(|| "none".into()),
            ),
            ("weight_bytes".into(), layout.weight_bytes().to_string()),
            ("launches".into(), launches.join(" ")),
            (
                "items".into(),
                self.launches
                    .iter()
                    .map(|l| format!("{}:{}", l.segment.label(), l.segment.items.name()))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            (
                "spread_rows".into(),
                self.launches
                    .iter()
                    .filter(|l| l.segment.spread == Spread::Spread)
                    .map(|l| format!("{}:{}", l.segment.label(), l.spread_rows()))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            (
                "path".into(),
                plan::path(&self.launches.iter().map(|l| l.segment).collect::<Vec<_>>()),
            ),
            ("registers".into(), self.kernels.each(regs)),
            ("local_bytes".into(), self.kernels.each(local)),
            (
                "model_bytes_per_row_layer".into(),
                self.launches
                    .iter()
                    .map(|l| {
                        let bytes = |b: Option<f64>| b.map_or("-".into(), |b| format!("{b:.0}"));
                        let model = l.segment.model;
                        format!(
                            "{}:{}/{}/{:.0}",
                            l.segment.label(),
                            bytes(model.shared_bytes),
                            bytes(model.split_bytes),
                            model.global_bytes
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
        ]
    }

    /// Clears the counters and enqueues every launch, marking each on `probe`.
    fn enqueue(&mut self, probe: &mut Probe) -> Result<(), CudaError> {
        self.gpu
            .stream()
            .memset_zeros(&mut *self.counters)
            .context("clearing the queues")?;
        for index in 0..self.launches.len() {
            self.launch(index)?;
            probe.step(STAGES[index.min(STAGES.len() - 1)])?;
        }
        Ok(())
    }

    /// Captures the loaded batch's run as a graph when a graph is wanted and none is held. A
    /// capture the driver refuses leaves the run call by call, and the details say why.
    fn capture_if_needed(&mut self) -> Result<(), CudaError> {
        if !matches!(self.replay, Replay::Graph(None)) {
            return Ok(());
        }
        let gpu = self.gpu;
        let stream = gpu.stream().clone();
        // The span's nodes first and last, around the memset and the launches.
        let spans = self.spans.take();
        let span = spans.as_ref().map(|spans| &spans.span);
        let captured = gpu
            .capture_graph(&stream, |stream| {
                span.map_or(Ok(()), |span| span.open(stream))?;
                self.enqueue(&mut Probe::off())?;
                span.map_or(Ok(()), |span| span.close(stream))
            })
            .and_then(|graph| graph.upload().map(|()| graph));
        self.spans = spans;
        self.replay = match captured {
            Ok(graph) => Replay::Graph(Some(graph)),
            Err(e) => {
                // The stream is usable again (the capture ended); nothing was run.
                Replay::Calls(Some(e.to_string()))
            }
        };
        Ok(())
    }

    /// Enqueues launch `index`.
    fn launch(&mut self, index: usize) -> Result<(), CudaError> {
        let stream = self.gpu.stream().clone();
        let launch = &self.launches[index];
        let segment = launch.segment;
        let input = self
            .input
            .as_ref()
            .ok_or_else(|| invalid("run before load"))?;
        let count = self.launches.len();
        let (queues, mut rest) = self.counters.split_at_mut(count);
        let queue = queues.slice(index..index + 1);
        let (mut entered, barriers) = rest.split_at_mut(count + 1);
        let barrier = barriers.slice(index..index + 1);
        let (entered_in, entered_out) = entered.split_at_mut(index + 1);
        let carry_in_count = entered_in.slice(index..index + 1);
        let carry_out_count = entered_out.slice(0..1);
        let (ids_a, ids_b) = self.carry_ids.split_at_mut(1);
        let (vals_a, vals_b) = self.carry_vals.split_at_mut(1);
        // Launch i writes buffer i % 2 and reads buffer (i + 1) % 2.
        let (carry_out_ids, carry_in_ids, carry_out_vals, carry_in_vals) =
            if index.is_multiple_of(2) {
                (&mut ids_a[0], &ids_b[0], &mut vals_a[0], &vals_b[0])
            } else {
                (&mut ids_b[0], &ids_a[0], &mut vals_b[0], &vals_a[0])
            };
        let rows = self.loaded as u32;
        let form = input.form.code();
        let (first, end) = (segment.first as u32, segment.end as u32);
        let (carry_in_stride, carry_out_stride) =
            (segment.carry_in as u32, segment.carry_out as u32);
        let (tile, stride) = (segment.tile as u32, segment.stride as u32);
        let exact_items = segment.items.code();
        let spread_rows = launch.spread_rows() as u32;
        // A spread segment enqueues its tiles' kernel and then the spread one: with at most
        // spread_rows rows the first returns at once, with more the second does.
        let mut kernels = vec![(self.kernels.of(&segment)?, launch.grid, false)];
        if let Some(spread) = self.kernels.spread_of(&segment)? {
            kernels.push((spread, launch.spread_grid, true));
        }
        for (kernel, grid, spread) in kernels {
            let mut builder = stream.launch_builder(kernel);
            builder
                .arg(&*self.layout.desc)
                .arg(&*self.layout.dense)
                .arg(&*self.layout.ell)
                .arg(&*self.layout.group_starts)
                .arg(&*self.layout.w1_offsets)
                .arg(&*self.layout.w1_entries)
                .arg(&*input.offsets)
                .arg(&*input.cols)
                .arg(&*input.vals)
                .arg(&rows)
                .arg(&form)
                .arg(&first)
                .arg(&end)
                .arg(&**carry_in_ids)
                .arg(&**carry_in_vals)
                .arg(&carry_in_count)
                .arg(&carry_in_stride)
                .arg(&mut **carry_out_ids)
                .arg(&mut **carry_out_vals)
                .arg(&carry_out_count)
                .arg(&carry_out_stride)
                .arg(&queue)
                .arg(&mut *self.state)
                .arg(&mut *self.out)
                .arg(&self.bias)
                .arg(&*self.layout.biases)
                .arg(&self.bias_stride)
                .arg(&self.upper)
                .arg(&self.suffix_start)
                .arg(&tile)
                .arg(&stride)
                .arg(&mut *self.scratch)
                .arg(&exact_items)
                .arg(&spread_rows);
            if spread {
                builder
                    .arg(&mut *self.spread_vals)
                    .arg(&mut *self.spread_flags)
                    .arg(&barrier);
            }
            let config = match segment.placement {
                Placement::Shared | Placement::Split | Placement::Lanes | Placement::Warps => {
                    kernel.config_shared(grid, segment.shared_floats())?
                }
                Placement::Global => kernel.config(grid)?,
            };
            let dynamic = config.shared_mem_bytes as usize;
            // A spread launch waits at grid-wide barriers: cooperative, so that the driver
            // refuses a grid whose blocks could not all be resident instead of letting it hang.
            let launched = if spread {
                unsafe { builder.launch_cooperative(config) }
            } else {
                unsafe { builder.launch(config) }
            };
            launched.map_err(|e| {
                let shape = LaunchShape {
                    index,
                    kernel: kernel.decl().name,
                    layers: segment.label(),
                    grid,
                    threads: kernel.decl().threads(),
                    dynamic,
                    static_shared: self.limits.static_shared,
                    limit: self.limits.shared_per_block,
                };
                invalid(shape.refusal(&e))
            })?;
        }
        Ok(())
    }
}

impl DeviceRun for BdRun<'_> {
    fn load(&mut self, input: &Csr) -> Result<(), CudaError> {
        if input.nrows() > self.capacity || input.ncols() != self.expansion.input_width() {
            return Err(invalid(format!(
                "a batch of {} × {} does not fit the prepared {} × {}",
                input.nrows(),
                input.ncols(),
                self.capacity,
                self.expansion.input_width()
            )));
        }
        if let Some(spans) = &mut self.spans {
            spans.read()?;
        }
        let gpu = self.gpu;
        let binary = input.values().iter().all(|&v| v == 1.0);
        let rows = input.nrows();
        let form = InputForm::of(input, binary, self.bitmap);
        let bits = (form == InputForm::Bitmap).then(|| bitmap(input));
        let (offsets, cols): (&[u32], &[u32]) = match &bits {
            Some(bits) => (&[0], bits),
            None => (input.row_offsets(), input.col_indices()),
        };
        let values = input.values();
        match self
            .input
            .as_mut()
            .filter(|held| held.holds(rows, form, cols.len(), values.len()))
        {
            // The same addresses and row count: a captured graph stays valid.
            Some(held) => {
                gpu.upload_into(offsets, &mut held.offsets)?;
                if !cols.is_empty() {
                    gpu.upload_into(cols, &mut held.cols)?;
                    if form == InputForm::Values {
                        gpu.upload_into(values, &mut held.vals)?;
                    }
                }
            }
            None => {
                if let Replay::Graph(graph) = &mut self.replay {
                    *graph = None;
                }
                self.input = None;
                self.input = Some(Input {
                    rows,
                    form,
                    offsets: gpu.upload(offsets)?,
                    cols: gpu.upload_nonempty(cols)?,
                    vals: if form == InputForm::Values {
                        gpu.upload_nonempty(values)?
                    } else {
                        gpu.upload(&[1.0f32])?
                    },
                });
            }
        }
        // Poison the states: every row must be finished by the run.
        gpu.upload_into(&vec![u8::MAX; input.nrows()], &mut self.state)?;
        self.loaded = input.nrows();
        self.capture_if_needed()
    }

    /// The loaded batch's graph replayed (timed passes), or its launches enqueued one by one
    /// with a mark after each (the profiled pass, or without a graph).
    fn run(&mut self, probe: &mut Probe) -> Result<(), CudaError> {
        match &self.replay {
            Replay::Graph(Some(graph)) if !probe.is_recording() => {
                graph.launch()?;
                if let Some(spans) = &mut self.spans {
                    spans.pending = true;
                }
                Ok(())
            }
            _ => self.enqueue(probe),
        }
    }

    fn row_flags(&mut self) -> Result<Vec<u8>, CudaError> {
        let mut states = self.gpu.download(&*self.state)?;
        states.truncate(self.loaded);
        if let Some(row) = states.iter().position(|&s| s == u8::MAX) {
            return Err(invalid(format!(
                "row {row} of the batch was never finished by the kernel"
            )));
        }
        let counters = self.gpu.download(&*self.counters)?;
        let count = self.launches.len();
        self.entered = counters[count..2 * count + 1].to_vec();
        Ok(states
            .iter()
            .map(|&s| u8::from(s != crate::STATE_ZERO))
            .collect())
    }

    fn output(&mut self) -> Result<Vec<f32>, CudaError> {
        let mut states = self.gpu.download(&*self.state)?;
        states.truncate(self.loaded);
        let mut out = self.gpu.download(&*self.out)?;
        out.truncate(self.loaded * self.out_width);
        let values = crate::final_values(&states, &out, self.upper);
        self.expansion.expand(values, self.loaded).map_err(invalid)
    }

    fn stages(&self) -> &'static [&'static str] {
        &STAGES[..self.launches.len().min(STAGES.len())]
    }

    fn details(&self) -> Vec<(String, String)> {
        let mut details = self.details.clone();
        let replay = match &self.replay {
            Replay::Graph(_) => "one CUDA graph a pass (the memset and every launch, between \
                                 the span's two events)"
                .to_string(),
            Replay::Calls(None) => "call by call".to_string(),
            Replay::Calls(Some(why)) => format!("call by call (the graph's capture failed: {why})"),
        };
        details.push(("replay".into(), replay));
        if let Some(span) = self.spans.as_ref().and_then(ReplaySpans::summary) {
            details.push(("graph_span_ms".into(), span));
        }
        if let Some(input) = &self.input {
            details.push((
                "input".into(),
                input.form.describe(self.expansion.input_width()),
            ));
        }
        if !self.entered.is_empty() {
            let entered: Vec<String> = self
                .launches
                .iter()
                .zip(&self.entered)
                .skip(1)
                .map(|(l, n)| format!("{}:{n}", l.segment.label()))
                .collect();
            details.push(("rows_carried".into(), entered.join(" ")));
        }
        details
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spdnn_cuda::memory::WeightPlacement;

    #[test]
    fn a_binary_batch_is_a_bitmap_where_that_is_smaller() {
        // 40 inputs: two words a row, the second part full.
        let t = [(0, 0, 1.0), (0, 31, 1.0), (0, 32, 1.0), (2, 39, 1.0)];
        let input = Csr::from_triplets(3, 40, &t).unwrap();
        assert_eq!(bitmap(&input), vec![0x8000_0001, 1, 0, 0, 0, 0x80]);
        assert_eq!(bitmap_bytes(3, 40), 4 * 6 + 8);
        assert_eq!(bitmap_bytes(0, 40), 4 + 8);
        // 32 bytes of bitmap against 16 + 16 + 4 of columns.
        assert_eq!(InputForm::of(&input, true, true), InputForm::Bitmap);
        assert_eq!(InputForm::of(&input, true, false), InputForm::Columns);
        assert_eq!(InputForm::of(&input, false, true), InputForm::Values);
        // One nonzero in 3 rows of 1024 inputs: 96 + 8 bytes against 16 + 4 + 4.
        let sparse = Csr::from_triplets(3, 1024, &[(1, 700, 1.0)]).unwrap();
        assert_eq!(InputForm::of(&sparse, true, true), InputForm::Columns);
        assert!(
            InputForm::of(&input, true, true)
                .describe(40)
                .starts_with("bitmap, 2 words")
        );
    }

    #[test]
    fn the_host_preparation_is_shared_by_content() {
        let generated = spdnn_sdgc::generator::network(256, 6, 3).unwrap();
        let layers = generated.layers().to_vec();
        let copy = layers.clone();
        let options = BlockDependOptions::default();
        let chain = LayerChain::new(&layers, -0.3, 32.0);
        let same = LayerChain::new(&copy, -0.3, 32.0);
        assert_eq!(HostKey::of(&chain, &options), HostKey::of(&same, &options));
        let first = Host::shared(&chain, &options).unwrap();
        assert!(Arc::ptr_eq(&first, &Host::shared(&same, &options).unwrap()));
        // Another value, bias, bound or option is another preparation.
        let mut changed = layers.clone();
        changed[2] = Csr::from_parts(
            changed[2].nrows(),
            changed[2].ncols(),
            changed[2].row_offsets().to_vec(),
            changed[2].col_indices().to_vec(),
            changed[2].values().iter().map(|v| v * 0.5).collect(),
        )
        .unwrap();
        let key = HostKey::of(&chain, &options);
        assert_ne!(
            key,
            HostKey::of(&LayerChain::new(&changed, -0.3, 32.0), &options)
        );
        assert_ne!(
            key,
            HostKey::of(&LayerChain::new(&layers, -0.25, 32.0), &options)
        );
        assert_ne!(
            key,
            HostKey::of(&LayerChain::new(&layers, -0.3, 16.0), &options)
        );
        let off = BlockDependOptions {
            compress: false,
            ..BlockDependOptions::default()
        };
        assert_ne!(key, HostKey::of(&chain, &off));
        let other = Host::shared(&LayerChain::new(&changed, -0.3, 32.0), &options).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        // A bad chain is an error, not a stale preparation.
        assert!(Host::shared(&LayerChain::new(&layers, 0.5, 32.0), &options).is_err());
    }

    #[test]
    fn scaled_layers_shrink_the_resident_bytes_by_their_own_sizes() {
        // The layers' device bytes are the arrays' own sizes: scaled ELL (1024-24, every ELL
        // layer scaled) takes exactly what its layers' bytes say less than pairs.
        let generated = spdnn_sdgc::generator::network(1024, 24, 3).unwrap();
        let network = Chain::build(generated.layers(), -0.3f32, 32.0, true, true).unwrap();
        let scaled = Layout::build(&network, FormatChoice::Ell).unwrap();
        let pairs = Layout::build(&network, FormatChoice::EllPairs).unwrap();
        assert_eq!(scaled.scaled_count(), 23);
        // Layer 1's scaled entries: 4 bytes each instead of 8, less its fold's table (its rows
        // repeat every 64 inputs: [slots, width] and a unit a slot, in the ELL units).
        let fold = scaled.first.scaled.as_ref().and_then(|s| s.fold.as_ref());
        let fold_bytes = fold.map_or(0, |f| 8 * (f.len() + 1));
        assert!(fold_bytes > 0 && pairs.first.fold_table == 0);
        let first_saved = pairs.layers[0].bytes - scaled.layers[0].bytes;
        assert_eq!(first_saved + fold_bytes, 4 * pairs.first.entries.len());
        // The details say so: folded where layer 1 runs a row a lane, else only that it repeats.
        assert_eq!(
            first_layer_form(&scaled, true),
            " from scaled entries (integer sums on binary input; folded into 64 bins, 2 slots, \
             on binary input)"
        );
        assert!(first_layer_form(&scaled, false).ends_with("folded only a row a lane)"));
        assert_eq!(first_layer_form(&pairs, true), "");
        let saved: usize = first_saved
            + scaled.layers[1..]
                .iter()
                .map(|l| l.pair_bytes() - l.bytes)
                .sum::<usize>();
        assert!(saved > first_saved);
        assert_eq!(layout_bytes(&pairs) - layout_bytes(&scaled), saved);
        assert_eq!(pairs.weight_bytes() - scaled.weight_bytes(), saved);
        for layout in [&scaled, &pairs] {
            // Descriptors, the dense placeholder, the ELL units, group starts, layer 1 (its
            // offsets and entries) and the biases' placeholder.
            assert_eq!(
                layout_bytes(layout),
                4 * 8 * 24
                    + 4
                    + 8 * layout.ell.len()
                    + 4 * layout.group_starts.len()
                    + 4 * layout.first.offsets.len()
                    + 8 * layout.first.device_units().len()
                    + 4
            );
        }
    }

    #[test]
    fn the_model_is_the_sizes_the_allocations_take() {
        let generated = spdnn_sdgc::generator::network(1024, 24, 3).unwrap();
        for compress in [true, false] {
            let network = Chain::build(generated.layers(), -0.3f32, 32.0, compress, true).unwrap();
            let layout = Layout::build(&network, Default::default()).unwrap();
            let cuts = plan::cut_points(layout.layers.len(), None).unwrap();
            let mut segments = plan::plan(
                &layout,
                &Limits::hopper(1680),
                &cuts,
                Default::default(),
                None,
            )
            .unwrap();
            plan::choose_items(&mut segments, Default::default());
            plan::choose_spread(&mut segments, &layout, crate::SpreadChoice::Always);
            // A roomy device, and free memory so small the scratch and spreads shrink.
            for free in [80usize << 30, 1 << 20] {
                let (launches, scratch) =
                    size_launches(segments.clone(), 132, None, free, |_, spread| {
                        Ok(if spread { 1 } else { 2 })
                    })
                    .unwrap();
                let out = network.output_width();
                let model = model(&launches, scratch, out, &layout, None);
                assert!(model.exact && !model.streaming && model.binary_input.is_none());
                // Where launch 1 counts bins from a bitmap, a binary batch's form is the
                // bitmap's bytes.
                let bitmap = super::model(&launches, scratch, out, &layout, Some(1000));
                for rows in [1, 2, 999, 60000] {
                    assert_eq!(
                        model.bytes(rows, &WeightPlacement::Resident),
                        sizes(&launches, scratch, out, rows).bytes() + layout_bytes(&layout),
                        "compress {compress}, free {free}, {rows} rows"
                    );
                    assert_eq!(
                        bitmap.binary_input.map(|form| form.at(rows)),
                        Some(bitmap_bytes(rows, 1000))
                    );
                }
                let carry = launches.iter().map(|l| l.segment.carry_out).max().unwrap();
                assert!(carry > 0);
                assert_eq!(model.per_row, 1 + 4 * out + 2 * (4 + 4 * carry));
                // A cap on the grid binds every launch's persistent grid and its spread grid
                // (a cooperative launch: its blocks all resident, however few).
                let (capped, _) =
                    size_launches(segments.clone(), 132, Some(7), free, |_, spread| {
                        Ok(if spread { 1 } else { 2 })
                    })
                    .unwrap();
                assert_eq!(capped.len(), launches.len());
                for (capped, launch) in capped.iter().zip(&launches) {
                    assert_eq!(capped.grid, launch.grid.min(7));
                    assert!(capped.spread_grid <= 7);
                    if launch.spread_grid > 0 {
                        assert_eq!(capped.spread_grid, launch.spread_grid.min(7));
                    }
                }
            }
        }
        assert_eq!(input_bytes(3, 5, true), 16 + 20 + 4);
        assert_eq!(input_bytes(3, 5, false), 16 + 20 + 20);
        assert_eq!(input_bytes(3, 0, true), 16 + 4 + 4);
    }

    #[test]
    fn a_refused_launch_names_what_it_asked_and_what_to_try() {
        let shape = LaunchShape {
            index: 0,
            kernel: "bd_chain_shared",
            layers: "1-2".into(),
            grid: 396,
            threads: 256,
            dynamic: 65536,
            static_shared: 1680,
            limit: 232448,
        };
        let message = shape.refusal(&"CUDA_ERROR_INVALID_VALUE");
        assert!(!message.contains("  "), "{message}");
        for part in [
            "launch 1 (bd_chain_shared for layers 1-2)",
            "396 blocks × 256 threads",
            "65536 bytes of dynamic shared memory",
            "+1680 static",
            "allows 232448",
            "--bd-tile",
            "(CUDA_ERROR_INVALID_VALUE)",
        ] {
            assert!(message.contains(part), "{part}: {message}");
        }
        let global = LaunchShape {
            dynamic: 0,
            kernel: "bd_chain_global",
            ..shape
        };
        let message = global.refusal(&"out of resources");
        assert!(!message.contains("shared"), "{message}");
        assert!(message.ends_with("(out of resources)"), "{message}");
    }
}
