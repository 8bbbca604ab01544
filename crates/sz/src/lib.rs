//! S&Z-2022 (Sun et al., "Accelerating Sparse DNN Inference Using GPU Tensor Cores", HPEC
//! 2022; facts in `shared/research/sdgc-facts.md` §8, §11b) and the tensor-core /
//! CUDA-core fusion of T4-adaptive (Dun et al., seed 001 §III-B, §III-C).
//!
//! 1. **Reordering** ([`reorder`], in parallel, cached on disk: [`cache`]): each layer's
//!    outputs are grouped into tiles of 16 that read similar inputs and its inputs into
//!    chunks of 16 that feed similar tiles, both found from the data; a (tile, chunk) pair
//!    with enough nonzeros ([`SzOptions::min_fill`]) is a dense block, every other nonzero is
//!    the CSR rest. Each layer gathers its inputs through a map into the previous layer's
//!    output order (the paper's fused permutation), so activations are never permuted.
//! 2. **Layout** ([`format`](mod@format)): the dense blocks as a transposed [`spdnn_formats::Bcsr`] with
//!    bf16 fragments in the PTX register layout of `mma.m16n8k16`, scaled by a power of two;
//!    each weight is split into bf16 terms, as many as the layer's weights need (one for the
//!    challenge's 1/16, up to three).
//! 3. **Kernel** (`kernels-cu/sz.cu`, sm_80 and later): activations neuron-major; a
//!    tensor-core warp splits 16 rows × 16 inputs into three bf16 terms whose sum is the
//!    fp32 value exactly ([`half`]) and accumulates every product of an activation term and
//!    a weight term (each exact) in fp32 with `mma.sync`, then adds the tile's
//!    CSR rest on the CUDA cores, the bias and the clip. Rows that died are compacted away
//!    after the layers [`Compaction`] names; the live-row count stays on the device.
//! 4. **T4 mode** ([`SzOptions::t4`], registry row `sz+t4`): each item's tiles are split by
//!    column between tensor-core warps and CUDA-core warps of one block at the ratio P_M of
//!    the turning point profiled on the device at preparation (cached), tensor-core solo
//!    when the CUDA-core share would be empty ([`t4`]).
//!
//! The CPU emulation ([`emulate`]) runs the kernels' arithmetic step for step: the fragment
//! layout, the splits, the MMA as exact products summed in fp32, the rest, the clip.
//!
//! Any chain of layers runs (`N_{l-1} × N_l`, e.g. a compressed network).
//!
//! Trained networks, with a bias per output neuron of every layer
//! ([`LayerChain::biases`]), run with the `sz_layer_neurons_*` instances
//! ([`LAYERS_NEURONS`]): each layer's biases are uploaded once in its output order
//! ([`SzLayer::position_biases`], the order its epilogue writes) and read where the
//! one-bias kernels add `bias` (those are unchanged: they pass a null pointer the compiler
//! folds away). Biases must be ≤ 0 ([`KernelMethod::ACCEPTS_POSITIVE_BIAS`] is false): the
//! kernels compute `clip(Z + b)`, the structural rule only then, the layout drops stored
//! zeros, and a row that died (the compaction drops it) stays dead only then.

pub mod cache;
mod device;
pub mod emulate;
pub mod format;
pub mod half;
pub mod reorder;
pub mod t4;

use std::path::{Path, PathBuf};

use spdnn_cuda::memory::MemoryModel;
use spdnn_cuda::method::{self, DeviceRun, KernelMethod, LayerChain, MethodOptions};
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_cuda::{CudaError, Define, Gpu, KernelDecl, KernelSource};
use spdnn_formats::{Csr, SparseMatrix};

pub use cache::CacheUse;
pub use emulate::Split;
pub use format::{LayoutStats, SzLayer};
pub use reorder::{CHUNK, Reordering, TILE};

/// A row index that is no row (`SZ_NO_ROW`: a row dropped by the compaction).
pub const NO_ROW: u32 = u32::MAX;

/// `sz.cu`'s definitions: the tile ([`TILE`] outputs), the chunk ([`CHUNK`] inputs) and
/// [`NO_ROW`].
pub const SZ_DEFINES: &[Define] = &[
    Define::new("SZ_TILE", TILE as u64),
    Define::new("SZ_CHUNK", CHUNK as u64),
    Define::new("SZ_NO_ROW", NO_ROW as u64),
];

/// `kernels-cu/sz.cu`, compiled with [`SZ_DEFINES`].
pub const SZ: KernelSource = KernelSource::new("sz.cu", include_str!("../../../kernels-cu/sz.cu"))
    .with_defines(&[SZ_DEFINES]);

/// The shape of a layer kernel: rows per item (the paper's blocksize.y), tensor-core warps
/// and CUDA-core warps of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct KernelShape {
    /// Rows per item: 32, 64 or 128.
    pub rows: usize,
    /// Tensor-core warps per block.
    pub tc_warps: usize,
    /// CUDA-core warps per block (0: plain S&Z).
    pub cc_warps: usize,
}

impl KernelShape {
    /// Threads per block.
    pub const fn threads(&self) -> usize {
        32 * (self.tc_warps + self.cc_warps)
    }
}

const fn shape(rows: usize, tc_warps: usize, cc_warps: usize) -> KernelShape {
    KernelShape {
        rows,
        tc_warps,
        cc_warps,
    }
}

/// The layer kernels `sz.cu` instantiates, in the order of [`LAYERS`]: three plain S&Z
/// shapes, then T4's (rows 32, 64, 128 × 2 or 4 tensor-core warps, 4 CUDA-core warps).
pub const SHAPES: [KernelShape; 9] = [
    shape(32, 2, 0),
    shape(64, 4, 0),
    shape(128, 4, 0),
    shape(32, 2, 4),
    shape(32, 4, 4),
    shape(64, 2, 4),
    shape(64, 4, 4),
    shape(128, 2, 4),
    shape(128, 4, 4),
];

/// A layer kernel of `threads` threads, no dynamic shared memory; grid = the resident
/// blocks striding over the items.
const fn layer(name: &'static str, threads: usize) -> KernelDecl {
    KernelDecl::new(&SZ, name, threads as u32)
}

/// The layer kernels named `{prefix}r{rows}_t{tc}_c{cc}`, one per shape of [`SHAPES`], in
/// its order (the kernel-table test checks each name against its shape).
macro_rules! layer_kernels {
    ($prefix:literal) => {
        [
            layer(concat!($prefix, "r32_t2_c0"), SHAPES[0].threads()),
            layer(concat!($prefix, "r64_t4_c0"), SHAPES[1].threads()),
            layer(concat!($prefix, "r128_t4_c0"), SHAPES[2].threads()),
            layer(concat!($prefix, "r32_t2_c4"), SHAPES[3].threads()),
            layer(concat!($prefix, "r32_t4_c4"), SHAPES[4].threads()),
            layer(concat!($prefix, "r64_t2_c4"), SHAPES[5].threads()),
            layer(concat!($prefix, "r64_t4_c4"), SHAPES[6].threads()),
            layer(concat!($prefix, "r128_t2_c4"), SHAPES[7].threads()),
            layer(concat!($prefix, "r128_t4_c4"), SHAPES[8].threads()),
        ]
    };
}

/// `sz_layer_r{rows}_t{tc}_c{cc}`, one per shape of [`SHAPES`], in its order.
pub const LAYERS: [KernelDecl; SHAPES.len()] = layer_kernels!("sz_layer_");
/// `sz_layer_neurons_r{rows}_t{tc}_c{cc}`: [`LAYERS`] with a bias per output position,
/// one per shape of [`SHAPES`], in its order ([`neurons_layer_kernel`]).
pub const LAYERS_NEURONS: [KernelDecl; SHAPES.len()] = layer_kernels!("sz_layer_neurons_");
/// `sz_scatter_input`: blocks stride over the input rows.
pub const SCATTER_INPUT: KernelDecl = KernelDecl::new(&SZ, "sz_scatter_input", 128);
/// `sz_compact_rows`: one thread per row of the capacity.
pub const COMPACT_ROWS: KernelDecl = KernelDecl::new(&SZ, "sz_compact_rows", 256);
/// `sz_gather_rows`: the resident blocks stride over (position, 256 rows) items.
pub const GATHER_ROWS: KernelDecl = KernelDecl::new(&SZ, "sz_gather_rows", 256);
/// `sz_mark_rows`: one thread per row of the capacity.
pub const MARK_ROWS: KernelDecl = KernelDecl::new(&SZ, "sz_mark_rows", 256);

/// Every kernel this crate declares (`sz.cu`), checked against the source by the
/// kernel-table test.
pub const KERNELS: &[KernelDecl] = &all_kernels();

/// [`LAYERS`], [`LAYERS_NEURONS`] and the row kernels, as one array.
const fn all_kernels() -> [KernelDecl; 2 * SHAPES.len() + 4] {
    let mut all = [SCATTER_INPUT; 2 * SHAPES.len() + 4];
    let mut i = 0;
    while i < SHAPES.len() {
        all[i] = LAYERS[i];
        all[SHAPES.len() + i] = LAYERS_NEURONS[i];
        i += 1;
    }
    all[2 * SHAPES.len() + 1] = COMPACT_ROWS;
    all[2 * SHAPES.len() + 2] = GATHER_ROWS;
    all[2 * SHAPES.len() + 3] = MARK_ROWS;
    all
}

/// The layer kernel of `shape` (`None`: not instantiated).
pub fn layer_kernel(shape: KernelShape) -> Option<&'static KernelDecl> {
    SHAPES.iter().position(|s| *s == shape).map(|i| &LAYERS[i])
}

/// The layer kernel of `shape` with a bias per output position (`None`: not
/// instantiated).
pub fn neurons_layer_kernel(shape: KernelShape) -> Option<&'static KernelDecl> {
    SHAPES
        .iter()
        .position(|s| *s == shape)
        .map(|i| &LAYERS_NEURONS[i])
}

/// The kernels a run with `options` compiles ahead (on a network with a bias per neuron
/// when `per_neuron_biases`): the layer kernel of its shape (plain S&Z's, or T4's fused one,
/// which T4's profile runs; the `_neurons` instance for a trained network) and the row
/// kernels. T4's tensor-core solo shape, when its profile asks for it, compiles then.
pub fn plan_kernels(options: &SzOptions, per_neuron_biases: bool) -> Vec<&'static KernelDecl> {
    let shape = if options.t4 {
        options.t4_options.shape()
    } else {
        plain_shape(options.rows)
    };
    let layers = [
        (!per_neuron_biases || options.t4).then(|| layer_kernel(shape)),
        per_neuron_biases.then(|| neurons_layer_kernel(shape)),
    ];
    layers
        .into_iter()
        .flatten()
        .flatten()
        .chain([
            &SCATTER_INPUT,
            &spdnn_cuda::rows::ALL_ROWS,
            &COMPACT_ROWS,
            &GATHER_ROWS,
            &MARK_ROWS,
        ])
        .collect()
}

/// The plain S&Z shape with `rows` rows per item (tensor-core warps: one per 16 rows, at
/// most 4).
pub fn plain_shape(rows: usize) -> KernelShape {
    shape(rows, (rows / 16).min(4), 0)
}

/// Rows per item the kernels are instantiated for.
pub const ITEM_ROWS: &[usize] = &[32, 64, 128];

/// The activations' row stride is a multiple of this (the largest item).
pub const ROW_ALIGN: usize = 128;

/// After which layers dead rows are compacted away.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compaction {
    /// After layers 1, 2, 4, 8, … (default): rows die early, and log₂ L passes are cheap.
    #[default]
    Doubling,
    /// Never: every row runs every layer.
    Never,
    /// After each listed layer (1-based, strictly increasing).
    After(Vec<usize>),
}

impl Compaction {
    /// Whether the rows are compacted after `layers` layers (1-based count).
    pub fn after(&self, layers: usize) -> bool {
        match self {
            Compaction::Doubling => layers.is_power_of_two(),
            Compaction::Never => false,
            Compaction::After(list) => list.binary_search(&layers).is_ok(),
        }
    }
}

/// T4's tensor-core / CUDA-core split (used when [`SzOptions::t4`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct T4Options {
    /// Rows per item (the paper's blocksize.y): 32, 64 or 128 (default 64).
    pub rows: usize,
    /// Tensor-core warps per block: 2 or 4 (default 4); four CUDA-core warps beside them.
    pub tc_warps: usize,
    /// Tiles of 16 outputs per item shared out between the two kinds of warps (default 4).
    pub group: usize,
    /// P_M by hand (CUDA-core tiles per tensor-core tile at most); `None` profiles the
    /// turning point on the device (cached with the networks).
    pub ratio: Option<f64>,
}

impl Default for T4Options {
    fn default() -> Self {
        Self {
            rows: 64,
            tc_warps: 4,
            group: 4,
            ratio: None,
        }
    }
}

impl T4Options {
    /// The kernel shape these options run.
    pub fn shape(&self) -> KernelShape {
        shape(self.rows, self.tc_warps, 4)
    }
}

/// Tuning of an S&Z run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SzOptions {
    /// Least share of a 16 × 16 block's entries that must be nonzero for it to go to the
    /// tensor cores (default 0.25); above 1 every nonzero stays in the CSR rest.
    pub min_fill: f32,
    /// Rows per item of the plain kernel: 32, 64 or 128 (default 64).
    pub rows: usize,
    /// When dead rows are compacted away (default after layers 1, 2, 4, 8, …).
    pub compact: Compaction,
    /// Where reorderings and T4 profiles are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Rows per batch (default: every row in one batch).
    pub batch: Option<usize>,
    /// Run T4's tensor-core / CUDA-core split (the `sz+t4` row).
    pub t4: bool,
    /// The split's tuning.
    pub t4_options: T4Options,
}

impl Default for SzOptions {
    fn default() -> Self {
        Self {
            min_fill: 0.25,
            rows: 64,
            compact: Compaction::Doubling,
            cache_dir: None,
            batch: None,
            t4: false,
            t4_options: T4Options::default(),
        }
    }
}

impl MethodOptions for SzOptions {
    fn validate(&self) -> Result<(), String> {
        if !(self.min_fill.is_finite() && self.min_fill >= 0.0) {
            return Err(format!(
                "the block fill must be a finite number ≥ 0, got {}",
                self.min_fill
            ));
        }
        if !ITEM_ROWS.contains(&self.rows) {
            return Err(format!(
                "the rows per item must be one of {ITEM_ROWS:?}, got {}",
                self.rows
            ));
        }
        if let Compaction::After(list) = &self.compact {
            if list.first() == Some(&0) {
                return Err("a compaction must come after at least one layer".into());
            }
            if let Some(p) = list.windows(2).find(|p| p[1] <= p[0]) {
                return Err(format!(
                    "compaction layers must increase strictly, got {} after {}",
                    p[1], p[0]
                ));
            }
        }
        if self.batch == Some(0) {
            return Err("the batch must be at least 1 row".into());
        }
        let t4 = &self.t4_options;
        if layer_kernel(t4.shape()).is_none() {
            return Err(format!(
                "the T4 rows per item must be one of {ITEM_ROWS:?} and its tensor-core warps \
                 2 or 4, got {} rows and {} warps",
                t4.rows, t4.tc_warps
            ));
        }
        if !(1..=64).contains(&t4.group) {
            return Err(format!(
                "the T4 group must hold 1 to 64 tiles, got {}",
                t4.group
            ));
        }
        if let Some(r) = t4.ratio
            && !(r.is_finite() && r >= 0.0)
        {
            return Err(format!("the T4 ratio must be a finite number ≥ 0, got {r}"));
        }
        Ok(())
    }

    /// Reorderings and profiles are cached under `data_dir/cache/sz`.
    fn default_in(data_dir: &Path) -> Self {
        Self {
            cache_dir: Some(data_dir.join("cache").join("sz")),
            ..Self::default()
        }
    }
}

/// S&Z-2022 as a method of the registry (with [`SzOptions::t4`], T4's split: `sz+t4`).
pub struct Sz;

impl KernelMethod for Sz {
    const NAME: &'static str = "sz";
    const DESCRIPTION: &'static str = "S&Z-2022: similarity reordering into dense 16×16 blocks on tensor cores \
         (exact three-term bf16 splits, fp32 accumulation), the CSR rest on CUDA cores";
    type Options = SzOptions;
    const ACCEPTS_PER_NEURON_BIAS: bool = true;

    /// Without the layout, an estimate: per row two activation buffers of the widest layer,
    /// the row ids twice, the map and the live flag; per layer its nonzeros at 2 bytes per
    /// bf16 term in full blocks (the terms its weights need, [`half::terms`]: 1 for the
    /// challenge's 1/16, up to 3) plus 2 for the blocks' padding and the rest's 8, the fp32
    /// blocks too in T4 mode; plus the per-neuron biases of a trained network. The planner
    /// uses [`Self::memory_on`].
    fn memory(chain: &LayerChain<'_>, options: &SzOptions) -> MemoryModel {
        let widest = spdnn_cuda::memory::widest(chain);
        let per_nonzero = |w: &Csr| {
            let terms = w
                .values()
                .iter()
                .map(|&v| half::terms(v))
                .max()
                .unwrap_or(1);
            2 * terms.max(1) + 2 + if options.t4 { 4 } else { 0 }
        };
        MemoryModel {
            per_row: 2 * 4 * widest + 3 * 4 + 2,
            layers: chain.with_bias_bytes(
                chain
                    .layers
                    .iter()
                    .map(|w| per_nonzero(w) * w.nnz() + 12 * (w.nrows() + w.ncols()) + 64)
                    .collect(),
            ),
            fixed: 64,
            streaming: false,
            exact: false,
            binary_input: None,
        }
    }

    /// Per row: the batch's buffers ([`device::batch_bytes`]: two activation buffers of the
    /// widest layer at the row stride, a multiple of [`ROW_ALIGN`] rows, so fixed takes the
    /// stride's rounding at its most); per layer: the layout `prepare` builds from the
    /// reordering (read from the cache when `prepare` wrote it, else computed again) and the
    /// per-neuron biases. Exact but for the stride's rounding, and in T4 mode with the
    /// turning point profiled (not given), where the fp32 blocks are counted whether the
    /// split uses them or not and the profile's buffers, allocated in `prepare` when not
    /// cached, are not counted.
    fn memory_on(
        _gpu: &Gpu,
        chain: &LayerChain<'_>,
        options: &SzOptions,
    ) -> Result<MemoryModel, CudaError> {
        exact_model(chain, options)
    }

    fn prepare<'g>(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &SzOptions,
    ) -> Result<Box<dyn DeviceRun + 'g>, CudaError> {
        Ok(Box::new(device::SzRun::prepare(gpu, chain, rows, options)?))
    }

    fn batch(options: &SzOptions) -> Option<usize> {
        options.batch
    }
}

/// [`Sz`]'s memory model on the device ([`KernelMethod::memory_on`]), which needs no
/// device.
pub fn exact_model(chain: &LayerChain<'_>, options: &SzOptions) -> Result<MemoryModel, CudaError> {
    options
        .validate()
        .map_err(|e| CudaError::InvalidArgument(format!("sz: {e}")))?;
    let widths = spdnn_cuda::rows::check_widths(chain.layers, chain.bias, chain.upper)?;
    let widest = widths.iter().copied().max().unwrap_or(0);
    let with_f32 = options.t4
        && options
            .t4_options
            .ratio
            .is_none_or(|r| t4::split_for(options.t4_options.group, r) < options.t4_options.group);
    let layers = device::layers_bytes(
        chain,
        options.min_fill,
        options.cache_dir.as_deref(),
        with_f32,
    )?;
    // The rows' part at a multiple of ROW_ALIGN rows, the rest of a stride fixed.
    let (per_row, fixed) =
        spdnn_cuda::memory::linear(|blocks| device::batch_bytes(blocks * ROW_ALIGN, widest));
    let per_row = per_row.div_ceil(ROW_ALIGN);
    let fixed = fixed + 2 * 4 * (ROW_ALIGN - 1) * widest;
    Ok(MemoryModel {
        per_row,
        layers,
        fixed,
        streaming: false,
        exact: !options.t4 || options.t4_options.ratio.is_some(),
        binary_input: None,
    })
}

/// The options of the `sz+t4` row: S&Z's options (the flags that set [`SzOptions`] reach
/// them) with the T4 split always on, whatever [`SzOptions::t4`] says.
#[derive(Debug, Clone, PartialEq)]
pub struct SzT4Options {
    /// S&Z's options; `t4` is forced on when run and reported.
    pub sz: SzOptions,
}

impl SzT4Options {
    /// The options run: [`Self::sz`] with the T4 split on.
    pub fn effective(&self) -> SzOptions {
        SzOptions {
            t4: true,
            ..self.sz.clone()
        }
    }
}

impl Default for SzT4Options {
    fn default() -> Self {
        Self {
            sz: SzOptions {
                t4: true,
                ..SzOptions::default()
            },
        }
    }
}

impl serde::Serialize for SzT4Options {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.effective().serialize(serializer)
    }
}

impl MethodOptions for SzT4Options {
    fn validate(&self) -> Result<(), String> {
        self.effective().validate()
    }

    fn default_in(data_dir: &Path) -> Self {
        Self {
            sz: SzOptions {
                t4: true,
                ..SzOptions::default_in(data_dir)
            },
        }
    }

    fn embedded_mut(&mut self) -> Vec<&mut dyn std::any::Any> {
        vec![&mut self.sz]
    }
}

/// T4-adaptive's tensor-core / CUDA-core split over S&Z's layout as a method of the
/// registry (`sz+t4`): [`Sz`] with [`SzOptions::t4`] on.
pub struct SzT4;

impl KernelMethod for SzT4 {
    const NAME: &'static str = "sz+t4";
    const DESCRIPTION: &'static str = "T4-adaptive over S&Z: each item's 16-output tiles split between \
         tensor-core and CUDA-core warps of one block at the profiled turning point P_M";
    type Options = SzT4Options;
    const ACCEPTS_PER_NEURON_BIAS: bool = true;

    fn memory(chain: &LayerChain<'_>, options: &SzT4Options) -> MemoryModel {
        Sz::memory(chain, &options.effective())
    }

    fn memory_on(
        gpu: &Gpu,
        chain: &LayerChain<'_>,
        options: &SzT4Options,
    ) -> Result<MemoryModel, CudaError> {
        Sz::memory_on(gpu, chain, &options.effective())
    }

    fn prepare<'g>(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &SzT4Options,
    ) -> Result<Box<dyn DeviceRun + 'g>, CudaError> {
        Sz::prepare(gpu, chain, rows, &options.effective())
    }

    fn batch(options: &SzT4Options) -> Option<usize> {
        options.sz.batch
    }
}

/// Runs S&Z (or its T4 mode, [`SzOptions::t4`]) on `input` (rows × `N_0`) through
/// `layers` (`N_{l-1} × N_l`): preparation, `spec.warmup` untimed and `spec.repetitions`
/// timed runs, one profiled run. The output, when kept, is rows × `N_L`.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &SzOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<Sz>(
        gpu,
        &LayerChain::new(layers, bias, upper),
        input,
        options,
        spec,
    )
}

/// [`infer`] with a bias per output neuron of every layer (`biases[l][k]`, each ≤ 0), for
/// trained networks: the `sz_layer_neurons_*` kernels.
pub fn infer_with_biases(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    biases: &[Vec<f32>],
    upper: f32,
    options: &SzOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<Sz>(
        gpu,
        &LayerChain::with_biases(layers, biases, upper),
        input,
        options,
        spec,
    )
}

/// The stride of a position's rows for `capacity` rows: a multiple of [`ROW_ALIGN`].
pub fn row_stride(capacity: usize) -> usize {
    capacity.max(1).div_ceil(ROW_ALIGN) * ROW_ALIGN
}

/// Nonzeros of `layers` (for reports).
pub fn nonzeros(layers: &[Csr]) -> usize {
    layers.iter().map(SparseMatrix::nnz).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use spdnn_cuda::memory::WeightPlacement;

    #[test]
    fn the_model_bounds_the_batch_by_at_most_a_stride_and_is_the_layout() {
        let generated = spdnn_sdgc::generator::network(1024, 6, 3).unwrap();
        let chain = LayerChain::new(generated.layers(), -0.3, 32.0);
        let options = SzOptions::default();
        let model = exact_model(&chain, &options).unwrap();
        assert!(model.exact && !model.streaming);
        let layers = device::layers_bytes(&chain, options.min_fill, None, false).unwrap();
        assert_eq!(model.layers, layers);
        let weights: usize = layers.iter().sum();
        for rows in [1, 2, 127, 128, 129, 1000, 1024] {
            let held = device::batch_bytes(rows, 1024) + weights;
            let predicted = model.bytes(rows, &WeightPlacement::Resident);
            assert!(predicted >= held, "{rows} rows");
            assert!(
                predicted - held <= 8 * 1024 * (ROW_ALIGN - 1),
                "{rows} rows"
            );
            if rows.is_multiple_of(ROW_ALIGN) {
                assert_eq!(predicted - held, 8 * 1024 * (ROW_ALIGN - 1), "{rows} rows");
            }
        }
        // T4 with the turning point profiled: the fp32 blocks counted, a bound.
        let t4 = SzOptions {
            t4: true,
            ..SzOptions::default()
        };
        let bound = exact_model(&chain, &t4).unwrap();
        assert!(!bound.exact && bound.weight_bytes() > weights);
    }

    #[test]
    fn defaults_validate_and_serialise() {
        let o = SzOptions::default();
        assert_eq!(o.validate(), Ok(()));
        let json = serde_json::to_string(&o).unwrap();
        assert_eq!(
            json,
            r#"{"min_fill":0.25,"rows":64,"compact":"doubling","cache_dir":null,"batch":null,"t4":false,"t4_options":{"rows":64,"tc_warps":4,"group":4,"ratio":null}}"#
        );
        let after = SzOptions {
            compact: Compaction::After(vec![3, 9]),
            ..SzOptions::default()
        };
        assert!(
            serde_json::to_string(&after)
                .unwrap()
                .contains(r#""compact":{"after":[3,9]}"#)
        );
    }

    #[test]
    fn bad_options_are_errors_naming_the_parameter() {
        let bad = |o: SzOptions| o.validate().unwrap_err();
        for (o, word) in [
            (
                SzOptions {
                    min_fill: f32::NAN,
                    ..SzOptions::default()
                },
                "fill",
            ),
            (
                SzOptions {
                    min_fill: -0.5,
                    ..SzOptions::default()
                },
                "fill",
            ),
            (
                SzOptions {
                    rows: 48,
                    ..SzOptions::default()
                },
                "rows",
            ),
            (
                SzOptions {
                    compact: Compaction::After(vec![0, 2]),
                    ..SzOptions::default()
                },
                "compaction",
            ),
            (
                SzOptions {
                    compact: Compaction::After(vec![4, 4]),
                    ..SzOptions::default()
                },
                "compaction",
            ),
            (
                SzOptions {
                    batch: Some(0),
                    ..SzOptions::default()
                },
                "batch",
            ),
        ] {
            let e = bad(o);
            assert!(e.contains(word), "{e}");
        }
        let t4 = |t: T4Options| SzOptions {
            t4: true,
            t4_options: t,
            ..SzOptions::default()
        };
        for (t, word) in [
            (
                T4Options {
                    rows: 16,
                    ..T4Options::default()
                },
                "T4 rows",
            ),
            (
                T4Options {
                    tc_warps: 3,
                    ..T4Options::default()
                },
                "warps",
            ),
            (
                T4Options {
                    group: 0,
                    ..T4Options::default()
                },
                "group",
            ),
            (
                T4Options {
                    ratio: Some(-1.0),
                    ..T4Options::default()
                },
                "ratio",
            ),
        ] {
            let e = bad(t4(t));
            assert!(e.contains(word), "{e}");
        }
        let ok = SzOptions {
            min_fill: 2.0,
            rows: 128,
            compact: Compaction::After(vec![1, 5]),
            t4: true,
            t4_options: T4Options {
                rows: 32,
                tc_warps: 2,
                group: 64,
                ratio: Some(0.0),
            },
            ..SzOptions::default()
        };
        assert_eq!(ok.validate(), Ok(()));
    }

    #[test]
    fn the_t4_row_always_splits() {
        let mut o = SzT4Options::default();
        assert!(o.effective().t4);
        o.sz.t4 = false;
        assert!(o.effective().t4);
        assert!(serde_json::to_string(&o).unwrap().contains(r#""t4":true"#));
        let dir = Path::new("data");
        assert_eq!(
            SzT4Options::default_in(dir).sz.cache_dir,
            Some(dir.join("cache").join("sz"))
        );
        o.sz.t4_options.group = 0;
        assert!(o.validate().unwrap_err().contains("group"));
    }

    #[test]
    fn compaction_schedules() {
        let d = Compaction::Doubling;
        let hits: Vec<usize> = (1..=20).filter(|&l| d.after(l)).collect();
        assert_eq!(hits, [1, 2, 4, 8, 16]);
        assert!(!Compaction::Never.after(1));
        let list = Compaction::After(vec![3, 7]);
        assert!(list.after(3) && list.after(7) && !list.after(4));
    }

    #[test]
    fn the_kernel_table_matches_the_shapes() {
        for (s, decl) in SHAPES.iter().zip(&LAYERS) {
            assert_eq!(
                decl.name,
                format!("sz_layer_r{}_t{}_c{}", s.rows, s.tc_warps, s.cc_warps)
            );
            assert_eq!(decl.block, (s.threads() as u32, 1, 1));
            assert_eq!(layer_kernel(*s), Some(decl));
            assert!(SZ.source.contains(&format!(
                "sz_layer<{}, {}, {}>(SZ_LAYER_ARGS)",
                s.rows, s.tc_warps, s.cc_warps
            )));
        }
        // The same shapes with a bias per output position.
        for (s, decl) in SHAPES.iter().zip(&LAYERS_NEURONS) {
            assert_eq!(
                decl.name,
                format!(
                    "sz_layer_neurons_r{}_t{}_c{}",
                    s.rows, s.tc_warps, s.cc_warps
                )
            );
            assert_eq!(decl.block, (s.threads() as u32, 1, 1));
            assert_eq!(neurons_layer_kernel(*s), Some(decl));
            assert!(SZ.source.contains(&format!(
                "{}(SZ_LAYER_NEURONS_PARAMS) {{\n    sz_layer<{}, {}, {}>(SZ_LAYER_NEURONS_ARGS)",
                decl.name, s.rows, s.tc_warps, s.cc_warps
            )));
        }
        for &rows in ITEM_ROWS {
            assert!(layer_kernel(plain_shape(rows)).is_some());
            for tc in [2, 4] {
                let t = T4Options {
                    rows,
                    tc_warps: tc,
                    ..T4Options::default()
                };
                assert!(layer_kernel(t.shape()).is_some());
            }
            assert_eq!(ROW_ALIGN % rows, 0);
        }
        for d in SZ_DEFINES {
            assert!(SZ.source.contains(&format!("#ifndef {}", d.name)));
        }
        assert_eq!(row_stride(1), 128);
        assert_eq!(row_stride(60000), 60032);
    }
}
