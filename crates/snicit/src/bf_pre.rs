//! BF-2019 as SNICIT's pre-convergence spMM.

use spdnn_bf::{BfBatch, BfKernels, SlabShape};
use spdnn_cuda::method::Probe;
use spdnn_cuda::slab_weights::{
    DEFAULT_SHARED_BYTES, DeviceSlabWeights, Residency, SlabLayout, pack_layers, slab_width_for,
};
use spdnn_cuda::{CudaError, DeviceBuffer, Gpu};
use spdnn_formats::{Csr, SparseMatrix};

/// The pre-convergence layers as BF column slabs, resident.
pub struct BfPre {
    weights: DeviceSlabWeights,
    kernels: BfKernels,
    shape: SlabShape,
    /// A bias per output neuron of every layer (original neuron order, as BF reads them),
    /// for a trained network.
    biases: Option<Vec<DeviceBuffer<f32>>>,
}

impl BfPre {
    /// Packs and uploads `layers`, which take rows of `n` values and may chain any widths
    /// (`N_{l-1} × N_l`); the slabs are those of the widest width. With `biases`
    /// (`biases[l][k]` for each of `layers`, ≤ 0) the layers run BF's per-neuron kernel
    /// and `bias` is unused.
    pub fn new(
        gpu: &Gpu,
        layers: &[Csr],
        n: usize,
        (bias, biases): (f32, Option<&[Vec<f32>]>),
        upper: f32,
    ) -> Result<Self, CudaError> {
        let mut widths = vec![n];
        widths.extend(layers.iter().map(SparseMatrix::ncols));
        if let Some((l, w)) = layers
            .iter()
            .enumerate()
            .find(|(l, w)| w.nrows() != widths[*l])
        {
            return Err(CudaError::InvalidArgument(format!(
                "BF stage: layer {} is {}x{}, the layer before gives {} values a row",
                l + 1,
                w.nrows(),
                w.ncols(),
                widths[l]
            )));
        }
        let biases = match biases {
            Some(all) => {
                if all.len() != layers.len() {
                    return Err(CudaError::InvalidArgument(format!(
                        "BF stage: {} bias vectors for {} layers",
                        all.len(),
                        layers.len()
                    )));
                }
                Some(
                    all.iter()
                        .map(|b| gpu.upload(b))
                        .collect::<Result<Vec<_>, _>>()?,
                )
            }
            None => None,
        };
        let widest = widths.iter().copied().max().unwrap_or(n);
        let slab_width = slab_width_for(widest, DEFAULT_SHARED_BYTES);
        let packed = pack_layers(layers, slab_width)?;
        Ok(Self {
            weights: DeviceSlabWeights::new(gpu, packed, Residency::Resident, 0)?,
            kernels: BfKernels::load(gpu)?,
            shape: SlabShape {
                layout: SlabLayout::new(widths, slab_width)?,
                bias,
                upper,
            },
            biases,
        })
    }

    /// Values per row after the last pre-convergence layer (the rows [`BfBatch::y`] holds
    /// after [`Self::run`]).
    pub fn output_width(&self) -> usize {
        self.shape.layout.output_width()
    }

    /// Loads `input` (untimed) into buffers of rows of `width` values (at least the widest
    /// pre-convergence width: SNICIT's later layers reuse them): zeroed activations holding
    /// it, every row listed. After [`Self::run`] the batch's activations hold rows of the
    /// last layer's width ([`BfBatch::width`]).
    pub fn start(&self, gpu: &Gpu, input: &Csr, width: usize) -> Result<BfBatch, CudaError> {
        let width = width.max(self.shape.layout.max_width());
        let mut run = BfBatch::new(gpu, input.nrows(), width)?;
        run.load(gpu, &self.kernels, input)?;
        Ok(run)
    }

    /// Enqueues every pre-convergence layer, marking each on `probe`.
    pub fn run(
        &mut self,
        gpu: &Gpu,
        run: &mut BfBatch,
        probe: &mut Probe,
    ) -> Result<(), CudaError> {
        for layer in 0..self.weights.layers() {
            run.layer_with_biases(
                gpu,
                &self.kernels,
                &mut self.weights,
                layer,
                &self.shape,
                None,
                self.biases.as_ref().map(|b| &b[layer]),
            )?;
            probe.layer("layers")?;
        }
        Ok(())
    }
}
