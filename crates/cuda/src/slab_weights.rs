//! Column-slab weights on the device (read by `kernels-cu/slabs.cuh`), resident or
//! streamed layer by layer through two device buffers from pinned host memory.

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaView};
use spdnn_formats::{ColumnSlabs, Csr, SparseMatrix};

use crate::{CudaError, DeviceBuffer, DriverResultExt, Gpu, PinnedBuffer};

/// Shared memory a kernel may take without opting in: 48 KiB.
pub const DEFAULT_SHARED_BYTES: usize = 48 * 1024;

/// One layer packed as `u32` words: slab offsets, then local columns, then value bits.
#[derive(Debug, Clone)]
pub struct PackedLayer {
    words: Vec<u32>,
    offsets_len: usize,
    nnz: usize,
}

impl PackedLayer {
    /// Packs the slabs of one layer.
    pub fn new(slabs: &ColumnSlabs) -> Self {
        let mut words = Vec::with_capacity(slabs.offsets().len() + 2 * slabs.values().len());
        words.extend_from_slice(slabs.offsets());
        words.extend_from_slice(slabs.local_cols());
        words.extend(slabs.values().iter().map(|v| v.to_bits()));
        Self {
            words,
            offsets_len: slabs.offsets().len(),
            nnz: slabs.values().len(),
        }
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.words.len() * 4
    }
}

/// Columns per slab: all N when a row of N floats fits in `shared_bytes`, else the
/// smallest multiple of 32 that splits N into equal-sized slabs that fit.
pub fn slab_width_for(n: usize, shared_bytes: usize) -> usize {
    let capacity = (shared_bytes / 4).max(32);
    if n <= capacity {
        return n;
    }
    let slabs = n.div_ceil(capacity);
    n.div_ceil(slabs).next_multiple_of(32).min(capacity)
}

/// A problem checked and its weights placed on the device in column slabs.
pub struct SlabProblem {
    /// N.
    pub neurons: usize,
    /// Input rows.
    pub rows: usize,
    /// Columns per slab.
    pub slab_width: usize,
    /// Number of slabs.
    pub slabs: usize,
    /// The weights on the device.
    pub weights: DeviceSlabWeights,
}

impl SlabProblem {
    /// Checks the problem, picks the slab width (`width`, or all N when it fits in 48 KiB
    /// of shared memory), packs the layers and places them with `residency`, keeping room
    /// for two activation buffers and a few bytes of flags per row.
    pub fn prepare(
        gpu: &Gpu,
        layers: &[Csr],
        input: &Csr,
        bias: f32,
        upper: f32,
        width: Option<usize>,
        residency: Residency,
    ) -> Result<Self, CudaError> {
        let neurons = crate::rows::check_problem(layers, input, bias, upper)?;
        let rows = input.nrows();
        let slab_width = width.unwrap_or_else(|| slab_width_for(neurons, DEFAULT_SHARED_BYTES));
        if slab_width == 0 || slab_width * 4 > DEFAULT_SHARED_BYTES {
            return Err(CudaError::InvalidArgument(format!(
                "a slab of {slab_width} columns does not fit in {DEFAULT_SHARED_BYTES} bytes of shared memory"
            )));
        }
        let slabs = neurons.div_ceil(slab_width);
        if slabs > 65535 {
            return Err(CudaError::InvalidArgument(format!(
                "{slabs} slabs exceed the grid's y limit"
            )));
        }
        let packed = pack_layers(layers, slab_width)?;
        let activation_bytes = 2 * rows * neurons * 4 + rows * (2 * slabs + 16);
        let weights = DeviceSlabWeights::new(gpu, packed, residency, activation_bytes)?;
        Ok(Self {
            neurons,
            rows,
            slab_width,
            slabs,
            weights,
        })
    }
}

/// Packs every layer into slabs of `slab_width` columns, on all host cores.
pub fn pack_layers(layers: &[Csr], slab_width: usize) -> Result<Vec<PackedLayer>, CudaError> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let chunk = layers.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = layers
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|w| ColumnSlabs::from_csr(w, slab_width).map(|s| PackedLayer::new(&s)))
                        .collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        let mut packed = Vec::with_capacity(layers.len());
        for handle in handles {
            let part = handle
                .join()
                .map_err(|_| CudaError::InvalidArgument("packing a layer panicked".into()))?;
            packed.extend(part.map_err(|e| CudaError::InvalidArgument(e.to_string()))?);
        }
        Ok(packed)
    })
}

/// Whether all layers live on the device or are streamed through two buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Residency {
    /// Resident when everything fits beside `reserve` bytes, otherwise streamed.
    #[default]
    Auto,
    /// Every layer on the device (an error when it does not fit).
    Resident,
    /// Two device buffers, the next layer copied on a second stream during the current one.
    Streamed,
}

enum Storage {
    Resident(Vec<DeviceBuffer<u32>>),
    Streamed {
        host: Vec<PinnedBuffer<u32>>,
        slots: [DeviceBuffer<u32>; 2],
        loaded: [Option<usize>; 2],
        copy_stream: Arc<CudaStream>,
    },
}

/// Device views of one layer's arrays (the values as `u32` bits; kernels read `float*`).
pub struct LayerViews<'a> {
    /// Slab offsets, `num_slabs · (N + 1)`.
    pub offsets: CudaView<'a, u32>,
    /// Local column of each entry.
    pub cols: CudaView<'a, u32>,
    /// Value bits of each entry.
    pub values: CudaView<'a, u32>,
}

/// The weights of a network on the device.
pub struct DeviceSlabWeights {
    shapes: Vec<(usize, usize)>,
    storage: Storage,
}

impl DeviceSlabWeights {
    /// Places `packed` on `gpu`; `reserve` bytes must stay free for activations.
    ///
    /// Streaming copies each layer on a second stream; cudarc's per-buffer event tracking
    /// orders a copy after the kernels that read the buffer before and the kernels after
    /// the copy.
    pub fn new(
        gpu: &Gpu,
        packed: Vec<PackedLayer>,
        residency: Residency,
        reserve: usize,
    ) -> Result<Self, CudaError> {
        let shapes = packed.iter().map(|p| (p.offsets_len, p.nnz)).collect();
        let total: usize = packed.iter().map(PackedLayer::bytes).sum();
        let free = gpu.memory()?.free;
        let fits = total.saturating_add(reserve).saturating_add(256 << 20) <= free;
        let resident = match residency {
            Residency::Resident => true,
            Residency::Streamed => false,
            Residency::Auto => fits,
        };
        let storage = if resident {
            let buffers = packed
                .iter()
                .map(|p| gpu.upload(&p.words))
                .collect::<Result<Vec<_>, _>>()?;
            Storage::Resident(buffers)
        } else {
            let largest = packed.iter().map(|p| p.words.len()).max().unwrap_or(1);
            let slots = [
                gpu.alloc_zeros::<u32>(largest)?,
                gpu.alloc_zeros::<u32>(largest)?,
            ];
            let mut host = Vec::with_capacity(packed.len());
            for layer in &packed {
                let mut pinned = gpu.alloc_pinned_write_combined::<u32>(layer.words.len())?;
                pinned.as_mut_slice()?.copy_from_slice(&layer.words);
                host.push(pinned);
            }
            Storage::Streamed {
                host,
                slots,
                loaded: [None, None],
                copy_stream: gpu.new_stream()?,
            }
        };
        Ok(Self { shapes, storage })
    }

    /// Whether every layer is on the device.
    pub fn is_resident(&self) -> bool {
        matches!(self.storage, Storage::Resident(_))
    }

    /// Number of layers.
    pub fn layers(&self) -> usize {
        self.shapes.len()
    }

    /// Layer `layer`'s arrays, copying it in (and starting the copy of the next layer)
    /// when streamed.
    pub fn layer(&mut self, layer: usize) -> Result<LayerViews<'_>, CudaError> {
        if layer >= self.shapes.len() {
            return Err(CudaError::InvalidArgument(format!("no layer {layer}")));
        }
        if let Storage::Streamed { .. } = self.storage {
            self.stream_in(layer)?;
            if layer + 1 < self.shapes.len() {
                self.stream_in(layer + 1)?;
            }
        }
        let (offsets_len, nnz) = self.shapes[layer];
        let buffer = match &self.storage {
            Storage::Resident(buffers) => &buffers[layer],
            Storage::Streamed { slots, .. } => &slots[layer % 2],
        };
        Ok(LayerViews {
            offsets: buffer.slice(0..offsets_len),
            cols: buffer.slice(offsets_len..offsets_len + nnz),
            values: buffer.slice(offsets_len + nnz..offsets_len + 2 * nnz),
        })
    }

    fn stream_in(&mut self, layer: usize) -> Result<(), CudaError> {
        let Storage::Streamed {
            host,
            slots,
            loaded,
            copy_stream,
        } = &mut self.storage
        else {
            return Ok(());
        };
        let slot = layer % 2;
        if loaded[slot] == Some(layer) {
            return Ok(());
        }
        let words = host[layer].len();
        let mut target = slots[slot].slice_mut(0..words);
        copy_stream
            .memcpy_htod(&*host[layer], &mut target)
            .context("streaming a weight layer")?;
        loaded[slot] = Some(layer);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slab_width_splits_evenly_within_shared_memory() {
        assert_eq!(slab_width_for(1024, DEFAULT_SHARED_BYTES), 1024);
        assert_eq!(slab_width_for(4096, DEFAULT_SHARED_BYTES), 4096);
        assert_eq!(slab_width_for(16384, DEFAULT_SHARED_BYTES), 8192);
        assert_eq!(slab_width_for(65536, DEFAULT_SHARED_BYTES), 10944);
        assert_eq!(slab_width_for(70, 64), 32);
        for n in [1usize, 33, 12289, 20000, 65536] {
            let w = slab_width_for(n, DEFAULT_SHARED_BYTES);
            assert!(
                w * 4 <= DEFAULT_SHARED_BYTES && w * n.div_ceil(w) >= n,
                "n = {n}, w = {w}"
            );
        }
    }

    #[test]
    fn packing_keeps_every_entry() {
        let w = Csr::from_triplets(4, 4, &[(0, 3, 1.5), (1, 0, 2.0), (3, 2, -1.0)]).unwrap();
        let packed = pack_layers(&[w.clone(), w], 2).unwrap();
        assert_eq!(packed.len(), 2);
        assert_eq!(packed[0].nnz, 3);
        assert_eq!(packed[0].offsets_len, 2 * 5);
        assert_eq!(packed[0].words.len(), 10 + 6);
        assert_eq!(f32::from_bits(packed[0].words[10 + 3]), 2.0);
    }
}
