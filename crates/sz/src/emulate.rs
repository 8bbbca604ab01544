//! The kernels' arithmetic on the CPU, step for step, for the tests: activations
//! neuron-major, the tensor-core warps' fragments assembled lane by lane from the same
//! index formulas as `sz.cu` (A from the activations' three bf16 terms through the gather
//! map, B from the stored fragments of the weights' terms), each `mma` as exact products
//! summed with its accumulator and
//! rounded once to fp32 into one accumulator per activation term, the CUDA-core warps'
//! fp64 fused multiply-adds rounded once to fp32, the rest, the bias and the clip. Where every partial sum is exact in fp32 (dyadic problems) this equals
//! the hardware bit for bit; elsewhere the hardware's accumulation differs within fp32
//! rounding (docs/sz.md, "Error analysis").
//!
//! A trained network's bias per output neuron is read as the `sz_layer_neurons_*` kernels
//! read it: each layer's biases put into its output order ([`SzLayer::position_biases`]),
//! position `p` adding `biases[p]` ([`layer_biased`], [`run_biased`]).
//!
//! Row compaction does not change any value, so the emulation keeps every row.

use spdnn_formats::{Csr, SparseMatrix};

use crate::format::SzLayer;
use crate::half::{SCALE_LIMIT, TERMS, bf16_to_f32, pow2, scale_exponent, split};
use crate::reorder::{CHUNK, TILE};

/// How an item's tiles are shared out: of every `group` consecutive tiles, the first
/// `tc_tiles` go to tensor-core warps, the others to CUDA-core warps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// Tiles per item.
    pub group: usize,
    /// Tensor-core tiles per item.
    pub tc_tiles: usize,
}

impl Split {
    /// Every tile on the tensor cores (plain S&Z).
    pub const TENSOR: Split = Split {
        group: 1,
        tc_tiles: 1,
    };

    /// Whether tile `t` runs on the tensor cores.
    pub fn tensor(&self, t: usize) -> bool {
        t % self.group.max(1) < self.tc_tiles
    }
}

/// The exponent `s` that scales activations of magnitude up to `max_abs` for the split
/// (`max_abs · 2^s ≤ 2^15`, at most [`SCALE_LIMIT`]; 0 for all zeros); an error when
/// `max_abs` exceeds `2^(15 + SCALE_LIMIT)`.
pub fn activation_exponent(max_abs: f32) -> Result<i32, String> {
    match scale_exponent(max_abs) {
        None => Ok(0),
        Some(s) if s < -SCALE_LIMIT => Err(format!(
            "values up to {max_abs} are beyond the tensor cores' split (at most 2^{})",
            15 + SCALE_LIMIT
        )),
        Some(s) => Ok(s.min(SCALE_LIMIT)),
    }
}

/// The (row, input) of the matrix A element that register `r`, half `e` (0 low, 1 high)
/// of lane `lane` holds in `mma.m16n8k16` (PTX ISA fragments): the formula of
/// `sz_tc_tile`.
pub fn a_element(lane: usize, r: usize, e: usize) -> (usize, usize) {
    let (g, q) = (lane >> 2, lane & 3);
    (g + 8 * (r & 1), 2 * q + e + 8 * (r >> 1))
}

/// The (input, output) of the matrix B element that register `r`, half `e` of lane `lane`
/// holds.
pub fn b_element(lane: usize, r: usize, e: usize) -> (usize, usize) {
    let (g, q) = (lane >> 2, lane & 3);
    (2 * q + e + 8 * r, g)
}

/// The (row, output) of accumulator `i` of lane `lane`.
pub fn d_element(lane: usize, i: usize) -> (usize, usize) {
    let (g, q) = (lane >> 2, lane & 3);
    (g + 8 * (i >> 1), 2 * q + (i & 1))
}

/// `d += A·B` over a warp's registers: A from `a[lane]` (four registers of two bf16), B
/// from `b[lane]` (two), accumulators `d[lane]`; each bf16 product exact, the 16 and the
/// accumulator summed in f64 (exact while they span under 53 − 16 binades, as in every
/// test here) and rounded once to fp32.
fn mma(d: &mut [[f32; 4]; 32], a: &[[u32; 4]; 32], b: &[[u32; 2]; 32]) {
    let mut am = [[0f64; 16]; 16];
    let mut bm = [[0f64; 8]; 16];
    for (lane, (a_regs, b_regs)) in a.iter().zip(b).enumerate() {
        for (r, &word) in a_regs.iter().enumerate() {
            for e in 0..2 {
                let (row, k) = a_element(lane, r, e);
                am[row][k] = f64::from(bf16_to_f32((word >> (16 * e)) as u16));
            }
        }
        for (r, &word) in b_regs.iter().enumerate() {
            for e in 0..2 {
                let (k, n) = b_element(lane, r, e);
                bm[k][n] = f64::from(bf16_to_f32((word >> (16 * e)) as u16));
            }
        }
    }
    for (lane, acc) in d.iter_mut().enumerate() {
        for (i, value) in acc.iter_mut().enumerate() {
            let (row, n) = d_element(lane, i);
            let sum: f64 = (0..16).map(|k| am[row][k] * bm[k][n]).sum();
            *value = (f64::from(*value) + sum) as f32;
        }
    }
}

/// `sz_split2`: the scaled pair's three bf16 terms, each pair in one word (x0 low).
fn split2(x0: f32, x1: f32, scale: f32) -> [u32; TERMS] {
    let (a, b) = (split(x0 * scale), split(x1 * scale));
    [0, 1, 2].map(|i| u32::from(a[i]) | (u32::from(b[i]) << 16))
}

/// One layer: `y` holds `layer.inputs` positions × `ld` rows (rows past `rows` are zero),
/// activations scaled by `2^x_exponent` for the tensor cores; returns `layer.outputs`
/// positions × `ld`.
#[allow(clippy::too_many_arguments)]
pub fn layer(
    layer: &SzLayer,
    y: &[f32],
    rows: usize,
    ld: usize,
    x_exponent: i32,
    split_of: Split,
    bias: f32,
    upper: f32,
) -> Vec<f32> {
    layer_with(layer, y, rows, ld, x_exponent, split_of, |_| bias, upper)
}

/// [`layer`] with a bias per output position (`position_biases[p]`, the layer's biases in
/// its output order, [`SzLayer::position_biases`]), as the `sz_layer_neurons_*` kernels.
///
/// # Panics
/// When `position_biases` has fewer than `layer.outputs` values.
#[allow(clippy::too_many_arguments)]
pub fn layer_biased(
    layer: &SzLayer,
    y: &[f32],
    rows: usize,
    ld: usize,
    x_exponent: i32,
    split_of: Split,
    position_biases: &[f32],
    upper: f32,
) -> Vec<f32> {
    assert!(
        position_biases.len() >= layer.outputs,
        "{} biases for {} outputs",
        position_biases.len(),
        layer.outputs
    );
    layer_with(
        layer,
        y,
        rows,
        ld,
        x_exponent,
        split_of,
        |p| position_biases[p],
        upper,
    )
}

/// [`layer`] with output position `p`'s bias from `bias_of(p)` (`sz_bias`).
#[allow(clippy::too_many_arguments)]
fn layer_with(
    layer: &SzLayer,
    y: &[f32],
    rows: usize,
    ld: usize,
    x_exponent: i32,
    split_of: Split,
    bias_of: impl Fn(usize) -> f32,
    upper: f32,
) -> Vec<f32> {
    let mut out = vec![0f32; layer.outputs * ld];
    let x_scale = pow2(x_exponent);
    let inv_scale = pow2(-(x_exponent + layer.weight_exponent));
    let finish = |out: &mut Vec<f32>, pos: usize, row: usize, mut z: f32| {
        if pos >= layer.outputs {
            return;
        }
        let (inputs, weights) = layer.rest.row(pos);
        for (&i, &w) in inputs.iter().zip(weights) {
            z = y[i as usize * ld + row].mul_add(w, z);
        }
        if row < rows {
            out[pos * ld + row] = (z + bias_of(pos)).max(0.0).min(upper);
        }
    };
    let tile_blocks = layer.tile_blocks();
    let chunks = layer.block_chunks();
    for t in 0..layer.tiles() {
        let blocks = tile_blocks[t] as usize..tile_blocks[t + 1] as usize;
        if split_of.tensor(t) {
            for r0 in (0..rows).step_by(16) {
                // One accumulator set per half and activation term (d[h][i]): the products
                // of one term have like magnitudes, so their fp32 sums are (nearly always)
                // exact.
                let mut d = [[[[0f32; 4]; 32]; TERMS]; 2];
                for b in blocks.clone() {
                    let f = &layer.fuse[chunks[b] as usize * CHUNK..][..CHUNK];
                    let mut a = [[[0u32; 4]; 32]; TERMS];
                    for lane in 0..32 {
                        for r in 0..4 {
                            let x = |e| {
                                let (row, k) = a_element(lane, r, e);
                                y[f[k] as usize * ld + r0 + row]
                            };
                            let words = split2(x(0), x(1), x_scale);
                            for (term, word) in a.iter_mut().zip(words) {
                                term[lane][r] = word;
                            }
                        }
                    }
                    for (h, dh) in d.iter_mut().enumerate() {
                        let weights: Vec<[[u32; 2]; 32]> = (0..layer.weight_terms)
                            .map(|j| std::array::from_fn(|lane| layer.fragment(b, h, j, lane)))
                            .collect();
                        for (i, (a_term, acc)) in a.iter().zip(dh.iter_mut()).enumerate() {
                            // The kernel skips a lower term that is zero in the whole warp
                            // (its products are zeros: no value changes).
                            if i > 0 && a_term.iter().flatten().all(|&w| w == 0) {
                                continue;
                            }
                            for w in &weights {
                                // `sz_mma_sum`: each MMA into a zero fragment, added in fp32.
                                let mut part = [[0f32; 4]; 32];
                                mma(&mut part, a_term, w);
                                for (d, p) in acc.iter_mut().flatten().zip(part.iter().flatten()) {
                                    *d += *p;
                                }
                            }
                        }
                    }
                }
                for (h, [d1, d2, d3]) in d.iter().enumerate() {
                    let lanes = d1.iter().zip(d2).zip(d3).enumerate();
                    for (lane, ((a1, a2), a3)) in lanes {
                        for (i, ((&z1, &z2), &z3)) in a1.iter().zip(a2).zip(a3).enumerate() {
                            let (row, n) = d_element(lane, i);
                            // The smallest first: (d3 + d2) + d1.
                            let z = (z3 + z2) + z1;
                            finish(&mut out, t * TILE + 8 * h + n, r0 + row, z * inv_scale);
                        }
                    }
                }
            }
        } else {
            for row in 0..rows {
                for h in 0..2 {
                    // fp64 accumulators: each fp32 product is exact in fp64 (the kernel's
                    // DFMA adds it rounded once, as `+` does here), the sum is rounded to
                    // fp32 once, as the tensor cores' per-term sums nearly are.
                    let mut acc = [0f64; 8];
                    for b in blocks.clone() {
                        let f = &layer.fuse[chunks[b] as usize * CHUNK..][..CHUNK];
                        let w = &layer.dense.block(b)[8 * h * CHUNK..];
                        for (k, &i) in f.iter().enumerate() {
                            let x = f64::from(y[i as usize * ld + row]);
                            for (n, a) in acc.iter_mut().enumerate() {
                                *a += x * f64::from(w[n * CHUNK + k]);
                            }
                        }
                    }
                    for (n, &a) in acc.iter().enumerate() {
                        finish(&mut out, t * TILE + 8 * h + n, row, a as f32);
                    }
                }
            }
        }
    }
    out
}

/// The emulated network's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Emulated {
    /// 1-based rows with a nonzero after the last layer.
    pub categories: Vec<u32>,
    /// The final activations, rows × `N_L` in neuron order.
    pub output: Vec<f32>,
}

/// Runs `layers` over `input` as the device does, tile `t` of layer `l` on the tensor
/// cores when `split_of(l).tensor(t)`. Errors when the input is beyond the split's range.
pub fn run(
    layers: &[SzLayer],
    input: &Csr,
    bias: f32,
    upper: f32,
    split_of: impl Fn(usize) -> Split,
) -> Result<Emulated, String> {
    run_with(layers, input, None, bias, upper, split_of)
}

/// [`run`] with a bias per output neuron of every layer (`biases[l][k]` for neuron `k` of
/// layer `l`, as [`spdnn_cuda::method::LayerChain::biases`]), each layer's put into its
/// output order as the device uploads them. Errors as [`run`], and when the biases do not
/// match the layers.
pub fn run_biased(
    layers: &[SzLayer],
    input: &Csr,
    biases: &[Vec<f32>],
    upper: f32,
    split_of: impl Fn(usize) -> Split,
) -> Result<Emulated, String> {
    if biases.len() != layers.len() {
        return Err(format!(
            "{} bias vectors for {} layers",
            biases.len(),
            layers.len()
        ));
    }
    let ordered = layers
        .iter()
        .zip(biases)
        .enumerate()
        .map(|(l, (w, b))| {
            w.position_biases(b).ok_or_else(|| {
                format!(
                    "layer {}: {} biases for {} outputs",
                    l + 1,
                    b.len(),
                    w.outputs
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    run_with(layers, input, Some(&ordered), 0.0, upper, split_of)
}

/// [`run`] with each layer's biases in its output order when `position_biases` is given
/// (`bias` unused then).
fn run_with(
    layers: &[SzLayer],
    input: &Csr,
    position_biases: Option<&[Vec<f32>]>,
    bias: f32,
    upper: f32,
    split_of: impl Fn(usize) -> Split,
) -> Result<Emulated, String> {
    let rows = input.nrows();
    let ld = rows.div_ceil(16) * 16;
    let mut y = vec![0f32; input.ncols() * ld];
    for (r, c, v) in input.triplets() {
        y[c as usize * ld + r as usize] = v;
    }
    let input_max = input.values().iter().fold(0f32, |m, v| m.max(v.abs()));
    let first = activation_exponent(input_max)?;
    let later = activation_exponent(upper).unwrap_or(0);
    for (l, w) in layers.iter().enumerate() {
        let s = if l == 0 { first } else { later };
        y = match position_biases {
            Some(b) => layer_biased(w, &y, rows, ld, s, split_of(l), &b[l], upper),
            None => layer(w, &y, rows, ld, s, split_of(l), bias, upper),
        };
    }
    let (width, order) = layers
        .last()
        .map_or((input.ncols(), None), |w| (w.outputs, Some(&w.order)));
    let mut output = vec![0f32; rows * width];
    for pos in 0..width {
        let neuron = order.map_or(pos, |o| o[pos] as usize);
        for r in 0..rows {
            output[r * width + neuron] = y[pos * ld + r];
        }
    }
    let categories = (0..rows)
        .filter(|&r| output[r * width..(r + 1) * width].iter().any(|&v| v != 0.0))
        .map(|r| r as u32 + 1)
        .collect();
    Ok(Emulated { categories, output })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fragment_formulas_cover_each_element_once() {
        let mut a = [[0u8; 16]; 16];
        let mut b = [[0u8; 8]; 16];
        let mut d = [[0u8; 8]; 16];
        for lane in 0..32 {
            for r in 0..4 {
                for e in 0..2 {
                    let (row, k) = a_element(lane, r, e);
                    a[row][k] += 1;
                }
            }
            for r in 0..2 {
                for e in 0..2 {
                    let (k, n) = b_element(lane, r, e);
                    b[k][n] += 1;
                }
            }
            for i in 0..4 {
                let (row, n) = d_element(lane, i);
                d[row][n] += 1;
            }
        }
        assert!(a.iter().flatten().all(|&c| c == 1));
        assert!(b.iter().flatten().all(|&c| c == 1));
        assert!(d.iter().flatten().all(|&c| c == 1));
        // The PTX ISA's examples: lane 5 (g 1, q 1) holds a4 = A[1][10], a7 = A[9][11],
        // b2 = B[10][1], c3 = D[9][3].
        assert_eq!(a_element(5, 2, 0), (1, 10));
        assert_eq!(a_element(5, 3, 1), (9, 11));
        assert_eq!(b_element(5, 1, 0), (10, 1));
        assert_eq!(d_element(5, 3), (9, 3));
    }

    #[test]
    fn activation_exponents() {
        assert_eq!(activation_exponent(32.0), Ok(10));
        assert_eq!(activation_exponent(0.0), Ok(0));
        assert_eq!(activation_exponent(1e-30), Ok(SCALE_LIMIT));
        assert!(activation_exponent(1e30).is_err());
        assert!(activation_exponent(3e22).is_ok());
    }

    #[test]
    fn splits_choose_tiles() {
        assert!(Split::TENSOR.tensor(0) && Split::TENSOR.tensor(7));
        let s = Split {
            group: 4,
            tc_tiles: 3,
        };
        let on: Vec<bool> = (0..8).map(|t| s.tensor(t)).collect();
        assert_eq!(on, [true, true, true, false, true, true, true, false]);
        let cc = Split {
            group: 3,
            tc_tiles: 0,
        };
        assert!((0..6).all(|t| !cc.tensor(t)));
    }
}
