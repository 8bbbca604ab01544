//! BlockDepend (Di et al., "Optimizing Deep Learning Inference Efficiency through Block
//! Dependency Analysis"): where a consumer block depends on one producer block only
//! (*one-to-one block dependency*), fuse the two through shared memory; where blocks are
//! independent, run them side by side. In sparse DNN inference row `r` of `Y_{l+1}`
//! depends on row `r` of `Y_l` only, so a thread block that owns a tile of rows can carry
//! it through many layers on chip, never writing the layers between to global memory and
//! never returning to the host.
//!
//! The method (`kernels-cu/blockdepend.cu`, docs/blockdepend.md):
//!
//! 1. **Prepare** (untimed): compress the network exactly and prove which layers keep an
//!    all-at-bound row at the bound ([`Chain`], `spdnn-compress`); lay the layers out for
//!    the kernel, each dense or sliced ELL by a cost model ([`Layout`]); cut the chain into
//!    launches and place each launch's tiles in shared or global memory from the device's
//!    limits ([`plan`]); upload everything (resident).
//! 2. **Run** (timed): one launch of the persistent kernel per segment. Its blocks (as
//!    many as fit on the device) take tiles of rows from a device-side queue, read the
//!    first layer straight from the sparse input rows, keep the tile on chip across the
//!    segment's layers, drop rows that are all zero (never categories) or all at the bound
//!    past the proved suffix (categories), and append the rest to the next segment's list,
//!    or write one state per row and the final values of the rows still live.
//! 3. **Results**: a row is a category iff its state is not zero; final values come back
//!    in the compressed width and are expanded through the class map.
//!
//! **Trained networks** (a bias per output neuron of every layer, [`infer_with_biases`] or
//! [`spdnn_cuda::method::LayerChain::with_biases`]): compression merges outputs only where
//! their biases are equal too, the retirement proof takes each column's own bias, and the
//! kernels read layer `l`'s output `c` bias from a per-layer array
//! ([`layout::Layout::biases`]). The kernels compute `clip(Z + b)`, which equals the
//! official rule (the bias only where `Y·W` is structurally nonzero) for `b ≤ 0` only: a
//! positive bias is refused with an error naming the neuron. Dense first and last layers
//! (`784 → N`, `N → 10`) are ordinary layers of a rectangular chain.
//!
//! The CPU emulation ([`emulate`]) repeats the kernel's algorithm step for step for the
//! tests.

pub mod banks;
mod chain;
mod device;
pub mod emulate;
pub mod layout;
pub mod plan;

use spdnn_cuda::memory::MemoryModel;
use spdnn_cuda::method::{self, DeviceRun, KernelMethod, LayerChain, MethodOptions};
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_cuda::{CudaError, Define, Gpu, KernelDecl, KernelSource};
use spdnn_formats::{Csr, SparseMatrix};

pub use chain::{Bias, Chain, Compression, Expansion, Retire};
pub use layout::{Format, FormatChoice, LayerLayout, Layout};
pub use plan::{ItemChoice, Items, Limits, Placement, PlacementChoice, Segment, SpreadChoice};

/// A row that ended all zero: not a category (`BD_STATE_ZERO`).
pub const STATE_ZERO: u8 = 0;
/// A row still live after the last layer: a category, its values in the output buffer
/// (`BD_STATE_LIVE`).
pub const STATE_LIVE: u8 = 1;
/// A row that finished all at the bound: a category whose values are all the bound
/// (`BD_STATE_BOUND`).
pub const STATE_BOUND: u8 = 2;

/// Scaled ELL entries whose loads an exact work item keeps in flight (`BD_ITEM_AHEAD`): a
/// ring of registers, each refilled with the entry this many slots on as it is used, for
/// columns of at least this many slots (pairs, and modules that also run dense layers, keep
/// their loops; `bd_ell_slots` says why). The tail launches' items hold few rows (4 at
/// N = 4096 after layer 8): their sums hid too little of an L2 round trip, which the loop
/// unrolled by 2 paid every 2 slots (4096's launch 3 0.105 → 0.064 ms, one H100, 2026-11-27i).
pub const ITEM_AHEAD: usize = 8;

/// The constants `blockdepend.cu` shares with Rust.
pub const DEFINES: &[Define] = &[
    Define::new("BD_THREADS", plan::THREADS as u64),
    Define::new("BD_THREADS_WIDE", plan::THREADS_WIDE as u64),
    Define::new("BD_ROWS", layout::ROWS_PER_ITEM as u64),
    Define::new("BD_MAX_TILE", plan::MAX_TILE as u64),
    Define::new("BD_DESC_WORDS", layout::DESC_WORDS as u64),
    Define::new("BD_FORMAT_DENSE", Format::Dense.code() as u64),
    Define::new("BD_FORMAT_ELL", Format::Ell.code() as u64),
    Define::new("BD_FORMAT_ELL_SCALED16", Format::EllScaled16.code() as u64),
    Define::new("BD_FORMAT_ELL_SCALED32", Format::EllScaled32.code() as u64),
    Define::new("BD_TILE_WAVES", plan::TILE_WAVES as u64),
    Define::new("BD_SCATTER_BATCH", plan::TILES_SCATTER_BATCH as u64),
    Define::new("BD_ITEM_AHEAD", ITEM_AHEAD as u64),
    Define::new("BD_CIRCULANT_CODE", layout::CIRCULANT_CODE as u64),
    Define::new("BD_CIRCULANT_SLOTS", layout::CIRCULANT_MAX_SLOTS as u64),
    Define::new("BD_CIRCULANT_OUTPUTS", layout::CIRCULANT_OUTPUTS as u64),
    Define::new("BD_LANES_THREADS", plan::LANES_THREADS as u64),
    Define::new("BD_LANE_PITCH", plan::LANE_PITCH as u64),
    Define::new(
        "BD_LANES_GROUPS",
        (plan::LANES_MAX_STRIDE / layout::WARP) as u64,
    ),
    Define::new("BD_LANES_BLOCKS", plan::LANES_BLOCKS as u64),
    Define::new("BD_LANES_BATCH", plan::LANES_SCATTER_BATCH as u64),
    Define::new("BD_LANES_CHUNK", plan::LANES_CIRCULANT_CHUNK as u64),
    Define::new("BD_WARPS_THREADS", plan::WARPS_THREADS as u64),
    Define::new("BD_WARPS_ROWS", plan::WARPS_ROWS as u64),
    Define::new(
        "BD_WARPS_GROUPS",
        (plan::WARPS_MAX_STRIDE / layout::WARP) as u64,
    ),
    Define::new("BD_WARPS_BLOCKS", plan::WARPS_BLOCKS_PER_SM as u64),
    Define::new("BD_WARPS_SLOTS", plan::WARPS_SLOTS as u64),
    Define::new("BD_WARPS_SPREAD", plan::WARPS_SPREAD as u64),
    Define::new("BD_BITMAP_ROWS", plan::BITMAP_TRANSPOSE_ROWS as u64),
    Define::new("BD_INPUT_VALUES", device::InputForm::Values.code() as u64),
    Define::new("BD_INPUT_COLUMNS", device::InputForm::Columns.code() as u64),
    Define::new("BD_INPUT_BITMAP", device::InputForm::Bitmap.code() as u64),
    Define::new("BD_STATE_ZERO", STATE_ZERO as u64),
    Define::new("BD_STATE_LIVE", STATE_LIVE as u64),
    Define::new("BD_STATE_BOUND", STATE_BOUND as u64),
];

/// `BD_FORMATS` of a module that runs every format a layer after the first can have.
pub const ALL_FORMATS: u32 =
    Format::Dense.bit() | Format::Ell.bit() | Format::EllScaled16.bit() | Format::EllScaled32.bit();

/// The bit of a set of formats that compiles the circulant items in
/// ([`layout::CIRCULANT_CODE`]): a module without it runs circulant layers as ELL (their
/// items cost the every-format instances spills: `bd_chain_shared` 80 registers and 16
/// bytes of local memory with, 80 and none without; NVRTC 13.0, sm_90).
pub const CIRCULANT_ITEMS: u32 = 1 << layout::CIRCULANT_CODE;

/// The sets of layer formats a module can be compiled for: every subset of [`ALL_FORMATS`]
/// with [`CIRCULANT_ITEMS`], indexed by its bits shifted down past the first layer's code (0).
const FORMAT_SETS: usize = ((ALL_FORMATS | CIRCULANT_ITEMS) >> 1) as usize + 1;

/// `BD_FORMATS` of each set ([`FORMAT_SETS`]).
static FORMAT_DEFINES: [[Define; 1]; FORMAT_SETS] = {
    let mut sets = [[Define::new("BD_FORMATS", 0)]; FORMAT_SETS];
    let mut i = 0;
    while i < FORMAT_SETS {
        sets[i] = [Define::new("BD_FORMATS", (i as u64) << 1)];
        i += 1;
    }
    sets
};

/// [`DEFINES`] and each set's `BD_FORMATS`.
static FORMAT_DEFINE_GROUPS: [[&[Define]; 2]; FORMAT_SETS] = {
    let mut groups = [[DEFINES, DEFINES]; FORMAT_SETS];
    let mut i = 0;
    while i < FORMAT_SETS {
        groups[i] = [DEFINES, &FORMAT_DEFINES[i]];
        i += 1;
    }
    groups
};

/// `kernels-cu/blockdepend.cu` for each set of layer formats ([`for_formats`]).
static FORMAT_SOURCES: [KernelSource; FORMAT_SETS] = {
    let mut sources = [BLOCKDEPEND; FORMAT_SETS];
    let mut i = 0;
    while i < FORMAT_SETS {
        sources[i] = BLOCKDEPEND.with_defines(&FORMAT_DEFINE_GROUPS[i]);
        i += 1;
    }
    sources
};

/// `kernels-cu/blockdepend.cu`, compiled with [`DEFINES`] and every layer format
/// ([`ALL_FORMATS`]); a run compiles its instances for its layers' formats ([`for_formats`]).
pub const BLOCKDEPEND: KernelSource = KernelSource::new(
    "blockdepend.cu",
    include_str!("../../../kernels-cu/blockdepend.cu"),
)
.with_defines(&[DEFINES, &[Define::new("BD_FORMATS", ALL_FORMATS as u64)]]);

/// `decl` compiled to run only layers of the formats in `formats` (a `BD_FORMATS` set, e.g.
/// [`Layout::formats`]) after the first: a branch for a format the chain lacks costs
/// registers even when it never runs (`bd_chain_global`: 78 with every format, 64 with the
/// 32-bit scaled entries alone; NVRTC 13.0, sm_90). A module of a set runs exactly the
/// layers of those formats: a layer of another format would be read as the set's last.
pub fn for_formats(decl: &KernelDecl, formats: u32) -> KernelDecl {
    let index = ((formats & (ALL_FORMATS | CIRCULANT_ITEMS)) >> 1) as usize;
    KernelDecl {
        source: &FORMAT_SOURCES[index],
        ..*decl
    }
}

/// `bd_chain_shared`: the persistent fused kernel with its tiles in shared memory, blocks of
/// [`plan::THREADS`] (narrow tiles, several blocks an SM); grid = the blocks that fit on the
/// device; dynamic shared: two buffers of tile × stride floats.
pub const CHAIN_SHARED: KernelDecl =
    KernelDecl::new(&BLOCKDEPEND, "bd_chain_shared", plan::THREADS as u32).with_shared_array(4);
/// `bd_chain_shared_wide`: the same with blocks of [`plan::THREADS_WIDE`] (wide tiles, one
/// block an SM).
pub const CHAIN_SHARED_WIDE: KernelDecl = KernelDecl::new(
    &BLOCKDEPEND,
    "bd_chain_shared_wide",
    plan::THREADS_WIDE as u32,
)
.with_shared_array(4);
/// `bd_chain_split`: the layer's input rows in shared memory (dynamic: one buffer of tile ×
/// stride floats), its outputs in a per-block scratch area of global memory, copied back
/// after each layer; blocks of [`plan::THREADS`].
pub const CHAIN_SPLIT: KernelDecl =
    KernelDecl::new(&BLOCKDEPEND, "bd_chain_split", plan::THREADS as u32).with_shared_array(4);
/// `bd_chain_split_wide`: the same with blocks of [`plan::THREADS_WIDE`].
pub const CHAIN_SPLIT_WIDE: KernelDecl = KernelDecl::new(
    &BLOCKDEPEND,
    "bd_chain_split_wide",
    plan::THREADS_WIDE as u32,
)
.with_shared_array(4);
/// `bd_chain_global`: the same with its tiles in a per-block scratch area of global memory.
pub const CHAIN_GLOBAL: KernelDecl =
    KernelDecl::new(&BLOCKDEPEND, "bd_chain_global", plan::THREADS as u32);
/// `bd_chain_lanes`: the persistent kernel a row a lane ([`Placement::Lanes`]): each warp
/// takes 32 rows from the queue at a time; blocks of [`plan::LANES_THREADS`], compiled for
/// [`plan::LANES_BLOCKS`] an SM; grid = the blocks resident on the device; dynamic shared: a
/// buffer a warp of stride × [`plan::LANE_PITCH`] floats.
pub const CHAIN_LANES: KernelDecl =
    KernelDecl::new(&BLOCKDEPEND, "bd_chain_lanes", plan::LANES_THREADS as u32)
        .with_shared_array(4);
/// `bd_chain_warps`: the persistent kernel a row a warp ([`Placement::Warps`]): blocks of
/// [`plan::WARPS_THREADS`] take tiles of up to [`plan::WARPS_TILE`] rows from the queue,
/// each warp up to [`plan::WARPS_ROWS`] of them; grid = one block an SM
/// ([`plan::WARPS_BLOCKS_PER_SM`]); dynamic shared: [`plan::warps_block_floats`] (the stage
/// slots, then a buffer a row).
pub const CHAIN_WARPS: KernelDecl =
    KernelDecl::new(&BLOCKDEPEND, "bd_chain_warps", plan::WARPS_THREADS as u32)
        .with_shared_array(4);

/// `bd_spread_chain`: a launch after the first whose rows are spread over the whole grid,
/// one layer at a time (a cooperative launch with a grid-wide barrier after each layer; see
/// [`plan::choose_spread`]): per layer each block takes a chunk of at most tile rows and a
/// slice of the output groups. Blocks of [`plan::THREADS`]; grid = the blocks resident on the
/// device; dynamic shared: two buffers of tile × stride floats (a chunk's rows and their
/// outputs). A launch with more rows than grid × tile runs `bd_chain_shared`'s loop instead.
pub const SPREAD_CHAIN: KernelDecl =
    KernelDecl::new(&BLOCKDEPEND, "bd_spread_chain", plan::THREADS as u32).with_shared_array(4);
/// `bd_spread_chain_wide`: the same with blocks of [`plan::THREADS_WIDE`].
pub const SPREAD_CHAIN_WIDE: KernelDecl = KernelDecl::new(
    &BLOCKDEPEND,
    "bd_spread_chain_wide",
    plan::THREADS_WIDE as u32,
)
.with_shared_array(4);
/// `bd_spread_split`: the spread launch of a segment whose tiles split (dynamic shared: one
/// buffer of tile × stride floats, a chunk of tile / 2 rows and their outputs); with more
/// rows than grid × tile / 2 it runs `bd_chain_split`'s loop. Blocks of [`plan::THREADS`].
pub const SPREAD_SPLIT: KernelDecl =
    KernelDecl::new(&BLOCKDEPEND, "bd_spread_split", plan::THREADS as u32).with_shared_array(4);
/// `bd_spread_split_wide`: the same with blocks of [`plan::THREADS_WIDE`].
pub const SPREAD_SPLIT_WIDE: KernelDecl = KernelDecl::new(
    &BLOCKDEPEND,
    "bd_spread_split_wide",
    plan::THREADS_WIDE as u32,
)
.with_shared_array(4);

/// Every kernel this crate declares, checked against the source by the kernel-table test.
pub const KERNELS: &[KernelDecl] = &[
    CHAIN_SHARED,
    CHAIN_SHARED_WIDE,
    CHAIN_SPLIT,
    CHAIN_SPLIT_WIDE,
    CHAIN_GLOBAL,
    CHAIN_LANES,
    CHAIN_WARPS,
    SPREAD_CHAIN,
    SPREAD_CHAIN_WIDE,
    SPREAD_SPLIT,
    SPREAD_SPLIT_WIDE,
];

/// The instance that runs `segment`'s tiles.
pub fn tile_kernel(segment: &Segment) -> &'static KernelDecl {
    let wide = segment.threads == plan::THREADS_WIDE;
    match (segment.placement, wide) {
        (Placement::Global, _) => &CHAIN_GLOBAL,
        (Placement::Lanes, _) => &CHAIN_LANES,
        (Placement::Warps, _) => &CHAIN_WARPS,
        (Placement::Shared, true) => &CHAIN_SHARED_WIDE,
        (Placement::Shared, false) => &CHAIN_SHARED,
        (Placement::Split, true) => &CHAIN_SPLIT_WIDE,
        (Placement::Split, false) => &CHAIN_SPLIT,
    }
}

/// The instance that spreads `segment`'s rows, if it spreads them.
pub fn spread_kernel(segment: &Segment) -> Option<&'static KernelDecl> {
    let wide = segment.threads == plan::THREADS_WIDE;
    match (segment.spread, segment.placement, wide) {
        (plan::Spread::Tiles, _, _)
        | (_, Placement::Global | Placement::Lanes | Placement::Warps, _) => None,
        (plan::Spread::Spread, Placement::Shared, true) => Some(&SPREAD_CHAIN_WIDE),
        (plan::Spread::Spread, Placement::Shared, false) => Some(&SPREAD_CHAIN),
        (plan::Spread::Spread, Placement::Split, true) => Some(&SPREAD_SPLIT_WIDE),
        (plan::Spread::Spread, Placement::Split, false) => Some(&SPREAD_SPLIT),
    }
}

/// The instances a plan's segments launch (their tiles', and the spread ones where they
/// spread), each once, in the order of [`KERNELS`]: what a run compiles besides
/// [`CHAIN_SHARED`] (whose static shared memory the plan needs).
pub fn plan_kernels(segments: &[Segment]) -> Vec<&'static KernelDecl> {
    KERNELS
        .iter()
        .filter(|decl| {
            segments.iter().any(|s| {
                tile_kernel(s).name == decl.name
                    || spread_kernel(s).is_some_and(|k| k.name == decl.name)
            })
        })
        .collect()
}

/// Tuning of a BlockDepend run. The defaults compress, retire, and take every size from
/// the device and the model.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BlockDependOptions {
    /// Run the exactly compressed network (identity when it has no classes).
    pub compress: bool,
    /// Finish rows all at the bound past the proved suffix (rows of zeros always finish).
    pub retire: bool,
    /// Most rows per tile, `1..=128` (default: as many as fit the block's shared memory,
    /// at most 128, narrow tiles in whole work items of 8 rows; 32 for tiles in global
    /// memory).
    pub tile_rows: Option<usize>,
    /// Layer counts after which a new launch re-packs the surviving rows, strictly
    /// increasing (default: 4, 8, 16 below the depth, [`plan::cut_points`]).
    pub cuts: Option<Vec<usize>>,
    /// Where tiles live (default: per launch, by the model).
    pub placement: PlacementChoice,
    /// How the layers after the first are stored (default: per layer, by the model).
    pub format: FormatChoice,
    /// How the layers' work items run (default: exact items wherever the tile lies in
    /// shared memory; `Predicated`: the previous kernel's items everywhere, for A/B runs).
    pub items: ItemChoice,
    /// Which launches after the first may spread their rows over the whole grid (default:
    /// those with a layer of at least [`plan::SPREAD_LAYER_BYTES`], where one block's chain
    /// through the tail's layers is the launch's length; `Always`: every launch that can,
    /// for tests; `Off`: none).
    pub spread: SpreadChoice,
    /// Most blocks of each launch's persistent grid and of its spread grid, at least 1
    /// (default: as many as the SMs hold). Fewer leave SMs idle; tests use it so that tiles
    /// fill with fewer rows (a launch's tiles hold ⌈rows / (blocks · 2)⌉ rows, at most the
    /// tile) and spread launches stay small under racecheck.
    pub grid_blocks: Option<usize>,
    /// Which layer formats the kernels are compiled for ([`KernelFormats`]; default: those
    /// of the chain's layers where that was measured faster, else every format).
    pub kernel_formats: KernelFormats,
    /// Replay each timed pass as one CUDA graph (the queues' memset and every launch,
    /// captured when a batch is loaded) instead of enqueueing its calls one by one; the
    /// profiled pass always enqueues them (an event after each launch). Default on.
    pub graph: bool,
    /// Load a binary batch as a bitmap (one bit an input) where launch 1 runs a row a lane
    /// and folds layer 1 into 32 to 1024 bins, and the bitmap is no larger than the batch's
    /// columns: the lanes count each row's bins from its 32-bit words (`bd_lanes_bins_bitmap`)
    /// instead of scattering its nonzeros. Off: the columns, for A/B runs. Default on.
    pub input_bitmap: bool,
}

/// Which layer formats a run's kernels are compiled for ([`for_formats`]). Fewer formats
/// leave NVRTC fewer branches, and it allocates registers anew: on one H100 (2026-11-27,
/// `docs/blockdepend.md`) the kernels of the layers' formats were 3.4 % faster at 65536-120
/// (32-bit scaled layers) and 3.3 % at 1024-120 (dense and 16-bit scaled), but 9.8 % slower on
/// random 4096-120 (pairs only: the wide split instance at 40 registers with 16 bytes of
/// spills, against 80).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelFormats {
    /// The layers' formats for a chain with scaled layers and no pair layers (the measured
    /// gains); every format otherwise. Either way with [`CIRCULANT_ITEMS`] where a layer is
    /// circulant.
    #[default]
    Auto,
    /// The formats of the chain's layers after the first ([`Layout::formats`]).
    Layers,
    /// Every format ([`ALL_FORMATS`], and [`CIRCULANT_ITEMS`] where a layer is circulant):
    /// the kernels before the per-set modules, for A/B runs.
    Every,
}

impl KernelFormats {
    /// The `BD_FORMATS` set to compile for a chain whose layers after the first have the
    /// formats `layers` ([`Layout::formats`]).
    pub fn set(self, layers: u32) -> u32 {
        let scaled = Format::EllScaled16.bit() | Format::EllScaled32.bit();
        match self {
            KernelFormats::Auto if layers & scaled != 0 && layers & Format::Ell.bit() == 0 => {
                layers
            }
            KernelFormats::Auto | KernelFormats::Every => ALL_FORMATS | (layers & CIRCULANT_ITEMS),
            KernelFormats::Layers => layers,
        }
    }
}

impl Default for BlockDependOptions {
    fn default() -> Self {
        Self {
            compress: true,
            retire: true,
            tile_rows: None,
            cuts: None,
            placement: PlacementChoice::Auto,
            format: FormatChoice::Auto,
            items: ItemChoice::Auto,
            spread: SpreadChoice::Auto,
            grid_blocks: None,
            kernel_formats: KernelFormats::Auto,
            graph: true,
            input_bitmap: true,
        }
    }
}

impl MethodOptions for BlockDependOptions {
    fn validate(&self) -> Result<(), String> {
        if let Some(t) = self.tile_rows
            && !(1..=plan::MAX_TILE).contains(&t)
        {
            return Err(format!(
                "the tile must hold 1 to {} rows, got {t}",
                plan::MAX_TILE
            ));
        }
        if self.grid_blocks == Some(0) {
            return Err("the grid must hold at least one block".into());
        }
        if let Some(cuts) = &self.cuts {
            if cuts.first() == Some(&0) {
                return Err("a cut must come after at least one layer".into());
            }
            if let Some(pair) = cuts.windows(2).find(|p| p[1] <= p[0]) {
                return Err(format!(
                    "cuts must increase strictly, got {} after {}",
                    pair[1], pair[0]
                ));
            }
        }
        Ok(())
    }
}

/// BlockDepend as a method of the registry.
pub struct BlockDepend;

impl KernelMethod for BlockDepend {
    const NAME: &'static str = "blockdepend";
    const DESCRIPTION: &'static str = "BlockDepend: the layer chain fused in persistent kernels, tiles of rows on chip, \
         over the exactly compressed network with finished rows retired";
    type Options = BlockDependOptions;
    /// Trained networks: compression merges outputs only where their biases are equal,
    /// the retirement proof takes each column's own bias, and the kernels read a bias per
    /// (compressed) output from a per-layer array.
    const ACCEPTS_PER_NEURON_BIAS: bool = true;

    /// Without the device, an estimate: per row the state, the final values and two carried
    /// rows between launches, per layer its laid-out weights, with compression the widths
    /// and layers at an eighth of the network's (the generated networks compress 16×),
    /// without it bounded by the network's. The planner uses [`Self::memory_on`], exact.
    fn memory(chain: &LayerChain<'_>, options: &BlockDependOptions) -> MemoryModel {
        let widest = spdnn_cuda::memory::widest(chain);
        let out = chain.layers.last().map_or(0, SparseMatrix::ncols);
        let shrink = if options.compress { 8 } else { 1 };
        MemoryModel {
            per_row: 1 + 4 * out.div_ceil(shrink) + 2 * 4 + 2 * 4 * widest.div_ceil(shrink),
            layers: chain.with_bias_bytes(
                chain
                    .layers
                    .iter()
                    .map(|w| (8 * w.nnz() + 4 * (w.nrows() + 1)).div_ceil(shrink))
                    .collect(),
            ),
            fixed: 0,
            streaming: false,
            exact: false,
            binary_input: None,
        }
    }

    /// Exact: what `prepare` computes before it allocates (the compression, the layout,
    /// the launches sized for this device and the free memory it sees, which under a budget
    /// is the budget), and the sizes its allocations take from it. Per row: the state, the
    /// final values and the two carried rows of the compressed widths; per layer: the
    /// layout's arrays (one entry, the layers share them); fixed: the launches' counters,
    /// the tiles placed in global memory and the spread launches' buffers. The loaded input
    /// is [`Self::upload_bytes`], or for a binary batch, where this run's launch 1 counts
    /// layer 1's bins from a bitmap, the smaller of that and the bitmap
    /// (`MemoryModel::binary_input`). Runs the compression (its time is spent again in
    /// `prepare`).
    fn memory_on(
        gpu: &Gpu,
        chain: &LayerChain<'_>,
        options: &BlockDependOptions,
    ) -> Result<MemoryModel, CudaError> {
        Ok(device::Preparation::build(gpu, chain, options)?.model())
    }

    /// The batch's CSR as the kernel reads it: offsets, columns, and the values only when
    /// one is not 1. A binary batch loaded as a bitmap takes at most this (`load` picks the
    /// bitmap only when it is no larger; [`Self::memory_on`]'s model says when it may).
    fn upload_bytes(rows: usize, nnz: usize, binary: bool) -> usize {
        device::input_bytes(rows, nnz, binary)
    }

    fn prepare<'g>(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &BlockDependOptions,
    ) -> Result<Box<dyn DeviceRun + 'g>, CudaError> {
        Ok(Box::new(device::BdRun::prepare(gpu, chain, rows, options)?))
    }
}

/// Runs BlockDepend on `input` (rows × N) through `layers`: preparation, `spec.warmup`
/// untimed and `spec.repetitions` timed runs, then one profiled run (one stage per launch).
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &BlockDependOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<BlockDepend>(
        gpu,
        &LayerChain::new(layers, bias, upper),
        input,
        options,
        spec,
    )
}

/// Runs BlockDepend on `input` through `layers` with a bias per output neuron of every layer
/// (`biases[l][k]`, each ≤ 0: the kernels compute `clip(Z + b)`, the official rule only
/// then; a positive bias is an error) and the bound `upper`, as [`infer`] does.
pub fn infer_with_biases(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    biases: &[Vec<f32>],
    upper: f32,
    options: &BlockDependOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<BlockDepend>(
        gpu,
        &LayerChain::with_biases(layers, biases, upper),
        input,
        options,
        spec,
    )
}

/// The final values of every row (`rows × width`) from the per-row states and the output
/// buffer the kernel wrote (values of live rows; anything elsewhere): live rows as
/// written, rows finished at the bound all `upper`, zero rows zero.
pub fn final_values(states: &[u8], output: &[f32], upper: f32) -> Vec<f32> {
    let rows = states.len();
    let width = output.len().checked_div(rows).unwrap_or(0);
    let mut values = vec![0.0f32; rows * width];
    for (r, &state) in states.iter().enumerate() {
        let row = &mut values[r * width..(r + 1) * width];
        match state {
            STATE_LIVE => row.copy_from_slice(&output[r * width..(r + 1) * width]),
            STATE_BOUND => row.fill(upper),
            _ => {}
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        let o = BlockDependOptions::default();
        assert!(o.compress && o.retire);
        assert_eq!(o.validate(), Ok(()));
        let json = serde_json::to_string(&o).unwrap();
        assert_eq!(
            json,
            r#"{"compress":true,"retire":true,"tile_rows":null,"cuts":null,"placement":"auto","format":"auto","items":"auto","spread":"auto","grid_blocks":null,"kernel_formats":"auto","graph":true,"input_bitmap":true}"#
        );
    }

    #[test]
    fn bad_options_are_errors_naming_the_parameter() {
        let bad = |o: BlockDependOptions| o.validate().unwrap_err();
        for t in [0, plan::MAX_TILE + 1] {
            let e = bad(BlockDependOptions {
                tile_rows: Some(t),
                ..Default::default()
            });
            assert!(e.contains("tile"), "{e}");
        }
        for cuts in [vec![0, 3], vec![4, 2], vec![3, 3]] {
            let e = bad(BlockDependOptions {
                cuts: Some(cuts),
                ..Default::default()
            });
            assert!(e.contains("cut"), "{e}");
        }
        let e = bad(BlockDependOptions {
            grid_blocks: Some(0),
            ..Default::default()
        });
        assert!(e.contains("grid"), "{e}");
        let ok = BlockDependOptions {
            tile_rows: Some(plan::MAX_TILE),
            cuts: Some(vec![1, 2, 50]),
            ..Default::default()
        };
        assert_eq!(ok.validate(), Ok(()));
    }

    #[test]
    fn final_values_follow_the_states() {
        let states = [STATE_ZERO, STATE_LIVE, STATE_BOUND];
        let out = [9.0, 9.0, 1.5, 2.5, 7.0, 7.0];
        assert_eq!(
            final_values(&states, &out, 32.0),
            vec![0.0, 0.0, 1.5, 2.5, 32.0, 32.0]
        );
        assert!(final_values(&[], &[], 1.0).is_empty());
    }

    #[test]
    fn a_plan_compiles_the_instances_its_segments_launch() {
        let segment = |placement, threads, spread| Segment {
            first: 0,
            end: 1,
            stride: 32,
            carry_in: 0,
            carry_out: 0,
            placement,
            tile: 16,
            threads,
            items: Items::Exact,
            spread,
            model: plan::SegmentModel {
                shared_bytes: None,
                split_bytes: None,
                global_bytes: 0.0,
            },
        };
        let names = |segments: &[Segment]| -> Vec<&str> {
            plan_kernels(segments).iter().map(|d| d.name).collect()
        };
        let narrow = segment(Placement::Shared, plan::THREADS, plan::Spread::Tiles);
        let wide_spread = segment(Placement::Split, plan::THREADS_WIDE, plan::Spread::Spread);
        let global = segment(Placement::Global, plan::THREADS, plan::Spread::Spread);
        assert_eq!(names(&[narrow]), ["bd_chain_shared"]);
        assert_eq!(
            names(&[wide_spread, narrow, narrow]),
            [
                "bd_chain_shared",
                "bd_chain_split_wide",
                "bd_spread_split_wide"
            ]
        );
        // A global segment has no spread instance.
        assert_eq!(names(&[global]), ["bd_chain_global"]);
        assert_eq!(spread_kernel(&global), None);
        assert!(names(&[]).is_empty());
    }

    #[test]
    fn each_set_of_formats_compiles_its_own_module() {
        let formats_of = |decl: KernelDecl| decl.source.define("BD_FORMATS");
        assert_eq!(
            formats_of(for_formats(&CHAIN_GLOBAL, ALL_FORMATS)),
            Some(ALL_FORMATS as u64)
        );
        assert_eq!(for_formats(&CHAIN_GLOBAL, ALL_FORMATS).source, &BLOCKDEPEND);
        for set in [
            0,
            Format::Ell.bit(),
            Format::EllScaled32.bit(),
            Format::Dense.bit() | Format::EllScaled16.bit(),
        ] {
            let decl = for_formats(&CHAIN_SHARED, set);
            assert_eq!(formats_of(decl), Some(set as u64));
            assert_eq!(
                (decl.name, decl.block),
                (CHAIN_SHARED.name, CHAIN_SHARED.block)
            );
            // Every other definition as the source of every format has it.
            let others = |d: &&Define| d.name != "BD_FORMATS";
            assert!(
                decl.source
                    .all_defines()
                    .filter(others)
                    .eq(BLOCKDEPEND.all_defines().filter(others))
            );
        }
        // The first layer's format is no part of a set.
        assert_eq!(
            formats_of(for_formats(&CHAIN_SHARED, Format::Input.bit())),
            Some(0)
        );
    }

    #[test]
    fn auto_compiles_the_layers_formats_only_for_scaled_chains_without_pairs() {
        let (dense, pairs, s16, s32) = (
            Format::Dense.bit(),
            Format::Ell.bit(),
            Format::EllScaled16.bit(),
            Format::EllScaled32.bit(),
        );
        for (layers, auto) in [
            (s32, s32),
            (dense | s16, dense | s16),
            (s16 | s32, s16 | s32),
            (pairs, ALL_FORMATS),
            (pairs | s16, ALL_FORMATS),
            (dense, ALL_FORMATS),
            (dense | pairs, ALL_FORMATS),
            (0, ALL_FORMATS),
        ] {
            assert_eq!(KernelFormats::Auto.set(layers), auto, "{layers:#b}");
            assert_eq!(KernelFormats::Layers.set(layers), layers, "{layers:#b}");
            assert_eq!(KernelFormats::Every.set(layers), ALL_FORMATS, "{layers:#b}");
        }
    }

    #[test]
    fn the_kernel_source_names_every_definition() {
        for d in BLOCKDEPEND.all_defines() {
            assert!(
                BLOCKDEPEND.source.contains(&format!("#ifndef {}", d.name)),
                "blockdepend.cu does not require {}",
                d.name
            );
        }
    }
}
