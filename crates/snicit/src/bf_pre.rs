//! BF-2019 as SNICIT's pre-convergence spMM.

use spdnn_bf::{BfKernels, LayerStep, SlabShape};
use spdnn_cuda::rows::{self, PingPong, RowList, grid_for};
use spdnn_cuda::slab_weights::{DeviceSlabWeights, Residency, pack_layers, slab_width_for};
use spdnn_cuda::{
    CudaError, CudaFunction, DeviceBuffer, DriverResultExt, Gpu, LaunchConfig, PushKernelArg,
    Timeline,
};
use spdnn_formats::{Csr, SparseMatrix};

/// Shared memory a BF slab may use.
const SLAB_SHARED_BYTES: usize = 48 * 1024;

/// The pre-convergence layers as BF column slabs, resident.
pub struct BfPre {
    weights: DeviceSlabWeights,
    kernels: BfKernels,
    all_rows: CudaFunction,
    shape: SlabShape,
}

/// One batch's BF state: row-major activations in the original neuron order and the
/// list of non-empty rows, both on the device.
pub struct BfRun {
    y: PingPong<DeviceBuffer<f32>>,
    lists: PingPong<RowList>,
    alive: DeviceBuffer<u8>,
    rows: usize,
}

impl BfPre {
    /// Packs and uploads `layers`.
    pub fn new(
        gpu: &Gpu,
        layers: &[Csr],
        n: usize,
        bias: f32,
        upper: f32,
    ) -> Result<Self, CudaError> {
        let slab_width = slab_width_for(n, SLAB_SHARED_BYTES);
        let packed = pack_layers(layers, slab_width)?;
        Ok(Self {
            weights: DeviceSlabWeights::new(gpu, packed, Residency::Resident, 0)?,
            kernels: BfKernels::load(gpu)?,
            all_rows: gpu.function(&rows::ROWS, "spdnn_all_rows")?,
            shape: SlabShape {
                n,
                slab_width,
                slabs: n.div_ceil(slab_width),
                bias,
                upper,
            },
        })
    }

    /// Loads `input` (untimed): zeroed activations holding it, every row listed.
    pub fn start(&self, gpu: &Gpu, input: &Csr) -> Result<BfRun, CudaError> {
        let rows_count = input.nrows();
        let n = self.shape.n;
        let mut y_a = gpu.alloc_zeros::<f32>(rows_count * n)?;
        rows::scatter_rows(gpu, input, &mut y_a)?;
        let mut list = RowList::new(gpu, rows_count)?;
        let rows_u32 = rows_count as u32;
        let mut launch = gpu.stream().launch_builder(&self.all_rows);
        launch
            .arg(&mut *list.rows)
            .arg(&mut *list.count)
            .arg(&rows_u32);
        // Launch: grid ceil(rows / 256), block 256, no shared memory.
        let config = LaunchConfig {
            grid_dim: (grid_for(rows_count, 256), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { launch.launch(config) }.context("launching spdnn_all_rows")?;
        Ok(BfRun {
            y: PingPong::new(y_a, gpu.alloc_zeros(rows_count * n)?),
            lists: PingPong::new(list, RowList::new(gpu, rows_count)?),
            alive: gpu.alloc_zeros(rows_count)?,
            rows: rows_count,
        })
    }

    /// Enqueues every pre-convergence layer, marking `"layer"` after each.
    pub fn run(
        &mut self,
        gpu: &Gpu,
        run: &mut BfRun,
        mut timeline: Option<&mut Timeline>,
    ) -> Result<(), CudaError> {
        for layer in 0..self.weights.layers() {
            let (y_in, y_out) = run.y.split();
            let (list_in, list_out) = run.lists.split();
            spdnn_bf::enqueue_layer(
                gpu,
                &self.kernels,
                &mut self.weights,
                layer,
                LayerStep {
                    y_in,
                    y_out,
                    list_in: &list_in.rows,
                    count_in: &list_in.count,
                    list_out: &mut list_out.rows,
                    count_out: &mut list_out.count,
                    alive: &mut run.alive,
                    capacity: run.rows,
                    glare: None,
                },
                &self.shape,
            )?;
            run.y.swap();
            run.lists.swap();
            if let Some(t) = timeline.as_deref_mut() {
                t.mark(gpu.stream(), "layer")?;
            }
        }
        Ok(())
    }
}

impl BfRun {
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
