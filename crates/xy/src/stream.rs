//! XY layers streamed through two device slots from pinned host memory: for networks whose
//! layers do not fit beside the rows (T4-adaptive's streaming, seed 001 §III-A, with one
//! layer a copy). Layer `i` runs from slot `i mod 2`; when it is asked for, the copy of
//! layer `i + 1` into the other slot is issued on a second stream, so it runs while layer
//! `i` computes. Fences order each copy after the kernels that read the slot before, and
//! the kernels after their copy (`spdnn_cuda::order`).

use std::ops::Range;
use std::sync::Arc;

use spdnn_cuda::cudarc::driver::{CudaStream, DeviceRepr};
use spdnn_cuda::{CudaError, DeviceBuffer, DriverResultExt, Gpu, PinnedBuffer, SlotCopies};

use crate::format::stored_values;
use crate::format::{XyLayer, XyNetwork};
use crate::gpu::{DeviceXyLayer, LayerShape, layer_range, width_u32};

/// One layer's arrays in pinned host memory and its shape.
struct HostLayer {
    shape: LayerShape,
    offsets: PinnedBuffer<u32>,
    inputs: PinnedBuffer<u32>,
    values: PinnedBuffer<f32>,
    biases: Option<PinnedBuffer<f32>>,
}

impl HostLayer {
    fn new(
        gpu: &Gpu,
        layer: &XyLayer,
        inputs: usize,
        biases: Option<&[f32]>,
    ) -> Result<Self, CudaError> {
        let biases = match biases {
            None => None,
            Some(b) => {
                let ordered = layer.position_biases(b).ok_or_else(|| {
                    CudaError::InvalidArgument(format!(
                        "{} biases for an XY layer of {} neurons",
                        b.len(),
                        layer.width()
                    ))
                })?;
                Some(gpu.pin_write_combined(&ordered)?)
            }
        };
        let (values, value_step) = stored_values(&layer.values);
        Ok(Self {
            shape: LayerShape {
                group: layer.group,
                blocks: layer.blocks() as u32,
                in_width: width_u32(inputs)?,
                out_width: width_u32(layer.width())?,
                value_step,
            },
            offsets: gpu.pin_write_combined(&layer.block_offsets)?,
            inputs: gpu.pin_write_combined(&layer.inputs)?,
            values: gpu.pin_write_combined(values)?,
            biases,
        })
    }

    /// Elements of the offsets, inputs, values and biases (0 without) as pinned.
    fn lens(&self) -> [usize; 4] {
        [
            self.offsets.len(),
            self.inputs.len(),
            self.values.len(),
            self.biases.as_ref().map_or(0, |b| b.len()),
        ]
    }
}

/// What the streaming copied so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct XyStreamStats {
    /// Layer copies issued.
    pub copies: usize,
    /// Bytes copied.
    pub bytes: usize,
    /// Device bytes of the two slots.
    pub slot_bytes: usize,
}

/// XY layers held in pinned host memory and run from two device slots.
pub struct StreamedXyLayers {
    /// The copies into the slots (first: dropped first, it waits for them before the slots
    /// and the pinned layers are freed).
    copies: SlotCopies,
    host: Vec<HostLayer>,
    slots: [DeviceXyLayer; 2],
    /// The layer whose copy each slot last took.
    held: [Option<usize>; 2],
    stats: XyStreamStats,
}

/// The largest of every array over layers of `lens` (each layer's offsets, inputs, values
/// and biases, as [`HostLayer::lens`]): what each slot holds.
fn largest_arrays(lens: impl IntoIterator<Item = [usize; 4]>) -> [usize; 4] {
    lens.into_iter().fold([0usize; 4], |most, lens| {
        std::array::from_fn(|i| most[i].max(lens[i]))
    })
}

/// Device bytes of the two slots [`StreamedXyLayers::new`] allocates for layers of `lens`
/// (each layer's offsets, inputs, values and biases, as [`HostLayer::lens`]): each slot
/// holds the largest of every array.
pub fn slot_bytes(lens: impl IntoIterator<Item = [usize; 4]>) -> usize {
    2 * 4 * largest_arrays(lens).iter().sum::<usize>()
}

/// Copies `from` into the start of `to` on `stream`; the bytes copied.
fn copy_into<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    from: &PinnedBuffer<T>,
    to: &mut DeviceBuffer<T>,
) -> Result<usize, CudaError> {
    let mut target = to.slice_mut(0..from.len());
    stream
        .memcpy_htod(&**from, &mut target)
        .context("streaming an XY layer")?;
    Ok(from.len() * std::mem::size_of::<T>())
}

impl StreamedXyLayers {
    /// Pins the layers `range` of `network` on the host (with a bias per output neuron of
    /// every layer when `biases` is given, as [`crate::gpu::DeviceXyNetwork::upload_with_biases`])
    /// and allocates the two slots, each sized for the largest of every array.
    pub fn new(
        gpu: &Gpu,
        network: &XyNetwork,
        range: Range<usize>,
        biases: Option<&[Vec<f32>]>,
    ) -> Result<Self, CudaError> {
        let (chosen, _) = layer_range(network, &range, biases)?;
        let host = chosen
            .into_iter()
            .map(|(layer, inputs, own)| HostLayer::new(gpu, layer, inputs, own))
            .collect::<Result<Vec<_>, _>>()?;
        let most = largest_arrays(host.iter().map(HostLayer::lens));
        let slot =
            || DeviceXyLayer::slot(gpu, [most[0], most[1], most[2]], biases.map(|_| most[3]));
        let slots = [slot()?, slot()?];
        Ok(Self {
            copies: SlotCopies::new(gpu)?,
            host,
            slots,
            held: [None, None],
            stats: XyStreamStats {
                slot_bytes: 2 * 4 * most.iter().sum::<usize>(),
                ..XyStreamStats::default()
            },
        })
    }

    /// Number of layers.
    pub fn len(&self) -> usize {
        self.host.len()
    }

    /// Whether there are no layers.
    pub fn is_empty(&self) -> bool {
        self.host.is_empty()
    }

    /// What the streaming copied so far.
    pub fn stats(&self) -> XyStreamStats {
        self.stats
    }

    /// Layer `index` on the device, its copy issued now unless it was issued before; the
    /// copy of the next layer into the other slot is issued too.
    pub fn layer(&mut self, index: usize) -> Result<&DeviceXyLayer, CudaError> {
        if index >= self.host.len() {
            return Err(CudaError::InvalidArgument(format!(
                "no streamed XY layer {index} of {}",
                self.host.len()
            )));
        }
        let slot = index % 2;
        if self.held[slot] != Some(index) {
            self.issue(slot, index)?;
        }
        let next = index + 1;
        if next < self.host.len() && self.held[1 - slot] != Some(next) {
            self.issue(1 - slot, next)?;
        }
        self.copies.ready(slot)?;
        Ok(&self.slots[slot])
    }

    /// Copies layer `index` into `slot` on the copy stream.
    fn issue(&mut self, slot: usize, index: usize) -> Result<(), CudaError> {
        let host = &self.host[index];
        let target = &mut self.slots[slot];
        target.set_shape(host.shape);
        let (offsets, inputs, values, biases) = target.arrays_mut();
        let stream = self.copies.begin()?;
        let mut bytes = copy_into(stream, &host.offsets, offsets)?
            + copy_into(stream, &host.inputs, inputs)?
            + copy_into(stream, &host.values, values)?;
        match (biases, &host.biases) {
            (Some(device), Some(from)) => bytes += copy_into(stream, from, device)?,
            (None, None) => {}
            _ => {
                return Err(CudaError::InvalidArgument(
                    "a streamed XY layer's biases do not match its slot".into(),
                ));
            }
        }
        self.copies.end(slot)?;
        self.held[slot] = Some(index);
        self.stats.copies += 1;
        self.stats.bytes += bytes;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_hold_the_largest_of_every_array_twice() {
        assert_eq!(
            slot_bytes([[3, 10, 160, 0], [5, 4, 64, 0]]),
            2 * 4 * (5 + 10 + 160)
        );
        assert_eq!(
            slot_bytes([[2, 1, 16, 16], [9, 1, 1, 32]]),
            2 * 4 * (9 + 1 + 16 + 32)
        );
        assert_eq!(slot_bytes(std::iter::empty()), 0);
    }
}
