//! The H&P layer chain on the device: every layer's layout resident, activations
//! ping-ponged in position order, the list of non-empty rows kept on the device.
//!
//! Layers may be rectangular (`N_{l-1} × N_l`, a compressed network): layer `l` reads
//! rows × `N_{l-1}` activations and writes rows × `N_l` (row-major, each at its own
//! width), both inside the two activation buffers sized for the widest layer.
//!
//! A trained network's layers carry a bias per output neuron, uploaded in position order,
//! and run `hp_layer_neurons_mb{MB}` (the one-bias kernel is not touched).

use std::collections::HashMap;

use spdnn_cuda::cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use spdnn_cuda::method::{DeviceRun, LayerChain, MethodOptions, Probe};
use spdnn_cuda::rows::{self, PingPong, RowList, grid_for, upload_in_position_order};
use spdnn_cuda::{CudaError, DeviceBuffer, DriverResultExt, Gpu, Kernel, PushKernelArg};
use spdnn_formats::{Csr, SparseMatrix};

use crate::format::{self, HpLayer, LayoutStats, Params};
use crate::{
    COMPACT_ROWS, HpOptions, SCATTER_ROWS, dynamic_shared_bytes, dynamic_shared_floats,
    layer_kernel, neurons_layer_kernel, static_shared_bytes,
};

/// Device bytes of a run's buffers for batches of up to `rows` rows of at most `widest`
/// values ([`HpRun::prepare`]): two activation buffers, two row lists, the `alive` and
/// category flags.
pub(crate) fn batch_bytes(rows: usize, widest: usize) -> usize {
    let capacity = rows.max(1);
    2 * 4 * capacity * widest + 2 * RowList::bytes(capacity) + 2 * capacity
}

/// One layer's layout on the device, its widths and its grid.
struct DeviceHpLayer {
    /// `N_{l-1}`: the width of the activations it reads (their row stride).
    inputs: u32,
    /// `N_l`: the width of the activations it writes.
    outputs: u32,
    /// Output blocks, `ceil(N_l / BLOCK)`.
    blocks: u32,
    block_buffers: DeviceBuffer<u32>,
    buffer_starts: DeviceBuffer<u32>,
    map: DeviceBuffer<u32>,
    slice_starts: DeviceBuffer<u32>,
    index: DeviceBuffer<u16>,
    value: DeviceBuffer<f32>,
    /// A bias per output position (`N_l` values, position order), for a trained network.
    biases: Option<DeviceBuffer<f32>>,
    /// Dynamic shared memory: the longest buffer × the feature stride, in floats.
    shared_floats: usize,
    /// The same in bytes.
    shared_bytes: u32,
    /// Blocks of the launch (set once the occupancy is known).
    grid: u32,
}

impl DeviceHpLayer {
    /// Uploads `layer`, with its per-neuron biases (neuron order, put into position
    /// order here) when given.
    fn upload(
        gpu: &Gpu,
        layer: &HpLayer,
        biases: Option<&[f32]>,
        shared_floats: usize,
        shared_bytes: u32,
    ) -> Result<Self, CudaError> {
        let biases = upload_in_position_order(gpu, biases, layer.outputs(), "an hp layer")?;
        Ok(Self {
            inputs: layer.inputs() as u32,
            outputs: layer.neurons() as u32,
            blocks: layer.blocks() as u32,
            block_buffers: gpu.upload_nonempty(layer.block_buffers())?,
            buffer_starts: gpu.upload_nonempty(layer.buffer_starts())?,
            map: gpu.upload_nonempty(layer.map())?,
            slice_starts: gpu.upload_nonempty(layer.slice_starts())?,
            index: gpu.upload_nonempty(layer.index())?,
            value: gpu.upload_nonempty(layer.value())?,
            biases,
            shared_floats,
            shared_bytes,
            grid: 1,
        })
    }
}

/// Writes the sparse `input` rows into the zeroed `y` (rows × `N_0`) at the first
/// layer's positions (`positions`: neuron → position).
fn scatter_in_order(
    gpu: &Gpu,
    scatter: &Kernel,
    input: &Csr,
    positions: &DeviceBuffer<u32>,
    y: &mut DeviceBuffer<f32>,
) -> Result<(), CudaError> {
    if input.nnz() == 0 {
        return Ok(());
    }
    let offsets = gpu.upload(input.row_offsets())?;
    let cols = gpu.upload(input.col_indices())?;
    let vals = gpu.upload(input.values())?;
    let (rows_u32, n_u32) = (input.nrows() as u32, input.ncols() as u32);
    let mut launch = gpu.stream().launch_builder(scatter);
    launch
        .arg(&*offsets)
        .arg(&*cols)
        .arg(&*vals)
        .arg(&rows_u32)
        .arg(&n_u32)
        .arg(&**positions)
        .arg(&mut **y);
    let config = scatter.config(grid_for(input.nrows(), 1))?;
    unsafe { launch.launch(config) }.context("launching hp_scatter_rows")?;
    Ok(())
}

/// A weight upload that ran out of memory, said plainly: hp does not stream weights.
fn resident_error(e: CudaError, layer: usize, layers: usize) -> CudaError {
    match e {
        CudaError::OutOfMemory { requested, free } => CudaError::InvalidArgument(format!(
            "hp keeps every layer's weights resident on the GPU and does not stream them: \
             layer {} of {layers} did not fit ({requested} bytes requested, {free} free); \
             run with a smaller batch or on a GPU with more memory",
            layer + 1
        )),
        other => other,
    }
}

/// Everything one H&P run keeps on the device.
pub(crate) struct HpRun<'g> {
    gpu: &'g Gpu,
    layer_kernel: Kernel,
    compact: Kernel,
    scatter: Kernel,
    all_rows: Kernel,
    mark: Kernel,
    layers: Vec<DeviceHpLayer>,
    /// Neuron → position of the input the first layer reads (`None`: the identity).
    input_positions: Option<DeviceBuffer<u32>>,
    /// `N_0`: the width of the input.
    inputs: usize,
    /// `N_L`: the width of the output.
    width_out: usize,
    bias: f32,
    upper: f32,
    /// Rows a batch may hold.
    capacity: usize,
    y: PingPong<DeviceBuffer<f32>>,
    lists: PingPong<RowList>,
    /// Per list position: whether the row has a nonzero output (cleared by the compaction).
    alive: DeviceBuffer<u8>,
    row_flags: DeviceBuffer<u8>,
    /// Rows of the loaded batch.
    loaded: usize,
    /// Position → neuron of the last layer's outputs (empty: the identity).
    outputs: Vec<u32>,
    details: Vec<(String, String)>,
}

impl<'g> HpRun<'g> {
    /// Builds and uploads the layout of `chain` for batches of up to `rows` rows.
    pub(crate) fn prepare(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &HpOptions,
    ) -> Result<Self, CudaError> {
        let widths = rows::check_widths(chain.layers, chain.bias, chain.upper)?;
        let inputs = widths[0];
        let width_out = widths[widths.len() - 1];
        // Both activation buffers hold rows × the widest layer.
        let widest = widths.iter().copied().max().unwrap_or(inputs);
        options
            .validate()
            .map_err(|e| CudaError::InvalidArgument(format!("hp: {e}")))?;
        let minibatch = options.minibatch();
        let params = Params {
            buffer: options.buffer(),
            layout: options.layout,
        };
        let capacity = rows.max(1);

        // Refuse early, before any preprocessing, what cannot be resident.
        let activation_bytes = capacity.saturating_mul(widest).saturating_mul(8);
        // Stored zeros are dropped from the layout: 6 bytes per nonzero is a lower bound.
        let weight_floor = chain
            .layers
            .iter()
            .map(|w| 6 * w.values().iter().filter(|&&v| v != 0.0).count())
            .fold(0usize, usize::saturating_add);
        let free = gpu.memory()?.free;
        if activation_bytes.saturating_add(weight_floor) > free {
            return Err(CudaError::InvalidArgument(format!(
                "hp keeps every layer's weights resident on the GPU and does not stream them: \
                 {capacity} rows × {widest} activations need {activation_bytes} bytes and the weights \
                 at least {weight_floor}, but {free} bytes are free; run with a smaller batch \
                 or on a GPU with more memory"
            )));
        }

        if let Some(biases) = chain.biases
            && biases.len() != chain.layers.len()
        {
            return Err(CudaError::InvalidArgument(format!(
                "hp: {} bias vectors for {} layers",
                biases.len(),
                chain.layers.len()
            )));
        }
        // A trained network (a bias per neuron) runs the _neurons instance for every layer.
        let decl_for = if chain.biases.is_some() {
            neurons_layer_kernel
        } else {
            layer_kernel
        };
        let layer_decl = decl_for(minibatch).ok_or_else(|| {
            CudaError::InvalidArgument(format!("hp: no layer kernel for minibatch {minibatch}"))
        })?;
        // The kernels compile on worker threads while the layout is built.
        gpu.compile_ahead(crate::plan_kernels(options, chain.biases.is_some()));

        // What batch_bytes counts.
        let y = PingPong::new(
            gpu.alloc_zeros(capacity * widest)?,
            gpu.alloc_zeros(capacity * widest)?,
        );
        let lists = PingPong::new(RowList::new(gpu, capacity)?, RowList::new(gpu, capacity)?);
        let alive = gpu.alloc_zeros::<u8>(capacity)?;
        let row_flags = gpu.alloc_zeros::<u8>(capacity)?;

        let shared_limit = gpu.attribute_count(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?;
        let static_bytes = static_shared_bytes(minibatch);
        // The clock leaves out any wait for a kernel module (the run's compile_ms).
        let started = gpu.preparation_clock();
        let total = chain.layers.len();
        let mut layers = Vec::with_capacity(total);
        let mut stats = LayoutStats::default();
        let mut outputs = Vec::new();
        let input_order = format::build_layers::<CudaError>(chain.layers, &params, |l, layer| {
            let shared_floats = dynamic_shared_floats(layer.max_buffer(), minibatch);
            let shared = dynamic_shared_bytes(layer.max_buffer(), minibatch);
            if shared + static_bytes > shared_limit {
                return Err(CudaError::InvalidArgument(format!(
                    "hp: layer {}'s buffers of up to {} inputs × {} rows need {} bytes of shared \
                     memory, the device allows {shared_limit} per block: use a smaller buffer \
                     or minibatch",
                    l + 1,
                    layer.max_buffer(),
                    minibatch,
                    shared + static_bytes
                )));
            }
            stats.add(&layer);
            layers.push(
                DeviceHpLayer::upload(
                    gpu,
                    &layer,
                    chain.layer_biases(l),
                    shared_floats,
                    shared as u32,
                )
                .map_err(|e| resident_error(e, l, total))?,
            );
            if l + 1 == total {
                outputs = layer.outputs().to_vec();
            }
            Ok(())
        })?;
        let preprocess_ms = started.elapsed_ms();
        let input_positions = match &input_order {
            Some(order) => Some(gpu.upload(&format::inverse(order))?),
            None => None,
        };
        let layer_kernel = gpu.kernel(layer_decl)?;
        let compact = gpu.kernel(&COMPACT_ROWS)?;
        let all_rows = gpu.kernel(&rows::ALL_ROWS)?;
        let mark = gpu.kernel(&rows::MARK_ROWS)?;
        let scatter = gpu.kernel(&SCATTER_ROWS)?;

        // Opt in to the shared memory the largest layer needs, then size each layer's
        // grid to the blocks that stay resident.
        let max_shared = layers.iter().map(|l| l.shared_bytes).max().unwrap_or(0);
        layer_kernel
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                max_shared as i32,
            )
            .context("opting hp_layer into its shared memory")?;
        let sms = gpu
            .attribute_count(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
            .max(1);
        let minibatches = capacity.div_ceil(minibatch);
        let mut resident_by_shared: HashMap<u32, usize> = HashMap::new();
        for layer in &mut layers {
            let resident = match resident_by_shared.get(&layer.shared_bytes) {
                Some(&r) => r,
                None => {
                    let per_sm = layer_kernel
                        .occupancy_max_active_blocks_per_multiprocessor(
                            layer_kernel.decl().threads(),
                            layer.shared_bytes as usize,
                            None,
                        )
                        .context("querying hp_layer's occupancy")?;
                    if per_sm == 0 {
                        return Err(CudaError::InvalidArgument(format!(
                            "hp: no block of hp_layer_mb{minibatch} fits an SM with {} bytes of \
                             shared memory: use a smaller buffer or minibatch",
                            layer.shared_bytes
                        )));
                    }
                    let r = sms * per_sm as usize;
                    resident_by_shared.insert(layer.shared_bytes, r);
                    r
                }
            };
            let items = minibatches.saturating_mul(layer.blocks as usize);
            layer.grid = items.min(resident).clamp(1, i32::MAX as usize) as u32;
        }

        let regs = layer_kernel.num_regs().unwrap_or(-1);
        let spill = layer_kernel.local_size_bytes().unwrap_or(-1);
        let details = vec![
            ("minibatch".into(), minibatch.to_string()),
            ("buffer".into(), params.buffer.to_string()),
            ("layout".into(), params.layout.name().into()),
            ("fill".into(), format!("{:.4}", stats.fill())),
            (
                "buffers_per_block".into(),
                format!("{:.3}", stats.buffers as f64 / stats.blocks.max(1) as f64),
            ),
            (
                "footprint_per_block".into(),
                format!("{:.1}", stats.footprint as f64 / stats.blocks.max(1) as f64),
            ),
            ("max_buffer".into(), stats.max_buffer.to_string()),
            (
                "shared_bytes".into(),
                (max_shared as usize + static_bytes).to_string(),
            ),
            ("weight_bytes".into(), stats.bytes.to_string()),
            ("registers".into(), regs.to_string()),
            ("local_bytes".into(), spill.to_string()),
            ("preprocess_ms".into(), format!("{preprocess_ms:.1}")),
        ];
        let identity = outputs.iter().enumerate().all(|(p, &o)| p as u32 == o);
        Ok(Self {
            gpu,
            layer_kernel,
            compact,
            scatter,
            all_rows,
            mark,
            layers,
            input_positions,
            inputs,
            width_out,
            bias: chain.bias,
            upper: chain.upper,
            capacity,
            y,
            lists,
            alive,
            row_flags,
            loaded: 0,
            outputs: if identity { Vec::new() } else { outputs },
            details,
        })
    }

    /// Enqueues layer `l` on the listed rows; its outputs and list become current.
    fn layer(&mut self, l: usize) -> Result<(), CudaError> {
        let stream = self.gpu.stream();
        let layer = &self.layers[l];
        let (y_in, y_out) = self.y.split();
        let (list_in, list_out) = self.lists.split();
        let (inputs, outputs, blocks) = (layer.inputs, layer.outputs, layer.blocks);
        let mut launch = stream.launch_builder(&self.layer_kernel);
        launch
            .arg(&**y_in)
            .arg(&mut **y_out)
            .arg(&*list_in.rows)
            .arg(&*list_in.count)
            .arg(&mut *self.alive)
            .arg(&mut *list_out.count)
            .arg(&*layer.block_buffers)
            .arg(&*layer.buffer_starts)
            .arg(&*layer.map)
            .arg(&*layer.slice_starts)
            .arg(&*layer.index)
            .arg(&*layer.value)
            .arg(&inputs)
            .arg(&outputs)
            .arg(&blocks)
            .arg(&self.bias)
            .arg(&self.upper);
        if let Some(biases) = &layer.biases {
            launch.arg(&**biases);
        }
        let config = self
            .layer_kernel
            .config_shared(layer.grid, layer.shared_floats)?;
        unsafe { launch.launch(config) }.context("launching hp_layer")?;
        let mut compact = stream.launch_builder(&self.compact);
        compact
            .arg(&*list_in.rows)
            .arg(&*list_in.count)
            .arg(&mut *self.alive)
            .arg(&mut *list_out.rows)
            .arg(&mut *list_out.count);
        let config = self.compact.config_for(self.capacity)?;
        unsafe { compact.launch(config) }.context("launching hp_compact_rows")?;
        self.y.swap();
        self.lists.swap();
        Ok(())
    }
}

impl DeviceRun for HpRun<'_> {
    fn load(&mut self, input: &Csr) -> Result<(), CudaError> {
        if input.nrows() > self.capacity || input.ncols() != self.inputs {
            return Err(CudaError::InvalidArgument(format!(
                "hp: a batch of {} × {} does not fit the prepared {} × {}",
                input.nrows(),
                input.ncols(),
                self.capacity,
                self.inputs
            )));
        }
        let stream = self.gpu.stream();
        self.y.reset();
        self.lists.reset();
        stream
            .memset_zeros(&mut **self.y.current_mut())
            .context("clearing the activations")?;
        match &self.input_positions {
            None => rows::scatter_rows(self.gpu, input, self.y.current_mut())?,
            Some(positions) => scatter_in_order(
                self.gpu,
                &self.scatter,
                input,
                positions,
                self.y.current_mut(),
            )?,
        }
        stream
            .memset_zeros(&mut *self.alive)
            .context("clearing the row flags")?;
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

    /// Every layer, then the rows of the last list flagged as categories.
    fn run(&mut self, probe: &mut Probe) -> Result<(), CudaError> {
        for l in 0..self.layers.len() {
            self.layer(l)?;
            probe.layer("layers")?;
        }
        self.lists
            .current()
            .mark_flags(self.gpu, &self.mark, &mut self.row_flags, self.capacity)
    }

    fn row_flags(&mut self) -> Result<Vec<u8>, CudaError> {
        rows::download_row_flags(self.gpu, &self.row_flags, self.loaded)
    }

    fn output(&mut self) -> Result<Vec<f32>, CudaError> {
        let flags = self.row_flags()?;
        let values = rows::final_output(self.gpu, self.y.current(), self.width_out, &flags)?;
        Ok(if self.outputs.is_empty() {
            values
        } else {
            format::to_neuron_order(&values, &self.outputs)
        })
    }

    fn details(&self) -> Vec<(String, String)> {
        self.details.clone()
    }
}
