//! Column-slab weights on the device (read by `kernels-cu/slabs.cuh`), resident or
//! streamed layer by layer through two device buffers from pinned host memory.

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaView};
use spdnn_formats::{ColumnSlabs, Csr, SparseMatrix};

use crate::memory::{Streaming, tuned_batch};
use crate::{CudaError, DeviceBuffer, DriverResultExt, Gpu, PinnedBuffer, SlotCopies};

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

/// The widths of a layer chain and the slabs (BF) or sections (SNIG) its activations are
/// cut into: every width `N_l` in `ceil(N_l / slab_width)` slabs of `slab_width` columns,
/// the last one narrower. Layer `l` (0-based) reads rows of `N_l` values and writes rows of
/// `N_{l+1}`; its weights are `N_l × N_{l+1}`, cut into the slabs of `N_{l+1}`. The
/// challenge's networks have every width `N`, so every layer has the same slabs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlabLayout {
    widths: Vec<usize>,
    slab_width: usize,
}

/// The shape of one layer of a [`SlabLayout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlabLayer {
    /// Values per input row (the weights' rows), `N_l`.
    pub n_in: usize,
    /// Values per output row (the weights' columns), `N_{l+1}`.
    pub n_out: usize,
    /// Slabs of the input row.
    pub slabs_in: usize,
    /// Slabs of the output row (of the weights).
    pub slabs_out: usize,
    /// Columns of the widest output slab, `min(slab_width, n_out)`: the floats of shared
    /// memory a block accumulating one slab needs.
    pub shared: usize,
}

impl SlabLayout {
    /// The layout of `widths` (`N_0, …, N_L`: the input, then each layer's output; at
    /// least two, each at least 1) in slabs of `slab_width` (at least 1) columns.
    pub fn new(widths: Vec<usize>, slab_width: usize) -> Result<Self, CudaError> {
        if slab_width == 0 {
            return Err(CudaError::InvalidArgument(
                "the slab width must be at least 1 column".into(),
            ));
        }
        if widths.len() < 2 || widths.contains(&0) {
            return Err(CudaError::InvalidArgument(format!(
                "a layer chain needs an input width and at least one layer, each of at least \
                 one value, not widths {widths:?}"
            )));
        }
        Ok(Self { widths, slab_width })
    }

    /// The layout of `layers` (checked with [`crate::rows::check_widths`]) in slabs of
    /// `slab_width` columns.
    pub fn of_layers(
        layers: &[Csr],
        bias: f32,
        upper: f32,
        slab_width: usize,
    ) -> Result<Self, CudaError> {
        Self::new(crate::rows::check_widths(layers, bias, upper)?, slab_width)
    }

    /// `N_0, …, N_L`.
    pub fn widths(&self) -> &[usize] {
        &self.widths
    }

    /// Columns per slab.
    pub fn slab_width(&self) -> usize {
        self.slab_width
    }

    /// Number of layers, `L`.
    pub fn layers(&self) -> usize {
        self.widths.len() - 1
    }

    /// The input width `N_0`.
    pub fn input_width(&self) -> usize {
        self.widths[0]
    }

    /// The last layer's output width `N_L`.
    pub fn output_width(&self) -> usize {
        self.widths[self.widths.len() - 1]
    }

    /// The widest of `N_0, …, N_L` (what an activation buffer holds per row).
    pub fn max_width(&self) -> usize {
        self.widths.iter().copied().max().unwrap_or(0)
    }

    /// Whether every width is the same (the challenge's `N × N` layers).
    pub fn is_square(&self) -> bool {
        self.widths.iter().all(|&w| w == self.widths[0])
    }

    /// Slabs of a row of `width` values, `ceil(width / slab_width)`.
    pub fn slabs_of(&self, width: usize) -> usize {
        width.div_ceil(self.slab_width)
    }

    /// The most slabs a row of any width of the chain has (what a buffer of per-slab flags
    /// holds per row).
    pub fn max_slabs(&self) -> usize {
        self.slabs_of(self.max_width())
    }

    /// Layer `layer`'s shape (0-based), `None` past the last layer.
    pub fn layer(&self, layer: usize) -> Option<SlabLayer> {
        let n_in = *self.widths.get(layer)?;
        let n_out = *self.widths.get(layer + 1)?;
        Some(SlabLayer {
            n_in,
            n_out,
            slabs_in: self.slabs_of(n_in),
            slabs_out: self.slabs_of(n_out),
            shared: self.slab_width.min(n_out),
        })
    }

    /// Layer `layer`'s shape, or an error naming it when the chain has no such layer.
    pub fn checked_layer(&self, layer: usize) -> Result<SlabLayer, CudaError> {
        self.layer(layer).ok_or_else(|| {
            CudaError::InvalidArgument(format!(
                "no layer {layer} in a chain of {} layers",
                self.layers()
            ))
        })
    }
}

/// A problem checked and its weights placed on the device in column slabs.
pub struct SlabProblem {
    /// The widths of the chain and their slabs.
    pub layout: SlabLayout,
    /// Rows per batch.
    pub rows: usize,
    /// The weights on the device.
    pub weights: DeviceSlabWeights,
}

impl SlabProblem {
    /// Checks the chain (any widths that chain, [`crate::rows::check_widths`]), picks the
    /// slab width (`width`, or all of the widest width when it fits in 48 KiB of shared
    /// memory, [`slab_width_for`]), packs the layers and places them with `residency`,
    /// keeping room for two activation buffers of the widest rows and a few bytes of flags
    /// per row of a batch of `rows`.
    pub fn prepare(
        gpu: &Gpu,
        chain: &crate::method::LayerChain<'_>,
        rows: usize,
        width: Option<usize>,
        residency: Residency,
    ) -> Result<Self, CudaError> {
        Self::prepare_streaming(gpu, chain, rows, width, residency, &Streaming::default())
    }

    /// [`Self::prepare`], streaming (when it does) as `streaming` says
    /// ([`DeviceSlabWeights::with_streaming`]).
    pub fn prepare_streaming(
        gpu: &Gpu,
        chain: &crate::method::LayerChain<'_>,
        rows: usize,
        width: Option<usize>,
        residency: Residency,
        streaming: &Streaming,
    ) -> Result<Self, CudaError> {
        let layers = chain.layers;
        let widths = crate::rows::check_widths(layers, chain.bias, chain.upper)?;
        let widest = widths.iter().copied().max().unwrap_or(0);
        let slab_width = width.unwrap_or_else(|| slab_width_for(widest, DEFAULT_SHARED_BYTES));
        if slab_width == 0 || slab_width * 4 > DEFAULT_SHARED_BYTES {
            return Err(CudaError::InvalidArgument(format!(
                "a slab of {slab_width} columns does not fit in {DEFAULT_SHARED_BYTES} bytes of shared memory"
            )));
        }
        let layout = SlabLayout::new(widths, slab_width)?;
        let slabs = layout.max_slabs();
        if slabs > 65535 {
            return Err(CudaError::InvalidArgument(format!(
                "{slabs} slabs exceed the grid's y limit"
            )));
        }
        let packed = pack_layers(layers, slab_width)?;
        let activation_bytes = 2 * rows * layout.max_width() * 4 + rows * (2 * slabs + 16);
        let weights =
            DeviceSlabWeights::with_streaming(gpu, packed, residency, activation_bytes, streaming)?;
        Ok(Self {
            layout,
            rows,
            weights,
        })
    }
}

/// The slab width [`SlabProblem::prepare`] picks for `layers` given `width`: `width`, or
/// all of the widest width when it fits in 48 KiB of shared memory ([`slab_width_for`]).
pub fn chosen_slab_width(layers: &[Csr], width: Option<usize>) -> usize {
    let widest = layers
        .iter()
        .map(|w| w.nrows().max(w.ncols()))
        .max()
        .unwrap_or(0);
    width.unwrap_or_else(|| slab_width_for(widest, DEFAULT_SHARED_BYTES))
}

/// Device bytes of each layer packed in slabs of `slab_width` columns ([`PackedLayer`]:
/// `slabs · (N_in + 1)` offsets, then columns and values, 32-bit each).
pub fn packed_layer_bytes(layers: &[Csr], slab_width: usize) -> Vec<usize> {
    layers
        .iter()
        .map(|w| 4 * (w.ncols().div_ceil(slab_width.max(1)) * (w.nrows() + 1) + 2 * w.nnz()))
        .collect()
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
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
    Streamed(Box<Stream>),
}

/// Layers `start..end` held by one streaming buffer, each at its word offset.
#[derive(Debug, Clone)]
struct Held {
    start: usize,
    offsets: Vec<usize>,
}

impl Held {
    fn end(&self) -> usize {
        self.start + self.offsets.len()
    }

    fn contains(&self, layer: usize) -> bool {
        (self.start..self.end()).contains(&layer)
    }
}

/// Two device buffers of batches of layers and the pinned host copies they are filled from.
struct Stream {
    /// The copies into the buffers, against the stream the layers run on (which the tuning
    /// events mark). First: dropped first, it waits for them before the buffers and the
    /// pinned layers are freed.
    copies: SlotCopies,
    host: Vec<PinnedBuffer<u32>>,
    slots: [DeviceBuffer<u32>; 2],
    held: [Option<Held>; 2],
    /// Words of each buffer.
    capacity: usize,
    /// Layers of the next batch when no tuning says otherwise, `N_L`.
    layers: usize,
    tuner: Option<Tuner>,
    stats: StreamStats,
}

/// The online tuning's clock: an event at the start of every layer's enqueue (so the
/// interval between two is the layer before), the last two kept.
struct Tuner {
    ms_per_mib: f64,
    events: [CudaEvent; 2],
    /// The layer whose start each event marks.
    marked: [Option<usize>; 2],
}

/// What the streaming did in the runs so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StreamStats {
    /// Batches of layers copied.
    pub batches: usize,
    /// Fewest and most layers in a batch.
    pub min_layers: usize,
    /// Most layers in a batch.
    pub max_layers: usize,
    /// Batches whose size the online tuning chose.
    pub tuned: usize,
    /// Bytes of each device buffer.
    pub buffer_bytes: usize,
}

/// Device views of one layer's arrays (the values as `u32` bits; kernels read `float*`).
pub struct LayerViews<'a> {
    /// Slab offsets, `slabs_out · (n_in + 1)` ([`SlabLayer`]).
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
    /// Places `packed` on `gpu`; `reserve` bytes must stay free for activations. Streamed
    /// weights go one layer a batch ([`Streaming::default`]).
    pub fn new(
        gpu: &Gpu,
        packed: Vec<PackedLayer>,
        residency: Residency,
        reserve: usize,
    ) -> Result<Self, CudaError> {
        Self::with_streaming(gpu, packed, residency, reserve, &Streaming::default())
    }

    /// Places `packed` on `gpu` as [`Self::new`], streaming (when it does) as `streaming`
    /// says: two buffers of `streaming.capacity` bytes (default: the largest `N_L`
    /// consecutive layers), batches of `N_L` layers, the copy of the next batch issued on
    /// a second stream when the last layer of the current one starts, and with a measured
    /// transfer rate, the next batch's size retuned then (the paper's online rule,
    /// [`crate::memory::tuned_batch`]).
    ///
    /// Fences order a copy after the kernels that read the buffer before and the kernels
    /// after the copy ([`crate::order`]).
    pub fn with_streaming(
        gpu: &Gpu,
        packed: Vec<PackedLayer>,
        residency: Residency,
        reserve: usize,
        streaming: &Streaming,
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
            Storage::Streamed(Box::new(Stream::new(gpu, &packed, streaming)?))
        };
        Ok(Self { shapes, storage })
    }

    /// Whether every layer is on the device.
    pub fn is_resident(&self) -> bool {
        matches!(self.storage, Storage::Resident(_))
    }

    /// What the streaming did so far (`None` when resident).
    pub fn stream_stats(&self) -> Option<StreamStats> {
        match &self.storage {
            Storage::Resident(_) => None,
            Storage::Streamed(s) => Some(s.stats),
        }
    }

    /// Number of layers.
    pub fn layers(&self) -> usize {
        self.shapes.len()
    }

    /// Whether the online tuning reads the ratio of live rows when `layer` starts (it is
    /// the last layer of a streamed batch, with one before it measured): the caller then
    /// passes it to [`Self::layer_tuned`].
    pub fn tunes_at(&self, layer: usize) -> bool {
        match &self.storage {
            Storage::Streamed(s) => s.tunes_at(layer, self.shapes.len()),
            Storage::Resident(_) => false,
        }
    }

    /// Layer `layer`'s arrays, copying in its batch when streamed (and starting the copy
    /// of the next batch at the last layer of one).
    pub fn layer(&mut self, layer: usize) -> Result<LayerViews<'_>, CudaError> {
        self.layer_tuned(layer, None)
    }

    /// [`Self::layer`], with the ratio of the rows `layer` reads to the rows the layer
    /// before read (for the online tuning; `None`: 1).
    pub fn layer_tuned(
        &mut self,
        layer: usize,
        live_ratio: Option<f64>,
    ) -> Result<LayerViews<'_>, CudaError> {
        if layer >= self.shapes.len() {
            return Err(CudaError::InvalidArgument(format!("no layer {layer}")));
        }
        let (offsets_len, nnz) = self.shapes[layer];
        let (buffer, base) = match &mut self.storage {
            Storage::Resident(buffers) => (&buffers[layer], 0),
            Storage::Streamed(stream) => stream.layer(layer, live_ratio)?,
        };
        Ok(LayerViews {
            offsets: buffer.slice(base..base + offsets_len),
            cols: buffer.slice(base + offsets_len..base + offsets_len + nnz),
            values: buffer.slice(base + offsets_len + nnz..base + offsets_len + 2 * nnz),
        })
    }
}

impl Stream {
    fn new(gpu: &Gpu, packed: &[PackedLayer], streaming: &Streaming) -> Result<Self, CudaError> {
        let words: Vec<usize> = packed.iter().map(|p| p.words.len()).collect();
        let largest = words.iter().copied().max().unwrap_or(1).max(1);
        let layers = streaming.layers.clamp(1, packed.len().max(1));
        let window = words
            .windows(layers)
            .map(|w| w.iter().sum::<usize>())
            .max()
            .unwrap_or_else(|| words.iter().sum());
        let capacity = match streaming.capacity {
            Some(bytes) => (bytes / 4).max(largest),
            None => window.max(largest),
        };
        let slots = [
            gpu.alloc_zeros::<u32>(capacity)?,
            gpu.alloc_zeros::<u32>(capacity)?,
        ];
        let host = packed
            .iter()
            .map(|layer| gpu.pin_write_combined(&layer.words))
            .collect::<Result<Vec<_>, _>>()?;
        let tuner = match streaming.transfer_ms_per_mib {
            Some(ms) if ms.is_finite() && ms > 0.0 => {
                let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
                let event = || {
                    gpu.context()
                        .new_event(flags)
                        .context("creating a tuning event")
                };
                Some(Tuner {
                    ms_per_mib: ms,
                    events: [event()?, event()?],
                    marked: [None, None],
                })
            }
            _ => None,
        };
        Ok(Self {
            copies: SlotCopies::new(gpu)?,
            host,
            slots,
            held: [None, None],
            capacity,
            layers,
            tuner,
            stats: StreamStats {
                buffer_bytes: capacity * 4,
                ..StreamStats::default()
            },
        })
    }

    fn slot_of(&self, layer: usize) -> Option<usize> {
        self.held
            .iter()
            .position(|h| h.as_ref().is_some_and(|h| h.contains(layer)))
    }

    /// Whether `layer` ends its batch, a batch follows, and the layer before was timed.
    fn tunes_at(&self, layer: usize, layers: usize) -> bool {
        let Some(tuner) = &self.tuner else {
            return false;
        };
        let last_of_batch = self
            .slot_of(layer)
            .and_then(|s| self.held[s].as_ref())
            .map_or(self.layers == 1, |h| h.end() == layer + 1);
        last_of_batch && layer + 1 < layers && layer > 0 && tuner.marked.contains(&Some(layer - 1))
    }

    /// The buffer holding `layer` and its word offset there.
    fn layer(
        &mut self,
        layer: usize,
        live_ratio: Option<f64>,
    ) -> Result<(&DeviceBuffer<u32>, usize), CudaError> {
        let total = self.host.len();
        if let Some(tuner) = self.tuner.as_mut() {
            // Marks the start of this layer's enqueue: the end of the layer before.
            let slot = layer % 2;
            tuner.events[slot]
                .record(self.copies.main())
                .context("recording a tuning event")?;
            tuner.marked[slot] = Some(layer);
        }
        let slot = match self.slot_of(layer) {
            Some(slot) => slot,
            None => {
                // A batch starts here (the first layer of a pass, or a copy not issued).
                let slot = match layer.checked_sub(1).and_then(|l| self.slot_of(l)) {
                    Some(previous) => 1 - previous,
                    None => 0,
                };
                let count = self.layers;
                self.issue(slot, layer, count, false)?;
                slot
            }
        };
        let end = self.held[slot].as_ref().map(Held::end);
        if let Some(end) = end
            && end == layer + 1
            && end < total
            && self.slot_of(end).is_none()
        {
            // The last layer of this buffer starts: issue the next batch now.
            let (count, tuned) = match self.estimate(layer, live_ratio)? {
                Some(ms) => {
                    let next: Vec<usize> = self.host[end..].iter().map(|h| 4 * h.len()).collect();
                    let tuner = self.tuner.as_ref().map_or(1.0, |t| t.ms_per_mib);
                    (tuned_batch(&next, ms, tuner, 4 * self.capacity), true)
                }
                None => (self.layers, false),
            };
            self.issue(1 - slot, end, count, tuned)?;
        }
        let held = self.held[slot].as_ref().ok_or_else(|| {
            CudaError::InvalidArgument(format!("layer {layer} was not streamed in"))
        })?;
        let offset = held.offsets[layer - held.start];
        self.copies.ready(slot)?;
        Ok((&self.slots[slot], offset))
    }

    /// The estimated time of `layer`, ms: the layer before it as measured (waiting for it),
    /// times the ratio of live rows. `None` without tuning or a measurement.
    fn estimate(
        &mut self,
        layer: usize,
        live_ratio: Option<f64>,
    ) -> Result<Option<f64>, CudaError> {
        let Some(tuner) = &self.tuner else {
            return Ok(None);
        };
        let Some(previous) = layer.checked_sub(1) else {
            return Ok(None);
        };
        let (before, now) = (previous % 2, layer % 2);
        if tuner.marked[before] != Some(previous) || tuner.marked[now] != Some(layer) {
            return Ok(None);
        }
        tuner.events[now]
            .synchronize()
            .context("waiting for the tuning event")?;
        let ms = tuner.events[before]
            .elapsed_ms(&tuner.events[now])
            .context("reading a layer's time")?;
        let ratio = live_ratio
            .filter(|r| r.is_finite() && *r >= 0.0)
            .unwrap_or(1.0);
        Ok(Some(f64::from(ms) * ratio))
    }

    /// Copies layers `start..start + count` (as many as fit the buffer, at least one) into
    /// buffer `slot` on the copy stream.
    fn issue(
        &mut self,
        slot: usize,
        start: usize,
        count: usize,
        tuned: bool,
    ) -> Result<(), CudaError> {
        let total = self.host.len();
        let copy_stream = self.copies.begin()?;
        let mut offsets = Vec::new();
        let mut used = 0usize;
        for layer in start..(start + count.max(1)).min(total) {
            let words = self.host[layer].len();
            if !offsets.is_empty() && used + words > self.capacity {
                break;
            }
            if words > self.capacity {
                return Err(CudaError::InvalidArgument(format!(
                    "layer {} ({} bytes) does not fit a streaming buffer of {} bytes",
                    layer + 1,
                    4 * words,
                    4 * self.capacity
                )));
            }
            let mut target = self.slots[slot].slice_mut(used..used + words);
            copy_stream
                .memcpy_htod(&*self.host[layer], &mut target)
                .context("streaming a batch of weight layers")?;
            offsets.push(used);
            used += words;
        }
        self.copies.end(slot)?;
        let n = offsets.len();
        self.held[slot] = Some(Held { start, offsets });
        let stats = &mut self.stats;
        stats.min_layers = if stats.batches == 0 {
            n
        } else {
            stats.min_layers.min(n)
        };
        stats.max_layers = stats.max_layers.max(n);
        stats.batches += 1;
        stats.tuned += usize::from(tuned);
        if tuned {
            self.layers = n;
        }
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

    /// Layer words as the kernels read them (`kernels-cu/slabs.cuh`): slab `s`'s entries
    /// of input `j` at `offsets[s·(n_in + 1) + j ..= + 1]`, columns local to the slab.
    fn unpack(packed: &PackedLayer, layer: &SlabLayer, slab_width: usize) -> Vec<(u32, u32, f32)> {
        let offsets = &packed.words[..packed.offsets_len];
        let cols = &packed.words[packed.offsets_len..packed.offsets_len + packed.nnz];
        let vals = &packed.words[packed.offsets_len + packed.nnz..];
        let mut triplets = Vec::new();
        for slab in 0..layer.slabs_out {
            let base = slab * (layer.n_in + 1);
            for j in 0..layer.n_in {
                for k in offsets[base + j] as usize..offsets[base + j + 1] as usize {
                    let col = slab * slab_width + cols[k] as usize;
                    assert!(col < layer.n_out, "column {col} past {}", layer.n_out);
                    assert!(
                        (cols[k] as usize) < layer.shared,
                        "local column past the slab"
                    );
                    triplets.push((j as u32, col as u32, f32::from_bits(vals[k])));
                }
            }
        }
        triplets
    }

    /// One layer as `bf_layer` computes it for one row (slab by slab into a shared
    /// accumulator of `layer.shared` floats), reading `y_in[row · n_in ..]` and writing
    /// `y_out[row · n_out ..]` of buffers sized for the widest rows.
    fn emulate_row(
        packed: &PackedLayer,
        layer: &SlabLayer,
        slab_width: usize,
        (y_in, y_out): (&[f32], &mut [f32]),
        row: usize,
        (bias, upper): (f32, f32),
    ) {
        let offsets = &packed.words[..packed.offsets_len];
        let cols = &packed.words[packed.offsets_len..packed.offsets_len + packed.nnz];
        let vals = &packed.words[packed.offsets_len + packed.nnz..];
        let y = &y_in[row * layer.n_in..(row + 1) * layer.n_in];
        let out = &mut y_out[row * layer.n_out..(row + 1) * layer.n_out];
        let mut acc = vec![0.0f32; layer.shared];
        for slab in 0..layer.slabs_out {
            let first_col = slab * slab_width;
            let width = slab_width.min(layer.n_out - first_col);
            acc[..width].fill(0.0);
            let slab_offsets = &offsets[slab * (layer.n_in + 1)..];
            for (j, &yj) in y.iter().enumerate() {
                if yj != 0.0 {
                    for k in slab_offsets[j] as usize..slab_offsets[j + 1] as usize {
                        acc[cols[k] as usize] += yj * f32::from_bits(vals[k]);
                    }
                }
            }
            for c in 0..width {
                out[first_col + c] = (acc[c] + bias).clamp(0.0, upper);
            }
        }
    }

    fn rectangular_chain() -> Vec<Csr> {
        // Widths 7 → 3 → 10 → 10 → 1: narrowing, widening, square, one column.
        let layer = |rows: usize, cols: usize, seed: usize| {
            let triplets: Vec<(u32, u32, f32)> = (0..rows)
                .flat_map(|r| (0..cols).map(move |c| (r, c)))
                .filter(|(r, c)| !(r * 7 + c * 3 + seed).is_multiple_of(4))
                .map(|(r, c)| {
                    let k = ((r * 5 + c * 11 + seed) % 9) as f32 - 3.0;
                    (r as u32, c as u32, k / 4.0)
                })
                .collect();
            Csr::from_triplets(rows, cols, &triplets).unwrap()
        };
        vec![
            layer(7, 3, 1),
            layer(3, 10, 2),
            layer(10, 10, 3),
            layer(10, 1, 4),
        ]
    }

    #[test]
    fn layouts_give_each_layer_its_widths_and_slabs() {
        let layout = SlabLayout::of_layers(&rectangular_chain(), -0.25, 4.0, 4).unwrap();
        assert_eq!(layout.widths(), &[7, 3, 10, 10, 1]);
        assert_eq!(
            (layout.layers(), layout.input_width(), layout.output_width()),
            (4, 7, 1)
        );
        assert_eq!((layout.max_width(), layout.max_slabs()), (10, 3));
        assert!(!layout.is_square());
        let shapes: Vec<_> = (0..4)
            .map(|l| {
                let s = layout.layer(l).unwrap();
                (s.n_in, s.n_out, s.slabs_in, s.slabs_out, s.shared)
            })
            .collect();
        assert_eq!(
            shapes,
            vec![
                (7, 3, 2, 1, 3),
                (3, 10, 1, 3, 4),
                (10, 10, 3, 3, 4),
                (10, 1, 3, 1, 1)
            ]
        );
        assert!(layout.layer(4).is_none());
        assert!(layout.checked_layer(4).is_err());
        // A square chain: every layer alike, the slab width as shared length.
        let w = Csr::from_triplets(64, 64, &[(0, 1, 1.0)]).unwrap();
        let square = SlabLayout::of_layers(&[w.clone(), w], -0.3, 32.0, 32).unwrap();
        assert!(square.is_square());
        assert_eq!(square.layer(0), square.layer(1));
        assert_eq!(square.layer(1).unwrap().shared, 32);
        assert_eq!(square.max_slabs(), 2);
        // Bad layouts are errors, not panics.
        assert!(SlabLayout::new(vec![4, 4], 0).is_err());
        assert!(SlabLayout::new(vec![4], 2).is_err());
        assert!(SlabLayout::new(vec![4, 0, 4], 2).is_err());
        let unchained = [
            Csr::from_triplets(4, 3, &[]).unwrap(),
            Csr::from_triplets(4, 4, &[]).unwrap(),
        ];
        assert!(SlabLayout::of_layers(&unchained, -0.3, 32.0, 2).is_err());
    }

    #[test]
    fn rectangular_layers_pack_and_unpack_with_the_kernels_indexing() {
        let layers = rectangular_chain();
        for slab_width in [1, 2, 3, 4, 7, 10, 64] {
            let layout = SlabLayout::of_layers(&layers, -0.25, 4.0, slab_width).unwrap();
            let packed = pack_layers(&layers, slab_width).unwrap();
            for (l, (w, p)) in layers.iter().zip(&packed).enumerate() {
                let shape = layout.layer(l).unwrap();
                assert_eq!(p.offsets_len, shape.slabs_out * (shape.n_in + 1));
                assert_eq!(p.nnz, w.nnz());
                assert_eq!(p.bytes(), 4 * (p.offsets_len + 2 * p.nnz));
                assert_eq!(packed_layer_bytes(&layers, slab_width)[l], p.bytes());
                let unpacked = unpack(p, &shape, slab_width);
                let back = Csr::from_triplets(shape.n_in, shape.n_out, &unpacked).unwrap();
                assert_eq!(&back, w, "layer {l}, slabs of {slab_width}");
            }
        }
    }

    #[test]
    fn the_slab_loop_computes_rectangular_chains() {
        let layers = rectangular_chain();
        let (bias, upper) = (-0.25f32, 4.0f32);
        let rows = 5;
        let input: Vec<(u32, u32, f32)> = (0..rows as u32)
            .flat_map(|r| (0..7u32).map(move |c| (r, c)))
            .filter(|(r, c)| (r + 2 * c) % 3 != 0)
            .map(|(r, c)| (r, c, ((r + c) % 4 + 1) as f32 / 2.0))
            .collect();
        let x = Csr::from_triplets(rows, 7, &input).unwrap();
        // The reference: dense products, each layer clipped.
        let mut expected = x.to_dense();
        for w in &layers {
            expected = w
                .left_multiply(expected.view())
                .unwrap()
                .mapv(|z| (z + bias).clamp(0.0, upper));
        }
        for slab_width in [1, 2, 3, 4, 7, 10] {
            let layout = SlabLayout::of_layers(&layers, bias, upper, slab_width).unwrap();
            let packed = pack_layers(&layers, slab_width).unwrap();
            // Two buffers of the widest rows, stale values past each layer's rows.
            let size = rows * layout.max_width();
            let mut current = vec![f32::NAN; size];
            let mut next = vec![f32::NAN; size];
            current[..rows * 7].copy_from_slice(x.to_dense().as_slice().unwrap());
            for (l, p) in packed.iter().enumerate() {
                let shape = layout.layer(l).unwrap();
                for row in 0..rows {
                    emulate_row(
                        p,
                        &shape,
                        slab_width,
                        (&current, &mut next),
                        row,
                        (bias, upper),
                    );
                }
                std::mem::swap(&mut current, &mut next);
            }
            let n = layout.output_width();
            assert_eq!(
                &current[..rows * n],
                expected.as_slice().unwrap(),
                "slabs of {slab_width}"
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
