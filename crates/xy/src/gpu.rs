//! The XY layer chain on the device: weights resident, activations row-major for the first
//! and stride layers, neuron-major afterwards, dead samples deleted once.

use spdnn_cuda::rows::{self, PingPong, RowList, grid_for};
use spdnn_cuda::{
    CudaError, CudaFunction, CudaViewMut, DeviceBuffer, DriverResultExt, Gpu, KernelSource,
    LaunchConfig, PushKernelArg, Timeline,
};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_glare::{AccessCounts, Census, Glare, Recorder, model};

use crate::format::{GROUP, XyLayer, XyNetwork};

/// `kernels-cu/xy.cu`.
pub const XY: KernelSource = KernelSource {
    name: "xy.cu",
    source: include_str!("../../../kernels-cu/xy.cu"),
};

/// Samples per block of the row-major kernel (`XY_ROW_TILE` in xy.cu).
const ROW_TILE: u32 = 8;
/// Threads per block of the row-major kernel.
const ROW_THREADS: u32 = 128;
/// Threads per block of the neuron-major kernel (one per sample column).
const COLUMN_THREADS: u32 = 256;
/// Threads per block of list and flag kernels.
const LIST_THREADS: u32 = 256;

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

/// One layer on the device.
pub struct DeviceXyLayer {
    group: u32,
    blocks: u32,
    offsets: DeviceBuffer<u32>,
    inputs: DeviceBuffer<u32>,
    values: DeviceBuffer<f32>,
}

/// Uploads `host`, or one zero element when it is empty (a zero-length allocation is not
/// a valid kernel argument).
fn upload_padded<T: spdnn_cuda::cudarc::driver::DeviceRepr + Default + Copy>(
    gpu: &Gpu,
    host: &[T],
) -> Result<DeviceBuffer<T>, CudaError> {
    if host.is_empty() {
        gpu.upload(&[T::default()])
    } else {
        gpu.upload(host)
    }
}

impl DeviceXyLayer {
    /// Uploads one layer.
    pub fn upload(gpu: &Gpu, layer: &XyLayer) -> Result<Self, CudaError> {
        Ok(Self {
            group: layer.group,
            blocks: layer.blocks() as u32,
            offsets: gpu.upload(&layer.block_offsets)?,
            inputs: upload_padded(gpu, &layer.inputs)?,
            values: upload_padded(gpu, &layer.values)?,
        })
    }
}

/// Every layer resident on the device.
pub struct DeviceXyNetwork {
    /// N.
    pub neurons: usize,
    /// The layers, in order.
    pub layers: Vec<DeviceXyLayer>,
}

impl DeviceXyNetwork {
    /// Uploads the layers `range` of `network`.
    pub fn upload(
        gpu: &Gpu,
        network: &XyNetwork,
        range: std::ops::Range<usize>,
    ) -> Result<Self, CudaError> {
        let layers = network.layers[range]
            .iter()
            .map(|layer| DeviceXyLayer::upload(gpu, layer))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            neurons: network.neurons,
            layers,
        })
    }
}

/// The compiled kernels.
pub struct XyKernels {
    row_major: [CudaFunction; 2],
    neuron_major: [CudaFunction; 2],
    row_major_glare: [[CudaFunction; 2]; 2],
    neuron_major_glare: [[CudaFunction; 2]; 2],
    fill_columns: CudaFunction,
    rows_to_columns: CudaFunction,
    columns_to_rows: CudaFunction,
    gather_columns: CudaFunction,
    gather_rows: CudaFunction,
    column_flags: CudaFunction,
    compact: CudaFunction,
    all_rows: CudaFunction,
}

impl XyKernels {
    /// Compiles (or loads from the PTX cache) xy.cu and rows.cu.
    pub fn load(gpu: &Gpu) -> Result<Self, CudaError> {
        Ok(Self {
            row_major: [
                gpu.function(&XY, "xy_row_major_layer_g1")?,
                gpu.function(&XY, "xy_row_major_layer_g16")?,
            ],
            neuron_major: [
                gpu.function(&XY, "xy_neuron_major_layer_g1")?,
                gpu.function(&XY, "xy_neuron_major_layer_g16")?,
            ],
            row_major_glare: [
                [
                    gpu.function(&XY, "xy_row_major_layer_g1_glare")?,
                    gpu.function(&XY, "xy_row_major_layer_g16_glare")?,
                ],
                [
                    gpu.function(&XY, "xy_row_major_layer_g1_glare_census")?,
                    gpu.function(&XY, "xy_row_major_layer_g16_glare_census")?,
                ],
            ],
            neuron_major_glare: [
                [
                    gpu.function(&XY, "xy_neuron_major_layer_g1_glare")?,
                    gpu.function(&XY, "xy_neuron_major_layer_g16_glare")?,
                ],
                [
                    gpu.function(&XY, "xy_neuron_major_layer_g1_glare_census")?,
                    gpu.function(&XY, "xy_neuron_major_layer_g16_glare_census")?,
                ],
            ],
            fill_columns: gpu.function(&XY, "xy_glare_fill_columns")?,
            rows_to_columns: gpu.function(&XY, "xy_rows_to_columns")?,
            columns_to_rows: gpu.function(&XY, "xy_columns_to_rows")?,
            gather_columns: gpu.function(&XY, "xy_gather_columns")?,
            gather_rows: gpu.function(&XY, "xy_gather_rows")?,
            column_flags: gpu.function(&XY, "xy_column_flags_to_rows")?,
            compact: gpu.function(&rows::ROWS, "spdnn_compact_flagged_rows")?,
            all_rows: gpu.function(&rows::ROWS, "spdnn_all_rows")?,
        })
    }

    /// The row-major layer kernel for `layer`'s block width.
    pub fn row_major_kernel(&self, layer: &DeviceXyLayer) -> &CudaFunction {
        &self.row_major[usize::from(layer.group as usize == GROUP)]
    }

    /// The GLARE row-major kernel for `layer` (the census variant when `counting`).
    fn row_major_glare_kernel(&self, layer: &DeviceXyLayer, counting: bool) -> &CudaFunction {
        &self.row_major_glare[usize::from(counting)][usize::from(layer.group as usize == GROUP)]
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
    /// Units per row (row-major) or per tile of 256 columns (neuron-major).
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

/// Where the activations are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// `rows × N` row-major, the rows in the current list.
    RowMajor,
    /// `N × stride` neuron-major, `columns` sample columns.
    NeuronMajor,
}

/// Rows kept after some layers, as a compact row-major block on the device.
pub struct ExportedRows {
    /// `count × N`, positions in the order of the last layer run.
    pub y: DeviceBuffer<f32>,
    /// The original (0-based) input row of each exported row, ascending.
    pub ids: Vec<u32>,
}

/// One batch of rows going through the layers.
pub struct XyRun<'a> {
    gpu: &'a Gpu,
    kernels: &'a XyKernels,
    n: usize,
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
    /// deleted) with GLARE's recorder; `layers` sizes the census.
    pub fn with_glare(mut self, settings: &Glare, layers: usize) -> Result<Self, CudaError> {
        let shift = settings.checked_shift(
            model::Kernel::Xy,
            &model::Shape {
                neurons: self.n,
                slab_width: 0,
                first_layer: self.delete_at.unwrap_or(0),
            },
        )?;
        let tiles = self.capacity.div_ceil(COLUMN_THREADS as usize);
        let units = self.n.div_ceil(settings.segment);
        self.glare = Some(XyGlare {
            shift,
            units,
            recorder: Recorder::new(self.gpu, tiles * units, tiles * self.n)?,
            census: Census::new(self.gpu, layers)?,
            counting: false,
            used: false,
        });
        Ok(self)
    }

    /// Whether the next runs count their accesses (GLARE's census kernels).
    pub fn set_counting(&mut self, counting: bool) {
        if let Some(g) = self.glare.as_mut() {
            g.counting = counting;
        }
    }

    /// The accesses counted per layer since the input was loaded (empty without GLARE).
    pub fn accesses(&self) -> Result<Vec<AccessCounts>, CudaError> {
        match &self.glare {
            Some(g) => g.census.read(self.gpu),
            None => Ok(Vec::new()),
        }
    }

    /// Buffers for up to `capacity` rows of `n` neurons.
    pub fn new(
        gpu: &'a Gpu,
        kernels: &'a XyKernels,
        n: usize,
        capacity: usize,
        row_major_layers: usize,
        delete_at: Option<usize>,
        activation: (f32, f32),
    ) -> Result<Self, CudaError> {
        let capacity = capacity.max(1);
        let identity: Vec<u32> = (0..capacity as u32).collect();
        Ok(Self {
            gpu,
            kernels,
            n,
            capacity,
            row_major_layers,
            delete_at,
            y: PingPong::new(
                gpu.alloc_zeros(capacity * n)?,
                gpu.alloc_zeros(capacity * n)?,
            ),
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
        // Launch: grid ceil(rows / 256), block 256, no shared memory.
        unsafe { launch.launch(list_config(rows_count)) }.context("launching spdnn_all_rows")?;
        let identity: Vec<u32> = (0..rows_count as u32).collect();
        if !identity.is_empty() {
            self.gpu.upload_into(&identity, &mut self.ids)?;
        }
        self.column_ids = identity;
        self.columns = rows_count;
        self.stride = rows_count.max(1);
        self.layout = Layout::RowMajor;
        self.layers_done = 0;
        self.alive_valid = false;
        self.rows_count = rows_count;
        if let Some(g) = self.glare.as_mut() {
            g.recorder.clear(self.gpu)?;
            if g.counting {
                g.census.clear(self.gpu)?;
            }
            g.used = false;
        }
        Ok(())
    }

    /// Enqueues layer `index` of `network` (which must be the next layer), with the
    /// transpose before it or the deletion after it when they fall here. Marks the
    /// timeline after each step when given (`"layer"`, `"transpose"`, `"delete"`).
    /// Deletion waits for the device once (the host builds the ordered column list).
    pub fn layer(
        &mut self,
        layer: &DeviceXyLayer,
        mut timeline: Option<&mut Timeline>,
    ) -> Result<(), CudaError> {
        if self.layout == Layout::RowMajor && self.layers_done >= self.row_major_layers {
            self.transpose()?;
            if let Some(t) = timeline.as_deref_mut() {
                t.mark(self.gpu.stream(), "transpose")?;
            }
        }
        match self.layout {
            Layout::RowMajor => self.row_major_layer(layer)?,
            Layout::NeuronMajor => self.neuron_major_layer(layer)?,
        }
        self.layers_done += 1;
        self.alive_valid = true;
        if let Some(t) = timeline.as_deref_mut() {
            t.mark(self.gpu.stream(), "layer")?;
        }
        if self.layout == Layout::NeuronMajor && self.delete_at == Some(self.layers_done) {
            self.delete_dead_columns()?;
            if let Some(t) = timeline {
                t.mark(self.gpu.stream(), "delete")?;
            }
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
            self.kernels,
            layer,
            RowMajorStep {
                y_in,
                y_out,
                list: &list.rows,
                count: &list.count,
                row_alive: &mut self.alive,
                capacity,
                n: self.n,
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
        let n_u32 = self.n as u32;
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
            // Launch: grid (ceil(count / 32), ceil(N / 32)), block (32, 8), static shared 32 x 33 floats.
            let config = LaunchConfig {
                grid_dim: (count_u32.div_ceil(32), n_u32.div_ceil(32), 1),
                block_dim: (32, 8, 1),
                shared_mem_bytes: 0,
            };
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
        let kernel = match &recorder {
            Some(r) => &self.kernels.neuron_major_glare[usize::from(r.counting)][grouped],
            None => &self.kernels.neuron_major[grouped],
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
            .arg(&bias)
            .arg(&upper);
        if let Some(r) = recorder.as_mut() {
            r.push(&mut launch);
        }
        // Launch: grid (blocks, ceil(columns / 256)), block 256, static shared 64 x (G + 1) words (+ 68 bytes with GLARE).
        let config = LaunchConfig {
            grid_dim: (layer.blocks, columns_u32.div_ceil(COLUMN_THREADS), 1),
            block_dim: (COLUMN_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
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
            (self.columns as u32, self.stride as u32, self.n as u32);
        let units_u32 = g.units as u32;
        let upper = self.activation.1;
        let mut launch = self.gpu.stream().launch_builder(&self.kernels.fill_columns);
        launch
            .arg(&mut **self.y.current_mut())
            .arg(&columns_u32)
            .arg(&stride_u32)
            .arg(&n_u32)
            .arg(&**g.recorder.flags.current())
            .arg(&g.shift)
            .arg(&units_u32)
            .arg(&upper);
        // Launch: grid (ceil(columns / 256), min(N, 65535)), block 256, grid-stride over positions.
        let config = LaunchConfig {
            grid_dim: (columns_u32.div_ceil(COLUMN_THREADS), n_u32.min(65535), 1),
            block_dim: (COLUMN_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
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
            let (n_u32, count_u32, stride_u32) = (self.n as u32, count as u32, self.stride as u32);
            let (y_in, y_out) = self.y.split();
            let mut launch = stream.launch_builder(&self.kernels.gather_columns);
            launch
                .arg(&**y_in)
                .arg(&mut **y_out)
                .arg(&*list)
                .arg(&count_u32)
                .arg(&n_u32)
                .arg(&stride_u32);
            // Launch: grid (ceil(count / 256), min(N, 65535)), block 256, no shared memory.
            let config = LaunchConfig {
                grid_dim: (count_u32.div_ceil(256), n_u32.min(65535), 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
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
                        self.n,
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
                    // Launch: grid ceil(columns / 256), block 256, no shared memory.
                    unsafe { launch.launch(list_config(self.columns)) }
                        .context("launching xy_column_flags_to_rows")?;
                }
            }
        }
        Ok(())
    }

    /// The rows alive after the layers run so far, as a compact row-major block
    /// (positions in the order of the last layer, or in the input's order before any
    /// layer), with their original row ids ascending. Waits for the device once.
    pub fn export_rows(&mut self) -> Result<ExportedRows, CudaError> {
        let mut flags = self.gpu.alloc_zeros::<u8>(self.capacity)?;
        self.mark_categories(&mut flags)?;
        let flags = self.gpu.download(&*flags)?;
        let ids: Vec<u32> = (0..self.rows_count as u32)
            .filter(|&r| flags[r as usize] != 0)
            .collect();
        let count = ids.len();
        let mut y = self.gpu.alloc_zeros::<f32>((count * self.n).max(1))?;
        if count == 0 {
            return Ok(ExportedRows { y, ids });
        }
        let stream = self.gpu.stream().clone();
        let (n_u32, count_u32) = (self.n as u32, count as u32);
        match self.layout {
            Layout::RowMajor => {
                let identity: Vec<u32> = (0..self.n as u32).collect();
                let perm = self.gpu.upload(&identity)?;
                let list = self.gpu.upload(&ids)?;
                launch_gather_rows(
                    self.gpu,
                    self.kernels,
                    self.y.current(),
                    &mut y,
                    &list,
                    self.n,
                    &perm,
                )?;
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
                let mut launch = stream.launch_builder(&self.kernels.columns_to_rows);
                launch
                    .arg(&**self.y.current())
                    .arg(&mut *y)
                    .arg(&*list)
                    .arg(&count_u32)
                    .arg(&n_u32)
                    .arg(&stride_u32);
                // Launch: grid (ceil(count / 32), ceil(N / 32)), block (32, 8), static shared 32 x 33 floats.
                let config = LaunchConfig {
                    grid_dim: (count_u32.div_ceil(32), n_u32.div_ceil(32), 1),
                    block_dim: (32, 8, 1),
                    shared_mem_bytes: 0,
                };
                unsafe { launch.launch(config) }.context("launching xy_columns_to_rows")?;
            }
        }
        Ok(ExportedRows { y, ids })
    }
}

/// The buffers of one row-major layer over a row list.
pub struct RowMajorStep<'b> {
    /// Input activations, rows × N.
    pub y_in: &'b DeviceBuffer<f32>,
    /// Output activations, rows × N (only listed rows are written).
    pub y_out: &'b mut DeviceBuffer<f32>,
    /// The listed rows.
    pub list: &'b DeviceBuffer<u32>,
    /// How many rows are listed (on the device).
    pub count: &'b DeviceBuffer<u32>,
    /// Set to 1 for every listed row with a nonzero output (zeroed by the caller).
    pub row_alive: &'b mut DeviceBuffer<u8>,
    /// The most rows the list can hold (sizes the grid; blocks past the count exit).
    pub capacity: usize,
    /// N.
    pub n: usize,
    /// (bias, upper bound).
    pub activation: (f32, f32),
    /// GLARE's recorders (units of a row), when the layer runs with them.
    pub recorder: Option<RecorderStep<'b>>,
}

/// Enqueues one row-major XY layer on the listed rows (`xy_row_major_layer_g*`): the
/// outputs of a row are a deterministic function of its inputs, whatever its slot.
pub fn launch_row_major(
    gpu: &Gpu,
    kernels: &XyKernels,
    layer: &DeviceXyLayer,
    step: RowMajorStep<'_>,
) -> Result<(), CudaError> {
    let (bias, upper) = step.activation;
    let n_u32 = step.n as u32;
    let mut recorder = step.recorder;
    let kernel = match &recorder {
        Some(r) => kernels.row_major_glare_kernel(layer, r.counting),
        None => kernels.row_major_kernel(layer),
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
        .arg(&layer.blocks)
        .arg(&n_u32)
        .arg(&bias)
        .arg(&upper);
    if let Some(r) = recorder.as_mut() {
        r.push(&mut launch);
    }
    // Launch: grid (ceil(capacity / 8), ceil(N / 128)), block 128, no shared memory (static 8 x 64 bytes + 2 words with GLARE).
    let config = LaunchConfig {
        grid_dim: (
            (step.capacity.max(1) as u32).div_ceil(ROW_TILE),
            n_u32.div_ceil(ROW_THREADS),
            1,
        ),
        block_dim: (ROW_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
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
    // Launch: grid (count, 1), block 256, no shared memory.
    let config = LaunchConfig {
        grid_dim: (count_u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    unsafe { launch.launch(config) }.context("launching xy_gather_rows")?;
    Ok(())
}

/// Launch shape of the list and flag kernels over `items`.
pub fn list_config(items: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid_for(items, LIST_THREADS as usize), 1, 1),
        block_dim: (LIST_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}
