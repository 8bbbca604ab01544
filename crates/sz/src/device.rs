//! The S&Z layer chain on the device: every layer's layout resident, activations
//! neuron-major (`y[p · ld + r]`) ping-ponged between two buffers sized for the widest
//! layer, the live rows compacted after the layers [`crate::Compaction`] names, the
//! live-row count and the row ids on the device. In T4 mode the turning point is
//! profiled at preparation (or read from the cache) and each item's tiles are split at
//! P_M between tensor-core and CUDA-core warps.
//!
//! A trained network's layers carry a bias per output neuron, uploaded once in each
//! layer's output order ([`SzLayer::position_biases`]) and read by the
//! `sz_layer_neurons_*` instance of the run's shape (the T4 profile times the one-bias
//! instance of the same shape, whose arithmetic and loads are the same but one load an
//! output).

use spdnn_cuda::cudarc::driver::sys::CUdevice_attribute;
use spdnn_cuda::method::{self, DeviceRun, LayerChain, MethodOptions, Probe};
use spdnn_cuda::rows::{self, PingPong, RowList, grid_for, upload_in_position_order};
use spdnn_cuda::{CudaError, DeviceBuffer, DriverResultExt, Gpu, Kernel, PushKernelArg};
use spdnn_formats::{Csr, SparseMatrix};

use crate::emulate::activation_exponent;
use crate::format::{self, LayoutStats, SzLayer};
use crate::half::pow2;
use crate::reorder::{CHUNK, Reordering, TILE};
use crate::t4::{self, PROFILE_MAX_CC_TILES, PROFILE_TC_TILES, Profile, ProfilePoint};
use crate::{
    COMPACT_ROWS, GATHER_ROWS, KernelShape, MARK_ROWS, SCATTER_INPUT, SzOptions, cache,
    layer_kernel, neurons_layer_kernel, plain_shape, row_stride,
};

/// Layers laid out at a time on the host before their upload.
const BUILD_WINDOW: usize = 8;

/// Blocks of `kernel` resident on the whole device (no dynamic shared memory).
fn resident_blocks(gpu: &Gpu, kernel: &Kernel) -> Result<usize, CudaError> {
    let sms = gpu
        .attribute_count(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
        .max(1);
    let per_sm = kernel
        .occupancy_max_active_blocks_per_multiprocessor(kernel.decl().threads(), 0, None)
        .context("querying an sz kernel's occupancy")?;
    if per_sm == 0 {
        return Err(CudaError::InvalidArgument(format!(
            "sz: no block of {} fits an SM",
            kernel.decl().name
        )));
    }
    Ok(sms * per_sm as usize)
}

/// Loads the layer kernel of `shape` (its `_neurons` instance when `neurons`: a bias per
/// output position) into `kernels` with its resident blocks; returns its index.
fn add_kernel(
    gpu: &Gpu,
    kernels: &mut Vec<(Kernel, usize)>,
    shape: KernelShape,
    neurons: bool,
) -> Result<usize, CudaError> {
    let decl = if neurons {
        neurons_layer_kernel(shape)
    } else {
        layer_kernel(shape)
    }
    .ok_or_else(|| CudaError::InvalidArgument(format!("sz: no layer kernel for {shape:?}")))?;
    let kernel = gpu.kernel(decl)?;
    let resident = resident_blocks(gpu, &kernel)?;
    kernels.push((kernel, resident));
    Ok(kernels.len() - 1)
}

/// A weight upload that ran out of memory, said plainly: sz does not stream weights.
fn resident_error(e: CudaError, layer: usize, layers: usize) -> CudaError {
    match e {
        CudaError::OutOfMemory { requested, free } => CudaError::InvalidArgument(format!(
            "sz keeps every layer's weights resident on the GPU and does not stream them: \
             layer {} of {layers} did not fit ({requested} bytes requested, {free} free); \
             run with a smaller batch or on a GPU with more memory",
            layer + 1
        )),
        other => other,
    }
}

impl From<format::LayoutError> for CudaError {
    fn from(e: format::LayoutError) -> Self {
        CudaError::InvalidArgument(format!("sz: {e}"))
    }
}

/// One layer's layout on the device and how it is launched.
struct DeviceSzLayer {
    /// `N_l`: output positions.
    outputs: u32,
    /// Tiles of 16 output positions.
    tiles: u32,
    tile_blocks: DeviceBuffer<u32>,
    block_chunk: DeviceBuffer<u32>,
    fuse: DeviceBuffer<u32>,
    frags: DeviceBuffer<u32>,
    weight_terms: u32,
    /// The blocks in fp32 (T4's CUDA-core warps), one zero otherwise.
    block_f32: DeviceBuffer<f32>,
    rest_offsets: DeviceBuffer<u32>,
    rest_inputs: DeviceBuffer<u32>,
    rest_values: DeviceBuffer<f32>,
    /// `t`: the blocks' weights are scaled by `2^t`.
    weight_exponent: i32,
    /// A bias per output position (`N_l` values in the layer's output order), for a
    /// network with a bias per neuron (the `_neurons` kernels).
    biases: Option<DeviceBuffer<f32>>,
}

/// Device bytes [`DeviceSzLayer::upload`] takes for `layer` (its per-neuron biases apart):
/// each array, one element when empty, the fp32 blocks only `with_f32`.
pub(crate) fn layer_bytes(layer: &SzLayer, with_f32: bool) -> usize {
    use spdnn_cuda::memory::nonempty_bytes;
    nonempty_bytes::<u32>(layer.tile_blocks().len())
        + nonempty_bytes::<u32>(layer.block_chunks().len())
        + nonempty_bytes::<u32>(layer.fuse.len())
        + nonempty_bytes::<u32>(layer.frags.len())
        + if with_f32 {
            nonempty_bytes::<f32>(layer.dense.block_values().len())
        } else {
            4
        }
        + nonempty_bytes::<u32>(layer.rest.row_offsets().len())
        + nonempty_bytes::<u32>(layer.rest.col_indices().len())
        + nonempty_bytes::<f32>(layer.rest.values().len())
}

/// Device bytes of a run's buffers for batches of up to `rows` rows of at most `widest`
/// values ([`SzRun::prepare`]): two activation buffers of `widest` positions × the row
/// stride, two row lists, the `alive` flags, the row map and the category flags.
pub(crate) fn batch_bytes(rows: usize, widest: usize) -> usize {
    let capacity = rows.max(1);
    2 * 4 * crate::row_stride(capacity) * widest + 2 * RowList::bytes(capacity) + 6 * capacity
}

/// The layers' bytes as `prepare` lays them out: the reordering (from the cache in
/// `cache_dir` when there) and the layout, the fp32 blocks too `with_f32`; the per-neuron
/// biases of `chain` added.
pub(crate) fn layers_bytes(
    chain: &LayerChain<'_>,
    min_fill: f32,
    cache_dir: Option<&std::path::Path>,
    with_f32: bool,
) -> Result<Vec<usize>, CudaError> {
    let (reorderings, _) = cache::load_or_reorder(chain.layers, min_fill, cache_dir);
    let mut bytes = Vec::with_capacity(chain.layers.len());
    format::build_layers::<CudaError>(
        chain.layers,
        &reorderings,
        |_| true,
        BUILD_WINDOW,
        |_, layer| {
            bytes.push(layer_bytes(&layer, with_f32));
            Ok(())
        },
    )?;
    Ok(chain.with_bias_bytes(bytes))
}

impl DeviceSzLayer {
    /// Uploads `layer`, with `biases` (`biases[k]` for output neuron `k`, `N_l` values)
    /// put into its output order when given.
    fn upload(
        gpu: &Gpu,
        layer: &SzLayer,
        with_f32: bool,
        biases: Option<&[f32]>,
    ) -> Result<Self, CudaError> {
        let biases = upload_in_position_order(gpu, biases, &layer.order, "an sz layer")?;
        Ok(Self {
            outputs: layer.outputs as u32,
            tiles: layer.tiles() as u32,
            tile_blocks: gpu.upload_nonempty(layer.tile_blocks())?,
            block_chunk: gpu.upload_nonempty(layer.block_chunks())?,
            fuse: gpu.upload_nonempty(&layer.fuse)?,
            frags: gpu.upload_nonempty(&layer.frags)?,
            weight_terms: layer.weight_terms as u32,
            block_f32: if with_f32 {
                gpu.upload_nonempty(layer.dense.block_values())?
            } else {
                gpu.upload(&[0.0f32])?
            },
            rest_offsets: gpu.upload_nonempty(layer.rest.row_offsets())?,
            rest_inputs: gpu.upload_nonempty(layer.rest.col_indices())?,
            rest_values: gpu.upload_nonempty(layer.rest.values())?,
            weight_exponent: layer.weight_exponent,
            biases,
        })
    }
}

/// The launch of a layer: its kernel, the items' tiles and the tensor-core share.
#[derive(Debug, Clone, Copy)]
struct Launch {
    /// Index into [`SzRun::kernels`].
    kernel: usize,
    /// Tiles per item.
    group: u32,
    /// Tensor-core tiles per item.
    tc_tiles: u32,
    /// Rows per item.
    rows: usize,
    /// The kernel's shape.
    shape: KernelShape,
}

/// The scalars and pointers of one layer launch (`SZ_LAYER_PARAMS`).
struct LayerArgs<'a> {
    y_in: &'a DeviceBuffer<f32>,
    y_out: &'a mut DeviceBuffer<f32>,
    ld: u64,
    count: &'a DeviceBuffer<u32>,
    /// `None`: a null pointer (no flags wanted).
    alive: Option<&'a mut DeviceBuffer<u8>>,
    n_out: u32,
    tiles: u32,
    group: u32,
    tc_tiles: u32,
    layer: &'a DeviceSzLayer,
    x_scale: f32,
    inv_scale: f32,
    bias: f32,
    upper: f32,
}

/// Enqueues `kernel` on `grid` blocks with `a`, in the order of `SZ_LAYER_PARAMS` (then
/// the layer's biases, `SZ_LAYER_NEURONS_PARAMS`, when it has them: the kernel must be a
/// `_neurons` instance exactly then).
fn launch_layer(gpu: &Gpu, kernel: &Kernel, grid: u32, a: LayerArgs<'_>) -> Result<(), CudaError> {
    let null: u64 = 0;
    let layer = a.layer;
    let neurons = kernel.decl().name.starts_with("sz_layer_neurons_");
    if neurons != layer.biases.is_some() {
        return Err(CudaError::InvalidArgument(format!(
            "sz: {} launched on a layer {} per-neuron biases",
            kernel.decl().name,
            if neurons { "without" } else { "with" }
        )));
    }
    let mut launch = gpu.stream().launch_builder(kernel);
    launch
        .arg(&**a.y_in)
        .arg(&mut **a.y_out)
        .arg(&a.ld)
        .arg(&**a.count);
    match a.alive {
        Some(alive) => launch.arg(&mut **alive),
        None => launch.arg(&null),
    };
    launch
        .arg(&a.n_out)
        .arg(&a.tiles)
        .arg(&a.group)
        .arg(&a.tc_tiles)
        .arg(&*layer.tile_blocks)
        .arg(&*layer.block_chunk)
        .arg(&*layer.fuse)
        .arg(&*layer.frags)
        .arg(&layer.weight_terms)
        .arg(&*layer.block_f32)
        .arg(&*layer.rest_offsets)
        .arg(&*layer.rest_inputs)
        .arg(&*layer.rest_values)
        .arg(&a.x_scale)
        .arg(&a.inv_scale)
        .arg(&a.bias)
        .arg(&a.upper);
    if let Some(biases) = &layer.biases {
        launch.arg(&**biases);
    }
    let config = kernel.config(grid)?;
    unsafe { launch.launch(config) }.context("launching an sz layer kernel")?;
    Ok(())
}

/// Items of a layer launch over `rows` rows: row tiles × groups of tiles.
fn items(rows: usize, item_rows: usize, tiles: u32, group: u32) -> usize {
    rows.div_ceil(item_rows)
        .saturating_mul((tiles as usize).div_ceil(group.max(1) as usize))
}

/// Everything one S&Z run keeps on the device.
pub(crate) struct SzRun<'g> {
    gpu: &'g Gpu,
    /// The layer kernels in use and their resident blocks.
    kernels: Vec<(Kernel, usize)>,
    scatter: Kernel,
    all_rows: Kernel,
    compact: Kernel,
    gather: Kernel,
    gather_resident: usize,
    mark: Kernel,
    layers: Vec<DeviceSzLayer>,
    launches: Vec<Launch>,
    /// `N_0`, `N_L`.
    inputs: usize,
    width_out: usize,
    /// Output position → neuron of the last layer.
    order: Vec<u32>,
    bias: f32,
    upper: f32,
    /// The activations' scale exponent after the first layer (from the upper bound).
    later_exponent: i32,
    /// The first layer's, from the loaded batch's largest input.
    first_exponent: i32,
    capacity: usize,
    ld: usize,
    compaction: crate::Compaction,
    y: PingPong<DeviceBuffer<f32>>,
    lists: PingPong<RowList>,
    alive: DeviceBuffer<u8>,
    map: DeviceBuffer<u32>,
    row_flags: DeviceBuffer<u8>,
    loaded: usize,
    details: Vec<(String, String)>,
}

impl<'g> SzRun<'g> {
    /// Reorders (or reads the cache), lays out and uploads `chain` for batches of up to
    /// `rows` rows; in T4 mode, profiles the turning point (or reads it).
    pub(crate) fn prepare(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &SzOptions,
    ) -> Result<Self, CudaError> {
        options
            .validate()
            .map_err(|e| CudaError::InvalidArgument(format!("sz: {e}")))?;
        // Per-neuron biases ≤ 0 only (the harness checks too; this covers direct callers).
        method::check_bias_support::<crate::Sz>(chain)?;
        let biased = chain.biases.is_some();
        let (major, minor) = gpu.compute_capability();
        if major < 8 {
            return Err(CudaError::InvalidArgument(format!(
                "sz needs bf16 tensor cores (mma.m16n8k16 .bf16, compute capability 8.0 or \
                 later); this GPU is {major}.{minor}"
            )));
        }
        let widths = rows::check_widths(chain.layers, chain.bias, chain.upper)?;
        let inputs = widths[0];
        let width_out = widths[widths.len() - 1];
        let widest = widths.iter().copied().max().unwrap_or(inputs);
        let later_exponent = activation_exponent(chain.upper)
            .map_err(|e| CudaError::InvalidArgument(format!("sz: the upper bound: {e}")))?;
        let capacity = rows.max(1);
        let ld = row_stride(capacity);

        // Refuse early, before any preprocessing, what cannot be resident.
        let activation_bytes = ld.saturating_mul(widest).saturating_mul(8);
        let weight_floor = chain
            .layers
            .iter()
            .map(|w| 2 * w.nnz())
            .fold(0usize, usize::saturating_add);
        let free = gpu.memory()?.free;
        if activation_bytes.saturating_add(weight_floor) > free {
            return Err(CudaError::InvalidArgument(format!(
                "sz keeps every layer's weights resident on the GPU and does not stream them: \
                 {capacity} rows × {widest} activations need {activation_bytes} bytes and the \
                 weights at least {weight_floor}, but {free} bytes are free; run with a smaller \
                 batch or on a GPU with more memory"
            )));
        }

        // The kernels this run launches compile on worker threads while the layers are
        // reordered and laid out.
        gpu.compile_ahead(crate::plan_kernels(options, biased));

        // T4's kernels: the split at P_M (tensor-core solo when the CUDA-core share is
        // empty), profiled on the device before the layout. Plain S&Z loads its kernel after
        // the layout.
        let mut details: Vec<(String, String)> = Vec::new();
        let mut kernels: Vec<(Kernel, usize)> = Vec::new();
        let t4_launch = if options.t4 {
            let t4o = &options.t4_options;
            let shape = t4o.shape();
            let fused = add_kernel(gpu, &mut kernels, shape, false)?;
            let (ratio, source) = match t4o.ratio {
                Some(r) => (r, "given".to_string()),
                None => {
                    let (profile, used) =
                        profiled(gpu, &kernels[fused], shape, options.cache_dir.as_deref())?;
                    details.push(("t4_profile_cache".into(), used.name().into()));
                    details.push(("t4_tc_ms".into(), format!("{:.4}", profile.tc_ms)));
                    details.push((
                        "t4_turning_load_ratio".into(),
                        format!("{:.4}", profile.model.turning),
                    ));
                    details.push((
                        "t4_co_slope".into(),
                        format!("{:.4}", profile.model.co_slope),
                    ));
                    details.push((
                        "t4_solo_slope".into(),
                        format!("{:.4}", profile.model.solo_slope),
                    ));
                    details.push((
                        "t4_points".into(),
                        profile
                            .points
                            .iter()
                            .map(|p| {
                                format!("{}:{:.3}:{:.3}", p.cc_tiles, p.load_ratio, p.normalized)
                            })
                            .collect::<Vec<_>>()
                            .join(" "),
                    ));
                    (profile.ratio, "profiled".to_string())
                }
            };
            let group = t4o.group;
            let tc = t4::split_for(group, ratio);
            details.push(("t4_ratio".into(), format!("{ratio:.4}")));
            details.push(("t4_ratio_source".into(), source));
            details.push(("t4_group".into(), group.to_string()));
            details.push(("t4_tc_tiles".into(), tc.to_string()));
            let launch = if tc >= group {
                details.push(("t4_mode".into(), "tensor-core solo".into()));
                Launch {
                    kernel: add_kernel(gpu, &mut kernels, plain_shape(t4o.rows), false)?,
                    group: 1,
                    tc_tiles: 1,
                    rows: t4o.rows,
                    shape: plain_shape(t4o.rows),
                }
            } else {
                details.push(("t4_mode".into(), "fused".into()));
                Launch {
                    kernel: fused,
                    group: group as u32,
                    tc_tiles: tc as u32,
                    rows: t4o.rows,
                    shape,
                }
            };
            // A trained network runs the same shape's instance with a bias per output.
            Some(if biased {
                Launch {
                    kernel: add_kernel(gpu, &mut kernels, launch.shape, true)?,
                    ..launch
                }
            } else {
                launch
            })
        } else {
            None
        };
        details.push(("per_neuron_biases".into(), biased.to_string()));
        let with_f32 = t4_launch.is_some_and(|l| l.tc_tiles < l.group);

        // Reorder (cached), lay out and upload, a window of layers at a time. The clock
        // leaves out any wait for a kernel module (the run's compile_ms).
        let started = gpu.preparation_clock();
        let (reorderings, cache_use) =
            cache::load_or_reorder(chain.layers, options.min_fill, options.cache_dir.as_deref());
        let reorder_ms = started.elapsed_ms();
        let total = chain.layers.len();
        let mut layers = Vec::with_capacity(total);
        let mut stats = LayoutStats::default();
        let mut order = Vec::new();
        format::build_layers::<CudaError>(
            chain.layers,
            &reorderings,
            |_| true,
            BUILD_WINDOW,
            |l, layer| {
                stats.add(&layer);
                layers.push(
                    DeviceSzLayer::upload(gpu, &layer, with_f32, chain.layer_biases(l))
                        .map_err(|e| resident_error(e, l, total))?,
                );
                if l + 1 == total {
                    order = layer.order.clone();
                }
                Ok(())
            },
        )?;
        drop(reorderings);
        let preprocess_ms = started.elapsed_ms();
        check_exponents(&layers, later_exponent)?;

        // Plain S&Z's layer kernel (the `_neurons` instance for a trained network).
        let launch = match t4_launch {
            Some(launch) => launch,
            None => Launch {
                kernel: add_kernel(gpu, &mut kernels, plain_shape(options.rows), biased)?,
                group: 1,
                tc_tiles: 1,
                rows: options.rows,
                shape: plain_shape(options.rows),
            },
        };

        let scatter = gpu.kernel(&SCATTER_INPUT)?;
        let all_rows = gpu.kernel(&rows::ALL_ROWS)?;
        let compact = gpu.kernel(&COMPACT_ROWS)?;
        let gather = gpu.kernel(&GATHER_ROWS)?;
        let gather_resident = resident_blocks(gpu, &gather)?;
        let mark = gpu.kernel(&MARK_ROWS)?;

        // What batch_bytes counts.
        let y = PingPong::new(gpu.alloc_zeros(ld * widest)?, gpu.alloc_zeros(ld * widest)?);
        let lists = PingPong::new(RowList::new(gpu, capacity)?, RowList::new(gpu, capacity)?);
        let alive = gpu.alloc_zeros::<u8>(capacity)?;
        let map = gpu.alloc_zeros::<u32>(capacity)?;
        let row_flags = gpu.alloc_zeros::<u8>(capacity)?;

        let kernel = &kernels[launch.kernel].0;
        let regs = kernel.num_regs().unwrap_or(-1);
        let spill = kernel.local_size_bytes().unwrap_or(-1);
        details.splice(
            0..0,
            [
                ("kernel".into(), kernel.decl().name.to_string()),
                ("rows_per_item".into(), launch.rows.to_string()),
                ("cache".into(), cache_use.name().into()),
                ("min_fill".into(), options.min_fill.to_string()),
                ("blocks".into(), stats.blocks.to_string()),
                ("dense_share".into(), format!("{:.4}", stats.dense_share())),
                ("block_fill".into(), format!("{:.4}", stats.fill())),
                ("rest_nnz".into(), stats.rest_nnz.to_string()),
                ("split_layers".into(), stats.split_layers.to_string()),
                ("weight_bytes".into(), stats.bytes.to_string()),
                ("registers".into(), regs.to_string()),
                ("local_bytes".into(), spill.to_string()),
                ("reorder_ms".into(), format!("{reorder_ms:.1}")),
                ("preprocess_ms".into(), format!("{preprocess_ms:.1}")),
            ],
        );
        let launches = vec![launch; layers.len()];
        Ok(Self {
            gpu,
            kernels,
            scatter,
            all_rows,
            compact,
            gather,
            gather_resident,
            mark,
            layers,
            launches,
            inputs,
            width_out,
            order,
            bias: chain.bias,
            upper: chain.upper,
            later_exponent,
            first_exponent: 0,
            capacity,
            ld,
            compaction: options.compact.clone(),
            y,
            lists,
            alive,
            map,
            row_flags,
            loaded: 0,
            details,
        })
    }

    /// Enqueues layer `l` on the live rows; its outputs become current. Sets the live
    /// rows' flags when `flag`.
    fn layer(&mut self, l: usize, flag: bool) -> Result<(), CudaError> {
        let launch = self.launches[l];
        let layer = &self.layers[l];
        let (kernel, resident) = &self.kernels[launch.kernel];
        let exponent = if l == 0 {
            self.first_exponent
        } else {
            self.later_exponent
        };
        if flag {
            self.gpu
                .stream()
                .memset_zeros(&mut *self.alive)
                .context("clearing the live flags")?;
        }
        let n = items(self.capacity, launch.rows, layer.tiles, launch.group);
        let grid = n.min(*resident).clamp(1, i32::MAX as usize) as u32;
        let (y_in, y_out) = self.y.split();
        let args = LayerArgs {
            y_in,
            y_out,
            ld: self.ld as u64,
            count: &self.lists.current().count,
            alive: flag.then_some(&mut self.alive),
            n_out: layer.outputs,
            tiles: layer.tiles,
            group: launch.group,
            tc_tiles: launch.tc_tiles,
            layer,
            x_scale: pow2(exponent),
            inv_scale: pow2(-(exponent + layer.weight_exponent)),
            bias: self.bias,
            upper: self.upper,
        };
        launch_layer(self.gpu, kernel, grid, args)?;
        self.y.swap();
        Ok(())
    }

    /// Drops the rows whose flags are clear: the current activations (`width` positions)
    /// and the row ids move to the other buffers, which become current.
    fn compact_rows(&mut self, width: u32) -> Result<(), CudaError> {
        let stream = self.gpu.stream();
        let (list_in, list_out) = self.lists.split();
        stream
            .memset_zeros(&mut *list_out.count)
            .context("clearing the row count")?;
        let mut compact = stream.launch_builder(&self.compact);
        compact
            .arg(&*list_in.count)
            .arg(&*self.alive)
            .arg(&*list_in.rows)
            .arg(&mut *list_out.rows)
            .arg(&mut *list_out.count)
            .arg(&mut *self.map);
        let config = self.compact.config_for(self.capacity)?;
        unsafe { compact.launch(config) }.context("launching sz_compact_rows")?;
        let (y_in, y_out) = self.y.split();
        let ld = self.ld as u64;
        let n = (width as usize).saturating_mul(self.capacity.div_ceil(256));
        let grid = n.min(self.gather_resident).clamp(1, i32::MAX as usize) as u32;
        let mut gather = stream.launch_builder(&self.gather);
        gather
            .arg(&**y_in)
            .arg(&mut **y_out)
            .arg(&ld)
            .arg(&*list_in.count)
            .arg(&*self.map)
            .arg(&width);
        let config = self.gather.config(grid)?;
        unsafe { gather.launch(config) }.context("launching sz_gather_rows")?;
        self.y.swap();
        self.lists.swap();
        Ok(())
    }
}

/// Checks that every layer's scales stay normal fp32 numbers (`2^-(s + t)`).
fn check_exponents(layers: &[DeviceSzLayer], later: i32) -> Result<(), CudaError> {
    for (l, layer) in layers.iter().enumerate() {
        let e = later + layer.weight_exponent;
        if !(-126..=126).contains(&e) {
            return Err(CudaError::InvalidArgument(format!(
                "sz: layer {}'s weights and activations cannot be scaled together for the split \
                 (exponent {e})",
                l + 1
            )));
        }
    }
    Ok(())
}

impl DeviceRun for SzRun<'_> {
    fn load(&mut self, input: &Csr) -> Result<(), CudaError> {
        if input.nrows() > self.capacity || input.ncols() != self.inputs {
            return Err(CudaError::InvalidArgument(format!(
                "sz: a batch of {} × {} does not fit the prepared {} × {}",
                input.nrows(),
                input.ncols(),
                self.capacity,
                self.inputs
            )));
        }
        let largest = input.values().iter().fold(0f32, |m, v| m.max(v.abs()));
        if !largest.is_finite() {
            return Err(CudaError::InvalidArgument(
                "sz: the input holds a value that is not finite".into(),
            ));
        }
        let first = activation_exponent(largest)
            .map_err(|e| CudaError::InvalidArgument(format!("sz: the input: {e}")))?;
        if let Some(layer) = self.layers.first() {
            let e = first + layer.weight_exponent;
            if !(-126..=126).contains(&e) {
                return Err(CudaError::InvalidArgument(format!(
                    "sz: the input (largest {largest}) and layer 1's weights cannot be scaled \
                     together for the split (exponent {e})"
                )));
            }
        }
        self.first_exponent = first;
        let stream = self.gpu.stream();
        self.y.reset();
        self.lists.reset();
        stream
            .memset_zeros(&mut **self.y.current_mut())
            .context("clearing the activations")?;
        if input.nnz() > 0 {
            let offsets = self.gpu.upload(input.row_offsets())?;
            let cols = self.gpu.upload(input.col_indices())?;
            let vals = self.gpu.upload(input.values())?;
            let rows_u32 = input.nrows() as u32;
            let ld = self.ld as u64;
            let mut launch = stream.launch_builder(&self.scatter);
            launch
                .arg(&*offsets)
                .arg(&*cols)
                .arg(&*vals)
                .arg(&rows_u32)
                .arg(&ld)
                .arg(&mut **self.y.current_mut());
            let config = self.scatter.config(grid_for(input.nrows(), 1))?;
            unsafe { launch.launch(config) }.context("launching sz_scatter_input")?;
        }
        let rows_u32 = input.nrows() as u32;
        let list = self.lists.current_mut();
        let mut start = stream.launch_builder(&self.all_rows);
        start
            .arg(&mut *list.rows)
            .arg(&mut *list.count)
            .arg(&rows_u32);
        let config = self.all_rows.config_for(input.nrows())?;
        unsafe { start.launch(config) }.context("launching spdnn_all_rows")?;
        self.loaded = input.nrows();
        Ok(())
    }

    /// Every layer (rows compacted after the scheduled ones), then the live rows with a
    /// nonzero after the last layer flagged as categories.
    fn run(&mut self, probe: &mut Probe) -> Result<(), CudaError> {
        let total = self.layers.len();
        for l in 0..total {
            let last = l + 1 == total;
            let compact = !last && self.compaction.after(l + 1);
            self.layer(l, last || compact)?;
            if compact {
                let width = self.layers[l].outputs;
                self.compact_rows(width)?;
            }
            probe.layer("layers")?;
        }
        let stream = self.gpu.stream();
        stream
            .memset_zeros(&mut *self.row_flags)
            .context("clearing the category flags")?;
        let list = self.lists.current();
        let mut mark = stream.launch_builder(&self.mark);
        mark.arg(&*list.count)
            .arg(&*self.alive)
            .arg(&*list.rows)
            .arg(&mut *self.row_flags);
        let config = self.mark.config_for(self.capacity)?;
        unsafe { mark.launch(config) }.context("launching sz_mark_rows")?;
        Ok(())
    }

    fn row_flags(&mut self) -> Result<Vec<u8>, CudaError> {
        rows::download_row_flags(self.gpu, &self.row_flags, self.loaded)
    }

    /// The live rows' last activations, moved back to their rows and neuron order.
    fn output(&mut self) -> Result<Vec<f32>, CudaError> {
        let flags = self.row_flags()?;
        let y = self.gpu.download(&**self.y.current())?;
        let list = self.lists.current();
        let count = self.gpu.download(&*list.count)?[0] as usize;
        let ids = self.gpu.download(&*list.rows)?;
        let width = self.width_out;
        let mut values = vec![0f32; self.loaded * width];
        for (p, &id) in ids.iter().enumerate().take(count.min(self.capacity)) {
            let id = id as usize;
            if flags.get(id).copied().unwrap_or(0) == 0 {
                continue;
            }
            let row = &mut values[id * width..(id + 1) * width];
            for (pos, &neuron) in self.order.iter().enumerate() {
                row[neuron as usize] = y[pos * self.ld + p];
            }
        }
        Ok(values)
    }

    fn details(&self) -> Vec<(String, String)> {
        self.details.clone()
    }
}

/// Rows of the profile's activations.
const PROFILE_ROWS: usize = 4096;
/// Groups of tiles in the profile's layer (items = row tiles × groups).
const PROFILE_GROUPS: usize = 32;
/// Timed launches per load (the least time counts), after one untimed.
const PROFILE_REPEATS: usize = 3;

/// T4's profile of `kernel` (shape `shape`) on `gpu`, from the cache in `dir` or measured
/// ([`profile`]) and stored there.
fn profiled(
    gpu: &Gpu,
    kernel: &(Kernel, usize),
    shape: KernelShape,
    dir: Option<&std::path::Path>,
) -> Result<(Profile, cache::CacheUse), CudaError> {
    let name = kernel.0.decl().name;
    if let Some(dir) = dir
        && let Some(p) = cache::load_profile(dir, gpu.name(), name)
    {
        return Ok((p, cache::CacheUse::Hit));
    }
    let p = profile(gpu, kernel, shape)?;
    match dir {
        Some(dir) => {
            cache::store_profile(dir, &p);
            Ok((p, cache::CacheUse::Miss))
        }
        None => Ok((p, cache::CacheUse::Disabled)),
    }
}

/// A challenge-like layer for the profile: `tiles` tiles of 16 outputs, each reading two
/// chunks of 16 inputs with weights 1/16 (two full blocks a tile).
fn profile_layer(tiles: usize) -> Result<(Csr, Reordering), CudaError> {
    let n = tiles * TILE;
    let chunks = n / CHUNK;
    let mut triplets = Vec::with_capacity(n * 2 * CHUNK);
    let mut block_chunks = Vec::with_capacity(2 * tiles);
    for t in 0..tiles {
        let mut pair = [(2 * t) % chunks, (2 * t + 1) % chunks];
        pair.sort_unstable();
        block_chunks.extend(pair.iter().map(|&c| c as u32));
        for o in t * TILE..(t + 1) * TILE {
            for c in pair {
                for i in c * CHUNK..(c + 1) * CHUNK {
                    triplets.push((i as u32, o as u32, 0.0625));
                }
            }
        }
    }
    let w = Csr::from_triplets(n, n, &triplets)
        .map_err(|e| CudaError::InvalidArgument(format!("sz: the profile layer: {e}")))?;
    let r = Reordering {
        outputs: (0..n as u32).collect(),
        inputs: (0..n as u32).collect(),
        tile_blocks: (0..=tiles as u32).map(|t| 2 * t).collect(),
        chunks: block_chunks,
    };
    Ok((w, r))
}

/// Profiles the turning point of `kernel` (a T4 shape): the tensor-core load fixed at
/// [`PROFILE_TC_TILES`] tiles an item, the CUDA-core load from 0 to
/// [`PROFILE_MAX_CC_TILES`]; each kernel's time alone and fused, the two-stage model
/// fitted ([`t4::ratio_from`]).
fn profile(gpu: &Gpu, kernel: &(Kernel, usize), shape: KernelShape) -> Result<Profile, CudaError> {
    let a = PROFILE_TC_TILES;
    let max_tiles = PROFILE_GROUPS * (a + PROFILE_MAX_CC_TILES);
    let (w, r) = profile_layer(max_tiles)?;
    let layer = format::build_layer(1, &w, &r, None, true)
        .map_err(|e| CudaError::InvalidArgument(format!("sz: the profile layer: {e}")))?;
    let device_layer = DeviceSzLayer::upload(gpu, &layer, true, None)?;
    let n = layer.outputs;
    let ld = row_stride(PROFILE_ROWS);
    let y_in = gpu.alloc_zeros::<f32>(n * ld)?;
    let mut y_out = gpu.alloc_zeros::<f32>(n * ld)?;
    let count = gpu.upload(&[PROFILE_ROWS as u32])?;
    let mut timer = gpu.timer()?;
    let stream = gpu.stream().clone();
    let mut time = |group: usize, tc: usize| -> Result<f64, CudaError> {
        let tiles = (PROFILE_GROUPS * group) as u32;
        let n_items = items(PROFILE_ROWS, shape.rows, tiles, group as u32);
        let grid = n_items.min(kernel.1).max(1) as u32;
        let mut best = f64::INFINITY;
        for rep in 0..=PROFILE_REPEATS {
            timer.start(&stream)?;
            launch_layer(
                gpu,
                &kernel.0,
                grid,
                LayerArgs {
                    y_in: &y_in,
                    y_out: &mut y_out,
                    ld: ld as u64,
                    count: &count,
                    alive: None,
                    n_out: tiles * TILE as u32,
                    tiles,
                    group: group as u32,
                    tc_tiles: tc as u32,
                    layer: &device_layer,
                    x_scale: 1.0,
                    inv_scale: pow2(-layer.weight_exponent),
                    bias: -0.3,
                    upper: 32.0,
                },
            )?;
            let ms = timer.stop(&stream)?;
            if rep > 0 {
                best = best.min(ms);
            }
        }
        Ok(best)
    };
    let tc_ms = time(a, a)?;
    if !(tc_ms.is_finite() && tc_ms > 0.0) {
        return Err(CudaError::InvalidArgument(format!(
            "sz: the T4 profile measured {tc_ms} ms for the tensor-core load"
        )));
    }
    let mut points = Vec::with_capacity(PROFILE_MAX_CC_TILES + 1);
    for c in 0..=PROFILE_MAX_CC_TILES {
        let (cc_ms, fused_ms) = if c == 0 {
            (0.0, tc_ms)
        } else {
            (time(c, 0)?, time(a + c, a)?)
        };
        points.push(ProfilePoint {
            cc_tiles: c,
            task_ratio: c as f64 / a as f64,
            load_ratio: cc_ms / tc_ms,
            normalized: fused_ms / tc_ms,
        });
    }
    // The load ratio grows with c; sorting guards the fit against timing noise.
    let mut sorted = points.clone();
    sorted.sort_by(|p, q| p.load_ratio.total_cmp(&q.load_ratio));
    let (model, ratio) = t4::ratio_from(&sorted).unwrap_or((
        t4::TwoStage {
            turning: 0.0,
            co_slope: 0.0,
            co_intercept: 1.0,
            solo_slope: 0.0,
            solo_intercept: 1.0,
        },
        0.0,
    ));
    Ok(Profile {
        device: gpu.name().to_string(),
        kernel: kernel.0.decl().name.to_string(),
        tc_ms,
        points,
        model,
        ratio: ratio.max(0.0),
    })
}
