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

mod network;

pub use network::{
    HpNetwork, LayoutStats, build_layers, check_layers, first_reader_order, grouped_order,
    input_set_groups, inverse, to_neuron_order, to_position_order,
};

#[cfg(test)]
mod tests;
