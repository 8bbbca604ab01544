//! The XY layer format: output neurons grouped by the input set they share.
//!
//! In the challenge networks (RadiX-Net), the outputs `{c : c mod N/16 = g}` of a layer
//! all read the same 32 inputs (their columns of W have the same row pattern). XY-2021
//! stores each group of 16 such outputs as one *block*: the shared input indices once,
//! then a 32 × 16 tile of values, so one thread per sample can load each input once and
//! update 16 accumulators in registers.
//!
//! Nothing here assumes that structure. [`XyNetwork::prepare`] finds, per layer, the
//! outputs whose input lists are identical. When every such group has a multiple of
//! [`GROUP`] members, the layer is *grouped*: blocks of `GROUP` outputs. Otherwise it
//! is *general*: one block per output (`group == 1`) with its own input list, which the
//! same kernels run (they are instantiated for both block widths).
//!
//! Outputs are reordered so that the members of a block sit together: position
//! `p = block·group + o` of a layer's output holds original neuron `outputs[p]`. The next
//! layer's input indices are positions in this order, so activations never need to be
//! permuted between layers; only the final output is mapped back.
//!
//! Layers need not be square: layer `l` is `N_{l-1} × N_l` (a compressed network, whose
//! widths shrink), each layer's grouping is found from its own columns, and a layer of
//! `N_l` outputs has `N_l / group` blocks.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasherDefault, Hasher};

use rayon::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};
use xxhash_rust::xxh3::xxh3_64;

use crate::error::XyError;

/// Outputs per block in a grouped layer.
pub const GROUP: usize = 16;

/// One layer in the XY format.
#[derive(Debug, Clone, PartialEq)]
pub struct XyLayer {
    /// Outputs per block: [`GROUP`] (grouped layer) or 1 (general layer).
    pub group: u32,
    /// `blocks + 1` offsets into `inputs`: block `b` reads
    /// `inputs[block_offsets[b]..block_offsets[b + 1]]`.
    pub block_offsets: Vec<u32>,
    /// Input positions (positions in the previous layer's output order, below its width
    /// `N_{l-1}`; original input columns for the first layer), ascending within each block.
    pub inputs: Vec<u32>,
    /// `values[(block_offsets[b] + r) * group + o]` is the weight from input
    /// `inputs[block_offsets[b] + r]` to output `o` of block `b` (read from the data).
    pub values: Vec<f32>,
    /// `outputs[p]`: the original output neuron at position `p` (a permutation of
    /// `0..N_l`, this layer's width).
    pub outputs: Vec<u32>,
    /// The largest number of maximal runs of consecutive positions in one block's input
    /// list (2 in the challenge's first-cycle "stride" layers, where a block reads two
    /// windows of 16 neighbouring positions).
    pub max_input_runs: u32,
}

impl XyLayer {
    /// Number of blocks.
    pub fn blocks(&self) -> usize {
        self.block_offsets.len().saturating_sub(1)
    }

    /// The largest input list of one block.
    pub fn max_block_inputs(&self) -> usize {
        self.block_offsets
            .windows(2)
            .map(|w| w[1].saturating_sub(w[0]) as usize)
            .max()
            .unwrap_or(0)
    }

    /// Device bytes of this layer's arrays as [`crate::gpu::DeviceXyLayer`] uploads them
    /// (its per-neuron biases apart).
    pub fn device_bytes(&self) -> usize {
        layout_bytes(
            self.blocks(),
            self.inputs.len(),
            stored_values(&self.values).0.len(),
        )
    }

    /// Whether this layer has blocks of [`GROUP`] outputs.
    pub fn is_grouped(&self) -> bool {
        self.group as usize == GROUP
    }

    /// The number of outputs `N_l` (`blocks · group`).
    pub fn width(&self) -> usize {
        self.outputs.len()
    }

    /// Evaluates this layer on the CPU for one sample: `y_in` is indexed by input position
    /// (length `N_{l-1}`); the result (length `N_l`) is indexed by output position,
    /// `out[b·group + o] = min(max(Σ_r y_in[input r]·value(r, o) + bias, 0), upper)`.
    ///
    /// Zero inputs are skipped. Meant for tests and as the format's executable definition.
    ///
    /// # Panics
    /// When `y_in` is shorter than the largest input position (a caller bug), or when the
    /// layer breaks the format's invariants (see [`XyNetwork::validate`]).
    pub fn apply(&self, y_in: &[f32], bias: f32, upper: f32) -> Vec<f32> {
        self.apply_with(y_in, |_| bias, upper)
    }

    /// [`Self::apply`] with a bias per output position: output position `p` gets
    /// `position_biases[p]` (a trained network's biases put into position order by
    /// [`Self::position_biases`]).
    ///
    /// # Panics
    /// As [`Self::apply`], and when `position_biases` has fewer than `N_l` values.
    pub fn apply_biased(&self, y_in: &[f32], position_biases: &[f32], upper: f32) -> Vec<f32> {
        assert!(
            position_biases.len() >= self.width(),
            "{} biases for {} outputs",
            position_biases.len(),
            self.width()
        );
        self.apply_with(y_in, |p| position_biases[p], upper)
    }

    /// A bias per output neuron (`biases[k]` for original neuron `k`, `N_l` values) in
    /// this layer's position order: `out[p] = biases[outputs[p]]`, what the kernels read
    /// for position `p`. `None` when `biases` does not have `N_l` values.
    pub fn position_biases(&self, biases: &[f32]) -> Option<Vec<f32>> {
        spdnn_cuda::rows::in_position_order(biases, &self.outputs)
    }

    /// The evaluation of [`Self::apply`] with the bias of position `p` from `bias_of(p)`.
    fn apply_with(&self, y_in: &[f32], bias_of: impl Fn(usize) -> f32, upper: f32) -> Vec<f32> {
        let group = self.group as usize;
        let mut out = vec![0f32; self.blocks() * group];
        let mut sums = vec![0f32; group];
        for (block, range) in self.block_offsets.windows(2).enumerate() {
            sums.fill(0.0);
            for slot in range[0] as usize..range[1] as usize {
                let y = y_in[self.inputs[slot] as usize];
                if y == 0.0 {
                    continue;
                }
                let weights = &self.values[slot * group..(slot + 1) * group];
                for (sum, &weight) in sums.iter_mut().zip(weights) {
                    *sum += y * weight;
                }
            }
            for (o, (slot, &sum)) in out[block * group..(block + 1) * group]
                .iter_mut()
                .zip(&sums)
                .enumerate()
            {
                *slot = clip(sum + bias_of(block * group + o), upper);
            }
        }
        out
    }

    /// Checks this layer against the format's invariants for `inputs` input positions (the
    /// width before it); its width is `outputs.len()`. `layer` is its 1-based number, used
    /// in the message.
    fn validate(&self, layer: usize, inputs: usize) -> Result<(), XyError> {
        let invalid = |message: String| XyError::Invalid(format!("layer {layer}: {message}"));
        let group = self.group as usize;
        let width = self.width();
        if group != 1 && group != GROUP {
            return Err(invalid(format!("group {group} is neither 1 nor {GROUP}")));
        }
        if width == 0 || u32::try_from(width).is_err() {
            return Err(invalid(format!(
                "{width} outputs (the format needs 1 ≤ outputs < 2^32)"
            )));
        }
        if self.block_offsets.is_empty() {
            return Err(invalid("no block offsets".into()));
        }
        if self.blocks().checked_mul(group) != Some(width) {
            return Err(invalid(format!(
                "{} blocks of {group} do not make its {width} outputs",
                self.blocks()
            )));
        }
        if self.block_offsets[0] != 0
            || self.block_offsets.last().map(|&end| end as usize) != Some(self.inputs.len())
        {
            return Err(invalid(format!(
                "block offsets must run from 0 to the {} inputs",
                self.inputs.len()
            )));
        }
        if let Some(block) = self.block_offsets.windows(2).position(|w| w[0] > w[1]) {
            return Err(invalid(format!("block offsets decrease at block {block}")));
        }
        if self.inputs.len().checked_mul(group) != Some(self.values.len()) {
            return Err(invalid(format!(
                "{} values for {} inputs of blocks of {group}",
                self.values.len(),
                self.inputs.len()
            )));
        }
        if let Some(input) = self.inputs.iter().find(|&&p| p as usize >= inputs) {
            return Err(invalid(format!(
                "input position {input} is not below N = {inputs}, the width before the layer"
            )));
        }
        if let Some(block) = self.block_offsets.windows(2).position(|w| {
            self.inputs[w[0] as usize..w[1] as usize]
                .windows(2)
                .any(|pair| pair[0] >= pair[1])
        }) {
            return Err(invalid(format!(
                "inputs of block {block} are not increasing"
            )));
        }
        if let Some(value) = self.values.iter().find(|v| !v.is_finite()) {
            return Err(invalid(format!("value {value} is not finite")));
        }
        if !is_permutation(&self.outputs, width) {
            return Err(invalid(format!(
                "outputs are not a permutation of 0..{width}"
            )));
        }
        let runs = max_input_runs(&self.block_offsets, &self.inputs);
        if runs != self.max_input_runs {
            return Err(invalid(format!(
                "max_input_runs is {} but the inputs have {runs}",
                self.max_input_runs
            )));
        }
        Ok(())
    }
}

/// A whole network in the XY format.
#[derive(Debug, Clone, PartialEq)]
pub struct XyNetwork {
    /// The input width `N_0` (layer 1's rows; every layer's N in a square network). The
    /// width after layer `l` is its [`XyLayer::width`].
    pub neurons: usize,
    /// One entry per layer.
    pub layers: Vec<XyLayer>,
}

impl XyNetwork {
    /// Converts `layers` (layer `l` is `N_{l-1} × N_l`, row = input neuron, column =
    /// output neuron; all `N × N` in the challenge's networks) to the XY format, in
    /// parallel over layers: first every layer's output order and blocks (inputs still
    /// original ids, all layers independent), then every layer's inputs renumbered to
    /// positions in its predecessor's order and re-sorted per block.
    ///
    /// Deterministic: the result depends only on `layers`, not on the thread count.
    ///
    /// Errors when there are no layers, when a layer's rows are not the previous layer's
    /// columns, or when a width is 0 or does not fit `u32`.
    pub fn prepare(layers: &[Csr]) -> Result<XyNetwork, XyError> {
        let neurons = check_layers(layers)?[0];
        let mut prepared: Vec<XyLayer> = layers.par_iter().map(order_layer).collect();
        let orders: Vec<Vec<u32>> = prepared
            .iter_mut()
            .map(|layer| std::mem::take(&mut layer.outputs))
            .collect();
        prepared
            .par_iter_mut()
            .enumerate()
            .for_each(|(index, layer)| {
                if index > 0 {
                    renumber_inputs(layer, &orders[index - 1]);
                }
                layer.max_input_runs = max_input_runs(&layer.block_offsets, &layer.inputs);
            });
        for (layer, outputs) in prepared.iter_mut().zip(orders) {
            layer.outputs = outputs;
        }
        Ok(XyNetwork {
            neurons,
            layers: prepared,
        })
    }

    /// The widths `N_0, N_1, …, N_L`: the input's, then each layer's outputs.
    pub fn widths(&self) -> Vec<usize> {
        std::iter::once(self.neurons)
            .chain(self.layers.iter().map(XyLayer::width))
            .collect()
    }

    /// The output width `N_L` (the input width without layers).
    pub fn output_width(&self) -> usize {
        self.layers.last().map_or(self.neurons, XyLayer::width)
    }

    /// The widest of the input and every layer's outputs (what activation buffers hold).
    pub fn widest(&self) -> usize {
        self.widths().into_iter().max().unwrap_or(0)
    }

    /// Maps rows ordered by the last layer's output positions back to original neuron
    /// order: `out[outputs[p]] = last_positions[p]`. `last_positions` holds one or more
    /// rows of `N_L` values (the last layer's width), one after the other.
    ///
    /// # Panics
    /// When the network has no layers or `last_positions.len()` is not a multiple of
    /// `N_L`.
    pub fn to_original(&self, last_positions: &[f32]) -> Vec<f32> {
        let outputs = &self
            .layers
            .last()
            .expect("an XyNetwork has at least one layer")
            .outputs;
        assert!(
            !outputs.is_empty() && last_positions.len().is_multiple_of(outputs.len()),
            "{} values are not rows of N_L = {}",
            last_positions.len(),
            outputs.len()
        );
        let mut original = vec![0f32; last_positions.len()];
        for (row, positions) in original
            .chunks_exact_mut(outputs.len())
            .zip(last_positions.chunks_exact(outputs.len()))
        {
            for (&neuron, &value) in outputs.iter().zip(positions) {
                row[neuron as usize] = value;
            }
        }
        original
    }

    /// Checks every invariant of the format: at least one layer, `N_0` and every width
    /// from 1 to `2^32 − 1`, `group ∈ {1, GROUP}`, `blocks · group = N_l` (the layer's
    /// `outputs.len()`), offsets non-decreasing from 0 to `inputs.len()`, inputs below
    /// `N_{l-1}` and increasing within a block, `values.len() = inputs.len() · group`,
    /// finite values, `outputs` a permutation of `0..N_l` and `max_input_runs` as the
    /// inputs say.
    pub fn validate(&self) -> Result<(), XyError> {
        if self.neurons == 0 || u32::try_from(self.neurons).is_err() {
            return Err(XyError::Neurons(self.neurons));
        }
        if self.layers.is_empty() {
            return Err(XyError::NoLayers);
        }
        let mut inputs = self.neurons;
        for (index, layer) in self.layers.iter().enumerate() {
            layer.validate(index + 1, inputs)?;
            inputs = layer.width();
        }
        Ok(())
    }
}

/// `v` clipped to `[0, upper]`, with `+0.0` for every value that is not positive.
fn clip(value: f32, upper: f32) -> f32 {
    if value > 0.0 { value.min(upper) } else { 0.0 }
}

/// Whether `values` is a permutation of `0..n`.
fn is_permutation(values: &[u32], n: usize) -> bool {
    if values.len() != n {
        return false;
    }
    let mut seen = vec![false; n];
    values.iter().all(|&v| {
        let fresh = seen.get(v as usize) == Some(&false);
        if fresh {
            seen[v as usize] = true;
        }
        fresh
    })
}

/// The widths `N_0, …, N_L` of a chain of layers, or the error naming the first layer
/// that breaks the rules (rows not the previous layer's columns, a width of 0 or ≥ 2^32).
pub(crate) fn check_layers(layers: &[Csr]) -> Result<Vec<usize>, XyError> {
    let first = layers.first().ok_or(XyError::NoLayers)?;
    let neurons = first.nrows();
    if neurons == 0 || u32::try_from(neurons).is_err() {
        return Err(XyError::Neurons(neurons));
    }
    let mut widths = Vec::with_capacity(layers.len() + 1);
    widths.push(neurons);
    for (index, layer) in layers.iter().enumerate() {
        let previous = widths[index];
        if layer.nrows() != previous {
            return Err(XyError::LayerShape {
                layer: index + 1,
                rows: layer.nrows(),
                cols: layer.ncols(),
                previous,
            });
        }
        if layer.ncols() == 0 || u32::try_from(layer.ncols()).is_err() {
            return Err(XyError::Outputs {
                layer: index + 1,
                cols: layer.ncols(),
            });
        }
        widths.push(layer.ncols());
    }
    Ok(widths)
}

/// The number of maximal runs of consecutive positions in an ascending list.
fn input_runs(list: &[u32]) -> u32 {
    match list.first() {
        None => 0,
        Some(_) => {
            1 + list
                .windows(2)
                .filter(|w| w[1] != w[0].wrapping_add(1))
                .count() as u32
        }
    }
}

/// The largest [`input_runs`] of one block (0 when no block has inputs).
///
/// `block_offsets` must be non-decreasing and end at most at `inputs.len()`.
pub(crate) fn max_input_runs(block_offsets: &[u32], inputs: &[u32]) -> u32 {
    block_offsets
        .windows(2)
        .map(|w| input_runs(&inputs[w[0] as usize..w[1] as usize]))
        .max()
        .unwrap_or(0)
}

/// The columns of a layer: output `k` reads the inputs
/// `inputs[offsets[k]..offsets[k + 1]]` (ascending original ids) with `values` alongside.
struct Columns {
    offsets: Vec<u32>,
    inputs: Vec<u32>,
    values: Vec<f32>,
}

impl Columns {
    /// The transpose of `layer` by a counting sort over its columns.
    fn of(layer: &Csr) -> Self {
        let outputs = layer.ncols();
        let mut offsets = vec![0u32; outputs + 1];
        for &col in layer.col_indices() {
            offsets[col as usize + 1] += 1;
        }
        for k in 0..outputs {
            offsets[k + 1] += offsets[k];
        }
        let mut next = offsets[..outputs].to_vec();
        let nnz = layer.col_indices().len();
        let mut inputs = vec![0u32; nnz];
        let mut values = vec![0f32; nnz];
        for (row, range) in layer.row_offsets().windows(2).enumerate() {
            let entries = range[0] as usize..range[1] as usize;
            for (&col, &value) in layer.col_indices()[entries.clone()]
                .iter()
                .zip(&layer.values()[entries])
            {
                let slot = &mut next[col as usize];
                inputs[*slot as usize] = row as u32;
                values[*slot as usize] = value;
                *slot += 1;
            }
        }
        Self {
            offsets,
            inputs,
            values,
        }
    }

    fn range(&self, output: usize) -> std::ops::Range<usize> {
        self.offsets[output] as usize..self.offsets[output + 1] as usize
    }

    fn inputs_of(&self, output: usize) -> &[u32] {
        &self.inputs[self.range(output)]
    }

    fn values_of(&self, output: usize) -> &[f32] {
        &self.values[self.range(output)]
    }
}

/// A `Hasher` for keys that already are hashes: it passes the `u64` through.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// No class: the end of a chain of classes sharing one hash.
const NO_CLASS: u32 = u32::MAX;

/// The classes of outputs with identical input lists: `class_of[k]` for every output,
/// classes numbered in order of their smallest member, and the size of each class.
fn input_set_classes(columns: &Columns, outputs: usize) -> (Vec<u32>, Vec<u32>) {
    let mut class_with_hash: HashMap<u64, u32, BuildHasherDefault<PassThrough>> =
        HashMap::with_capacity_and_hasher(outputs / GROUP + 1, Default::default());
    // Per class: its first member and the next class whose list has the same hash.
    let mut first_member: Vec<u32> = Vec::new();
    let mut next_same_hash: Vec<u32> = Vec::new();
    let mut class_of = Vec::with_capacity(outputs);
    for output in 0..outputs {
        let list = columns.inputs_of(output);
        let hash = xxh3_64(bytemuck::cast_slice(list));
        let new_class = first_member.len() as u32;
        let class = match class_with_hash.entry(hash) {
            Entry::Vacant(entry) => {
                entry.insert(new_class);
                new_class
            }
            Entry::Occupied(entry) => {
                let mut class = *entry.get();
                loop {
                    if columns.inputs_of(first_member[class as usize] as usize) == list {
                        break class;
                    }
                    let next = next_same_hash[class as usize];
                    if next == NO_CLASS {
                        next_same_hash[class as usize] = new_class;
                        break new_class;
                    }
                    class = next;
                }
            }
        };
        if class == new_class {
            first_member.push(output as u32);
            next_same_hash.push(NO_CLASS);
        }
        class_of.push(class);
    }
    let mut sizes = vec![0u32; first_member.len()];
    for &class in &class_of {
        sizes[class as usize] += 1;
    }
    (class_of, sizes)
}

/// A layer with its output order, blocks and values, its inputs still original input
/// ids (ascending within each block) and `max_input_runs` not yet set.
///
/// The grouping is found in two passes over the rows, without a transpose: a
/// commutative hash of every output's input list proposes the classes, and
/// [`grouped_from_rows`] confirms them exactly while it builds the blocks. Only when
/// the proposal is wrong (a hash collision) are the classes computed from the columns.
fn order_layer(layer: &Csr) -> XyLayer {
    let outputs = layer.ncols();
    if outputs.is_multiple_of(GROUP) {
        let (counts, class_of, sizes) = proposed_classes(layer);
        if !sizes_are_groups(&sizes) {
            // Lists with one hash include all identical ones, so a class that is not a
            // multiple of GROUP contains a true class that is not either.
            return general_layer(Columns::of(layer));
        }
        if let Some(grouped) = grouped_from_rows(layer, &counts, &class_of, &sizes) {
            return grouped;
        }
        let columns = Columns::of(layer);
        let (class_of, sizes) = input_set_classes(&columns, outputs);
        if sizes_are_groups(&sizes) {
            return grouped_layer(&columns, &class_of, &sizes);
        }
        return general_layer(columns);
    }
    general_layer(Columns::of(layer))
}

/// The one value every weight of `values` has, bit for bit (`None` when empty or when two
/// differ). The challenge's layers (RadiX-Net) have one weight value; trained and random
/// networks do not.
pub fn shared_value(values: &[f32]) -> Option<f32> {
    let (first, rest) = values.split_first()?;
    rest.iter()
        .all(|v| v.to_bits() == first.to_bits())
        .then_some(*first)
}

/// The values a layer keeps on the device and the kernels' step through them (they read
/// `values[entry × step]`): the first alone and step 0 when every value is the same bit for
/// bit ([`shared_value`]), otherwise all of them and step 1. One pass over the values.
pub fn stored_values(values: &[f32]) -> (&[f32], u32) {
    match shared_value(values) {
        Some(_) => (&values[..1], 0),
        None => (values, 1),
    }
}

/// Device bytes of a layer of `blocks` blocks, `inputs` input entries and `values` values:
/// the offsets, and the inputs and values (one element each when empty, as
/// `upload_nonempty` allocates), 32-bit each.
pub fn layout_bytes(blocks: usize, inputs: usize, values: usize) -> usize {
    4 * (blocks + 1) + 4 * inputs.max(1) + 4 * values.max(1)
}

/// The device bytes [`XyNetwork::prepare`] gives `layer` ([`XyLayer::device_bytes`]),
/// without building it: its layout is grouped exactly when the outputs are a multiple of
/// [`GROUP`] and the proposed classes of identical input lists ([`proposed_classes`], the
/// first pass of [`order_layer`]) all have a multiple of [`GROUP`] members; a grouped layer
/// stores each block's inputs once for its `GROUP` outputs (`nnz / GROUP` entries), a
/// general one every entry. The proposal merges different lists only on a 64-bit hash
/// collision (then the grouping comes from the exact classes, which can differ).
pub fn layer_device_bytes(layer: &Csr) -> usize {
    4 * layer_device_arrays(layer).iter().sum::<usize>()
}

/// The 32-bit elements of each array [`layer_device_bytes`] counts: the block offsets, the
/// inputs and the values (at least one each, as uploaded; one value when every weight is
/// the same, [`stored_values`]: the layout holds the CSR's values, rearranged).
pub fn layer_device_arrays(layer: &Csr) -> [usize; 3] {
    let (outputs, nnz) = (layer.ncols(), layer.nnz());
    let grouped = outputs.is_multiple_of(GROUP) && sizes_are_groups(&proposed_classes(layer).2);
    let (blocks, inputs) = if grouped {
        (outputs / GROUP, nnz / GROUP)
    } else {
        (outputs, nnz)
    };
    [
        blocks + 1,
        inputs.max(1),
        stored_values(layer.values()).0.len().max(1),
    ]
}

/// Whether every class size is a multiple of [`GROUP`].
fn sizes_are_groups(sizes: &[u32]) -> bool {
    sizes
        .iter()
        .all(|&size| (size as usize).is_multiple_of(GROUP))
}

/// The general layout: one block per output, in original order.
fn general_layer(columns: Columns) -> XyLayer {
    let outputs = columns.offsets.len() - 1;
    XyLayer {
        group: 1,
        block_offsets: columns.offsets,
        inputs: columns.inputs,
        values: columns.values,
        outputs: (0..outputs as u32).collect(),
        max_input_runs: 0,
    }
}

/// The SplitMix64 finaliser: a bijection of `u64` that spreads every input bit.
fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Proposed classes of outputs with identical input lists: outputs whose lists have the
/// same length and the same sum of `mix64(input)` share a class. Identical lists always
/// share one; different lists share one only on a 64-bit collision. Classes are numbered
/// in order of their smallest member. Returns the length of every output's list,
/// `class_of` per output and the class sizes.
fn proposed_classes(layer: &Csr) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let outputs = layer.ncols();
    let mut sums = vec![0u64; outputs];
    let mut counts = vec![0u32; outputs];
    for (row, range) in layer.row_offsets().windows(2).enumerate() {
        let term = mix64(row as u64);
        for &col in &layer.col_indices()[range[0] as usize..range[1] as usize] {
            sums[col as usize] = sums[col as usize].wrapping_add(term);
            counts[col as usize] += 1;
        }
    }
    let mut class_with_key: HashMap<u64, u32, BuildHasherDefault<PassThrough>> =
        HashMap::with_capacity_and_hasher(outputs / GROUP + 1, Default::default());
    let mut sizes: Vec<u32> = Vec::new();
    let class_of = sums
        .iter()
        .zip(&counts)
        .map(|(&sum, &count)| {
            let key = mix64(sum ^ mix64(u64::from(count) ^ 0x5eed));
            let class = *class_with_key.entry(key).or_insert_with(|| {
                sizes.push(0);
                sizes.len() as u32 - 1
            });
            sizes[class as usize] += 1;
            class
        })
        .collect();
    (counts, class_of, sizes)
}

/// The order of the outputs when classes are laid out one after the other (in class
/// order), members ascending: `outputs[position]`.
fn class_order(class_of: &[u32], sizes: &[u32]) -> Vec<u32> {
    let mut next_position = Vec::with_capacity(sizes.len());
    let mut position = 0u32;
    for &size in sizes {
        next_position.push(position);
        position += size;
    }
    let mut outputs = vec![0u32; class_of.len()];
    for (output, &class) in class_of.iter().enumerate() {
        let slot = &mut next_position[class as usize];
        outputs[*slot as usize] = output as u32;
        *slot += 1;
    }
    outputs
}

/// The grouped layout of the proposed classes, built in one pass over the rows of
/// `layer`, or `None` when a proposed class holds different input lists.
///
/// The check is exact. Entries of a block arrive row by row and fill its slots 16 at a
/// time; when every slot's entries come from one row, each slot holds one row read by
/// all 16 distinct members, and as every member has as many entries as slots, all
/// members read exactly the slots' rows. Consecutive blocks of a class are compared.
fn grouped_from_rows(
    layer: &Csr,
    counts: &[u32],
    class_of: &[u32],
    sizes: &[u32],
) -> Option<XyLayer> {
    let outputs = class_order(class_of, sizes);
    let mut position_of = vec![0u32; outputs.len()];
    for (position, &neuron) in outputs.iter().enumerate() {
        position_of[neuron as usize] = position as u32;
    }
    let blocks = outputs.len() / GROUP;
    let mut block_offsets = Vec::with_capacity(blocks + 1);
    block_offsets.push(0u32);
    let mut total = 0u32;
    for members in outputs.chunks_exact(GROUP) {
        let len = counts[members[0] as usize];
        if members.iter().any(|&member| counts[member as usize] != len) {
            return None;
        }
        total += len;
        block_offsets.push(total);
    }
    let mut inputs = vec![0u32; total as usize];
    let mut values = vec![0f32; total as usize * GROUP];
    let mut filled = vec![0u32; blocks];
    for (row, range) in layer.row_offsets().windows(2).enumerate() {
        let entries = range[0] as usize..range[1] as usize;
        for (&col, &value) in layer.col_indices()[entries.clone()]
            .iter()
            .zip(&layer.values()[entries])
        {
            let position = position_of[col as usize] as usize;
            let (block, o) = (position / GROUP, position % GROUP);
            let done = filled[block] as usize;
            let slot = block_offsets[block] as usize + done / GROUP;
            if done.is_multiple_of(GROUP) {
                inputs[slot] = row as u32;
            } else if inputs[slot] != row as u32 {
                return None;
            }
            values[slot * GROUP + o] = value;
            filled[block] += 1;
        }
    }
    let mut first_block = 0;
    for &size in sizes {
        let class_blocks = size as usize / GROUP;
        let block_inputs =
            |b: usize| &inputs[block_offsets[b] as usize..block_offsets[b + 1] as usize];
        if (first_block + 1..first_block + class_blocks)
            .any(|b| block_inputs(b) != block_inputs(first_block))
        {
            return None;
        }
        first_block += class_blocks;
    }
    Some(XyLayer {
        group: GROUP as u32,
        block_offsets,
        inputs,
        values,
        outputs,
        max_input_runs: 0,
    })
}

/// The grouped layout from the columns and exact classes: classes in order, members
/// ascending, cut into blocks of `GROUP`.
fn grouped_layer(columns: &Columns, class_of: &[u32], sizes: &[u32]) -> XyLayer {
    let outputs = class_order(class_of, sizes);
    let blocks = outputs.len() / GROUP;
    let mut block_offsets = Vec::with_capacity(blocks + 1);
    block_offsets.push(0u32);
    let mut inputs = Vec::with_capacity(columns.inputs.len() / GROUP);
    for members in outputs.chunks_exact(GROUP) {
        inputs.extend_from_slice(columns.inputs_of(members[0] as usize));
        block_offsets.push(inputs.len() as u32);
    }
    let mut values = vec![0f32; inputs.len() * GROUP];
    for (block, members) in outputs.chunks_exact(GROUP).enumerate() {
        let start = block_offsets[block] as usize * GROUP;
        for (o, &member) in members.iter().enumerate() {
            for (r, &value) in columns.values_of(member as usize).iter().enumerate() {
                values[start + r * GROUP + o] = value;
            }
        }
    }
    XyLayer {
        group: GROUP as u32,
        block_offsets,
        inputs,
        values,
        outputs,
        max_input_runs: 0,
    }
}

/// Replaces the original input ids of `layer` by their positions in `previous_outputs`
/// (the previous layer's output order) and re-sorts each block's inputs, moving each
/// input's row of values along.
fn renumber_inputs(layer: &mut XyLayer, previous_outputs: &[u32]) {
    if previous_outputs
        .iter()
        .enumerate()
        .all(|(position, &neuron)| position == neuron as usize)
    {
        return;
    }
    let mut position_of = vec![0u32; previous_outputs.len()];
    for (position, &neuron) in previous_outputs.iter().enumerate() {
        position_of[neuron as usize] = position as u32;
    }
    let group = layer.group as usize;
    let XyLayer {
        block_offsets,
        inputs,
        values,
        ..
    } = layer;
    let mut order: Vec<(u32, u32)> = Vec::new();
    let mut block_values: Vec<f32> = Vec::new();
    for range in block_offsets.windows(2) {
        let (start, end) = (range[0] as usize, range[1] as usize);
        let block_inputs = &mut inputs[start..end];
        for input in block_inputs.iter_mut() {
            *input = position_of[*input as usize];
        }
        if block_inputs.windows(2).all(|w| w[0] < w[1]) {
            continue;
        }
        order.clear();
        order.extend(
            block_inputs
                .iter()
                .enumerate()
                .map(|(r, &position)| (position, r as u32)),
        );
        order.sort_unstable();
        let block_rows = &mut values[start * group..end * group];
        block_values.clear();
        block_values.extend_from_slice(block_rows);
        for (t, &(position, r)) in order.iter().enumerate() {
            block_inputs[t] = position;
            let r = r as usize;
            block_rows[t * group..(t + 1) * group]
                .copy_from_slice(&block_values[r * group..(r + 1) * group]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outputs `0..16` read inputs {0, 1}, outputs `16..32` read {2, 3}; values distinct.
    fn two_groups() -> Csr {
        let mut triplets = Vec::new();
        for k in 0..32u32 {
            let first = if k < 16 { 0 } else { 2 };
            for j in [first, first + 1] {
                triplets.push((j, k, (k * 4 + j) as f32));
            }
        }
        Csr::from_triplets(32, 32, &triplets).unwrap()
    }

    #[test]
    fn a_layer_of_one_weight_value_stores_it_once() {
        assert_eq!(shared_value(&[]), None);
        assert_eq!(shared_value(&[0.25, 0.25, 0.25]), Some(0.25));
        // Bit for bit: -0.0 is not 0.0, and any differing value keeps them all.
        assert_eq!(shared_value(&[0.0, -0.0]), None);
        assert_eq!(shared_value(&[0.25, 0.25, 0.5]), None);
        assert_eq!(
            stored_values(&[0.25, 0.25, 0.5]),
            (&[0.25, 0.25, 0.5][..], 1)
        );
        assert_eq!(stored_values(&[-1.5, -1.5]), (&[-1.5][..], 0));

        // The challenge's layers share one value: one stored, and the model agrees.
        let challenge = spdnn_sdgc::generator::network(256, 3, 3).unwrap();
        let prepared = XyNetwork::prepare(challenge.layers()).unwrap();
        for (layer, xy) in challenge.layers().iter().zip(&prepared.layers) {
            assert_eq!(layer_device_arrays(layer)[2], 1);
            assert_eq!(layer_device_bytes(layer), xy.device_bytes());
            assert_eq!(
                xy.device_bytes(),
                layout_bytes(xy.blocks(), xy.inputs.len(), 1)
            );
        }
        // Distinct values: every one stored.
        let distinct = two_groups();
        let xy = XyNetwork::prepare(std::slice::from_ref(&distinct)).unwrap();
        assert_eq!(layer_device_arrays(&distinct)[2], 64);
        assert_eq!(
            xy.layers[0].device_bytes(),
            layout_bytes(2, 4, 64),
            "two blocks, two inputs each, 64 values"
        );
    }

    #[test]
    fn rows_path_equals_columns_path_on_generated_layers() {
        let network = spdnn_sdgc::generator::network(256, 8, 3).unwrap();
        for layer in network.layers() {
            let (counts, class_of, sizes) = proposed_classes(layer);
            let fast = grouped_from_rows(layer, &counts, &class_of, &sizes).unwrap();
            let columns = Columns::of(layer);
            let (class_of, sizes) = input_set_classes(&columns, layer.ncols());
            assert_eq!(fast, grouped_layer(&columns, &class_of, &sizes));
        }
    }

    #[test]
    fn a_proposal_that_merges_different_lists_is_rejected() {
        let layer = two_groups();
        let (counts, class_of, sizes) = proposed_classes(&layer);
        assert_eq!(sizes, [16, 16]);
        assert!(grouped_from_rows(&layer, &counts, &class_of, &sizes).is_some());
        // As if both lists had one hash: one class of 32, two blocks with other inputs.
        assert!(grouped_from_rows(&layer, &counts, &[0; 32], &[32]).is_none());
        // Blocks that mix members of both classes.
        let mixed: Vec<u32> = (0..32).map(|k| k % 2).collect();
        assert!(grouped_from_rows(&layer, &counts, &mixed, &[16, 16]).is_none());
    }

    #[test]
    fn a_member_with_a_different_list_of_the_same_length_is_rejected() {
        // Output 5 reads {0, 2} instead of {0, 1}: same length, different list.
        let triplets: Vec<(u32, u32, f32)> = two_groups()
            .triplets()
            .map(|(j, k, v)| {
                if (j, k) == (1, 5) {
                    (2, 5, v)
                } else {
                    (j, k, v)
                }
            })
            .collect();
        let layer = Csr::from_triplets(32, 32, &triplets).unwrap();
        let (counts, _, _) = proposed_classes(&layer);
        let proposal: Vec<u32> = (0..32).map(|k| u32::from(k >= 16)).collect();
        assert!(grouped_from_rows(&layer, &counts, &proposal, &[16, 16]).is_none());
        // The whole preparation sees 15 + 1 + 16 outputs and falls back to general.
        assert!(!order_layer(&layer).is_grouped());
    }

    #[test]
    fn position_biases_follow_the_output_order() {
        // Even outputs read {0, 1}, odd ones {2, 3}: positions interleave the neurons.
        let mut triplets = Vec::new();
        for k in 0..32u32 {
            let first = if k % 2 == 0 { 0 } else { 2 };
            for j in [first, first + 1] {
                triplets.push((j, k, 1.0 + (k % 3) as f32));
            }
        }
        let layer = order_layer(&Csr::from_triplets(4, 32, &triplets).unwrap());
        assert!(layer.is_grouped());
        assert_eq!(&layer.outputs[..3], &[0, 2, 4]);
        let biases: Vec<f32> = (0..32).map(|k| -(k as f32) / 8.0).collect();
        let ordered = layer.position_biases(&biases).unwrap();
        for (p, &neuron) in layer.outputs.iter().enumerate() {
            assert_eq!(ordered[p], biases[neuron as usize]);
        }
        assert_eq!(layer.position_biases(&biases[1..]), None);
        // apply_biased: output k = clip(y·W[:, k] + b[k]) once back in neuron order.
        let y = [1.0f32, 0.5, 2.0, 0.0];
        let out = layer.apply_biased(&y, &ordered, 32.0);
        for (p, &k) in layer.outputs.iter().enumerate() {
            let sum: f32 = triplets
                .iter()
                .filter(|t| t.1 == k)
                .map(|t| y[t.0 as usize] * t.2)
                .sum();
            assert_eq!(out[p], clip(sum + biases[k as usize], 32.0), "neuron {k}");
        }
        assert_eq!(
            layer.apply(&y, -0.5, 32.0),
            layer.apply_biased(&y, &[-0.5; 32], 32.0)
        );
    }

    #[test]
    fn input_runs_count_maximal_consecutive_runs() {
        assert_eq!(input_runs(&[]), 0);
        assert_eq!(input_runs(&[7]), 1);
        assert_eq!(input_runs(&[1, 2, 3, 8, 9, 20]), 3);
        assert_eq!(max_input_runs(&[0, 0, 3, 5], &[1, 2, 3, 4, 6]), 2);
        assert_eq!(max_input_runs(&[0, 0], &[]), 0);
    }

    #[test]
    fn validate_names_the_broken_invariant() {
        let network = XyNetwork::prepare(&[two_groups(), two_groups()]).unwrap();
        network.validate().unwrap();
        let broken = |edit: &dyn Fn(&mut XyLayer)| {
            let mut copy = network.clone();
            edit(&mut copy.layers[1]);
            copy.validate().unwrap_err().to_string()
        };
        assert!(broken(&|l| l.group = 8).contains("layer 2: group 8"));
        assert!(broken(&|l| l.outputs[0] = 1).contains("permutation"));
        assert!(broken(&|l| l.inputs[0] = 99).contains("not below N"));
        assert!(broken(&|l| l.inputs.swap(0, 1)).contains("not increasing"));
        assert!(broken(&|l| l.values[3] = f32::NAN).contains("not finite"));
        assert!(broken(&|l| l.max_input_runs = 9).contains("max_input_runs"));
        assert!(broken(&|l| l.block_offsets[1] = 5).contains("decrease"));
        assert!(broken(&|l| l.block_offsets.clear()).contains("no block offsets"));
        assert!(
            broken(&|l| {
                l.values.pop();
            })
            .contains("values")
        );
    }
}
