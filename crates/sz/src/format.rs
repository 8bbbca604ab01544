//! A layer laid out for `kernels-cu/sz.cu`: the dense blocks as a transposed BCSR of the
//! reordered layer (block rows = tiles of 16 output positions, block columns = chunks of
//! 16 input slots) with their bf16 tensor-core fragments, the gather map of every input
//! slot into the previous layer's positions (the fused permutation), and the CSR rest.
//!
//! **Fragments.** For `mma.m16n8k16.row.col` with `.bf16` operands the B operand (16
//! inputs × 8 outputs) of lane `λ` (group `g = λ >> 2`, thread `q = λ & 3`) is the pair of
//! 32-bit registers, two bf16 each, `{B[2q][g], B[2q+1][g]}`, `{B[2q+8][g], B[2q+9][g]}`
//! (PTX ISA, "Matrix fragments for mma.m16n8k16", low half first; the same layout as
//! `.f16`). The weights are scaled by `2^t` ([`SzLayer::weight_exponent`]) so that the
//! largest is near 2^15 and split into bf16 terms ([`crate::half::split`]); the layer keeps
//! as many terms as its scaled block weights need ([`SzLayer::weight_terms`]: 1 when every
//! one is a bf16 value, as the challenge's 1/16 is, up to 3). Term `j` of block `b`'s
//! output half `h` (outputs `8h..8h+8`) is stored as 32 lanes × 2 words at word
//! `(((2b + h)·terms + j)·32 + λ)·2`, so a warp reads it with one 8-byte load per lane and
//! the terms of a block half lie together.

use rayon::prelude::*;
use spdnn_formats::{Bcsr, Csr, SparseMatrix};

use crate::half::{SCALE_LIMIT, TERMS, pow2, scale_exponent, split, terms};
use crate::reorder::{CHUNK, Reordering, TILE, inverse};

/// 32-bit words of fragments per block: 2 halves × 32 lanes × 2 words.
pub const FRAG_WORDS_PER_BLOCK: usize = 2 * 32 * 2;

/// One layer as the kernel reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SzLayer {
    /// `N_{l-1}`: positions of the activations read.
    pub inputs: usize,
    /// `N_l`: positions written.
    pub outputs: usize,
    /// Output position → output neuron.
    pub order: Vec<u32>,
    /// The dense blocks: the reordered layer transposed (row = output position, column =
    /// input slot) in 16 × 16 blocks, row-major within a block (`[output][input]`).
    pub dense: Bcsr,
    /// Input slot → position in the previous layer's output order (`chunks · 16` entries;
    /// slots past `N_{l-1}` point at position 0 with zero weights).
    pub fuse: Vec<u32>,
    /// The blocks' weights are scaled by `2^weight_exponent` for the tensor cores.
    pub weight_exponent: i32,
    /// bf16 terms of the scaled block weights, 1 to [`TERMS`] (0 without blocks): the
    /// most any weight needs ([`crate::half::terms`]). Each block half takes
    /// `3 · weight_terms` MMAs (three activation terms).
    pub weight_terms: usize,
    /// bf16 fragments of the scaled weights' terms (`blocks · weight_terms ·`
    /// [`FRAG_WORDS_PER_BLOCK`] words).
    pub frags: Vec<u32>,
    /// The rest in fp32: row = output position, column = position of the previous layer.
    pub rest: Csr,
}

impl SzLayer {
    /// Tiles of 16 output positions.
    pub fn tiles(&self) -> usize {
        self.outputs.div_ceil(TILE)
    }

    /// Dense blocks.
    pub fn blocks(&self) -> usize {
        self.dense.n_blocks()
    }

    /// Where each tile's blocks start (tiles + 1 entries).
    pub fn tile_blocks(&self) -> &[u32] {
        self.dense.block_row_offsets()
    }

    /// Each block's input chunk.
    pub fn block_chunks(&self) -> &[u32] {
        self.dense.block_col_indices()
    }

    /// Nonzeros on the tensor cores.
    pub fn dense_nnz(&self) -> usize {
        self.dense.nnz()
    }

    /// The bf16 B fragment of weight term `j` of block `b`, half `h`, lane `lane`: two
    /// words.
    pub fn fragment(&self, b: usize, h: usize, j: usize, lane: usize) -> [u32; 2] {
        let i = (((2 * b + h) * self.weight_terms + j) * 32 + lane) * 2;
        [self.frags[i], self.frags[i + 1]]
    }

    /// A bias per output neuron (`biases[k]` for neuron `k`, `N_l` values) in this layer's
    /// output order, the order its epilogue writes: `out[p] = biases[order[p]]`, what the
    /// `sz_layer_neurons_*` kernels read for position `p`. `None` when `biases` does not
    /// have `N_l` values.
    pub fn position_biases(&self, biases: &[f32]) -> Option<Vec<f32>> {
        if self.order.len() != self.outputs {
            return None;
        }
        spdnn_cuda::rows::in_position_order(biases, &self.order)
    }

    /// Device bytes of the layer with the fp32 blocks (T4's CUDA-core warps) or without.
    pub fn device_bytes(&self, with_f32_blocks: bool) -> usize {
        let blocks = self.blocks();
        4 * (self.tiles() + 1 + blocks + self.fuse.len())
            + 4 * self.frags.len()
            + if with_f32_blocks { 4 * 256 * blocks } else { 0 }
            + 4 * (self.outputs + 1)
            + 8 * self.rest.nnz()
    }
}

/// What went wrong laying a layer out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("layer {layer}: {message}")]
pub struct LayoutError {
    /// 1-based layer.
    pub layer: usize,
    /// What is wrong.
    pub message: String,
}

/// Lays out `w` (`N_{l-1} × N_l`, 1-based layer `layer`) by its reordering `r`, reading the
/// activations of the previous layer, whose output order is `previous` (`None`: the
/// network's input, in neuron order). With `dense_allowed` false, or when the block
/// weights cannot be scaled (largest magnitude outside 2^±60), every
/// nonzero goes to the rest.
pub fn build_layer(
    layer: usize,
    w: &Csr,
    r: &Reordering,
    previous: Option<&[u32]>,
    dense_allowed: bool,
) -> Result<SzLayer, LayoutError> {
    let error = |message: String| LayoutError { layer, message };
    let (n_in, n_out) = (w.nrows(), w.ncols());
    r.validate(n_in, n_out).map_err(error)?;
    let previous_position = match previous {
        Some(order) if order.len() != n_in => {
            return Err(error(format!(
                "the previous layer orders {} positions, this layer reads {n_in}",
                order.len()
            )));
        }
        Some(order) => inverse(order),
        None => (0..n_in as u32).collect(),
    };
    let position = inverse(&r.outputs);
    let slot = inverse(&r.inputs);
    let in_block = |t: usize, c: u32| {
        r.chunks[r.tile_blocks[t] as usize..r.tile_blocks[t + 1] as usize]
            .binary_search(&c)
            .is_ok()
    };
    let mut dense = Vec::new();
    let mut rest = Vec::new();
    let mut largest = 0.0f32;
    for (i, o, v) in w.triplets().filter(|t| t.2 != 0.0) {
        let p = position[o as usize];
        let s = slot[i as usize];
        if dense_allowed && in_block(p as usize / TILE, s / CHUNK as u32) {
            largest = largest.max(v.abs());
            dense.push((p, s, v));
        } else {
            rest.push((p, previous_position[i as usize], v));
        }
    }
    let mut weight_exponent = scale_exponent(largest).unwrap_or(0);
    if weight_exponent.abs() > SCALE_LIMIT {
        rest.extend(
            dense
                .drain(..)
                .map(|(p, s, v)| (p, previous_position[r.inputs[s as usize] as usize], v)),
        );
        weight_exponent = 0;
    }
    let bcsr = Bcsr::from_triplets(n_out, n_in, &dense, TILE, CHUNK)
        .map_err(|e| error(format!("dense blocks: {e}")))?;
    if !dense.is_empty() {
        // Each listed block holds a nonzero, so the BCSR has exactly the listed blocks.
        if bcsr.block_row_offsets() != r.tile_blocks || bcsr.block_col_indices() != r.chunks {
            return Err(error(
                "the dense blocks differ from the reordering's (a block without nonzeros)".into(),
            ));
        }
    }
    let rest = Csr::from_triplets(n_out, n_in, &rest).map_err(|e| error(format!("rest: {e}")))?;
    let scale = pow2(weight_exponent);
    let weight_terms = bcsr
        .block_values()
        .iter()
        .map(|&v| terms(v * scale))
        .max()
        .unwrap_or(0)
        .max(usize::from(bcsr.n_blocks() > 0));
    let blocks = bcsr.n_blocks();
    let mut frags = vec![0u32; blocks * weight_terms * FRAG_WORDS_PER_BLOCK];
    for b in 0..blocks {
        let values = bcsr.block(b);
        for h in 0..2 {
            for lane in 0..32 {
                let (g, q) = (lane >> 2, lane & 3);
                let n = 8 * h + g;
                let parts = [2 * q, 2 * q + 1, 2 * q + 8, 2 * q + 9]
                    .map(|k| split(values[n * CHUNK + k] * scale));
                for j in 0..weight_terms {
                    let word = |a: [u16; TERMS], b: [u16; TERMS]| {
                        u32::from(a[j]) | (u32::from(b[j]) << 16)
                    };
                    let i = (((2 * b + h) * weight_terms + j) * 32 + lane) * 2;
                    frags[i] = word(parts[0], parts[1]);
                    frags[i + 1] = word(parts[2], parts[3]);
                }
            }
        }
    }
    let chunks = n_in.div_ceil(CHUNK);
    let fuse = (0..chunks * CHUNK)
        .map(|s| {
            r.inputs
                .get(s)
                .map_or(0, |&i| previous_position[i as usize])
        })
        .collect();
    Ok(SzLayer {
        inputs: n_in,
        outputs: n_out,
        order: r.outputs.clone(),
        dense: bcsr,
        fuse,
        weight_exponent,
        weight_terms,
        frags,
        rest,
    })
}

/// Lays out every layer ([`build_layer`]) and hands each to `sink` in order, building up
/// to `window` layers at a time in parallel (so a long network never sits on the host
/// whole). `dense_allowed(l)` says whether layer `l` (0-based) may use the tensor cores.
pub fn build_layers<E: From<LayoutError>>(
    layers: &[Csr],
    reorderings: &[Reordering],
    dense_allowed: impl Fn(usize) -> bool + Sync,
    window: usize,
    mut sink: impl FnMut(usize, SzLayer) -> Result<(), E>,
) -> Result<(), E> {
    if layers.len() != reorderings.len() {
        return Err(LayoutError {
            layer: 0,
            message: format!(
                "{} reorderings for {} layers",
                reorderings.len(),
                layers.len()
            ),
        }
        .into());
    }
    let window = window.max(1);
    let mut start = 0;
    while start < layers.len() {
        let end = (start + window).min(layers.len());
        let built: Vec<Result<SzLayer, LayoutError>> = (start..end)
            .into_par_iter()
            .map(|l| {
                let previous = l.checked_sub(1).map(|p| reorderings[p].outputs.as_slice());
                build_layer(
                    l + 1,
                    &layers[l],
                    &reorderings[l],
                    previous,
                    dense_allowed(l),
                )
            })
            .collect();
        for (l, layer) in (start..end).zip(built) {
            sink(l, layer?)?;
        }
        start = end;
    }
    Ok(())
}

/// Counts over laid-out layers, for reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LayoutStats {
    /// Layers.
    pub layers: usize,
    /// Dense blocks.
    pub blocks: usize,
    /// Nonzeros in dense blocks.
    pub dense_nnz: usize,
    /// Nonzeros in the rest.
    pub rest_nnz: usize,
    /// Layers whose weights take more than one bf16 term.
    pub split_layers: usize,
    /// Device bytes (without the fp32 blocks).
    pub bytes: usize,
}

impl LayoutStats {
    /// Adds `layer`.
    pub fn add(&mut self, layer: &SzLayer) {
        self.layers += 1;
        self.blocks += layer.blocks();
        self.dense_nnz += layer.dense_nnz();
        self.rest_nnz += layer.rest.nnz();
        self.split_layers += usize::from(layer.weight_terms > 1);
        self.bytes += layer.device_bytes(false);
    }

    /// Share of the nonzeros on the tensor cores.
    pub fn dense_share(&self) -> f64 {
        let all = self.dense_nnz + self.rest_nnz;
        if all == 0 {
            0.0
        } else {
            self.dense_nnz as f64 / all as f64
        }
    }

    /// Mean fill of the dense blocks.
    pub fn fill(&self) -> f64 {
        if self.blocks == 0 {
            0.0
        } else {
            self.dense_nnz as f64 / (256 * self.blocks) as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::half::bf16_to_f32;
    use crate::reorder::reorder_layer;

    fn decode(word: u32) -> [f32; 2] {
        [bf16_to_f32(word as u16), bf16_to_f32((word >> 16) as u16)]
    }

    /// A 40 × 24 layer: a dense 16 × 16 block of dyadic weights, a stray entry, a zero.
    fn small_layer() -> Csr {
        let mut t = Vec::new();
        for i in 0..16u32 {
            for o in 0..16u32 {
                t.push((i + 3, o + 5, ((i * 16 + o) % 13) as f32 / 8.0 - 0.75));
            }
        }
        t.retain(|x| x.2 != 0.0);
        t.push((39, 2, 3.0));
        t.push((38, 3, 0.0));
        Csr::from_triplets(40, 24, &t).unwrap()
    }

    #[test]
    fn fragments_hold_the_block_in_the_ptx_layout() {
        let w = small_layer();
        let r = reorder_layer(&w, 0.5);
        let layer = build_layer(1, &w, &r, None, true).unwrap();
        assert_eq!(layer.blocks(), 1);
        assert_eq!(layer.weight_terms, 1, "dyadic weights are exact in bf16");
        assert_eq!(layer.rest.nnz(), 1, "the stray entry; the zero is dropped");
        assert_eq!(
            layer.dense_nnz() + 1,
            w.values().iter().filter(|v| **v != 0.0).count()
        );
        let scale = f64::from(pow2(-layer.weight_exponent));
        let position = inverse(&r.outputs);
        let slot = inverse(&r.inputs);
        let chunk = layer.block_chunks()[0] as usize;
        // Every weight of the block, read back through the lanes' fragments.
        let mut b = [[0f64; 16]; 16];
        for h in 0..2 {
            for lane in 0..32 {
                let (g, q) = (lane >> 2, lane & 3);
                let [w01, w89] = layer.fragment(0, h, 0, lane);
                let [v0, v1] = decode(w01);
                let [v8, v9] = decode(w89);
                for (k, v) in [
                    (2 * q, v0),
                    (2 * q + 1, v1),
                    (2 * q + 8, v8),
                    (2 * q + 9, v9),
                ] {
                    b[k][8 * h + g] = f64::from(v) * scale;
                }
            }
        }
        for (i, o, v) in w.triplets().filter(|t| t.0 != 39 && t.2 != 0.0) {
            let s = slot[i as usize] as usize;
            assert_eq!(s / 16, chunk);
            let n = position[o as usize] as usize % 16;
            assert_eq!(b[s % 16][n], f64::from(v), "({i}, {o})");
        }
        // The gather map of the first layer is the identity through the input order.
        for (s, &p) in layer.fuse.iter().enumerate() {
            let expect = r.inputs.get(s).copied().unwrap_or(0);
            assert_eq!(p, expect);
        }
    }

    #[test]
    fn position_biases_follow_the_output_order() {
        let w = small_layer();
        let r = reorder_layer(&w, 0.5);
        let layer = build_layer(1, &w, &r, None, true).unwrap();
        assert_ne!(
            layer.order,
            (0..24u32).collect::<Vec<_>>(),
            "the reordering moves outputs"
        );
        let biases: Vec<f32> = (0..24).map(|k| -(k as f32) / 8.0).collect();
        let ordered = layer.position_biases(&biases).unwrap();
        for (p, &neuron) in layer.order.iter().enumerate() {
            assert_eq!(ordered[p], biases[neuron as usize]);
        }
        assert_eq!(layer.position_biases(&biases[1..]), None);
    }

    #[test]
    fn inexact_weights_are_split() {
        let t: Vec<(u32, u32, f32)> = (0..16u32)
            .flat_map(|i| (0..16u32).map(move |o| (i, o, 0.1 + (i * 16 + o) as f32 * 1e-3)))
            .collect();
        let w = Csr::from_triplets(16, 16, &t).unwrap();
        let layer = build_layer(1, &w, &reorder_layer(&w, 0.0), None, true).unwrap();
        assert_eq!(layer.weight_terms, 3);
        assert_eq!(layer.frags.len(), 3 * FRAG_WORDS_PER_BLOCK);
        let scale = pow2(-layer.weight_exponent);
        let mut seen = 0;
        for h in 0..2 {
            for lane in 0..32 {
                let terms: Vec<[u32; 2]> = (0..3).map(|j| layer.fragment(0, h, j, lane)).collect();
                for r in 0..2 {
                    for e in 0..2 {
                        // The three terms sum to the weight exactly.
                        let v: f64 = terms
                            .iter()
                            .map(|t| f64::from(decode(t[r])[e]))
                            .sum::<f64>()
                            * f64::from(scale);
                        let (g, q) = (lane >> 2, lane & 3);
                        let k = 2 * q + e + 8 * r;
                        let n = 8 * h + g;
                        let w = layer.dense.block(0)[n * CHUNK + k];
                        assert_eq!(v, f64::from(w), "lane {lane}, k {k}, n {n}");
                        seen += 1;
                    }
                }
            }
        }
        assert_eq!(seen, 256);
    }

    #[test]
    fn the_rest_reads_previous_positions_and_no_dense_means_all_rest() {
        let w = small_layer();
        let r = reorder_layer(&w, 0.5);
        let previous: Vec<u32> = (0..40u32).rev().collect();
        let layer = build_layer(2, &w, &r, Some(&previous), false).unwrap();
        assert_eq!(layer.blocks(), 0);
        assert_eq!(layer.rest.nnz(), w.nnz() - 1);
        let position = inverse(&r.outputs);
        for (i, o, v) in w.triplets().filter(|t| t.2 != 0.0) {
            let (cols, vals) = layer.rest.row(position[o as usize] as usize);
            let k = cols.binary_search(&(39 - i)).unwrap();
            assert_eq!(vals[k], v);
        }
        let error = build_layer(2, &w, &r, Some(&previous[..10]), true).unwrap_err();
        assert!(error.to_string().contains("layer 2"), "{error}");
    }

    #[test]
    fn weights_out_of_range_go_to_the_rest() {
        let t: Vec<(u32, u32, f32)> = (0..16u32)
            .flat_map(|i| (0..16u32).map(move |o| (i, o, 1e-30)))
            .collect();
        let w = Csr::from_triplets(16, 16, &t).unwrap();
        let layer = build_layer(1, &w, &reorder_layer(&w, 0.0), None, true).unwrap();
        assert_eq!((layer.blocks(), layer.rest.nnz()), (0, 256));
    }

    #[test]
    fn layers_are_built_in_order() {
        let net = spdnn_sdgc::generator::network(256, 5, 1).unwrap();
        let r = crate::reorder::reorder_network(net.layers(), 0.25);
        let mut seen = Vec::new();
        let mut stats = LayoutStats::default();
        build_layers::<LayoutError>(
            net.layers(),
            &r,
            |_| true,
            2,
            |l, layer| {
                stats.add(&layer);
                seen.push(l);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, [0, 1, 2, 3, 4]);
        assert_eq!(stats.dense_share(), 1.0);
        assert_eq!(stats.fill(), 1.0);
        assert_eq!(stats.split_layers, 0);
    }
}
