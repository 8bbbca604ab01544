//! The layer layout of H&P-2020: outputs in blocks of [`BLOCK`], each block's input
//! footprint cut into shared-memory buffers, and per (buffer, warp) a sliced-ELL slice as
//! wide as the warp's longest row, with 16-bit offsets into the buffer.
//!
//! # Widths
//!
//! Layer `l` is `N_{l-1} × N_l` (row = input neuron): the challenge's layers are all
//! `N × N`, a compressed network's are rectangular. Its outputs are `N_l` positions in
//! `ceil(N_l / BLOCK)` blocks, its footprints are positions among the `N_{l-1}` inputs,
//! and the activations it writes are rows × `N_l`. Consecutive layers must chain
//! ([`check_layers`]).
//!
//! # Positions
//!
//! Activations live on the device in *position* order: position `p` of layer `l`'s output
//! holds neuron `outputs[p]` of that layer ([`HpLayer::outputs`]), and layer `l + 1` reads
//! its inputs at those positions. The input of the first layer is in neuron order. With
//! [`Layout::Paper`] every order is the identity (the published design); with
//! [`Layout::Grouped`] the outputs of a layer that read the same input set sit next to
//! each other, so a block's footprint is small (see [`grouped_order`]).
//!
//! # Arrays of one layer
//!
//! - `block_buffers` (`blocks + 1`): the buffers of output block `b` are
//!   `block_buffers[b] .. block_buffers[b + 1]`.
//! - `buffer_starts` (`buffers + 1`) and `map`: buffer `k` holds the input positions
//!   `map[buffer_starts[k] .. buffer_starts[k + 1]]` (ascending, at most the buffer size).
//! - `slice_starts` (`buffers · WARPS + 1`): the slice of buffer `k` and warp `w` is the
//!   slot rows `slice_starts[k·WARPS + w] .. slice_starts[k·WARPS + w + 1]`; slot row `s`
//!   holds one entry per lane, `index[s·WARP + lane]` (the offset into the buffer) and
//!   `value[s·WARP + lane]`. Lane `i` of warp `w` in block `b` computes position
//!   `b·BLOCK + w·WARP + i`. A lane's entries come first in its column, in increasing
//!   input neuron order; the rest are padding (offset 0, value 0.0: adding `y·0` changes
//!   no sum, since every activation is finite).
//!
//! Stored zero weights are dropped: with a negative bias, `clip(Z + b)` does not depend on
//! whether an output with `Z = 0` is structurally nonzero (nor with a bias per neuron, all
//! ≤ 0, as trained networks have: those are put into position order by
//! [`HpLayer::position_biases`]).

use std::collections::HashMap;

use rayon::prelude::*;
use spdnn_formats::{Csr, FormatError, PADDING_COLUMN, SlicedEll, SparseMatrix};

/// Output positions per block, one thread each (`HP_BLOCK` in `kernels-cu/hp.cu`).
pub const BLOCK: usize = 256;
/// Lanes per warp: rows per slice.
pub const WARP: usize = 32;
/// Warps per block (`HP_WARPS` in `kernels-cu/hp.cu`).
pub const WARPS: usize = BLOCK / WARP;
/// Most entries a buffer may hold: every offset into a buffer fits 16 bits.
pub const MAX_BUFFER: usize = 1 << 16;

/// How outputs are ordered and footprints cut into buffers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Ours: outputs that read the same input set are neighbours (so a block's footprint
    /// is small), and a footprint larger than one buffer is cut so that every lane's
    /// entries spread evenly over the buffers (less padding).
    #[default]
    Grouped,
    /// The published design: outputs in neuron order, the sorted footprint cut into
    /// consecutive buffers.
    Paper,
}

impl Layout {
    /// The name used in options and reports (`grouped`, `paper`).
    pub fn name(self) -> &'static str {
        match self {
            Layout::Grouped => "grouped",
            Layout::Paper => "paper",
        }
    }

    /// The layout named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "grouped" => Some(Layout::Grouped),
            "paper" => Some(Layout::Paper),
            _ => None,
        }
    }
}

/// Why a network could not be put into the H&P layout.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HpError {
    /// There is no layer.
    #[error("the network has no layers")]
    NoLayers,
    /// A layer does not take the values the layer before gives (layers numbered from 1):
    /// its rows differ from the previous layer's columns.
    #[error("layer {layer} is {rows} × {cols}, but the layer before gives {inputs} values a row")]
    LayerShape {
        /// The layer, 1-based.
        layer: usize,
        /// Its rows.
        rows: usize,
        /// Its columns.
        cols: usize,
        /// The previous layer's columns (the first layer's rows for layer 1).
        inputs: usize,
    },
    /// The buffer size is outside `1..=MAX_BUFFER`.
    #[error("an hp buffer holds 1 to {MAX_BUFFER} inputs (16-bit offsets), got {0}")]
    Buffer(usize),
    /// A layer's width does not fit the layout's 32-bit positions.
    #[error("hp needs layers 1 to 2^31 - 1 neurons wide, got {0}")]
    Neurons(usize),
    /// A layer's arrays would not fit 32-bit indices.
    #[error("layer {layer}: the {what} of the hp layout do not fit 32-bit indices")]
    TooLarge {
        /// The layer, 1-based.
        layer: usize,
        /// Which arrays.
        what: &'static str,
    },
    /// A layout array breaks an invariant (a bug, reported instead of a panic).
    #[error("invalid hp layout: {0}")]
    Invalid(String),
}

/// What the layout is built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Most inputs per buffer (`1..=MAX_BUFFER`).
    pub buffer: usize,
    /// Output order and buffer cuts.
    pub layout: Layout,
}

/// One layer in the H&P layout (see the module documentation for the arrays).
#[derive(Debug, Clone, PartialEq)]
pub struct HpLayer {
    inputs: usize,
    neurons: usize,
    outputs: Vec<u32>,
    block_buffers: Vec<u32>,
    buffer_starts: Vec<u32>,
    map: Vec<u32>,
    slice_starts: Vec<u32>,
    index: Vec<u16>,
    value: Vec<f32>,
    max_buffer: usize,
    nnz: usize,
}

/// The buffers of one block while it is built.
struct BlockParts {
    /// Per buffer: its input positions (ascending).
    maps: Vec<Vec<u32>>,
    /// Per buffer, per warp: the slot rows (offset, value), `WARP` entries each.
    slices: Vec<[Vec<(u16, f32)>; WARPS]>,
}

impl HpLayer {
    /// `N_l`: the outputs of this layer (the columns of its weights).
    pub fn neurons(&self) -> usize {
        self.neurons
    }

    /// `N_{l-1}`: the inputs of this layer (the rows of its weights), the width of the
    /// activations it reads.
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// Output blocks, `ceil(N_l / BLOCK)`.
    pub fn blocks(&self) -> usize {
        self.block_buffers.len() - 1
    }

    /// Buffers over all blocks.
    pub fn buffers(&self) -> usize {
        self.buffer_starts.len() - 1
    }

    /// Slot rows over all slices (each `WARP` entries).
    pub fn slot_rows(&self) -> usize {
        self.index.len() / WARP
    }

    /// The longest buffer, in inputs (sizes the kernel's shared memory).
    pub fn max_buffer(&self) -> usize {
        self.max_buffer
    }

    /// Stored nonzero weights.
    pub fn nnz(&self) -> usize {
        self.nnz
    }

    /// Position → neuron of this layer's outputs.
    pub fn outputs(&self) -> &[u32] {
        &self.outputs
    }

    /// Sum of the footprints of all blocks (entries of `map`).
    pub fn footprint(&self) -> usize {
        self.map.len()
    }

    /// Device bytes of the layer's arrays as the run uploads them (one element for an
    /// empty array; its per-neuron biases apart).
    pub fn device_bytes(&self) -> usize {
        use spdnn_cuda::memory::nonempty_bytes;
        nonempty_bytes::<u32>(self.block_buffers.len())
            + nonempty_bytes::<u32>(self.buffer_starts.len())
            + nonempty_bytes::<u32>(self.map.len())
            + nonempty_bytes::<u32>(self.slice_starts.len())
            + nonempty_bytes::<u16>(self.index.len())
            + nonempty_bytes::<f32>(self.value.len())
    }

    /// `block_buffers` (see the module documentation).
    pub fn block_buffers(&self) -> &[u32] {
        &self.block_buffers
    }

    /// `buffer_starts`.
    pub fn buffer_starts(&self) -> &[u32] {
        &self.buffer_starts
    }

    /// `map`: input positions of every buffer.
    pub fn map(&self) -> &[u32] {
        &self.map
    }

    /// `slice_starts`, in slot rows.
    pub fn slice_starts(&self) -> &[u32] {
        &self.slice_starts
    }

    /// Offsets into the buffer, `WARP` per slot row.
    pub fn index(&self) -> &[u16] {
        &self.index
    }

    /// Weights, `WARP` per slot row (0.0 in padding).
    pub fn value(&self) -> &[f32] {
        &self.value
    }

    /// Builds the layout of `w` (`N_{l-1} × N_l`, row = input neuron). `input_positions[r]`
    /// is the position of input neuron `r` (`N_{l-1}` of them; `None`: the identity);
    /// `outputs` is this layer's order, position → neuron (a permutation of `0..N_l`).
    /// `layer` (1-based) names the layer in errors.
    pub fn build(
        w: &Csr,
        input_positions: Option<&[u32]>,
        outputs: Vec<u32>,
        params: &Params,
        layer: usize,
    ) -> Result<Self, HpError> {
        Self::from_transposed(&w.transpose(), input_positions, outputs, params, layer)
    }

    /// [`Self::build`] from the transpose of the layer (`N_l × N_{l-1}`, row = output
    /// neuron).
    pub fn from_transposed(
        wt: &Csr,
        input_positions: Option<&[u32]>,
        outputs: Vec<u32>,
        params: &Params,
        layer: usize,
    ) -> Result<Self, HpError> {
        let (n, inputs) = (wt.nrows(), wt.ncols());
        check_params(n, params)?;
        check_width(inputs)?;
        if outputs.len() != n {
            return Err(HpError::Invalid(format!(
                "layer {layer}: {inputs}×{n} weights with {} output positions",
                outputs.len()
            )));
        }
        if let Some(positions) = input_positions
            && positions.len() != inputs
        {
            return Err(HpError::Invalid(format!(
                "layer {layer}: {} input positions for {inputs} inputs",
                positions.len()
            )));
        }
        let blocks = n.div_ceil(BLOCK);
        let parts: Vec<Result<BlockParts, HpError>> = (0..blocks)
            .into_par_iter()
            .map(|b| {
                let outs = &outputs[b * BLOCK..((b + 1) * BLOCK).min(n)];
                build_block(wt, input_positions, outs, params)
            })
            .collect();
        let too_large = |what| HpError::TooLarge { layer, what };
        let mut block_buffers = Vec::with_capacity(blocks + 1);
        let mut buffer_starts = vec![0u32];
        let mut map = Vec::new();
        let mut slice_starts = vec![0u32];
        let mut index = Vec::new();
        let mut value = Vec::new();
        let mut max_buffer = 0;
        let mut nnz = 0;
        block_buffers.push(0u32);
        for part in parts {
            let part = part?;
            for (buffer_map, slices) in part.maps.iter().zip(&part.slices) {
                max_buffer = max_buffer.max(buffer_map.len());
                map.extend_from_slice(buffer_map);
                buffer_starts.push(u32::try_from(map.len()).map_err(|_| too_large("maps"))?);
                for slice in slices {
                    for &(offset, weight) in slice {
                        index.push(offset);
                        value.push(weight);
                        nnz += usize::from(weight != 0.0);
                    }
                    slice_starts
                        .push(u32::try_from(index.len() / WARP).map_err(|_| too_large("slices"))?);
                }
            }
            block_buffers
                .push(u32::try_from(buffer_starts.len() - 1).map_err(|_| too_large("buffers"))?);
        }
        if u32::try_from(index.len()).is_err() {
            return Err(too_large("slices"));
        }
        Ok(Self {
            inputs,
            neurons: n,
            outputs,
            block_buffers,
            buffer_starts,
            map,
            slice_starts,
            index,
            value,
            max_buffer,
            nnz,
        })
    }

    /// Checks every invariant the kernel relies on: array lengths, monotone starts, input
    /// positions below `N_{l-1}`, offsets inside their buffer, buffers no larger than
    /// `buffer`, `outputs` a permutation of `0..N_l`. `Err` names the first violation.
    pub fn validate(&self, buffer: usize) -> Result<(), HpError> {
        let n = self.neurons;
        let bad = |what: String| Err(HpError::Invalid(what));
        let mut seen = vec![false; n];
        if self.outputs.len() != n {
            return bad(format!("{} outputs for N = {n}", self.outputs.len()));
        }
        for &o in &self.outputs {
            match seen.get_mut(o as usize) {
                Some(s) if !*s => *s = true,
                _ => return bad(format!("output order is not a permutation (neuron {o})")),
            }
        }
        if self.block_buffers.len() != n.div_ceil(BLOCK) + 1 {
            return bad(format!(
                "{} block starts for {n} neurons",
                self.block_buffers.len()
            ));
        }
        let buffers = self.buffers();
        if self.block_buffers[0] != 0
            || self.block_buffers.windows(2).any(|w| w[0] > w[1])
            || self.block_buffers.last().map(|&b| b as usize) != Some(buffers)
        {
            return bad("block starts are not monotone up to the buffer count".into());
        }
        if self.buffer_starts[0] != 0
            || self.buffer_starts.windows(2).any(|w| w[0] > w[1])
            || self.buffer_starts.last().map(|&s| s as usize) != Some(self.map.len())
        {
            return bad("buffer starts are not monotone up to the map length".into());
        }
        if self.slice_starts.len() != buffers * WARPS + 1
            || self.slice_starts[0] != 0
            || self.slice_starts.windows(2).any(|w| w[0] > w[1])
            || self.slice_starts.last().map(|&s| s as usize) != Some(self.slot_rows())
            || self.index.len() != self.value.len()
            || !self.index.len().is_multiple_of(WARP)
        {
            return bad("slice starts do not cover the slot rows".into());
        }
        for k in 0..buffers {
            let (start, end) = (
                self.buffer_starts[k] as usize,
                self.buffer_starts[k + 1] as usize,
            );
            let len = end - start;
            if len == 0 || len > buffer || len > self.max_buffer {
                return bad(format!("buffer {k} holds {len} inputs (most {buffer})"));
            }
            if self.map[start..end]
                .iter()
                .any(|&p| p as usize >= self.inputs)
            {
                return bad(format!(
                    "buffer {k} maps a position ≥ the {} inputs",
                    self.inputs
                ));
            }
            let slots = self.slice_starts[k * WARPS] as usize * WARP
                ..self.slice_starts[(k + 1) * WARPS] as usize * WARP;
            if self.index[slots].iter().any(|&i| i as usize >= len) {
                return bad(format!("buffer {k} has an offset past its {len} inputs"));
            }
        }
        Ok(())
    }

    /// One layer computed on the CPU exactly as `hp_layer` indexes the layout: `y` holds
    /// `rows` rows of `N_{l-1}` activations in the previous layer's position order; the
    /// result is `rows` rows of `N_l` in this layer's position order. Every product and
    /// sum is rounded separately, in the kernel's order.
    pub fn emulate(
        &self,
        y: &[f32],
        rows: usize,
        bias: f32,
        upper: f32,
    ) -> Result<Vec<f32>, HpError> {
        self.emulate_with(y, rows, |_| bias, upper)
    }

    /// [`Self::emulate`] with a bias per output position (`hp_layer_neurons_mb*`):
    /// position `p` gets `position_biases[p]` ([`Self::position_biases`]).
    pub fn emulate_biased(
        &self,
        y: &[f32],
        rows: usize,
        position_biases: &[f32],
        upper: f32,
    ) -> Result<Vec<f32>, HpError> {
        if position_biases.len() != self.neurons {
            return Err(HpError::Invalid(format!(
                "{} biases for {} outputs",
                position_biases.len(),
                self.neurons
            )));
        }
        self.emulate_with(y, rows, |p| position_biases[p], upper)
    }

    /// A bias per output neuron (`biases[k]` for neuron `k`, `N_l` values) in this
    /// layer's position order, `out[p] = biases[outputs[p]]`: what `hp_layer_neurons_mb*`
    /// reads for position `p`.
    pub fn position_biases(&self, biases: &[f32]) -> Result<Vec<f32>, HpError> {
        spdnn_cuda::rows::in_position_order(biases, &self.outputs).ok_or_else(|| {
            HpError::Invalid(format!(
                "{} biases for a layer of {} outputs",
                biases.len(),
                self.neurons
            ))
        })
    }

    /// The emulation with the bias of position `p` from `bias_of(p)`.
    fn emulate_with(
        &self,
        y: &[f32],
        rows: usize,
        bias_of: impl Fn(usize) -> f32,
        upper: f32,
    ) -> Result<Vec<f32>, HpError> {
        let (inputs, n) = (self.inputs, self.neurons);
        if y.len() != rows * inputs {
            return Err(HpError::Invalid(format!(
                "{} activations for {rows} rows of {inputs}",
                y.len()
            )));
        }
        self.validate(MAX_BUFFER)?;
        let mut out = vec![0f32; rows * n];
        let mut features = vec![0f32; self.max_buffer];
        for row in 0..rows {
            let y_row = &y[row * inputs..(row + 1) * inputs];
            for block in 0..self.blocks() {
                let mut acc = [0f32; BLOCK];
                let buffers =
                    self.block_buffers[block] as usize..self.block_buffers[block + 1] as usize;
                for buffer in buffers {
                    let start = self.buffer_starts[buffer] as usize;
                    let end = self.buffer_starts[buffer + 1] as usize;
                    for (k, &p) in self.map[start..end].iter().enumerate() {
                        features[k] = y_row[p as usize];
                    }
                    for warp in 0..WARPS {
                        let slice = buffer * WARPS + warp;
                        for slot in self.slice_starts[slice]..self.slice_starts[slice + 1] {
                            for lane in 0..WARP {
                                let e = slot as usize * WARP + lane;
                                let product = features[self.index[e] as usize] * self.value[e];
                                acc[warp * WARP + lane] += product;
                            }
                        }
                    }
                }
                for (t, &sum) in acc.iter().enumerate() {
                    let p = block * BLOCK + t;
                    if p < n {
                        out[row * n + p] = (sum + bias_of(p)).max(0.0).min(upper);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The weights back as CSR in neuron order (`N_{l-1} × N_l`, row = input neuron), given
    /// the previous layer's order (position → neuron; `None`: the identity).
    pub fn to_csr(&self, input_neurons: Option<&[u32]>) -> Result<Csr, FormatError> {
        let mut triplets = Vec::with_capacity(self.nnz);
        for block in 0..self.blocks() {
            for buffer in self.block_buffers[block]..self.block_buffers[block + 1] {
                let buffer = buffer as usize;
                let start = self.buffer_starts[buffer] as usize;
                for warp in 0..WARPS {
                    let slice = buffer * WARPS + warp;
                    for slot in self.slice_starts[slice]..self.slice_starts[slice + 1] {
                        for lane in 0..WARP {
                            let e = slot as usize * WARP + lane;
                            if self.value[e] == 0.0 {
                                continue;
                            }
                            let p = block * BLOCK + warp * WARP + lane;
                            let output = *self.outputs.get(p).ok_or_else(|| {
                                FormatError::BadStructure(format!(
                                    "weight at position {p} ≥ the {} outputs",
                                    self.neurons
                                ))
                            })?;
                            let position = self.map[start + self.index[e] as usize];
                            let input = match input_neurons {
                                None => position,
                                Some(m) => *m.get(position as usize).ok_or_else(|| {
                                    FormatError::BadStructure(format!(
                                        "input position {position} ≥ the {} input neurons given",
                                        m.len()
                                    ))
                                })?,
                            };
                            triplets.push((input, output, self.value[e]));
                        }
                    }
                }
            }
        }
        Csr::from_triplets(self.inputs, self.neurons, &triplets)
    }

    /// Buffer `k` (global index) of block `block` as a sliced-ELL matrix: one row per
    /// output position of the block, one column per buffer entry, slices of `WARP` rows.
    /// `SlicedEll` wants each row's columns increasing, which holds when the inputs sit at
    /// increasing positions (a layer built without input positions); otherwise an error.
    pub fn buffer_ell(&self, block: usize, k: usize) -> Result<SlicedEll, FormatError> {
        let outputs = BLOCK.min(self.neurons - block * BLOCK);
        let slices = outputs.div_ceil(WARP);
        let columns = (self.buffer_starts[k + 1] - self.buffer_starts[k]) as usize;
        let base = self.slice_starts[k * WARPS];
        let offsets: Vec<u32> = (0..=slices)
            .map(|w| (self.slice_starts[k * WARPS + w] - base) * WARP as u32)
            .collect();
        let slots = base as usize * WARP..self.slice_starts[k * WARPS + slices] as usize * WARP;
        let cols = self.index[slots.clone()]
            .iter()
            .zip(&self.value[slots.clone()])
            .map(|(&i, &v)| {
                if v == 0.0 {
                    PADDING_COLUMN
                } else {
                    u32::from(i)
                }
            })
            .collect();
        SlicedEll::from_parts(
            outputs,
            columns,
            WARP,
            offsets,
            cols,
            self.value[slots].to_vec(),
        )
    }
}

/// Checks one width (`1..2^31`: positions and `2 · width` fit 32 bits).
fn check_width(n: usize) -> Result<(), HpError> {
    if n == 0 || n >= 1 << 31 {
        return Err(HpError::Neurons(n));
    }
    Ok(())
}

/// Checks a layer's output width and the buffer size.
fn check_params(n: usize, params: &Params) -> Result<(), HpError> {
    check_width(n)?;
    if params.buffer == 0 || params.buffer > MAX_BUFFER {
        return Err(HpError::Buffer(params.buffer));
    }
    Ok(())
}

/// Builds the buffers of one block whose positions hold the neurons `outs`.
fn build_block(
    wt: &Csr,
    input_positions: Option<&[u32]>,
    outs: &[u32],
    params: &Params,
) -> Result<BlockParts, HpError> {
    let position = |r: u32| input_positions.map_or(r, |p| p[r as usize]);
    // Each lane's entries (input position, weight), in increasing input neuron order.
    let lanes: Vec<Vec<(u32, f32)>> = outs
        .iter()
        .map(|&o| {
            let (cols, vals) = wt.row(o as usize);
            cols.iter()
                .zip(vals)
                .filter(|&(_, &v)| v != 0.0)
                .map(|(&r, &v)| (position(r), v))
                .collect()
        })
        .collect();
    let mut footprint: Vec<u32> = lanes.iter().flatten().map(|&(p, _)| p).collect();
    footprint.sort_unstable();
    footprint.dedup();
    if footprint.is_empty() {
        return Ok(BlockParts {
            maps: Vec::new(),
            slices: Vec::new(),
        });
    }
    // Each lane's entries as (footprint index, weight).
    let lanes: Vec<Vec<(usize, f32)>> = lanes
        .iter()
        .map(|lane| {
            lane.iter()
                .map(|&(p, v)| (footprint.partition_point(|&q| q < p), v))
                .collect()
        })
        .collect();
    let buffers = footprint.len().div_ceil(params.buffer);
    let buffer_of: Vec<u32> = if buffers == 1 {
        vec![0; footprint.len()]
    } else {
        match params.layout {
            Layout::Paper => (0..footprint.len())
                .map(|f| (f / params.buffer) as u32)
                .collect(),
            Layout::Grouped => balance(&lanes, footprint.len(), buffers, params.buffer),
        }
    };
    let mut maps = vec![Vec::new(); buffers];
    let mut offset_of = vec![0u16; footprint.len()];
    for (f, &p) in footprint.iter().enumerate() {
        let map = &mut maps[buffer_of[f] as usize];
        if map.len() >= params.buffer {
            return Err(HpError::Invalid(format!(
                "a buffer received more than {} inputs",
                params.buffer
            )));
        }
        offset_of[f] = map.len() as u16;
        map.push(p);
    }
    let mut slices = Vec::with_capacity(buffers);
    for k in 0..buffers {
        let mut warps: [Vec<(u16, f32)>; WARPS] = Default::default();
        for (w, warp_slots) in warps.iter_mut().enumerate() {
            let columns: Vec<Vec<(u16, f32)>> = lanes
                .iter()
                .skip(w * WARP)
                .take(WARP)
                .map(|lane| {
                    lane.iter()
                        .filter(|&&(f, _)| buffer_of[f] as usize == k)
                        .map(|&(f, v)| (offset_of[f], v))
                        .collect()
                })
                .collect();
            let width = columns.iter().map(Vec::len).max().unwrap_or(0);
            warp_slots.reserve(width * WARP);
            for s in 0..width {
                for lane in 0..WARP {
                    let entry = columns.get(lane).and_then(|c| c.get(s));
                    warp_slots.push(entry.copied().unwrap_or((0, 0.0)));
                }
            }
        }
        slices.push(warps);
    }
    Ok(BlockParts { maps, slices })
}

/// Assigns each footprint entry to one of `buffers` buffers of at most `capacity`
/// entries so that every lane's entries spread evenly: in rounds over the lanes' k-th
/// entries, an entry not yet placed goes to the buffer where its lane has the fewest
/// entries so far (ties: the emptier buffer).
fn balance(
    lanes: &[Vec<(usize, f32)>],
    footprint: usize,
    buffers: usize,
    capacity: usize,
) -> Vec<u32> {
    const UNPLACED: u32 = u32::MAX;
    let mut buffer_of = vec![UNPLACED; footprint];
    let mut fill = vec![0usize; buffers];
    let mut counts = vec![0u32; lanes.len() * buffers];
    let rounds = lanes.iter().map(Vec::len).max().unwrap_or(0);
    for k in 0..rounds {
        for (t, lane) in lanes.iter().enumerate() {
            let Some(&(f, _)) = lane.get(k) else {
                continue;
            };
            let lane_counts = &mut counts[t * buffers..(t + 1) * buffers];
            if buffer_of[f] == UNPLACED {
                // Some buffer has room: buffers · capacity ≥ footprint > entries placed.
                let best = (0..buffers)
                    .filter(|&j| fill[j] < capacity)
                    .min_by_key(|&j| (lane_counts[j], fill[j]))
                    .unwrap_or(0);
                buffer_of[f] = best as u32;
                fill[best] += 1;
            }
            lane_counts[buffer_of[f] as usize] += 1;
        }
    }
    buffer_of
}

/// The outputs of the transposed layer `wt` (row = output neuron) grouped by identical
/// input sets, each group ascending, groups in order of first appearance.
pub fn input_set_groups(wt: &Csr) -> Vec<Vec<u32>> {
    let mut group_of: HashMap<&[u32], usize> = HashMap::with_capacity(wt.nrows());
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for o in 0..wt.nrows() {
        let inputs = wt.row(o).0;
        let g = *group_of.entry(inputs).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(o as u32);
    }
    groups
}

/// The grouped output order (position → neuron): the groups of [`input_set_groups`],
/// ordered by the smallest position among their inputs (ties: the first output), outputs
/// without inputs last. Consecutive groups then read neighbouring positions, and in
/// RadiX-Net layers the 16 outputs sharing 32 inputs share a block.
pub fn grouped_order(wt: &Csr, groups: &[Vec<u32>], input_positions: Option<&[u32]>) -> Vec<u32> {
    let mut keyed: Vec<(u32, u32, usize)> = groups
        .iter()
        .enumerate()
        .filter(|(_, g)| !g.is_empty())
        .map(|(i, g)| {
            let inputs = wt.row(g[0] as usize).0;
            let first = inputs
                .iter()
                .map(|&r| input_positions.map_or(r, |p| p[r as usize]))
                .min()
                .unwrap_or(u32::MAX);
            (first, g[0], i)
        })
        .collect();
    keyed.sort_unstable();
    keyed
        .iter()
        .flat_map(|&(_, _, i)| groups[i].iter().copied())
        .collect()
}

/// The inverse of a permutation of `0..len`.
pub fn inverse(order: &[u32]) -> Vec<u32> {
    let mut inv = vec![0u32; order.len()];
    for (p, &o) in order.iter().enumerate() {
        inv[o as usize] = p as u32;
    }
    inv
}

/// Checks that the layers chain (layer `l + 1` has as many rows as layer `l` has
/// columns) and that every width is in `1..2^31`; returns the widths `N_0, N_1, …, N_L`.
/// Square `N × N` layers give `[N; L + 1]`.
pub fn check_layers(layers: &[Csr]) -> Result<Vec<usize>, HpError> {
    let first = layers.first().ok_or(HpError::NoLayers)?;
    let mut widths = Vec::with_capacity(layers.len() + 1);
    widths.push(first.nrows());
    for (l, w) in layers.iter().enumerate() {
        let inputs = widths[l];
        if w.nrows() != inputs {
            return Err(HpError::LayerShape {
                layer: l + 1,
                rows: w.nrows(),
                cols: w.ncols(),
                inputs,
            });
        }
        widths.push(w.ncols());
    }
    for &w in &widths {
        check_width(w)?;
    }
    Ok(widths)
}

/// Builds every layer in order and hands each to `sink` (0-based index, layer) as soon as
/// it is built, so a large network never sits on the host whole: layers are transposed
/// and built in parallel in chunks; the output orders, each depending on the previous
/// layer's, are chosen in sequence (cheap).
///
/// Returns the order of the network's input (position → neuron) that the first layer
/// reads: with [`Layout::Grouped`] the input neurons sorted by their first reader
/// ([`first_reader_order`]), so the first layer's blocks read runs of neighbouring
/// positions; `None` (the identity) with [`Layout::Paper`].
pub fn build_layers<E: From<HpError>>(
    layers: &[Csr],
    params: &Params,
    mut sink: impl FnMut(usize, HpLayer) -> Result<(), E>,
) -> Result<Option<Vec<u32>>, E> {
    let widths = check_layers(layers)?;
    check_params(widths[0], params)?;
    let chunk = (2 * rayon::current_num_threads()).max(1);
    // Neuron → position of the previous layer's outputs (`None`: the identity).
    let mut input_positions: Option<Vec<u32>> = None;
    let mut input_order = None;
    for (c, chunk_layers) in layers.chunks(chunk).enumerate() {
        let grouped = params.layout == Layout::Grouped;
        let transposed: Vec<(Csr, Option<Vec<Vec<u32>>>)> = chunk_layers
            .par_iter()
            .map(|w| {
                let wt = w.transpose();
                let groups = grouped.then(|| input_set_groups(&wt));
                (wt, groups)
            })
            .collect();
        let mut jobs = Vec::with_capacity(transposed.len());
        for (i, (wt, groups)) in transposed.iter().enumerate() {
            let outputs = match groups {
                Some(g) => grouped_order(wt, g, input_positions.as_deref()),
                None => (0..wt.nrows() as u32).collect(),
            };
            if c == 0 && i == 0 && grouped {
                let order = first_reader_order(wt, &outputs);
                input_positions = Some(inverse(&order));
                input_order = Some(order);
            }
            let positions = input_positions.take();
            input_positions = grouped.then(|| inverse(&outputs));
            jobs.push((wt, positions, outputs));
        }
        let built: Vec<Result<HpLayer, HpError>> = jobs
            .into_par_iter()
            .enumerate()
            .map(|(i, (wt, positions, outputs))| {
                HpLayer::from_transposed(
                    wt,
                    positions.as_deref(),
                    outputs,
                    params,
                    c * chunk + i + 1,
                )
            })
            .collect();
        for (i, layer) in built.into_iter().enumerate() {
            sink(c * chunk + i, layer?)?;
        }
    }
    Ok(input_order)
}

/// The input neurons of the transposed layer `wt` (row = output neuron) in the order the
/// outputs at positions `0, 1, …` (`outputs`: position → neuron) first read them;
/// neurons nobody reads last. Position → neuron, a permutation of `0..N_{l-1}`
/// (`wt.ncols()`).
pub fn first_reader_order(wt: &Csr, outputs: &[u32]) -> Vec<u32> {
    let n = wt.ncols();
    let mut first = vec![u32::MAX; n];
    for (p, &o) in outputs.iter().enumerate() {
        for &r in wt.row(o as usize).0 {
            let slot = &mut first[r as usize];
            *slot = (*slot).min(p as u32);
        }
    }
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by_key(|&r| (first[r as usize], r));
    order
}

/// A whole network in the H&P layout, on the host (tests, statistics; the device path
/// uploads layer by layer through [`build_layers`]).
#[derive(Debug, Clone, PartialEq)]
pub struct HpNetwork {
    /// The order of the input the first layer reads, position → neuron (`None`: the
    /// identity).
    pub input_order: Option<Vec<u32>>,
    /// The layers, in order.
    pub layers: Vec<HpLayer>,
}

impl HpNetwork {
    /// Builds every layer.
    pub fn build(layers: &[Csr], params: &Params) -> Result<Self, HpError> {
        let mut built = Vec::with_capacity(layers.len());
        let input_order = build_layers::<HpError>(layers, params, |_, layer| {
            built.push(layer);
            Ok(())
        })?;
        Ok(Self {
            input_order,
            layers: built,
        })
    }

    /// The order of the activations layer `l` reads, position → neuron (`None`: the
    /// identity).
    pub fn input_neurons(&self, l: usize) -> Option<&[u32]> {
        match l {
            0 => self.input_order.as_deref(),
            _ => self.layers.get(l - 1).map(HpLayer::outputs),
        }
    }

    /// The whole chain on the CPU through [`HpLayer::emulate`]: `input` is rows × `N_0` in
    /// neuron order; the result is rows × `N_L`, in neuron order too.
    pub fn emulate(
        &self,
        input: &[f32],
        rows: usize,
        bias: f32,
        upper: f32,
    ) -> Result<Vec<f32>, HpError> {
        let mut y = match &self.input_order {
            Some(order) => to_position_order(input, order),
            None => input.to_vec(),
        };
        for layer in &self.layers {
            y = layer.emulate(&y, rows, bias, upper)?;
        }
        Ok(match self.layers.last() {
            Some(last) => to_neuron_order(&y, last.outputs()),
            None => y,
        })
    }

    /// [`Self::emulate`] with a bias per output neuron of every layer (`biases[l][k]`,
    /// neuron order), as the device runs a trained network: each layer's biases in its
    /// position order ([`HpLayer::position_biases`]).
    pub fn emulate_biased(
        &self,
        input: &[f32],
        rows: usize,
        biases: &[Vec<f32>],
        upper: f32,
    ) -> Result<Vec<f32>, HpError> {
        if biases.len() != self.layers.len() {
            return Err(HpError::Invalid(format!(
                "{} bias vectors for {} layers",
                biases.len(),
                self.layers.len()
            )));
        }
        let mut y = match &self.input_order {
            Some(order) => to_position_order(input, order),
            None => input.to_vec(),
        };
        for (layer, b) in self.layers.iter().zip(biases) {
            y = layer.emulate_biased(&y, rows, &layer.position_biases(b)?, upper)?;
        }
        Ok(match self.layers.last() {
            Some(last) => to_neuron_order(&y, last.outputs()),
            None => y,
        })
    }
}

/// Rows of activations in position order (`outputs`: position → neuron) put back into
/// neuron order.
pub fn to_neuron_order(y: &[f32], outputs: &[u32]) -> Vec<f32> {
    let n = outputs.len();
    if n == 0 || outputs.iter().enumerate().all(|(p, &o)| p as u32 == o) {
        return y.to_vec();
    }
    let mut out = vec![0f32; y.len()];
    for (row_in, row_out) in y.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
        for (&v, &o) in row_in.iter().zip(outputs) {
            row_out[o as usize] = v;
        }
    }
    out
}

/// Rows of activations in neuron order put into position order (`order`: position →
/// neuron).
pub fn to_position_order(y: &[f32], order: &[u32]) -> Vec<f32> {
    let n = order.len();
    let mut out = vec![0f32; y.len()];
    if n == 0 {
        return out;
    }
    for (row_in, row_out) in y.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
        for (v, &o) in row_out.iter_mut().zip(order) {
            *v = row_in[o as usize];
        }
    }
    out
}

/// Totals over a network's layers, for reports and the docs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LayoutStats {
    /// Stored nonzero weights.
    pub nnz: usize,
    /// Slots including padding (`slot rows · WARP`).
    pub slots: usize,
    /// Buffers.
    pub buffers: usize,
    /// Output blocks.
    pub blocks: usize,
    /// Sum of the block footprints.
    pub footprint: usize,
    /// 32-byte sectors of one activation row that the buffer fills touch (the footprint
    /// would need `footprint / 8` if every sector were read whole).
    pub sectors: usize,
    /// The longest buffer.
    pub max_buffer: usize,
    /// Device bytes of the layout.
    pub bytes: usize,
}

impl LayoutStats {
    /// Adds one layer.
    pub fn add(&mut self, layer: &HpLayer) {
        self.nnz += layer.nnz();
        self.slots += layer.slot_rows() * WARP;
        self.buffers += layer.buffers();
        self.blocks += layer.blocks();
        self.footprint += layer.footprint();
        for k in 0..layer.buffers() {
            let map =
                &layer.map[layer.buffer_starts[k] as usize..layer.buffer_starts[k + 1] as usize];
            // Each buffer's map is ascending: count the changes of sector.
            self.sectors += map
                .iter()
                .enumerate()
                .filter(|&(i, &p)| i == 0 || map[i - 1] / 8 != p / 8)
                .count();
        }
        self.max_buffer = self.max_buffer.max(layer.max_buffer());
        self.bytes += layer.device_bytes();
    }

    /// Share of the slots that hold a weight (1.0: no padding).
    pub fn fill(&self) -> f64 {
        if self.slots == 0 {
            1.0
        } else {
            self.nnz as f64 / self.slots as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn params(buffer: usize, layout: Layout) -> Params {
        Params { buffer, layout }
    }

    /// `Y · W` then the activation, row by row in neuron order (the reference's rule
    /// with a negative bias): `y` is rows × `w.nrows()`, the result rows × `w.ncols()`.
    fn dense_layer(y: &[f32], rows: usize, w: &Csr, bias: f32, upper: f32) -> Vec<f32> {
        dense_layer_biased(y, rows, w, &vec![bias; w.ncols()], upper)
    }

    /// [`dense_layer`] with `biases[k]` for output `k`.
    fn dense_layer_biased(y: &[f32], rows: usize, w: &Csr, biases: &[f32], upper: f32) -> Vec<f32> {
        let (inputs, n) = (w.nrows(), w.ncols());
        let mut out = vec![0f32; rows * n];
        for row in 0..rows {
            let acc = &mut out[row * n..(row + 1) * n];
            for r in 0..inputs {
                let v = y[row * inputs + r];
                if v != 0.0 {
                    let (cols, vals) = w.row(r);
                    for (&c, &wv) in cols.iter().zip(vals) {
                        acc[c as usize] += v * wv;
                    }
                }
            }
            for (a, &b) in acc.iter_mut().zip(biases) {
                *a = (*a + b).max(0.0).min(upper);
            }
        }
        out
    }

    fn without_zeros(w: &Csr) -> Csr {
        let t: Vec<_> = w.triplets().filter(|t| t.2 != 0.0).collect();
        Csr::from_triplets(w.nrows(), w.ncols(), &t).unwrap()
    }

    /// A random `rows × cols` layer.
    fn matrix(
        rows: usize,
        cols: usize,
        density: f64,
        value: impl Strategy<Value = f32>,
    ) -> impl Strategy<Value = Csr> {
        proptest::collection::vec((proptest::bool::weighted(density), value), rows * cols).prop_map(
            move |cells| {
                let t: Vec<(u32, u32, f32)> = cells
                    .into_iter()
                    .enumerate()
                    .filter(|(_, (keep, _))| *keep)
                    .map(|(i, (_, v))| ((i / cols) as u32, (i % cols) as u32, v))
                    .collect();
                Csr::from_triplets(rows, cols, &t).unwrap()
            },
        )
    }

    /// A chain of random layers of widths `widths[0] → widths[1] → …`.
    fn chain(
        widths: &[usize],
        density: f64,
        value: impl Strategy<Value = f32> + Clone + 'static,
    ) -> Vec<BoxedStrategy<Csr>> {
        widths
            .windows(2)
            .map(|pair| matrix(pair[0], pair[1], density, value.clone()).boxed())
            .collect()
    }

    /// Widths of a chain of 1–`depth` layers, each 1–`max` wide; square (one width
    /// repeated) about a quarter of the time.
    fn widths(max: usize, depth: usize) -> impl Strategy<Value = Vec<usize>> {
        prop_oneof![
            1 => (1..=max, 1..=depth).prop_map(|(n, l)| vec![n; l + 1]),
            3 => proptest::collection::vec(1..=max, 2..=depth + 1),
        ]
    }

    fn layout() -> impl Strategy<Value = Layout> {
        prop_oneof![Just(Layout::Grouped), Just(Layout::Paper)]
    }

    #[test]
    fn one_block_one_buffer_by_hand() {
        // 3 × 3: output 0 ← inputs 0, 2; output 2 ← input 1; output 1 empty.
        let w = Csr::from_triplets(3, 3, &[(0, 0, 1.0), (2, 0, 2.0), (1, 2, 3.0)]).unwrap();
        let layer = HpLayer::build(&w, None, vec![0, 1, 2], &params(8, Layout::Paper), 1).unwrap();
        assert_eq!(layer.blocks(), 1);
        assert_eq!(layer.buffers(), 1);
        assert_eq!(layer.map(), &[0, 1, 2]);
        // Warp 0 has width 2 (output 0), warps 1..8 are empty.
        assert_eq!(layer.slice_starts(), &[0, 2, 2, 2, 2, 2, 2, 2, 2]);
        assert_eq!(&layer.index()[..3], &[0, 0, 1]);
        assert_eq!(&layer.value()[..3], &[1.0, 0.0, 3.0]);
        assert_eq!(layer.index()[32], 2);
        assert_eq!(layer.value()[32], 2.0);
        assert_eq!(layer.value()[34], 0.0);
        assert_eq!(layer.nnz(), 3);
        layer.validate(8).unwrap();
        let y = [1.0, 10.0, 100.0];
        assert_eq!(
            layer.emulate(&y, 1, -0.5, 1000.0).unwrap(),
            vec![200.5, 0.0, 29.5]
        );
    }

    #[test]
    fn rectangular_layers_by_hand() {
        // 3 → 2: output 0 ← inputs 0 (1.0), 2 (2.0); output 1 ← input 1 (3.0).
        // 2 → 5: outputs 0 and 4 ← input 0 (0.5); output 2 ← input 1 (0.25).
        let narrow = Csr::from_triplets(3, 2, &[(0, 0, 1.0), (2, 0, 2.0), (1, 1, 3.0)]).unwrap();
        let wide = Csr::from_triplets(2, 5, &[(0, 0, 0.5), (0, 4, 0.5), (1, 2, 0.25)]).unwrap();
        let layers = [narrow.clone(), wide.clone()];
        assert_eq!(check_layers(&layers).unwrap(), vec![3, 2, 5]);
        let hp = HpNetwork::build(&layers, &params(8, Layout::Paper)).unwrap();
        let (first, second) = (&hp.layers[0], &hp.layers[1]);
        assert_eq!((first.inputs(), first.neurons(), first.blocks()), (3, 2, 1));
        assert_eq!(
            (second.inputs(), second.neurons(), second.blocks()),
            (2, 5, 1)
        );
        assert_eq!(first.map(), &[0, 1, 2]);
        assert_eq!(second.map(), &[0, 1]);
        assert_eq!(first.to_csr(None).unwrap(), narrow);
        assert_eq!(second.to_csr(None).unwrap(), wide);
        // One row: y = [1, 10, 100] → [201 - 0.5, 30 - 0.5] → [100.25 - 0.5, 0, 7.375 - 0.5,
        // 0, 100.25 - 0.5].
        let y = [1.0, 10.0, 100.0];
        let hidden = first.emulate(&y, 1, -0.5, 1000.0).unwrap();
        assert_eq!(hidden, vec![200.5, 29.5]);
        assert_eq!(
            second.emulate(&hidden, 1, -0.5, 1000.0).unwrap(),
            vec![99.75, 0.0, 6.875, 0.0, 99.75]
        );
        assert_eq!(
            hp.emulate(&y, 1, -0.5, 1000.0).unwrap(),
            vec![99.75, 0.0, 6.875, 0.0, 99.75]
        );
        // Activations of the wrong width are an error, not a panic.
        assert!(second.emulate(&y, 1, -0.5, 1000.0).is_err());
        // Grouped: outputs 0 and 4 read the same input set and become neighbours.
        let grouped = HpNetwork::build(&layers, &params(8, Layout::Grouped)).unwrap();
        assert_eq!(grouped.layers[1].outputs(), &[0, 4, 2, 1, 3]);
        assert_eq!(
            grouped.emulate(&y, 1, -0.5, 1000.0).unwrap(),
            vec![99.75, 0.0, 6.875, 0.0, 99.75]
        );
        for (l, layer) in grouped.layers.iter().enumerate() {
            assert_eq!(layer.to_csr(grouped.input_neurons(l)).unwrap(), layers[l]);
        }
    }

    #[test]
    fn wide_and_narrow_layers_across_blocks() {
        // 700 → 30 → 520 → 1 → 1: one output block, three, one, one; a footprint of up to
        // 700 inputs into 30 outputs, 30 into 520, 520 into one.
        let (a, b, c, d) = (700u32, 30u32, 520u32, 1u32);
        let w1: Vec<_> = (0..a)
            .flat_map(|r| {
                (0..b)
                    .filter(move |o| (r * 7 + o * 3) % 5 == 0)
                    .map(move |o| (r, o, [0.25, -0.5, 0.75][(r + o) as usize % 3]))
            })
            .collect();
        let w2: Vec<_> = (0..b)
            .flat_map(|r| {
                (0..c)
                    .filter(move |o| (r + o) % 4 != 0)
                    .map(move |o| (r, o, [0.5, 0.25, -0.25][(r * o) as usize % 3]))
            })
            .collect();
        let w3: Vec<_> = (0..c).map(|r| (r, 0, 0.125 * (1 + r % 4) as f32)).collect();
        let layers = [
            Csr::from_triplets(a as usize, b as usize, &w1).unwrap(),
            Csr::from_triplets(b as usize, c as usize, &w2).unwrap(),
            Csr::from_triplets(c as usize, d as usize, &w3).unwrap(),
            Csr::from_triplets(d as usize, d as usize, &[(0, 0, 1.0)]).unwrap(),
        ];
        let rows = 3;
        let y: Vec<f32> = (0..rows * a as usize)
            .map(|i| [0.0, 0.5, 1.0, 2.0][i % 4])
            .collect();
        let mut want = y.clone();
        for w in &layers {
            want = dense_layer(&want, rows, w, -0.25, 32.0);
        }
        assert_eq!(want.len(), rows);
        assert!(want.iter().any(|&v| v > 0.0), "{want:?}");
        for layout in [Layout::Paper, Layout::Grouped] {
            for buffer in [7, 64, MAX_BUFFER] {
                let hp = HpNetwork::build(&layers, &params(buffer, layout)).unwrap();
                let blocks: Vec<usize> = hp.layers.iter().map(HpLayer::blocks).collect();
                assert_eq!(blocks, vec![1, 3, 1, 1]);
                for (l, layer) in hp.layers.iter().enumerate() {
                    layer.validate(buffer).unwrap();
                    assert_eq!(layer.to_csr(hp.input_neurons(l)).unwrap(), layers[l]);
                }
                assert_eq!(hp.emulate(&y, rows, -0.25, 32.0).unwrap(), want);
            }
        }
    }

    #[test]
    fn a_compressed_challenge_network_emulates_the_reference() {
        // The generated 1024-12 compressed into rectangular layers (1024 × 64, then
        // narrower ones): the emulated kernel matches the reference on the compressed
        // layers (values) and the uncompressed ones (categories).
        let original = spdnn_gputest::challenge_problem(1024, 12, 48, 5);
        let (problem, shrunk) = spdnn_gputest::compressed(&original);
        assert!(shrunk > 0);
        let widths = check_layers(&problem.layers).unwrap();
        assert_eq!(widths[0], 1024);
        assert!(widths[1..].iter().all(|&w| w < 1024), "{widths:?}");
        let expected = spdnn_gputest::reference(&problem);
        let want = expected.output.expect("the reference keeps its output");
        assert_eq!(
            expected.categories,
            spdnn_gputest::reference(&original).categories
        );
        let rows = problem.input.nrows();
        let input: Vec<f32> = problem.input.to_dense().iter().copied().collect();
        for layout in [Layout::Grouped, Layout::Paper] {
            let hp = HpNetwork::build(&problem.layers, &params(721, layout)).unwrap();
            let got = hp
                .emulate(&input, rows, problem.bias, problem.upper)
                .unwrap();
            assert_eq!(got.len(), rows * widths[widths.len() - 1]);
            for (g, e) in got.iter().zip(want.iter()) {
                assert!(
                    (g - e).abs() <= 1e-5 * e.abs().max(1.0),
                    "{layout:?}: {g} vs {e}"
                );
            }
            let categories: Vec<u32> = got
                .chunks_exact(widths[widths.len() - 1])
                .enumerate()
                .filter(|(_, row)| row.iter().any(|&v| v != 0.0))
                .map(|(r, _)| r as u32 + 1)
                .collect();
            assert_eq!(categories, expected.categories, "{layout:?}");
        }
    }

    #[test]
    fn an_empty_layer_has_no_buffers() {
        let w = Csr::zeros(300, 300).unwrap();
        let layer = HpLayer::build(
            &w,
            None,
            (0..300).collect(),
            &params(16, Layout::Grouped),
            1,
        )
        .unwrap();
        assert_eq!(layer.blocks(), 2);
        assert_eq!(layer.buffers(), 0);
        assert_eq!(layer.slot_rows(), 0);
        assert_eq!(layer.max_buffer(), 0);
        layer.validate(16).unwrap();
        let y = vec![1.0; 600];
        assert!(
            layer
                .emulate(&y, 2, -0.25, 32.0)
                .unwrap()
                .iter()
                .all(|&v| v == 0.0)
        );
    }

    #[test]
    fn bad_parameters_are_errors() {
        let w = Csr::zeros(4, 4).unwrap();
        let p = |b| params(b, Layout::Paper);
        assert_eq!(
            HpNetwork::build(std::slice::from_ref(&w), &p(0)),
            Err(HpError::Buffer(0))
        );
        assert_eq!(
            HpNetwork::build(std::slice::from_ref(&w), &p(MAX_BUFFER + 1)),
            Err(HpError::Buffer(MAX_BUFFER + 1))
        );
        assert_eq!(HpNetwork::build(&[], &p(4)), Err(HpError::NoLayers));
        // 4 → 4 → 5 chains; a 5 × 4 layer after a 4 × 4 one does not.
        let wide = Csr::zeros(4, 5).unwrap();
        assert!(HpNetwork::build(&[w.clone(), wide.clone()], &p(4)).is_ok());
        let tall = Csr::zeros(5, 4).unwrap();
        assert_eq!(
            HpNetwork::build(&[w.clone(), tall.clone()], &p(4)),
            Err(HpError::LayerShape {
                layer: 2,
                rows: 5,
                cols: 4,
                inputs: 4
            })
        );
        let e = HpNetwork::build(&[wide.clone(), wide.clone()], &p(4)).unwrap_err();
        assert!(e.to_string().contains("gives 5 values a row"), "{e}");
        assert!(HpNetwork::build(&[wide.clone(), tall], &p(4)).is_ok());
        assert_eq!(
            HpNetwork::build(&[Csr::zeros(3, 0).unwrap()], &p(4)),
            Err(HpError::Neurons(0))
        );
        assert!(HpLayer::build(&w, None, vec![0, 1], &p(4), 1).is_err());
        assert!(HpLayer::build(&w, Some(&[0, 1, 2]), vec![0, 1, 2, 3], &p(4), 1).is_err());
        // A 4 × 5 layer takes 4 input positions and 5 outputs.
        assert!(HpLayer::build(&wide, Some(&[0, 1, 2, 3, 4]), (0..5).collect(), &p(4), 1).is_err());
        assert!(HpLayer::build(&wide, Some(&[3, 2, 1, 0]), (0..4).collect(), &p(4), 1).is_err());
        assert!(HpLayer::build(&wide, Some(&[3, 2, 1, 0]), (0..5).collect(), &p(4), 1).is_ok());
        assert!(Layout::from_name("paper") == Some(Layout::Paper));
        assert!(Layout::from_name("x").is_none());
    }

    #[test]
    fn a_warp_whose_rows_are_all_empty_has_an_empty_slice() {
        // N = 100: outputs 32..64 read nothing; the others read two inputs.
        let mut t = Vec::new();
        for o in (0..100u32).filter(|o| !(32..64).contains(o)) {
            t.push((o % 7, o, 0.5));
            t.push((50 + o % 11, o, 0.25));
        }
        let w = Csr::from_triplets(100, 100, &t).unwrap();
        let layer =
            HpLayer::build(&w, None, (0..100).collect(), &params(64, Layout::Paper), 1).unwrap();
        layer.validate(64).unwrap();
        let s = layer.slice_starts();
        assert_eq!(s[1] - s[0], 2);
        assert_eq!(s[2], s[1], "warp 1's outputs are empty");
        assert_eq!(layer.to_csr(None).unwrap(), w);
    }

    #[test]
    fn footprints_larger_than_a_buffer_are_cut() {
        // Every output reads all 40 inputs: buffers of 16 → 3 buffers per block.
        let t: Vec<_> = (0..40u32)
            .flat_map(|r| (0..40u32).map(move |c| (r, c, 1.0 + (r % 3) as f32)))
            .collect();
        let w = Csr::from_triplets(40, 40, &t).unwrap();
        for layout in [Layout::Paper, Layout::Grouped] {
            let layer =
                HpLayer::build(&w, None, (0..40).collect(), &params(16, layout), 1).unwrap();
            layer.validate(16).unwrap();
            assert_eq!(layer.buffers(), 3);
            assert!(layer.max_buffer() <= 16);
            if layout == Layout::Paper {
                // Consecutive cuts of the sorted footprint: 16, 16, 8.
                assert_eq!(layer.buffer_starts(), &[0, 16, 32, 40]);
            } else {
                // Every lane reads all 40 inputs: balanced cuts of 14, 13, 13.
                let widths: Vec<u32> = (0..3)
                    .map(|k| layer.slice_starts()[k * WARPS + 1] - layer.slice_starts()[k * WARPS])
                    .collect();
                assert_eq!(widths.iter().sum::<u32>(), 40);
                assert!(widths.iter().all(|&w| (13..=14).contains(&w)), "{widths:?}");
            }
            assert_eq!(layer.to_csr(None).unwrap(), w);
        }
    }

    #[test]
    fn grouped_order_puts_shared_input_sets_together() {
        // Outputs 0, 2, 4 read {0, 1}; outputs 1, 3 read {2}; output 5 reads nothing.
        let mut t = Vec::new();
        for o in [0u32, 2, 4] {
            t.extend([(0, o, 1.0), (1, o, 1.0)]);
        }
        for o in [1u32, 3] {
            t.push((2, o, 1.0));
        }
        let w = Csr::from_triplets(6, 6, &t).unwrap();
        let wt = w.transpose();
        let groups = input_set_groups(&wt);
        assert_eq!(groups, vec![vec![0, 2, 4], vec![1, 3], vec![5]]);
        assert_eq!(grouped_order(&wt, &groups, None), vec![0, 2, 4, 1, 3, 5]);
        // With inputs at reversed positions, the group reading input 2 comes first.
        let positions = [5, 4, 0, 1, 2, 3];
        assert_eq!(
            grouped_order(&wt, &groups, Some(&positions)),
            vec![1, 3, 0, 2, 4, 5]
        );
        assert_eq!(inverse(&[2, 0, 1]), vec![1, 2, 0]);
        // Positions 0, 1, … hold outputs 0, 2, 4, 1, 3, 5: inputs 0 and 1 are read
        // first, then 2; inputs 3, 4, 5 by nobody.
        assert_eq!(
            first_reader_order(&wt, &[0, 2, 4, 1, 3, 5]),
            vec![0, 1, 2, 3, 4, 5]
        );
        assert_eq!(
            first_reader_order(&wt, &[1, 3, 0, 2, 4, 5]),
            vec![2, 0, 1, 3, 4, 5]
        );
        let y = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let order = [2, 0, 1];
        assert_eq!(
            to_position_order(&y, &order),
            vec![3.0, 1.0, 2.0, 6.0, 4.0, 5.0]
        );
        assert_eq!(
            to_neuron_order(&to_position_order(&y, &order), &order),
            y.to_vec()
        );
    }

    #[test]
    fn the_challenge_layers_pack_without_padding_when_grouped() {
        let net = spdnn_sdgc::generator::network(1024, 12, 3).unwrap();
        let layers = net.layers();
        let stats = |layout| {
            let hp = HpNetwork::build(layers, &params(722, layout)).unwrap();
            let mut s = LayoutStats::default();
            hp.layers.iter().for_each(|l| s.add(l));
            (hp, s)
        };
        let (grouped, g) = stats(Layout::Grouped);
        let (_, p) = stats(Layout::Paper);
        assert_eq!(g.nnz, 1024 * 32 * 12);
        assert_eq!(
            g.fill(),
            1.0,
            "every lane of a grouped challenge block has 32 entries"
        );
        assert!(
            g.max_buffer <= 512,
            "16 groups of 16 outputs read at most 512 inputs"
        );
        assert_eq!(g.buffers, g.blocks);
        assert!(p.footprint > g.footprint);
        for (l, layer) in grouped.layers.iter().enumerate() {
            let previous = grouped.input_neurons(l);
            assert_eq!(without_zeros(&layers[l]), layer.to_csr(previous).unwrap());
        }
        // The first layer reads runs of neighbouring positions of the reordered input.
        assert!(grouped.input_order.is_some());
        let mut first = LayoutStats::default();
        first.add(&grouped.layers[0]);
        assert!(first.sectors * 4 <= first.footprint, "{first:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// The layout is valid and returns the layer's weights, buffer by buffer as
        /// sliced ELL and as a whole.
        #[test]
        fn round_trip(
            w in (1usize..=300, 1usize..=300)
                .prop_flat_map(|(r, c)| matrix(r, c, 0.08, -3.0f32..3.0)),
            buffer in 1usize..=48,
            layout in layout(),
            square in proptest::bool::weighted(0.25),
            reversed in proptest::bool::ANY,
        ) {
            // A quarter of the cases square (the challenge's shape), the rest rectangular.
            let w = if square {
                let n = w.nrows().min(w.ncols());
                let t: Vec<_> = w.triplets().filter(|t| (t.0 as usize) < n && (t.1 as usize) < n).collect();
                Csr::from_triplets(n, n, &t).unwrap()
            } else {
                w
            };
            let (inputs, n) = (w.nrows(), w.ncols());
            let wt = w.transpose();
            // Inputs at their own positions or reversed (a previous layer's order).
            let input_order: Option<Vec<u32>> = reversed.then(|| (0..inputs as u32).rev().collect());
            let positions = input_order.as_deref().map(inverse);
            let outputs = match layout {
                Layout::Grouped => grouped_order(&wt, &input_set_groups(&wt), positions.as_deref()),
                Layout::Paper => (0..n as u32).collect(),
            };
            let layer = HpLayer::from_transposed(&wt, positions.as_deref(), outputs, &params(buffer, layout), 1).unwrap();
            layer.validate(buffer).unwrap();
            prop_assert_eq!((layer.inputs(), layer.neurons()), (inputs, n));
            prop_assert_eq!(layer.blocks(), n.div_ceil(BLOCK));
            prop_assert_eq!(layer.to_csr(input_order.as_deref()).unwrap(), without_zeros(&w));
            // Each (block, buffer) as sliced ELL: its dense form is W restricted to the
            // buffer's inputs and the block's outputs (inputs at their own positions: a
            // lane's offsets then increase, as sliced ELL wants).
            let dense = w.to_dense();
            let blocks = if input_order.is_none() { layer.blocks() } else { 0 };
            for block in 0..blocks {
                for k in layer.block_buffers()[block]..layer.block_buffers()[block + 1] {
                    let k = k as usize;
                    let ell = layer.buffer_ell(block, k).unwrap();
                    let buffer_inputs = &layer.map()[layer.buffer_starts()[k] as usize..layer.buffer_starts()[k + 1] as usize];
                    let sub = ell.to_dense();
                    for (t, &o) in layer.outputs()[block * BLOCK..].iter().take(BLOCK).enumerate() {
                        for (c, &r) in buffer_inputs.iter().enumerate() {
                            prop_assert_eq!(sub[[t, c]], dense[[r as usize, o as usize]]);
                        }
                    }
                }
            }
        }

        /// The kernel's indexing (emulated) equals `Y · W` exactly on dyadic values, over
        /// chains of square and rectangular layers whose positions are permuted, with
        /// footprints cut into many buffers.
        #[test]
        fn emulated_chain_is_exact_on_dyadic_values(
            (widths, ws, y) in widths(300, 3).prop_flat_map(|widths| (
                Just(widths.clone()),
                chain(&widths, 0.05, (-8i32..=8).prop_map(|k| k as f32 / 4.0)),
                proptest::collection::vec(prop_oneof![Just(0.0f32), (1i32..=8).prop_map(|k| k as f32 / 2.0)], 3 * widths[0]),
            )),
            buffer in 1usize..=40,
            layout in layout(),
            bias in (1i32..=8).prop_map(|k| -(k as f32) / 4.0),
        ) {
            let hp = HpNetwork::build(&ws, &params(buffer, layout)).unwrap();
            prop_assert_eq!(check_layers(&ws).unwrap(), widths.clone());
            let got = hp.emulate(&y, 3, bias, 32.0).unwrap();
            let mut want = y.clone();
            for w in &ws {
                want = dense_layer(&want, 3, w, bias, 32.0);
            }
            prop_assert_eq!(got.len(), 3 * widths[widths.len() - 1]);
            prop_assert_eq!(got.len(), want.len());
            for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                prop_assert!(g == e, "value {} of widths {:?}: {} != {}", i, widths, g, e);
            }
        }

        /// A bias per output neuron (trained networks, ≤ 0, zero included): each layer's
        /// biases in its position order give the dense result exactly, in both layouts
        /// (the grouped one permutes the positions).
        #[test]
        fn emulated_chain_with_a_bias_per_neuron_is_exact(
            (widths, ws, y) in widths(300, 3).prop_flat_map(|widths| (
                Just(widths.clone()),
                chain(&widths, 0.05, (-8i32..=8).prop_map(|k| k as f32 / 4.0)),
                proptest::collection::vec(prop_oneof![Just(0.0f32), (1i32..=8).prop_map(|k| k as f32 / 2.0)], 3 * widths[0]),
            )),
            seeds in proptest::collection::vec(0i32..=8, 1..=61),
            buffer in 1usize..=40,
            layout in layout(),
        ) {
            let hp = HpNetwork::build(&ws, &params(buffer, layout)).unwrap();
            let mut next = 0usize;
            let biases: Vec<Vec<f32>> = ws
                .iter()
                .map(|w| {
                    (0..w.ncols())
                        .map(|_| {
                            next += 1;
                            -(seeds[(next * 7) % seeds.len()] as f32) / 4.0
                        })
                        .collect()
                })
                .collect();
            let got = hp.emulate_biased(&y, 3, &biases, 32.0).unwrap();
            let mut want = y.clone();
            for (w, b) in ws.iter().zip(&biases) {
                want = dense_layer_biased(&want, 3, w, b, 32.0);
            }
            prop_assert_eq!(got.len(), want.len());
            for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                prop_assert!(g == e, "value {} of widths {:?}: {} != {}", i, widths, g, e);
            }
        }

        /// On arbitrary values, within the GPU tests' tolerance; with one buffer per
        /// block in the paper's layout the sum runs in input order, bit for bit.
        #[test]
        fn emulated_layer_matches_general_values(
            (w, y) in (1usize..=200, 1usize..=200).prop_flat_map(|(inputs, n)| (
                matrix(inputs, n, 0.2, 0.001f32..0.5),
                proptest::collection::vec(0.0f32..1.0, 2 * inputs),
            )),
            buffer in prop_oneof![Just(MAX_BUFFER), 1usize..=32],
            layout in layout(),
        ) {
            let hp = HpNetwork::build(std::slice::from_ref(&w), &params(buffer, layout)).unwrap();
            let got = hp.emulate(&y, 2, -0.1, 32.0).unwrap();
            let want = dense_layer(&y, 2, &w, -0.1, 32.0);
            let exact = buffer == MAX_BUFFER && layout == Layout::Paper;
            for (g, e) in got.iter().zip(&want) {
                if exact {
                    prop_assert_eq!(g.to_bits(), e.to_bits());
                } else {
                    prop_assert!((g - e).abs() <= 1e-5 * e.abs().max(1.0), "{} vs {}", g, e);
                }
            }
        }
    }
}
