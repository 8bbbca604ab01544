//! The layers of a network in the H&P layout: the output orders that chain them (grouped
//! or the paper's identity), their construction layer by layer, the whole network on the
//! host, and totals over its layers.

use std::collections::HashMap;

use rayon::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};

use super::{HpError, HpLayer, Layout, Params, WARP, check_params, check_width};

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
