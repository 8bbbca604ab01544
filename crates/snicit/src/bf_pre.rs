//! BF-2019 as SNICIT's pre-convergence spMM.

use spdnn_bf::{BfBatch, BfKernels, SlabShape};
use spdnn_cuda::slab_weights::{
    DEFAULT_SHARED_BYTES, DeviceSlabWeights, Residency, pack_layers, slab_width_for,
};
use spdnn_cuda::{CudaError, Gpu, Timeline};
use spdnn_formats::{Csr, SparseMatrix};

/// The pre-convergence layers as BF column slabs, resident.
pub struct BfPre {
    weights: DeviceSlabWeights,
    kernels: BfKernels,
    shape: SlabShape,
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
        let slab_width = slab_width_for(n, DEFAULT_SHARED_BYTES);
        let packed = pack_layers(layers, slab_width)?;
        Ok(Self {
            weights: DeviceSlabWeights::new(gpu, packed, Residency::Resident, 0)?,
            kernels: BfKernels::load(gpu)?,
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
    pub fn start(&self, gpu: &Gpu, input: &Csr) -> Result<BfBatch, CudaError> {
        let mut run = BfBatch::new(gpu, input.nrows(), self.shape.n)?;
        run.load(gpu, &self.kernels, input)?;
        Ok(run)
    }

    /// Enqueues every pre-convergence layer, marking `"layer"` after each.
    pub fn run(
        &mut self,
        gpu: &Gpu,
        run: &mut BfBatch,
        mut timeline: Option<&mut Timeline>,
    ) -> Result<(), CudaError> {
        for layer in 0..self.weights.layers() {
            run.layer(
                gpu,
                &self.kernels,
                &mut self.weights,
                layer,
                &self.shape,
                None,
            )?;
            if let Some(t) = timeline.as_deref_mut() {
                t.mark(gpu.stream(), "layer")?;
            }
        }
        Ok(())
    }
}
