//! How the chain is cut into launches, and where each launch keeps its tiles.
//!
//! A **segment** is one launch of the persistent kernel over layers `first..end`: its
//! blocks take tiles of rows from a device-side queue (an atomic counter), carry each tile
//! through every layer of the segment without leaving the block, drop rows as they finish,
//! and at the end append the rows still alive to the next segment's list (their values in
//! global memory), or write the final values after the last layer. Cutting the chain
//! re-packs the survivors into full tiles: rows die at different layers, and a tile that
//! has lost most of its rows still pays for every layer at nearly its full cost.
//!
//! **Where the tile lives.** [`Placement::Shared`]: two buffers of `tile × stride` floats
//! in shared memory (the layer's input and output), `stride` the segment's widest layer
//! rounded up to 32; the weights stream from L2. [`Placement::Split`]: the input buffer in
//! shared memory, the output in a per-block scratch area of global memory, copied back
//! after each layer: twice the rows a tile where rows are wide (an uncompressed 16384-wide
//! row is 64 KB a buffer). [`Placement::Global`]: both buffers in scratch (the "cut in
//! global memory"), the only choice when not one row fits shared memory.
//! [`Placement::Lanes`]: no tile but 32 rows a warp, a row a lane (`bd_chain_lanes`), for
//! launch 1 where its rows are at most [`LANES_MAX_STRIDE`] floats and its layers ELL
//! ([`lanes_fit`]); outside the model's bytes. [`Placement::Warps`]: a row a warp
//! (`bd_chain_warps`), for launches after the first whose layers are all dense and narrow
//! ([`warps_fit`]): the layers' weights staged in shared memory two layers ahead, the rows
//! each a warp's own; also outside the model's bytes (each block reads every layer once).
//!
//! **The model** (docs/blockdepend.md), per row and layer, the bytes moved through L2:
//! shared: the layer's weights over the tile's rows (each tile reads the whole layer);
//! split: the same over its larger tile, plus each output written and read back (8 bytes);
//! global: the weights over the global tile, plus the row's activations as the layer reads
//! them (dense: the whole input row once per group of 32 outputs; ELL: the 32-byte sectors
//! its gathers touch, [`LayerLayout::sectors`]) and its outputs written. The cheapest wins,
//! shared before split before global on a tie. Layer 1 is outside the bytes (its entries
//! are read per input nonzero in every placement), and a launch holding it never goes to
//! global tiles while a shared or split tile fits: its scatter would be L2 atomics.

use serde::Serialize;

use crate::layout::{
    Format, LayerLayout, Layout, ROWS_PER_ITEM, SECTOR_FLOATS, VECTOR, WARP, round_up,
};

/// Most rows a tile holds (`BD_MAX_TILE`): the kernel's per-tile bookkeeping arrays.
pub const MAX_TILE: usize = 128;
/// Threads per block of the fused kernel for narrow tiles, several blocks an SM
/// (`BD_THREADS`).
pub const THREADS: usize = 256;
/// Threads per block for wide tiles, one block an SM (`BD_THREADS_WIDE`): as many warps as
/// [`TARGET_BLOCKS_PER_SM`] narrow blocks, within the registers of an SM at 80 a thread
/// (768 × 80 of 65536). A kernel constant: it does not follow [`Limits::narrow_blocks`],
/// which the device learns from the compiled kernel.
pub const THREADS_WIDE: usize = TARGET_BLOCKS_PER_SM * THREADS;
/// Tiles per block a segment aims at (the device-side tile size is
/// `⌈rows / (blocks · TILE_WAVES)⌉`, at most the segment's tile). One: where the plan's tile
/// does not bound it (the launches after the first, a few thousand rows) a tile's layers
/// wait on latency, so a tile of twice the rows costs about what one does, and one wave of
/// them beats two in a row; rows that die at different layers are not worth a second wave.
/// Measured against two (one H100, 2026-11-27j, call 2): 4096's launch 3 0.070 → 0.051 ms,
/// the official 1024's launches 2 and 3 0.028 → 0.019 and 0.039 → 0.032, 16384's launch 3
/// 0.142 → 0.115; launch 1's tile is the plan's either way.
pub const TILE_WAVES: usize = 1;
/// The first default cut: launch 1 covers layers 1–4. Measured against a cut after layer 2
/// once layer 1 summed as integers (one H100, 2026-11-27, commit fb79ca8): the official
/// 1024-120 0.263 → 0.228 ms, 4096-120 0.498 → 0.458, 16384-120 1.587 → 1.463, 65536-120
/// 4.72 → 4.53: one launch and one carry of the survivors fewer.
pub const FIRST_CUT: usize = 4;
/// The last default cut: the last launch covers layers 17 to the end. Doubling on (cuts 32,
/// 64, …) re-packed a few hundred rows at most and cost each later launch about 4 µs even
/// with no row left (one H100, 2026-11-27i, call 5: the official 1024-120 0.225 → 0.216 ms
/// with cuts 4, 8, 16; 4096-120 0.375 with cuts 4, 8, 16 or 4, 8, 16, 32; 16384-120 and
/// 65536-120 the same within 1 µs). At 1920 layers it saves six launches.
pub const LAST_CUT: usize = 16;
/// The last default cut where the launch before it runs tiles ([`default_cuts`]): layers 9
/// to 24 in one launch. By layer 24 the generated networks' rows are all but finished (0 of
/// 60000 left at N = 4096, 1 at 16384), so the tail launch of 1-row tiles that a cut at 16
/// left (~0.028 ms at 4096 for a few hundred rows) is gone for ~0.010 ms more in the launch
/// before: one H200, 2026-11-28h call 2, 4096-120 0.251–0.253 → 0.236–0.241 ms, 16384-120
/// 0.809–0.810 → 0.779–0.797. Where those layers spread (65536: a spread launch pays every
/// layer over the whole grid) 16 stays: 2.841 against 2.896 ms.
pub const TILES_LAST_CUT: usize = 24;
/// Rows per tile of a global-memory segment unless asked otherwise.
pub const GLOBAL_TILE: usize = 32;
/// Threads of a lanes block (`BD_LANES_THREADS`): four warps of 32 rows each.
pub const LANES_THREADS: usize = 128;
/// Floats between two columns of a lanes warp's buffer (`BD_LANE_PITCH`), row `r` of column
/// `c` at `c · 36 + r`: the 32 lanes' reads of one column (a row a lane) fall on 32 different
/// banks, and where each lane reads a column of its own (circulant layers, the fold, the
/// bitmap's bins) it reads 4 rows at once, 16 aligned bytes, 8 consecutive columns on 8
/// different bank quads. A pitch of 33 took those a word at a time (2026-11-29c).
pub const LANE_PITCH: usize = WARP + 4;
const _: () = assert!(LANE_PITCH.is_multiple_of(4) && LANES_CIRCULANT_CHUNK.is_multiple_of(4));
/// Widest row (padded to 32) a lanes segment carries (`BD_LANES_GROUPS` groups of 32): a lane
/// keeps a layer's sums in registers until every group is summed, then writes them over its
/// inputs (one buffer of 9 KiB a warp at 64 columns).
pub const LANES_MAX_STRIDE: usize = 64;
/// Rows a lanes warp sums at once in a circulant layer (`BD_LANES_CHUNK`; `bd_lanes_circulant`,
/// a lane one output column of the warp's 32 rows): a row's outputs read only that row, so a
/// chunk's outputs go over its inputs before the next chunk. All 32 rows at once spilled 72–80
/// bytes at the 128 registers of `bd_chain_lanes` (NVRTC 13.0, sm_90); 8 rows spill none.
/// Since the layer is compiled for its groups (2026-11-29a) 16 and 32 spill none either, but
/// the official 1024's lanes launch took the same time with them (35.7–38.1 µs for 8, 36.0–38.0
/// for 16, 36.5–37.2 for 32; ncu, one H200, 2026-11-29a call 8).
pub const LANES_CIRCULANT_CHUNK: usize = 8;
/// Threads of a warps block (`BD_WARPS_THREADS`): 16 warps, one block an SM, so that each
/// layer's weights are staged once an SM (more blocks an SM would read them once a block).
pub const WARPS_THREADS: usize = 512;
/// Blocks of a warps launch an SM (`BD_WARPS_BLOCKS`, its `__launch_bounds__`): one, its
/// grid is the SMs.
pub const WARPS_BLOCKS_PER_SM: usize = 1;
/// Most rows a warp of a warps block carries (`BD_WARPS_ROWS`): a warps tile holds
/// `WARPS_THREADS / 32 · WARPS_ROWS` rows.
pub const WARPS_ROWS: usize = 4;
/// Warps a warps tile's rows spread over before a warp takes a second row
/// (`BD_WARPS_SPREAD`): the SM's four schedulers. A warp reads a layer's whole weight matrix
/// from shared memory for its rows together: 17 rows a row a warp take ~2200 shared-memory
/// wavefronts a layer at 64 × 64, 4 a warp ~900. Counted as a layer's limit, measured not to
/// be (the official 1024's warps launch the same, one H100, 2026-11-28c call 3); kept for
/// the fewer loads. 16 (two rows a warp in the official 1024's ~31-row tiles instead of
/// four) took that launch from 27.5 to 30.5 µs (ncu, one H200, 2026-11-29a call 4).
pub const WARPS_SPREAD: usize = 4;
/// Widest row (padded to 32) a warps segment carries (`BD_WARPS_GROUPS` groups of 32: a
/// lane's outputs of a row, summed in registers).
pub const WARPS_MAX_STRIDE: usize = 128;
/// Stage slots of a warps block (`BD_WARPS_SLOTS`): layer `l` computes from slot
/// `l % 3` while the copies of layers `l + 1` and `l + 2` are in flight. 4 and 8 slots were
/// no faster on the official 1024 (one H100, 2026-11-28c calls 4 and 7), though each layer
/// still waits ~750 cycles for its slot.
pub const WARPS_SLOTS: usize = 3;
/// Rows a warps tile holds.
pub const WARPS_TILE: usize = WARPS_THREADS / WARP * WARPS_ROWS;

/// Floats (and words) of a warps block's dynamic shared memory for rows of `stride` floats:
/// [`WARPS_SLOTS`] slots of a descriptor and a `stride × stride` weight matrix, then a
/// buffer of `stride` floats for each of the tile's rows.
pub fn warps_block_floats(stride: usize) -> usize {
    WARPS_SLOTS * (crate::layout::DESC_WORDS + stride * stride) + WARPS_TILE * stride
}

/// Whether layers `first..end` of `layout`, rows of `stride` floats, can run a row a warp
/// ([`Placement::Warps`]): a launch after the first (its rows carried in), every layer dense
/// with its weights at a 16-byte boundary (bulk copies) in rows of `⌈out/32⌉·32` floats (the
/// kernel's sums take that stride from the groups), rows at most [`WARPS_MAX_STRIDE`]
/// wide, a device with bulk copies, and a block's shared memory fits.
pub fn warps_fit(
    layout: &Layout,
    first: usize,
    end: usize,
    stride: usize,
    limits: &Limits,
) -> bool {
    let bytes = 4 * warps_block_floats(stride);
    first > 0
        && limits.bulk_copies
        && stride <= WARPS_MAX_STRIDE
        && layout.layers[first..end].iter().all(|l| {
            l.format == Format::Dense
                && l.offset % VECTOR == 0
                && l.dense_stride == round_up(l.out_width, WARP)
        })
        && bytes + limits.static_shared <= limits.shared_per_block
}

/// Blocks of [`LANES_THREADS`] a lanes kernel is compiled to fit on an SM (`BD_LANES_BLOCKS`,
/// its `__launch_bounds__`: at most 128 registers a thread): 16 warps, 2112 on 132 SMs, so
/// that the official 1024's 60000 rows (1875 warps of 32) run in one round. With two buffers
/// a warp and 12 warps an SM (d511c4d) they took two rounds, the second a sixth full, and
/// launch 1 took 0.165-0.184 ms against the tiles' 0.116 (one H100, 2026-11-28, call 1). It
/// was 5 (20 warps, 102 registers) until the scatter's batches grew to
/// [`LANES_SCATTER_BATCH`], which needs the registers.
pub const LANES_BLOCKS: usize = 4;

/// Input nonzeros a tile's thread scatters at a time in layer 1 (`BD_SCATTER_BATCH`), each an
/// independent chain of loads; the thread takes every `threads`-th staged nonzero, so a warp's
/// lanes hold consecutive ones. Batches of 8 in the wide instance left 22 % of a 16384 chunk's
/// slots spare and were slower (2026-11-28f, calls 1-2); a thread's 4 nonzeros side by side
/// put the adds on bank conflicts (2026-11-28g, call 1).
pub const TILES_SCATTER_BATCH: usize = 4;

/// Nonzeros a lane a batch of the lanes' layer-1 scatter (`BD_LANES_BATCH`): each batch's
/// columns are loaded a batch ahead, so a warp's scatter is a chain of about
/// nonzeros / (32 · batch) dependent batches, and launch 1 lasts about one warp's chain
/// whatever the rows: 55.9, 54.7 and 49-54 µs on the official 1024's 60000, 30000 and 15000
/// rows (one H200, 2026-11-28e, call 6). Batches of 8 instead of 4 took launch 1 from
/// 55.7-56.3 to 48.9-50.3 µs (call 7); 16 spilled 64 bytes at 128 registers and gained less
/// (53-55 µs).
/// Not DRAM alone: the warp's nonzeros prefetched into L2 first changed nothing (call 9).
/// The folded scatter (no entries to hold) fits batches of 16 without spilling; they were
/// within the spread (30.2-30.7 against 30.3-32.4 µs, 2026-11-29b call 10).
pub const LANES_SCATTER_BATCH: usize = 8;

/// Rows a lanes warp transposes at once when it counts a folded layer 1's bins from a bitmap
/// input (`BD_BITMAP_ROWS`; `bd_lanes_bins_bitmap`): the rows' shuffles of one step are
/// independent, so their latencies overlap. Divides 32; a multiple of 4 (their bins are
/// stored 4 rows at once).
pub const BITMAP_TRANSPOSE_ROWS: usize = 8;
const _: () =
    assert!(WARP.is_multiple_of(BITMAP_TRANSPOSE_ROWS) && BITMAP_TRANSPOSE_ROWS.is_multiple_of(4));

/// Whether layers `first..end` of `layout`, rows of `stride` floats, can run a row a lane
/// ([`Placement::Lanes`]): rows at most [`LANES_MAX_STRIDE`] wide, no dense layer (each lane
/// would stream the whole matrix; the items' float4 rows serve dense layers), and a block of
/// [`LANES_THREADS`] fits shared memory.
pub fn lanes_fit(
    layout: &Layout,
    first: usize,
    end: usize,
    stride: usize,
    limits: &Limits,
) -> bool {
    let bytes = 4 * lanes_block_floats(stride);
    stride <= LANES_MAX_STRIDE
        && layout.layers[first..end]
            .iter()
            .all(|l| l.format != Format::Dense)
        && bytes + limits.static_shared <= limits.shared_per_block
}

/// Floats of a lanes block's shared memory for rows of `stride` floats: a buffer a warp,
/// [`LANE_PITCH`] floats a column.
pub fn lanes_block_floats(stride: usize) -> usize {
    (LANES_THREADS / WARP) * stride * LANE_PITCH
}

/// Where a segment keeps its tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Shared memory (the fused chain proper).
    Shared,
    /// The layer's input rows in shared memory, its outputs in a per-block scratch area of
    /// global memory, copied back after each layer.
    Split,
    /// A per-block scratch area in global memory.
    Global,
    /// A row a lane (`bd_chain_lanes`): each warp carries 32 rows of its own through the
    /// segment in a buffer of shared memory, column-major ([`LANE_PITCH`]); for narrow
    /// rows (at most [`LANES_MAX_STRIDE`] floats) and ELL layers only ([`lanes_fit`]).
    Lanes,
    /// A row a warp (`bd_chain_warps`): each warp carries up to [`WARPS_ROWS`] rows of a
    /// tile through the segment, the layers' weights staged in shared memory two layers
    /// ahead; for launches after the first of narrow dense layers ([`warps_fit`]).
    Warps,
}

impl Placement {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Shared => "shared",
            Placement::Split => "split",
            Placement::Global => "global",
            Placement::Lanes => "lanes",
            Placement::Warps => "warps",
        }
    }

    /// Tile buffers (of `tile × stride` floats) a block keeps in shared memory.
    pub fn shared_buffers(self) -> usize {
        match self {
            Placement::Shared => 2,
            Placement::Split => 1,
            Placement::Global => 0,
            Placement::Lanes | Placement::Warps => 1,
        }
    }
}

/// Which placements a run may use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlacementChoice {
    /// Per segment, by the model (shared whenever a row fits and the model agrees).
    #[default]
    Auto,
    /// Shared memory for every segment; an error when a tile does not fit.
    Shared,
    /// Inputs in shared memory and outputs in global memory for every segment; an error
    /// when a tile does not fit.
    Split,
    /// Global memory for every segment.
    Global,
    /// A row a lane for every segment that can ([`lanes_fit`]); the model's choice for the
    /// others.
    Lanes,
    /// A row a warp for every segment that can ([`warps_fit`]); the model's choice for the
    /// others.
    Warps,
}

/// How a segment's layer work items (32 outputs × up to [`ROWS_PER_ITEM`] rows) run: the
/// kernel's `exact_items` argument ([`Items::code`]).
///
/// [`ROWS_PER_ITEM`]: crate::layout::ROWS_PER_ITEM
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Items {
    /// One compiled instance per row count: no instruction issues for a row the item lacks,
    /// and the ELL gathers use 32-bit shared-memory addresses (tiles in shared memory: the
    /// shared and split placements). About 3.3–3.8 instructions a multiply-add on sm_90
    /// (docs/blockdepend.md). Circulant layers ([`crate::layout::Circulant`]) run circulant
    /// items: a lane four consecutive outputs, a vector load a slot and row; a row a lane
    /// ([`Placement::Lanes`]) runs them with a lane one output column of its warp's 32 rows.
    Exact,
    /// [`Items::Exact`] with circulant layers gathered entry by entry like the others (the
    /// kernel before the circulant items, for A/B runs).
    Gathers,
    /// Every item runs [`ROWS_PER_ITEM`] rows, those it lacks predicated off (the kernel
    /// before the exact items; always so for tiles in global memory, whose 32-row tiles
    /// fill their items). 8.5 instructions a multiply-add of a full item in the split
    /// instances on sm_90, 22.7 at 3 rows an item.
    ///
    /// [`ROWS_PER_ITEM`]: crate::layout::ROWS_PER_ITEM
    Predicated,
}

impl Items {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Items::Exact => "exact",
            Items::Gathers => "exact-gathers",
            Items::Predicated => "predicated",
        }
    }

    /// The kernel's `exact_items` argument: 0 predicated, 1 exact, 2 exact with circulant
    /// items.
    pub fn code(self) -> u32 {
        match self {
            Items::Predicated => 0,
            Items::Gathers => 1,
            Items::Exact => 2,
        }
    }

    /// What the planner picks for a segment placed at `placement`: exact items where the
    /// tile lies in shared memory.
    pub fn for_placement(placement: Placement) -> Self {
        match placement {
            Placement::Shared | Placement::Split | Placement::Lanes | Placement::Warps => {
                Items::Exact
            }
            Placement::Global => Items::Predicated,
        }
    }
}

/// Which items a run may use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemChoice {
    /// Per segment by its placement ([`Items::for_placement`]).
    #[default]
    Auto,
    /// Predicated items in every segment (the previous kernel, for A/B runs).
    Predicated,
    /// [`Items::Gathers`] where `Auto` picks [`Items::Exact`]: circulant layers gathered
    /// entry by entry (the kernel before the circulant items, for A/B runs).
    Gathers,
}

/// `segments` with the items `choice` allows.
pub fn choose_items(segments: &mut [Segment], choice: ItemChoice) {
    for s in segments {
        s.items = match choice {
            ItemChoice::Auto => Items::for_placement(s.placement),
            ItemChoice::Predicated => Items::Predicated,
            ItemChoice::Gathers => match Items::for_placement(s.placement) {
                Items::Exact => Items::Gathers,
                other => other,
            },
        };
    }
}

/// Which launches run as a spread tail (`bd_spread_*`): a launch after the first whose rows,
/// at run time, are at most grid × [`Segment::spread_chunk`] runs its layers one at a time
/// over the whole grid, each block a chunk of rows and a slice of the output groups, with a
/// grid-wide barrier after each layer; with more rows it runs the tiles' loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpreadChoice {
    /// Launches with a layer of at least [`SPREAD_LAYER_BYTES`].
    #[default]
    Auto,
    /// Every launch that can (the tests' way to run the spread path on small networks).
    Always,
    /// No launch.
    Off,
}

/// Weight bytes of a layer from which a launch spreads (`SpreadChoice::Auto`), as stored
/// ([`LayerLayout::bytes`]: what a block streams). A tile carried by one block streams each
/// layer's weights through one SM, about 100 GB/s of L2 an SM on an H200: from 256 KiB a
/// layer that is ≥ 2.5 µs a layer, more than a grid-wide barrier and the chunk's round trip
/// through L2 cost. At N = 65536 (compressed) a heavy layer is ~0.5 MB of 32-bit scaled
/// entries: spread, 65536-120 took 4.474 ms against 4.609 in tiles (one H100, 2026-11-27,
/// de9bc7a). At 16384 it is 64 KiB of 16-bit ones: in tiles, 16384-120 took 1.204 ms against
/// 1.434 spread (same day), when the rule still counted them as 8-byte pairs (256 KiB). At
/// 1024 ~16 KB, where spreading only adds barriers (the official 1024-120 took 1.02 ms spread
/// everywhere against 0.30 ms, 8d1728f).
pub const SPREAD_LAYER_BYTES: usize = 256 * 1024;

/// How a segment runs its rows: which of [`SpreadChoice`] applies to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Spread {
    /// Tiles carried through every layer by one block each.
    #[default]
    Tiles,
    /// The spread tail when its rows are at most grid × chunk (tiles otherwise).
    Spread,
}

/// Whether a launch after the first running `layers` spreads under [`SpreadChoice::Auto`]:
/// one of them is at least [`SPREAD_LAYER_BYTES`].
pub fn spreads_by_default(layers: &[LayerLayout]) -> bool {
    layers.iter().any(|l| l.bytes >= SPREAD_LAYER_BYTES)
}

/// `segments` of `layout` with the spread `choice` allows: never the first (it reads the
/// sparse input); only tiles in shared memory, or split ones of at least two rows (a chunk
/// takes half), with exact items.
pub fn choose_spread(segments: &mut [Segment], layout: &Layout, choice: SpreadChoice) {
    for (index, s) in segments.iter_mut().enumerate() {
        let exact = matches!(s.items, Items::Exact | Items::Gathers);
        let eligible = index > 0 && exact && s.spread_chunk() > 0;
        let wanted = match choice {
            SpreadChoice::Auto => spreads_by_default(&layout.layers[s.first..s.end]),
            SpreadChoice::Always => true,
            SpreadChoice::Off => false,
        };
        s.spread = if eligible && wanted {
            Spread::Spread
        } else {
            Spread::Tiles
        };
    }
}

/// Fewest blocks of [`THREADS`] a narrow shared-memory tile aims at an SM: three hide the
/// latency of the weight loads, as long as each tile keeps at least [`OCCUPANCY_ROWS`] rows
/// (with fewer rows, one block of [`THREADS_WIDE`] takes the SM). Also the narrow blocks a
/// plan assumes when the kernel's registers are not known ([`Limits::hopper`]).
pub const TARGET_BLOCKS_PER_SM: usize = 3;
/// Most blocks of [`THREADS`] a narrow tile aims at an SM, where the compiled kernel's
/// registers allow them ([`Limits::narrow_blocks`]). Four measured best at N = 4096 (the
/// kernel at 64 registers; one H100, 2026-11-27i, call 6): 24 rows a tile 0.321 ms, 16 rows
/// 0.344, against 0.358 with three blocks of 36 rows. More were not measured.
pub const MAX_BLOCKS_PER_SM: usize = 4;
/// Fewest rows a tile keeps for the sake of more blocks per SM: two work items of rows,
/// so that each weight read still serves 16 rows.
pub const OCCUPANCY_ROWS: usize = 16;

/// What the device allows a block of the fused kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Shared memory a block may use with the opt-in, bytes (static included).
    pub shared_per_block: usize,
    /// Shared memory of an SM, bytes.
    pub shared_per_sm: usize,
    /// Shared memory the system reserves per block, bytes.
    pub reserved_per_block: usize,
    /// The kernel's static shared memory, bytes.
    pub static_shared: usize,
    /// Blocks of [`THREADS`] the narrow kernel's registers let an SM hold (the device asks
    /// the compiled `bd_chain_shared`); the plan aims at this many, within
    /// [`TARGET_BLOCKS_PER_SM`] ..= [`MAX_BLOCKS_PER_SM`].
    pub narrow_blocks: usize,
    /// Whether the device has bulk copies counted by mbarriers (sm_90 and later), which
    /// [`Placement::Warps`] stages its layers with.
    pub bulk_copies: bool,
}

impl Limits {
    /// An H100 / H200 (sm_90) with the kernel's static shared memory `static_shared`:
    /// 227 KiB a block, 228 KiB an SM, 1 KiB reserved per block, [`TARGET_BLOCKS_PER_SM`]
    /// narrow blocks an SM.
    pub const fn hopper(static_shared: usize) -> Self {
        Self {
            shared_per_block: 227 * 1024,
            shared_per_sm: 228 * 1024,
            reserved_per_block: 1024,
            static_shared,
            narrow_blocks: TARGET_BLOCKS_PER_SM,
            bulk_copies: true,
        }
    }

    /// Most rows of `stride` floats a tile in shared memory holds (two buffers) with
    /// `blocks` blocks on an SM, at most [`MAX_TILE`].
    pub fn tile_at(&self, stride: usize, blocks: usize) -> usize {
        self.rows_at(2 * stride, blocks)
    }

    /// Most rows of `floats` floats each that fit a block's shared memory with `blocks`
    /// blocks on an SM, at most [`MAX_TILE`].
    fn rows_at(&self, floats: usize, blocks: usize) -> usize {
        let per_block = (self.shared_per_sm / blocks.max(1))
            .saturating_sub(self.reserved_per_block)
            .min(self.shared_per_block)
            .saturating_sub(self.static_shared);
        (per_block / (4 * floats.max(1))).min(MAX_TILE)
    }

    /// Rows a tile in shared memory holds, and its threads: the most rows that let `b`
    /// blocks of [`THREADS`] share an SM, for the most `b` from [`Limits::narrow_blocks`]
    /// down to [`TARGET_BLOCKS_PER_SM`] that leaves at least [`OCCUPANCY_ROWS`] rows; else
    /// one block of [`THREADS_WIDE`] an SM with as many rows as fit (the same warps an SM as
    /// three narrow blocks, more rows a tile). 0 rows when not one fits a block.
    ///
    /// A narrow tile holds whole work items ([`ROWS_PER_ITEM`] rows): the tail launches wait on
    /// latency, so an item of 3 rows costs about what one of 8 does. 27 rows (four items)
    /// took 4096-120's launch 1 0.248 ms, 24 rows (three) 0.202 (one H100, 2026-11-27j,
    /// call 1). Wide tiles keep every row that fits: they stream wide layers' weights once a
    /// tile.
    pub fn shared_tile(&self, stride: usize) -> (usize, usize) {
        self.tile_of(2 * stride)
    }

    /// [`Limits::shared_tile`] for a split tile (one buffer of `stride` floats a row in
    /// shared memory).
    pub fn split_tile(&self, stride: usize) -> (usize, usize) {
        self.tile_of(stride)
    }

    fn tile_of(&self, floats: usize) -> (usize, usize) {
        let most = self
            .narrow_blocks
            .clamp(TARGET_BLOCKS_PER_SM, MAX_BLOCKS_PER_SM);
        (TARGET_BLOCKS_PER_SM..=most)
            .rev()
            .map(|blocks| self.rows_at(floats, blocks))
            .find(|&rows| rows >= OCCUPANCY_ROWS)
            .map_or((self.rows_at(floats, 1), THREADS_WIDE), |rows| {
                (rows / ROWS_PER_ITEM * ROWS_PER_ITEM, THREADS)
            })
    }
}

/// The model's numbers for one segment: bytes moved through L2 per row and layer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SegmentModel {
    /// With the tile in shared memory (`None`: not one row fits).
    pub shared_bytes: Option<f64>,
    /// With the inputs in shared memory and the outputs in global memory (`None`: not one
    /// row fits).
    pub split_bytes: Option<f64>,
    /// With the tile in global memory.
    pub global_bytes: f64,
}

/// One launch of the fused kernel.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Segment {
    /// Its first layer (0-based).
    pub first: usize,
    /// One past its last layer.
    pub end: usize,
    /// Floats per tile row: the widest activation it holds, rounded up to 32.
    pub stride: usize,
    /// Floats per carried row it reads (0: it reads the sparse input).
    pub carry_in: usize,
    /// Floats per carried row it writes (0: it is the last and writes the final values).
    pub carry_out: usize,
    /// Where its tiles live.
    pub placement: Placement,
    /// Most rows per tile.
    pub tile: usize,
    /// Threads per block ([`THREADS`] or [`THREADS_WIDE`]).
    pub threads: usize,
    /// How its layer work items run ([`Items::for_placement`] unless [`choose_items`] says
    /// otherwise).
    pub items: Items,
    /// Whether it may spread its rows over the grid ([`choose_spread`]).
    pub spread: Spread,
    /// The model's numbers.
    pub model: SegmentModel,
}

/// Layers `first..=last` (counted from 1) as reports name them: `first`, or `first-last`.
pub fn layers_label(first: usize, last: usize) -> String {
    if first == last {
        first.to_string()
    } else {
        format!("{first}-{last}")
    }
}

impl Segment {
    /// `first+1-end` (1-based, inclusive), as stages and reports name it.
    pub fn label(&self) -> String {
        layers_label(self.first + 1, self.end)
    }

    /// Whether it runs `layer` with the circulant layers' code (the kernel's
    /// `bd_runs_circulant`): exact items, a layer proved circulant, and tiles in shared memory
    /// (shared or split: circulant items) or a row a lane (`bd_lanes_circulant`).
    pub fn runs_circulant(&self, layer: &crate::layout::LayerLayout) -> bool {
        self.items == Items::Exact
            && matches!(
                self.placement,
                Placement::Shared | Placement::Split | Placement::Lanes
            )
            && layer.circulant != 0
    }

    /// Whether it skips the row check after `done` layers: tiles (the kernel's
    /// `bd_check_deferred`) when the next layer of the launch runs circulant items, whose work
    /// a row is about the check's, so the rows that died are computed rather than found; a
    /// row a lane after every layer but the last (a warp computes its 32 rows whether or not
    /// they finished). The next check finishes such rows in the same state (zero rows stay
    /// zero, rows at the bound past the proved suffix stay there). The launch's last layer is
    /// always checked.
    pub fn check_deferred(&self, layout: &Layout, done: usize) -> bool {
        done < self.end
            && (self.placement == Placement::Lanes || self.runs_circulant(&layout.layers[done]))
    }

    /// Floats of one block's tile buffers (two of `tile × stride`; a lanes block's one a
    /// warp of [`LANE_PITCH`] floats a column).
    pub fn tile_floats(&self) -> usize {
        match self.placement {
            Placement::Lanes => lanes_block_floats(self.stride),
            Placement::Warps => warps_block_floats(self.stride),
            _ => 2 * self.tile * self.stride,
        }
    }

    /// Floats of dynamic shared memory a block takes (its buffers in shared memory).
    pub fn shared_floats(&self) -> usize {
        match self.placement {
            Placement::Lanes | Placement::Warps => self.tile_floats(),
            _ => self.placement.shared_buffers() * self.tile * self.stride,
        }
    }

    /// Floats of global scratch a block takes (its buffers in global memory).
    pub fn scratch_floats(&self) -> usize {
        self.tile_floats() - self.shared_floats()
    }

    /// Most rows of a spread launch's chunk: the rows whose two buffers (the chunk's rows and
    /// their outputs) fit its shared memory; 0 for tiles in global memory. A spread launch on
    /// `grid` blocks runs spread up to `grid · spread_chunk` rows (a chunk a block): with
    /// several chunks a block (tried, 2026-11-23, 535e93d) the launch of layers 9–16 at
    /// N = 65536 spread its 3831 rows in 0.95 ms against 0.56 ms in tiles, which keep the rows
    /// on chip instead of reading and writing them every layer.
    pub fn spread_chunk(&self) -> usize {
        match self.placement {
            Placement::Shared => self.tile,
            Placement::Split => self.tile / 2,
            Placement::Global | Placement::Lanes | Placement::Warps => 0,
        }
    }
}

/// The chain's cuts: the layer counts after which a new launch starts. `requested` must be
/// strictly increasing within `1..layers`; by default the powers of two from [`FIRST_CUT`]
/// to [`LAST_CUT`] below `layers` (4, 8, 16): the survivors are re-packed while rows still
/// die quickly, and the last launch runs the rest.
pub fn cut_points(layers: usize, requested: Option<&[usize]>) -> Result<Vec<usize>, String> {
    match requested {
        Some(cuts) => {
            for pair in cuts.windows(2) {
                if pair[1] <= pair[0] {
                    return Err(format!(
                        "cuts must increase strictly, got {} after {}",
                        pair[1], pair[0]
                    ));
                }
            }
            if let Some(&bad) = cuts.iter().find(|&&c| c == 0 || c >= layers) {
                return Err(format!(
                    "a cut after {bad} layers is outside 1..{} of a {layers}-layer network",
                    layers.saturating_sub(1)
                ));
            }
            Ok(cuts.to_vec())
        }
        None => Ok(std::iter::successors(Some(FIRST_CUT), |c| c.checked_mul(2))
            .take_while(|&c| c <= LAST_CUT && c < layers)
            .collect()),
    }
}

/// Bytes one row costs in global memory per layer beyond the weights: the activations the
/// layer reads (dense: the input row once per group of 32 outputs; ELL: the 32-byte
/// sectors its gathers touch) and the outputs it writes.
fn activation_reads(layer: &LayerLayout) -> f64 {
    let reads = match layer.format {
        Format::Input => 0.0,
        Format::Dense => 4.0 * (round_up(layer.in_width, VECTOR) * layer.groups()) as f64,
        Format::Ell | Format::EllScaled16 | Format::EllScaled32 => {
            (4 * SECTOR_FLOATS * layer.sectors) as f64
        }
    };
    reads + 4.0 * round_up(layer.out_width, WARP) as f64
}

/// Bytes one row of a split tile moves per layer beyond the weights: each output written
/// to the scratch and read back.
fn split_round_trip(layer: &LayerLayout) -> f64 {
    match layer.format {
        Format::Input => 0.0,
        _ => 8.0 * round_up(layer.out_width, WARP) as f64,
    }
}

/// The segments of `layout` cut after `cuts` layers, each placed as `choice` allows, with
/// `tile_rows` rows per tile when given (else the most that fit shared memory, or
/// [`GLOBAL_TILE`] in global memory). Errors when [`PlacementChoice::Shared`] is asked for
/// and a tile does not fit.
pub fn plan(
    layout: &Layout,
    limits: &Limits,
    cuts: &[usize],
    choice: PlacementChoice,
    tile_rows: Option<usize>,
) -> Result<Vec<Segment>, String> {
    let layers = &layout.layers;
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(layers.len());
    let mut segments = Vec::with_capacity(bounds.len() - 1);
    for pair in bounds.windows(2) {
        let (first, end) = (pair[0], pair[1]);
        let carry_in = if first == 0 {
            0
        } else {
            round_up(layers[first - 1].out_width, WARP)
        };
        let carry_out = if end == layers.len() {
            0
        } else {
            round_up(layers[end - 1].out_width, WARP)
        };
        let widest = layers[first..end]
            .iter()
            .map(|l| l.out_width)
            .max()
            .unwrap_or(1);
        let stride = round_up(widest, WARP).max(carry_in);
        let (fits, shared_threads) = limits.shared_tile(stride);
        let shared_tile = tile_rows.map_or(fits, |t| if t <= fits { t } else { 0 });
        let (split_fits, split_threads) = limits.split_tile(stride);
        let split_tile = tile_rows.map_or(split_fits, |t| if t <= split_fits { t } else { 0 });
        let global_tile = tile_rows.unwrap_or(GLOBAL_TILE).min(MAX_TILE);
        let count = (end - first) as f64;
        // Layer 1's entries are read once per input nonzero, whatever the tile: the same
        // bytes in every placement, so they stay out of the comparison (divided by a tile's
        // rows, its 1 MB at N = 65536 once put launch 1 in global tiles, 10.18 against
        // 6.90 ms with shared tiles, one H100, 2026-11-27).
        let weights: f64 = layers[first..end]
            .iter()
            .filter(|l| l.format != Format::Input)
            .map(|l| l.bytes as f64)
            .sum();
        let activations: f64 = layers[first..end].iter().map(activation_reads).sum();
        let round_trips: f64 = layers[first..end].iter().map(split_round_trip).sum();
        let model = SegmentModel {
            shared_bytes: (shared_tile > 0).then(|| weights / shared_tile as f64 / count),
            split_bytes: (split_tile > 0)
                .then(|| (weights / split_tile as f64 + round_trips) / count),
            global_bytes: (weights / global_tile as f64 + activations) / count,
        };
        let refuse = |buffers: usize| {
            let what = if buffers == 2 {
                "two buffers"
            } else {
                "one buffer"
            };
            format!(
                "layers {}-{}: a tile of {} rows × {stride} floats ({what} in shared memory) \
                 does not fit the {} bytes of shared memory a block may use",
                first + 1,
                end,
                tile_rows.unwrap_or(1),
                limits.shared_per_block.saturating_sub(limits.static_shared),
            )
        };
        // A row a lane where asked and it fits; by default for launch 1, which carries every
        // row (later launches carry a few thousand, too few for 32 a warp), unless a tile
        // size was asked for.
        let lanes = lanes_fit(layout, first, end, stride, limits)
            && match choice {
                PlacementChoice::Lanes => true,
                PlacementChoice::Auto => first == 0 && tile_rows.is_none(),
                _ => false,
            };
        // A row a warp where asked and it fits; by default for the launches after the first
        // whose layers are all dense and narrow (the official 1024's after layer 8), unless a
        // tile size was asked for.
        let warps = !lanes
            && warps_fit(layout, first, end, stride, limits)
            && match choice {
                PlacementChoice::Warps => true,
                PlacementChoice::Auto => tile_rows.is_none(),
                _ => false,
            };
        let placement = match choice {
            _ if lanes => Placement::Lanes,
            _ if warps => Placement::Warps,
            PlacementChoice::Shared if shared_tile == 0 => return Err(refuse(2)),
            PlacementChoice::Split if split_tile == 0 => return Err(refuse(1)),
            PlacementChoice::Shared => Placement::Shared,
            PlacementChoice::Split => Placement::Split,
            PlacementChoice::Global => Placement::Global,
            PlacementChoice::Auto | PlacementChoice::Lanes | PlacementChoice::Warps => {
                // Layer 1 scatters each input nonzero's entries with atomics: in global tiles
                // one L2 atomic (a 32-byte sector) each, which the bytes above leave out, so
                // global tiles take layer 1 only when no shared or split tile fits.
                let global = if first == 0 && (shared_tile > 0 || split_tile > 0) {
                    f64::INFINITY
                } else {
                    model.global_bytes
                };
                let mut best = (Placement::Global, global);
                for (placement, bytes) in [
                    (Placement::Split, model.split_bytes),
                    (Placement::Shared, model.shared_bytes),
                ] {
                    if let Some(bytes) = bytes
                        && bytes <= best.1
                    {
                        best = (placement, bytes);
                    }
                }
                best.0
            }
        };
        segments.push(Segment {
            first,
            end,
            stride,
            carry_in,
            carry_out,
            placement,
            tile: match placement {
                Placement::Shared => shared_tile,
                Placement::Split => split_tile,
                Placement::Global => global_tile,
                Placement::Lanes => LANES_THREADS,
                Placement::Warps => WARPS_TILE,
            },
            threads: match placement {
                Placement::Shared => shared_threads,
                Placement::Split => split_threads,
                Placement::Global => THREADS,
                Placement::Lanes => LANES_THREADS,
                Placement::Warps => WARPS_THREADS,
            },
            items: Items::for_placement(placement),
            spread: Spread::Tiles,
            model,
        });
    }
    Ok(segments)
}

/// The launches of `layout`: cut after `requested` layers, or by default at [`cut_points`]
/// with consecutive warps launches merged ([`merge_warps`]), each placed by [`plan`]. What
/// the device and the emulation both run.
pub fn launches(
    layout: &Layout,
    limits: &Limits,
    requested: Option<&[usize]>,
    choice: PlacementChoice,
    tile_rows: Option<usize>,
) -> Result<Vec<Segment>, String> {
    let cuts = match requested {
        Some(_) => cut_points(layout.layers.len(), requested)?,
        None => default_cuts(layout),
    };
    let segments = plan(layout, limits, &cuts, choice, tile_rows)?;
    Ok(match requested {
        Some(_) => segments,
        None => merge_warps(
            extend_lanes(segments, layout, limits, &cuts, choice, tile_rows)?,
            layout,
            limits,
        ),
    })
}

/// The default cuts of `layout` ([`cut_points`]: 4, 8, 16 below its layers), the last moved
/// to [`TILES_LAST_CUT`] where the launch before it would not spread ([`spreads_by_default`]:
/// it runs tiles) and the network is deeper.
pub fn default_cuts(layout: &Layout) -> Vec<usize> {
    let layers = layout.layers.len();
    let mut cuts = cut_points(layers, None).unwrap_or_default();
    if let [.., before, last] = cuts[..]
        && last == LAST_CUT
        && TILES_LAST_CUT < layers
        && !spreads_by_default(&layout.layers[before..TILES_LAST_CUT])
    {
        *cuts.last_mut().expect("two cuts at least") = TILES_LAST_CUT;
    }
    cuts
}

/// `segments` (the plan of the default `cuts`) with a first launch that runs a row a lane
/// moved past its cut through the layers a row a lane still fits, up to the second cut: a
/// warp carries its rows through such a layer, dead ones included, for less than a launch of
/// tiles costs the survivors. The official 1024 runs lanes 1–6 and warps 7–120 (layers 7–8
/// are dense) instead of lanes 1–4, tiles 5–8, warps 9–120: ~5 µs less, 0.1025 against
/// 0.108 ms, the medians of six pairs in the same calls (one H200, 2026-11-28d calls 8–9).
fn extend_lanes(
    segments: Vec<Segment>,
    layout: &Layout,
    limits: &Limits,
    cuts: &[usize],
    choice: PlacementChoice,
    tile_rows: Option<usize>,
) -> Result<Vec<Segment>, String> {
    let lanes_first = segments
        .first()
        .is_some_and(|s| s.placement == Placement::Lanes);
    let (true, Some(&cut), Some(&next)) = (lanes_first, cuts.first(), cuts.get(1)) else {
        return Ok(segments);
    };
    for moved in (cut + 1..=next).rev() {
        let mut moved_cuts = vec![moved];
        moved_cuts.extend(cuts[1..].iter().copied().filter(|&c| c > moved));
        let extended = plan(layout, limits, &moved_cuts, choice, tile_rows)?;
        if extended[0].placement == Placement::Lanes {
            return Ok(extended);
        }
    }
    Ok(segments)
}

/// `segments` with each run of consecutive [`Placement::Warps`] segments merged into one
/// launch where the merged one still fits ([`warps_fit`]): a warps launch keeps its rows in
/// place whatever dies, so a cut between two of them only costs a launch and a carry. For
/// the default cuts (the official 1024's layers 9–16 and 17–120 become one launch); cuts a
/// user asked for stay as asked.
pub fn merge_warps(segments: Vec<Segment>, layout: &Layout, limits: &Limits) -> Vec<Segment> {
    let mut merged: Vec<Segment> = Vec::with_capacity(segments.len());
    for segment in segments {
        if let Some(last) = merged.last_mut()
            && last.placement == Placement::Warps
            && segment.placement == Placement::Warps
        {
            let stride = last.stride.max(segment.stride);
            if warps_fit(layout, last.first, segment.end, stride, limits) {
                last.end = segment.end;
                last.stride = stride;
                last.carry_out = segment.carry_out;
                continue;
            }
        }
        merged.push(segment);
    }
    merged
}

/// The path a run takes, for reports: the fused chain in shared memory (tiles, or a row a
/// lane before them), the same with its outputs through global memory (split), tiles in
/// global memory, or a mix of them (each placement named once, in the order of its first
/// launch).
pub fn path(segments: &[Segment]) -> String {
    let mut used: Vec<Placement> = Vec::new();
    for s in segments {
        if !used.contains(&s.placement) {
            used.push(s.placement);
        }
    }
    let on_chip =
        |p: &Placement| matches!(p, Placement::Shared | Placement::Lanes | Placement::Warps);
    match used.as_slice() {
        [Placement::Shared] => "fused chain (tiles in shared memory)".into(),
        _ if used.iter().all(on_chip) => {
            let steps: Vec<&str> = used
                .iter()
                .map(|p| match p {
                    Placement::Lanes => "a row a lane",
                    Placement::Warps => "a row a warp",
                    _ => "tiles",
                })
                .collect();
            format!("fused chain (shared memory: {})", steps.join(", then "))
        }
        [Placement::Split] => "fused chain, outputs through global memory (split tiles)".into(),
        [Placement::Global] => "tiles in global memory".into(),
        _ => format!(
            "mixed: {} tiles",
            used.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Rows per tile of a segment launched on `blocks` blocks over `rows` rows: what the kernel
/// computes on the device from the row count it reads there. (Equal tiles in as few waves
/// as tiles of `tile` rows need were tried, 2026-11-27i call 5: 4096's launch 1 ran its
/// 36-row tiles in 4.2 waves, and 5 waves of 31 rows were no faster, 0.245-0.258 ms against
/// 0.223: the blocks take tiles from a queue and rows die at different layers, so the part
/// full wave was not a loss.)
pub fn device_tile(rows: usize, blocks: usize, tile: usize) -> usize {
    rows.div_ceil(blocks.max(1) * TILE_WAVES)
        .clamp(1, tile.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Chain, FormatChoice};
    use spdnn_formats::Csr;

    const H200: Limits = Limits::hopper(1200);

    fn layout(widths: &[usize]) -> Layout {
        layout_with(widths, 1)
    }

    /// Layers of `fan_in` distinct inputs a column (at most the input width).
    fn layout_with(widths: &[usize], fan_in: u32) -> Layout {
        let layers: Vec<Csr> = widths
            .windows(2)
            .map(|d| {
                let (inputs, step) = (d[0] as u32, (d[0] as u32 / fan_in).max(1));
                let t: Vec<(u32, u32, f32)> = (0..d[1] as u32)
                    .flat_map(|c| (0..fan_in).map(move |j| ((c + j * step) % inputs, c, 1.0)))
                    .collect();
                Csr::from_triplets(d[0], d[1], &t).unwrap()
            })
            .collect();
        Layout::build(
            &Chain::from_parts(layers, None).unwrap(),
            FormatChoice::Auto,
        )
        .unwrap()
    }

    #[test]
    fn default_cuts_are_the_powers_of_two() {
        assert_eq!(cut_points(1, None).unwrap(), Vec::<usize>::new());
        assert_eq!(cut_points(2, None).unwrap(), Vec::<usize>::new());
        assert_eq!(cut_points(4, None).unwrap(), Vec::<usize>::new());
        assert_eq!(cut_points(5, None).unwrap(), vec![4]);
        assert_eq!(cut_points(16, None).unwrap(), vec![4, 8]);
        assert_eq!(cut_points(17, None).unwrap(), vec![4, 8, 16]);
        assert_eq!(cut_points(120, None).unwrap(), vec![4, 8, 16]);
        assert_eq!(cut_points(1920, None).unwrap(), vec![4, 8, 16]);
        assert_eq!(cut_points(5, Some(&[1, 3])).unwrap(), vec![1, 3]);
        assert!(cut_points(5, Some(&[3, 3])).is_err());
        assert!(cut_points(5, Some(&[0])).is_err());
        assert!(cut_points(5, Some(&[5])).is_err());
    }

    #[test]
    fn layer_ranges_are_labelled_from_1() {
        assert_eq!(layers_label(3, 3), "3");
        assert_eq!(layers_label(2, 8), "2-8");
    }

    #[test]
    fn the_last_default_cut_moves_to_24_where_the_layers_do_not_spread() {
        let narrow = |layers: usize| layout(&vec![64; layers + 1]);
        assert_eq!(default_cuts(&narrow(30)), vec![4, 8, 24]);
        assert_eq!(default_cuts(&narrow(25)), vec![4, 8, 24]);
        // No layer after 24: the cut at 16 stays (the last launch would be empty).
        assert_eq!(default_cuts(&narrow(24)), vec![4, 8, 16]);
        assert_eq!(default_cuts(&narrow(16)), vec![4, 8]);
        assert_eq!(default_cuts(&narrow(3)), Vec::<usize>::new());
        // A layer of 9-24 heavy enough to spread keeps the cut at 16.
        let mut widths = vec![64; 31];
        widths[20] = 4096;
        widths[21] = 4096;
        let heavy = layout_with(&widths, 32);
        assert!(heavy.layers[20].bytes >= SPREAD_LAYER_BYTES);
        assert_eq!(default_cuts(&heavy), vec![4, 8, 16]);
        // The launches follow them; asked-for cuts stay as asked.
        let l = narrow(30);
        let ends = |s: &[Segment]| s.iter().map(|s| s.end).collect::<Vec<_>>();
        let s = launches(&l, &H200, None, PlacementChoice::Shared, None).unwrap();
        assert_eq!(ends(&s), vec![4, 8, 24, 30]);
        let s = launches(&l, &H200, Some(&[4, 8, 16]), PlacementChoice::Shared, None).unwrap();
        assert_eq!(ends(&s), vec![4, 8, 16, 30]);
    }

    #[test]
    fn segments_cover_the_chain_with_their_widths() {
        let l = layout(&[100, 64, 40, 64, 33, 7]);
        let s = plan(&l, &H200, &[2, 3], PlacementChoice::Auto, None).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(
            (s[0].first, s[0].end, s[0].carry_in, s[0].carry_out),
            (0, 2, 0, 64)
        );
        assert_eq!(
            (s[1].first, s[1].end, s[1].carry_in, s[1].carry_out),
            (2, 3, 64, 64)
        );
        assert_eq!(
            (s[2].first, s[2].end, s[2].carry_in, s[2].carry_out),
            (3, 5, 64, 0)
        );
        assert_eq!(s.iter().map(|s| s.stride).collect::<Vec<_>>(), [64, 64, 64]);
        // Launch 1's narrow ELL rows a row a lane (32 a warp, as many as a tile holds).
        assert_eq!(s[0].placement, Placement::Lanes);
        assert!(s[1..].iter().all(|s| s.placement == Placement::Shared));
        assert!(s.iter().all(|s| s.tile == MAX_TILE));
        assert_eq!(
            (s[0].label(), s[1].label()),
            ("1-2".to_string(), "3".to_string())
        );
    }

    #[test]
    fn wide_tiles_go_to_global_memory() {
        // 60000 floats a row: not one row of two buffers fits 227 KiB.
        let l = layout(&[10, 60000, 60000]);
        let s = plan(&l, &H200, &[], PlacementChoice::Auto, None).unwrap();
        assert_eq!(s[0].placement, Placement::Global);
        assert_eq!(s[0].tile, GLOBAL_TILE);
        assert!(s[0].model.shared_bytes.is_none());
        assert!(plan(&l, &H200, &[], PlacementChoice::Shared, None).is_err());
        // 4096 floats a row: 7 rows fit one wide block an SM.
        assert_eq!(H200.shared_tile(4096), (7, THREADS_WIDE));
        assert_eq!(H200.tile_at(4096, 3), 2);
        // 64 floats a row: 128 rows, three blocks an SM.
        assert_eq!(H200.shared_tile(64), (MAX_TILE, THREADS));
        // 256 floats: 36 rows fit three blocks an SM, 32 of them whole items; 1024 floats: 9
        // rows for three blocks are too few, one wide block takes 28 (not whole items).
        assert_eq!(H200.shared_tile(256), (32, THREADS));
        assert_eq!(H200.shared_tile(1024), (28, THREADS_WIDE));
        assert_eq!(H200.shared_tile(512), (16, THREADS));
        // Where the kernel's registers allow four narrow blocks an SM: 256 floats fit 27
        // rows for four (24 in whole items); 512 floats would fit 13 for four, so three
        // blocks take 16; the wide block is unchanged. The count is clamped to the most
        // measured.
        let with_blocks = |narrow_blocks| Limits {
            narrow_blocks,
            ..H200
        };
        let four = with_blocks(4);
        assert_eq!(four.shared_tile(256), (24, THREADS));
        assert_eq!(four.shared_tile(512), (16, THREADS));
        assert_eq!(four.shared_tile(1024), (28, THREADS_WIDE));
        for n in [64, 256, 512, 1024] {
            assert_eq!(with_blocks(8).shared_tile(n), four.shared_tile(n), "{n}");
        }
        assert_eq!(with_blocks(2).shared_tile(256), (32, THREADS));
        let l = layout(&[10, 64, 64]);
        let s = plan(&l, &H200, &[], PlacementChoice::Global, Some(5)).unwrap();
        assert_eq!((s[0].placement, s[0].tile), (Placement::Global, 5));
        let s = plan(&l, &H200, &[], PlacementChoice::Shared, Some(3)).unwrap();
        assert_eq!((s[0].placement, s[0].tile), (Placement::Shared, 3));
        // A requested tile that does not fit shared memory goes global under Auto.
        let l = layout(&[10, 4096, 4096]);
        let s = plan(&l, &H200, &[], PlacementChoice::Auto, Some(100)).unwrap();
        assert_eq!((s[0].placement, s[0].tile), (Placement::Global, 100));
    }

    #[test]
    fn layer_one_stays_out_of_global_tiles() {
        // The compressed 65536's shape: layer 1 reads 65536 inputs into 4096 outputs, 32
        // entries an output (512 KB of scaled entries), then a light 4096-wide layer. Layer 1's
        // entries are read per input nonzero in every placement, so they do not count
        // against a tile of 7 rows; its scatter keeps the launch in shared memory.
        let inputs = 65536u32;
        let first: Vec<(u32, u32, f32)> = (0..4096u32)
            .flat_map(|c| (0..32u32).map(move |j| ((c + j * 2048) % inputs, c, 1.0)))
            .collect();
        let second: Vec<(u32, u32, f32)> = (0..4096u32).map(|c| (c, c, 1.0)).collect();
        let layers = vec![
            Csr::from_triplets(65536, 4096, &first).unwrap(),
            Csr::from_triplets(4096, 4096, &second).unwrap(),
        ];
        let l = Layout::build(
            &Chain::from_parts(layers, None).unwrap(),
            FormatChoice::Auto,
        )
        .unwrap();
        assert!(l.layers[0].bytes >= 1 << 19, "{}", l.layers[0].bytes);
        let s = plan(&l, &H200, &[], PlacementChoice::Auto, None).unwrap();
        assert_eq!((s[0].placement, s[0].tile), (Placement::Shared, 7));
        // Layer 2 alone, in a launch of its own, is still chosen by its bytes.
        let s = plan(&l, &H200, &[1], PlacementChoice::Auto, None).unwrap();
        assert_eq!(s[0].placement, Placement::Shared);
        let m = s[1].model;
        let best = [
            m.shared_bytes.unwrap(),
            m.split_bytes.unwrap(),
            m.global_bytes,
        ]
        .into_iter()
        .fold(f64::INFINITY, f64::min);
        let chosen = match s[1].placement {
            Placement::Shared => m.shared_bytes.unwrap(),
            Placement::Split => m.split_bytes.unwrap(),
            Placement::Global => m.global_bytes,
            Placement::Lanes | Placement::Warps => {
                panic!("a later launch left the model: {:?}", s[1])
            }
        };
        assert_eq!(chosen, best, "{m:?}");
    }

    #[test]
    fn random_wide_rows_split_their_tiles() {
        // Random fan-in-32 layers (nothing to compress): sliced ELL; a slot touches 27.9
        // (4096) and 30.9 (16384) sectors and costs 1.62 and 1.87 shared-memory wavefronts.
        for (n, split, two) in [(4096, 14, 7), (16384, 3, 1)] {
            let net = spdnn_sdgc::generator::random_network(n, 3, 32, 1).unwrap();
            let chain = Chain::from_parts(net.layers().to_vec(), None).unwrap();
            let l = Layout::build(&chain, FormatChoice::Auto).unwrap();
            let ell = l.layers[1];
            assert_eq!((ell.format, ell.slots), (Format::Ell, 32 * n / WARP));
            let per_slot = |x: usize| x as f64 / ell.slots as f64;
            assert!(per_slot(ell.sectors) > 25.0, "{}", per_slot(ell.sectors));
            assert!(
                per_slot(ell.wavefronts) < 2.0,
                "{}",
                per_slot(ell.wavefronts)
            );
            assert_eq!(H200.shared_tile(n), (two, THREADS_WIDE));
            assert_eq!(H200.split_tile(n), (split, THREADS_WIDE));
            let s = plan(&l, &H200, &[], PlacementChoice::Auto, None).unwrap();
            assert_eq!(
                (s[0].placement, s[0].tile, s[0].threads),
                (Placement::Split, split, THREADS_WIDE)
            );
            let m = s[0].model;
            // Weights over twice the rows, plus 8 bytes an output, beat two buffers; the
            // gathers of global tiles touch a 32-byte sector per weight.
            assert!(m.split_bytes.unwrap() < m.shared_bytes.unwrap(), "{m:?}");
            assert!(m.global_bytes > 4.0 * m.split_bytes.unwrap(), "{m:?}");
            assert_eq!(s[0].shared_floats(), split * n);
            assert_eq!(s[0].scratch_floats(), split * n);
            assert_eq!(
                path(&s),
                "fused chain, outputs through global memory (split tiles)"
            );
        }
        // Narrow rows keep both buffers in shared memory: the round trip costs more than
        // it saves.
        // (Launch 1 runs a row a lane; launch 2 is placed by the model.)
        let l = layout(&[64, 64, 64, 64]);
        let auto = plan(&l, &H200, &[1], PlacementChoice::Auto, None).unwrap();
        assert_eq!(
            (auto[0].placement, auto[1].placement),
            (Placement::Lanes, Placement::Shared)
        );
        assert_eq!(
            path(&auto),
            "fused chain (shared memory: a row a lane, then tiles)"
        );
        let s = plan(&l, &H200, &[], PlacementChoice::Shared, None).unwrap();
        assert_eq!(path(&s), "fused chain (tiles in shared memory)");
        let split = plan(&l, &H200, &[1], PlacementChoice::Split, None).unwrap();
        assert!(split.iter().all(|s| s.placement == Placement::Split));
        assert_eq!(
            (split[0].shared_floats(), split[0].scratch_floats()),
            (128 * 64, 128 * 64)
        );
        let mut mixed = s.clone();
        mixed.extend(plan(&l, &H200, &[], PlacementChoice::Global, None).unwrap());
        mixed.extend(split);
        assert_eq!(path(&mixed), "mixed: shared, global, split tiles");
    }

    #[test]
    fn launch_one_runs_a_row_a_lane_where_its_rows_are_narrow_and_ell() {
        let l = layout(&[64, 64, 64, 64, 64, 64]);
        assert!(l.layers[1..].iter().all(|l| l.format != Format::Dense));
        let s = plan(&l, &H200, &[2, 4], PlacementChoice::Auto, None).unwrap();
        let places = |s: &[Segment]| s.iter().map(|s| s.placement).collect::<Vec<_>>();
        let (lanes, shared) = (Placement::Lanes, Placement::Shared);
        assert_eq!(places(&s), [lanes, shared, shared]);
        // A buffer a warp of 64 columns, LANE_PITCH floats apart; nothing in global memory.
        assert_eq!((s[0].tile, s[0].threads), (LANES_THREADS, LANES_THREADS));
        assert_eq!(s[0].shared_floats(), 4 * 64 * LANE_PITCH);
        assert_eq!(s[0].scratch_floats(), 0);
        assert_eq!((s[0].spread_chunk(), s[0].items), (0, Items::Exact));
        // Asked for: every launch that can; never spread.
        let mut every = plan(&l, &H200, &[2, 4], PlacementChoice::Lanes, None).unwrap();
        assert_eq!(places(&every), [lanes; 3]);
        choose_spread(&mut every, &l, SpreadChoice::Always);
        assert!(every.iter().all(|s| s.spread == Spread::Tiles));
        // Not where a tile size was asked for, nor for wide rows, nor dense layers.
        let sized = plan(&l, &H200, &[], PlacementChoice::Auto, Some(16)).unwrap();
        assert_eq!(places(&sized), [shared]);
        let wide = layout(&[128, 128, 128]);
        let s = plan(&wide, &H200, &[], PlacementChoice::Lanes, None).unwrap();
        assert_eq!(places(&s), [shared]);
        let dense = layout_with(&[64, 64, 64], 64);
        assert_eq!(dense.layers[1].format, Format::Dense);
        let s = plan(&dense, &H200, &[1], PlacementChoice::Lanes, None).unwrap();
        assert_eq!(
            places(&s),
            [lanes, shared],
            "layer 1 alone is no dense layer"
        );
        assert!(!lanes_fit(&dense, 0, 2, 64, &H200));
    }

    #[test]
    fn later_launches_of_narrow_dense_layers_run_a_row_a_warp() {
        let dense = layout_with(&[64, 64, 64, 64, 64, 64], 64);
        assert!(dense.layers[1..].iter().all(|l| l.format == Format::Dense));
        let places = |s: &[Segment]| s.iter().map(|s| s.placement).collect::<Vec<_>>();
        let (shared, warps) = (Placement::Shared, Placement::Warps);
        let s = plan(&dense, &H200, &[2, 4], PlacementChoice::Auto, None).unwrap();
        assert_eq!(
            places(&s),
            [shared, warps, warps],
            "never launch 1 (no carried rows)"
        );
        // Slots and a buffer a row in shared memory, nothing in global memory, never spread.
        assert_eq!((s[1].tile, s[1].threads), (WARPS_TILE, WARPS_THREADS));
        let slots = WARPS_SLOTS * (crate::layout::DESC_WORDS + 64 * 64);
        assert_eq!(s[1].shared_floats(), slots + WARPS_TILE * 64);
        assert_eq!((s[1].scratch_floats(), s[1].spread_chunk()), (0, 0));
        let mut spread = s.clone();
        choose_spread(&mut spread, &dense, SpreadChoice::Always);
        assert!(spread[1..].iter().all(|s| s.spread == Spread::Tiles));
        // The default cuts merge consecutive warps launches; asked-for cuts stay.
        let merged = merge_warps(s.clone(), &dense, &H200);
        assert_eq!(places(&merged), [shared, warps]);
        assert_eq!((merged[1].first, merged[1].end), (2, 5));
        assert_eq!((merged[1].carry_in, merged[1].carry_out), (64, 0));
        let asked = launches(&dense, &H200, Some(&[2, 4]), PlacementChoice::Auto, None).unwrap();
        assert_eq!(places(&asked), [shared, warps, warps]);
        let deep = layout_with(&[64; 21], 64);
        let default = launches(&deep, &H200, None, PlacementChoice::Auto, None).unwrap();
        assert_eq!(places(&default), [shared, warps]);
        assert_eq!((default[1].first, default[1].end), (4, 20));
        // Not where a tile size was asked for, nor on a device without bulk copies, nor for
        // ELL layers or rows wider than WARPS_MAX_STRIDE; shared tiles where not asked.
        let sized = plan(&dense, &H200, &[2], PlacementChoice::Auto, Some(8)).unwrap();
        assert_eq!(places(&sized), [shared, shared]);
        let old = Limits {
            bulk_copies: false,
            ..H200
        };
        assert!(!warps_fit(&dense, 2, 5, 64, &old));
        assert!(warps_fit(&dense, 2, 5, 64, &H200));
        let ell = layout(&[64, 64, 64, 64]);
        assert!(!warps_fit(&ell, 1, 3, 64, &H200));
        let wide = layout_with(&[160, 160, 160], 160);
        assert_eq!(wide.layers[1].format, Format::Dense);
        assert!(!warps_fit(&wide, 1, 2, 160, &H200));
        let s = plan(&dense, &H200, &[2], PlacementChoice::Shared, None).unwrap();
        assert_eq!(places(&s), [shared, shared]);
        let s = plan(&dense, &H200, &[2], PlacementChoice::Warps, None).unwrap();
        assert_eq!(places(&s), [shared, warps]);
    }

    #[test]
    fn a_first_launch_a_row_a_lane_runs_through_the_ell_layers_before_the_second_cut() {
        // The official 1024's shape: layers 2-6 ELL, 7 on dense, rows of 64.
        let fans: Vec<u32> = (0..20).map(|l| if l < 6 { 1 } else { 64 }).collect();
        let layers: Vec<Csr> = fans
            .iter()
            .map(|&fan_in| {
                let t: Vec<(u32, u32, f32)> = (0..64u32)
                    .flat_map(|c| (0..fan_in).map(move |j| ((c + j) % 64, c, 1.0)))
                    .collect();
                Csr::from_triplets(64, 64, &t).unwrap()
            })
            .collect();
        let mixed = Layout::build(
            &Chain::from_parts(layers, None).unwrap(),
            FormatChoice::Auto,
        )
        .unwrap();
        assert!(mixed.layers[1..6].iter().all(|l| l.format != Format::Dense));
        assert!(mixed.layers[6..].iter().all(|l| l.format == Format::Dense));
        let span = |s: &[Segment]| {
            s.iter()
                .map(|s| (s.placement, s.first, s.end))
                .collect::<Vec<_>>()
        };
        let (lanes, warps) = (Placement::Lanes, Placement::Warps);
        let default = launches(&mixed, &H200, None, PlacementChoice::Auto, None).unwrap();
        assert_eq!(span(&default), [(lanes, 0, 6), (warps, 6, 20)]);
        // All ELL through the second cut: launch 1 takes it, the cuts after it stay.
        let ell = layout(&[64; 21]);
        let default = launches(&ell, &H200, None, PlacementChoice::Auto, None).unwrap();
        assert_eq!(span(&default)[0], (lanes, 0, 8));
        assert_eq!(default[1].first, 8);
        // Asked-for cuts and tile sizes stay as asked; no lanes, no move.
        let asked = launches(
            &mixed,
            &H200,
            Some(&[4, 8, 16]),
            PlacementChoice::Auto,
            None,
        );
        assert_eq!(span(&asked.unwrap())[0], (lanes, 0, 4));
        let sized = launches(&mixed, &H200, None, PlacementChoice::Auto, Some(8)).unwrap();
        assert_eq!((sized[0].placement, sized[0].end), (Placement::Shared, 4));
    }

    #[test]
    fn items_are_exact_where_the_tile_lies_in_shared_memory() {
        let l = layout(&[64, 64, 64, 64]);
        let mut s = plan(&l, &H200, &[1], PlacementChoice::Shared, None).unwrap();
        s.extend(plan(&l, &H200, &[1], PlacementChoice::Split, None).unwrap());
        s.extend(plan(&l, &H200, &[], PlacementChoice::Global, None).unwrap());
        let items = |s: &[Segment]| s.iter().map(|s| s.items).collect::<Vec<_>>();
        let (e, p) = (Items::Exact, Items::Predicated);
        assert_eq!(items(&s), vec![e, e, e, e, p]);
        choose_items(&mut s, ItemChoice::Predicated);
        assert_eq!(items(&s), vec![p; 5]);
        choose_items(&mut s, ItemChoice::Auto);
        assert_eq!(items(&s), vec![e, e, e, e, p]);
        choose_items(&mut s, ItemChoice::Gathers);
        let g = Items::Gathers;
        assert_eq!(items(&s), vec![g, g, g, g, p]);
        assert_eq!((e.name(), p.name()), ("exact", "predicated"));
        assert_eq!((p.code(), g.code(), e.code()), (0, 1, 2));
    }

    #[test]
    fn later_launches_with_heavy_layers_spread() {
        let spreads = |s: &[Segment]| {
            s.iter()
                .map(|s| s.spread == Spread::Spread)
                .collect::<Vec<_>>()
        };
        // 4096 wide, 32 inputs a column (1 MiB of ELL pairs a layer; one value, so stored
        // scaled: 256 KiB of 2-byte entries, the base unit and the group starts, just past
        // the rule's bytes): auto spreads every launch but the first.
        let heavy = layout_with(&[4096, 4096, 4096, 4096], 32);
        assert!(heavy.layers[1..].iter().all(|l| {
            l.format == Format::EllScaled16 && l.bytes == 8 + 2 * 32 * 4096 + 4 * 129
        }));
        const { assert!(SPREAD_LAYER_BYTES <= 8 + 2 * 32 * 4096 + 4 * 129) };
        let mut s = plan(&heavy, &H200, &[1, 2], PlacementChoice::Shared, None).unwrap();
        assert_eq!(spreads(&s), vec![false; 3], "planned as tiles");
        choose_spread(&mut s, &heavy, SpreadChoice::Auto);
        assert_eq!(spreads(&s), vec![false, true, true]);
        choose_spread(&mut s, &heavy, SpreadChoice::Off);
        assert_eq!(spreads(&s), vec![false; 3]);
        choose_items(&mut s, ItemChoice::Predicated);
        choose_spread(&mut s, &heavy, SpreadChoice::Always);
        assert_eq!(spreads(&s), vec![false; 3], "predicated items never spread");
        // The rule weighs the bytes as stored: 1024 wide, 32 inputs a column is 256 KiB as
        // pairs but 64 KiB of 2-byte scaled entries (the generated 16384's heavy layers),
        // and stays in tiles.
        let scaled = layout_with(&[1024, 1024, 1024], 32);
        assert!(scaled.layers[1..].iter().all(|l| {
            l.format == Format::EllScaled16
                && l.pair_bytes() >= SPREAD_LAYER_BYTES
                && l.bytes < SPREAD_LAYER_BYTES
        }));
        let mut s = plan(&scaled, &H200, &[1], PlacementChoice::Shared, None).unwrap();
        choose_spread(&mut s, &scaled, SpreadChoice::Auto);
        assert_eq!(spreads(&s), vec![false; 2]);
        // Light layers spread only when always.
        let light = layout(&[64, 64, 64, 64]);
        assert!(light.layers.iter().all(|l| l.bytes < SPREAD_LAYER_BYTES));
        let mut s = plan(&light, &H200, &[1, 2], PlacementChoice::Shared, None).unwrap();
        choose_spread(&mut s, &light, SpreadChoice::Auto);
        assert_eq!(spreads(&s), vec![false; 3]);
        choose_spread(&mut s, &light, SpreadChoice::Always);
        assert_eq!(spreads(&s), vec![false, true, true]);
        assert!(s.iter().all(|s| s.spread_chunk() == s.tile));
        // Split tiles spread in chunks of half a tile (none of one row); global tiles never.
        let mut split = plan(&light, &H200, &[1, 2], PlacementChoice::Split, None).unwrap();
        choose_spread(&mut split, &light, SpreadChoice::Always);
        assert_eq!(spreads(&split), vec![false, true, true]);
        assert!(split.iter().all(|s| s.spread_chunk() == s.tile / 2));
        let mut one = plan(&light, &H200, &[1, 2], PlacementChoice::Split, Some(1)).unwrap();
        choose_spread(&mut one, &light, SpreadChoice::Always);
        assert_eq!(spreads(&one), vec![false; 3], "split tiles of one row");
        let mut global = plan(&light, &H200, &[1, 2], PlacementChoice::Global, None).unwrap();
        choose_spread(&mut global, &light, SpreadChoice::Always);
        assert_eq!(spreads(&global), vec![false; 3]);
        assert_eq!(global[1].spread_chunk(), 0);
    }

    #[test]
    fn device_tiles_spread_the_rows() {
        assert_eq!(device_tile(60000, 396, 128), 128);
        assert_eq!(device_tile(2976, 528, 24), 6);
        assert_eq!(device_tile(60000, 10, 128), 128);
        assert_eq!(device_tile(5, 396, 128), 1);
        assert_eq!(device_tile(0, 396, 128), 1);
    }
}
