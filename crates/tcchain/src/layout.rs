//! The chain's device layout, computed on the host: each layer's weights as scaled fp16
//! hi/lo terms in the MMA's register layout, its padded biases and descriptor, and the
//! launch's shape (rows a tile, buffer width, shared memory).

use spdnn_cuda::CudaError;
use spdnn_formats::{Csr, SparseMatrix};

use crate::split::{is_normal_exponent, max_abs, power_of_two, scale_exponent, split};
use crate::{ROW_PAD_WORDS, WARP_TILE_CHOICES, WARPS};

/// Inputs of one MMA k-step.
pub const K_STEP: usize = 16;
/// Outputs of one MMA tile.
pub const N_TILE: usize = 8;
/// Columns the activation buffers' widths are rounded up to (so that a row's 32-bit words,
/// plus [`ROW_PAD_WORDS`], fall on 32 distinct banks for a warp's fragment loads).
pub const BUFFER_ALIGN: usize = 64;
/// 64-bit words of a layer descriptor (`kernels-cu/tcchain.cu`).
pub const DESC_WORDS: usize = 5;

/// Lane `lane`'s four entries of the MMA's B fragment (16 inputs × 8 outputs, `.col`):
/// `(k, n)` of the low and high halves of register `b0`, then of `b1`. With `g = lane / 4`,
/// `t = lane % 4`: b0 holds inputs `2t, 2t + 1`, b1 inputs `2t + 8, 2t + 9`, all of output
/// `g` (PTX ISA, mma.m16n8k16 with .f16).
pub fn b_fragment(lane: usize) -> [(usize, usize); 4] {
    let (g, t) = (lane / 4, lane % 4);
    [(2 * t, g), (2 * t + 1, g), (2 * t + 8, g), (2 * t + 9, g)]
}

/// One layer on the host, ready to upload.
#[derive(Debug, Clone, PartialEq)]
pub struct PackedLayer {
    /// Per (k-step, output tile, lane): `[hi b0, hi b1, lo b0, lo b1]` (each register two
    /// fp16 terms, the lower input in the low half), the weights scaled by
    /// `2^weight_exponent`.
    pub fragments: Vec<[u32; 4]>,
    /// Steps of 16 inputs (`ceil(N_in / 16)`).
    pub k_steps: usize,
    /// Tiles of 8 outputs: `ceil(N_out / 8)` padded with zero weights to a multiple of the
    /// tiles one pass of the warps takes ([`padded_tiles`]).
    pub n_tiles: usize,
    /// Outputs (`N_out`).
    pub n_out: usize,
    /// The weights' scale is `2^weight_exponent`.
    pub weight_exponent: i32,
    /// Whether some weight needs its lo term (otherwise the kernel skips that MMA: every
    /// `lo` is 0, checked here).
    pub two_term_weights: bool,
}

impl PackedLayer {
    /// Packs `w` (`N_in × N_out`, row = input) for a chain whose warps take `warp_tiles`
    /// output tiles a pass, with one k-step of zeros past the last (the kernel prefetches
    /// the next step unconditionally). Errors when a weight is not finite.
    pub fn pack(w: &Csr, warp_tiles: usize) -> Result<Self, CudaError> {
        let (n_in, n_out) = (w.nrows(), w.ncols());
        if let Some(v) = w.values().iter().find(|v| !v.is_finite()) {
            return Err(CudaError::InvalidArgument(format!(
                "tcchain: weight {v} is not finite"
            )));
        }
        let weight_exponent = scale_exponent(max_abs(w.values()));
        let scale = power_of_two(weight_exponent);
        let k_steps = n_in.div_ceil(K_STEP);
        let n_tiles = padded_tiles(n_out, warp_tiles);
        // Dense, padded, scaled: row k, column n.
        let padded_cols = n_tiles * N_TILE;
        let mut dense = vec![(0u16, 0u16); k_steps * K_STEP * padded_cols];
        let mut two_term_weights = false;
        for (k, n, v) in w.triplets() {
            let (hi, lo) = split(v * scale);
            two_term_weights |= lo & 0x7fff != 0;
            dense[k as usize * padded_cols + n as usize] = (hi, lo);
        }
        let mut fragments = Vec::with_capacity((k_steps + 1) * n_tiles * 32);
        for step in 0..k_steps {
            for tile in 0..n_tiles {
                for lane in 0..32 {
                    let [a, b, c, d] = b_fragment(lane)
                        .map(|(k, n)| dense[(step * K_STEP + k) * padded_cols + tile * N_TILE + n]);
                    let pack = |low: u16, high: u16| u32::from(low) | (u32::from(high) << 16);
                    fragments.push([
                        pack(a.0, b.0),
                        pack(c.0, d.0),
                        pack(a.1, b.1),
                        pack(c.1, d.1),
                    ]);
                }
            }
        }
        fragments.resize((k_steps + 1) * n_tiles * 32, [0; 4]);
        Ok(Self {
            fragments,
            k_steps,
            n_tiles,
            n_out,
            weight_exponent,
            two_term_weights,
        })
    }

    /// Device bytes of the fragments.
    pub fn fragment_bytes(&self) -> usize {
        fragment_bytes(self.k_steps, self.n_tiles)
    }

    /// The stored terms read back through the fragment layout: `(hi, lo)` of weight
    /// `(k, n)` at `[k · padded outputs + n]`, over the padded `k_steps · 16` inputs and
    /// `n_tiles · 8` outputs (the emulation reads the weights this way, so it checks the
    /// packing).
    pub fn unpack(&self) -> Vec<(u16, u16)> {
        let padded_cols = self.n_tiles * N_TILE;
        let mut dense = vec![(0u16, 0u16); self.k_steps * K_STEP * padded_cols];
        for step in 0..self.k_steps {
            for tile in 0..self.n_tiles {
                for lane in 0..32 {
                    let f = self.fragments[(step * self.n_tiles + tile) * 32 + lane];
                    for (slot, (k, n)) in b_fragment(lane).into_iter().enumerate() {
                        let (reg, shift) = (slot / 2, 16 * (slot % 2));
                        dense[(step * K_STEP + k) * padded_cols + tile * N_TILE + n] =
                            ((f[reg] >> shift) as u16, (f[reg + 2] >> shift) as u16);
                    }
                }
            }
        }
        dense
    }
}

/// Device bytes of a layer's fragments: one 16-byte entry per (k-step, tile, lane), one
/// step of zeros past the last.
pub fn fragment_bytes(k_steps: usize, n_tiles: usize) -> usize {
    (k_steps + 1) * n_tiles * 32 * 16
}

/// Output tiles a warp takes per pass, for the whole chain: the fewest of
/// [`WARP_TILE_CHOICES`] that still give every warp a tile of the widest layer in one pass
/// (a wider layer takes several passes).
pub fn chain_warp_tiles(widths: &[usize]) -> usize {
    let widest = widths[1..]
        .iter()
        .map(|&n| n.div_ceil(N_TILE))
        .max()
        .unwrap_or(1);
    let wanted = widest.div_ceil(WARPS);
    WARP_TILE_CHOICES
        .iter()
        .copied()
        .find(|&t| t >= wanted)
        .unwrap_or(WARP_TILE_CHOICES[WARP_TILE_CHOICES.len() - 1])
}

/// The tiles of a layer of `n_out` outputs, padded to a multiple of one pass's
/// (`WARPS · warp_tiles`).
pub fn padded_tiles(n_out: usize, warp_tiles: usize) -> usize {
    n_out.div_ceil(N_TILE).div_ceil(WARPS * warp_tiles).max(1) * WARPS * warp_tiles
}

/// Per-neuron biases of a layer padded to its tiles (padding 0: clip(0 + 0) = 0 there).
pub fn padded_biases(biases: &[f32], n_tiles: usize) -> Vec<f32> {
    let mut padded = biases.to_vec();
    padded.resize(n_tiles * N_TILE, 0.0);
    padded
}

/// The activations' scale exponent for the bound `upper` (every activation after a layer
/// is in `[0, upper]`).
pub fn activation_exponent(upper: f32) -> i32 {
    scale_exponent(upper)
}

/// Checks that the scales of a layer can be undone exactly: `2^-(a + w)` (activations'
/// exponent `a`, weights' `w`) and each scale a normal f32.
pub fn check_exponents(layer: usize, activation: i32, weight: i32) -> Result<(), CudaError> {
    if is_normal_exponent(activation)
        && is_normal_exponent(weight)
        && is_normal_exponent(activation + weight)
        && is_normal_exponent(-(activation + weight))
    {
        Ok(())
    } else {
        Err(CudaError::InvalidArgument(format!(
            "tcchain: layer {layer}'s weights or activations are too far from 1 in magnitude for \
             the fp16 split's power-of-two scales (2^{activation} and 2^{weight}): run another \
             method"
        )))
    }
}

/// The buffer width (columns of a tile buffer) of a chain of widths `N_0, …, N_L` whose
/// warps take `warp_tiles` tiles a pass: every layer's padded outputs fit, rounded up to
/// [`BUFFER_ALIGN`].
pub fn buffer_width(widths: &[usize], warp_tiles: usize) -> usize {
    widths[1..]
        .iter()
        .map(|&n| padded_tiles(n, warp_tiles) * N_TILE)
        .max()
        .unwrap_or(N_TILE)
        .div_ceil(BUFFER_ALIGN)
        * BUFFER_ALIGN
}

/// 32-bit words of a buffer row.
pub fn row_words(buffer_width: usize) -> usize {
    buffer_width / 2 + ROW_PAD_WORDS
}

/// Dynamic shared bytes of tiles of `16 · m_tiles` rows: two buffers of two planes.
pub fn shared_bytes(buffer_width: usize, m_tiles: usize) -> usize {
    4 * 16 * m_tiles * row_words(buffer_width) * 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::split::f16_value;

    #[test]
    fn each_lane_holds_distinct_entries_and_the_warp_covers_the_tile() {
        let mut seen = std::collections::HashSet::new();
        for lane in 0..32 {
            for (k, n) in b_fragment(lane) {
                assert!(k < K_STEP && n < N_TILE);
                assert!(seen.insert((k, n)), "({k}, {n}) twice");
            }
        }
        assert_eq!(seen.len(), K_STEP * N_TILE);
    }

    #[test]
    fn packing_keeps_every_weight_scaled_and_pads_with_zeros() {
        let w = Csr::from_triplets(
            21,
            11,
            &[(0, 0, 0.5), (20, 10, -3.0), (7, 3, 0.1), (16, 8, 1.0e-3)],
        )
        .unwrap();
        let layer = PackedLayer::pack(&w, 1).unwrap();
        assert_eq!((layer.k_steps, layer.n_tiles, layer.n_out), (2, 8, 11));
        assert_eq!(layer.fragments.len(), 3 * 8 * 32);
        assert!(layer.fragments[2 * 8 * 32..].iter().all(|f| *f == [0; 4]));
        assert_eq!(layer.weight_exponent, 15 - 2);
        assert!(layer.two_term_weights, "0.1 needs two terms");
        let scale = 2f64.powi(layer.weight_exponent);
        let stored: std::collections::HashMap<(usize, usize), f32> = w
            .triplets()
            .map(|(k, n, v)| ((k as usize, n as usize), v))
            .collect();
        let unpacked = layer.unpack();
        for k in 0..32 {
            for n in 0..16 {
                let want = stored.get(&(k, n)).copied().unwrap_or(0.0);
                let (hi, lo) = unpacked[k * layer.n_tiles * N_TILE + n];
                let got = (f64::from(f16_value(hi)) + f64::from(f16_value(lo))) / scale;
                let err = (got - f64::from(want)).abs();
                assert!(
                    err <= 2f64.powi(-22) * f64::from(want.abs()) + 1e-12,
                    "({k}, {n})"
                );
            }
        }
    }

    #[test]
    fn one_term_weights_are_found() {
        let w = Csr::from_triplets(4, 4, &[(0, 0, 0.0625), (1, 2, -0.5), (3, 3, 2.0)]).unwrap();
        assert!(!PackedLayer::pack(&w, 1).unwrap().two_term_weights);
        let nan = Csr::from_triplets(2, 2, &[(0, 0, f32::NAN)]);
        if let Ok(nan) = nan {
            assert!(PackedLayer::pack(&nan, 1).is_err());
        }
    }

    #[test]
    fn buffers_fit_every_output_and_avoid_bank_conflicts() {
        assert_eq!(buffer_width(&[784, 256, 256, 10], 4), 256);
        assert_eq!(buffer_width(&[784, 128, 10], 2), 128);
        assert_eq!(buffer_width(&[3, 5], 1), 64);
        assert_eq!(buffer_width(&[1024, 1000, 1024], 4), 1024);
        assert_eq!(buffer_width(&[1024, 1000, 1024], 1), 1024);
        for width in [64, 128, 256, 1024] {
            // A warp's A-fragment words: rows g (0..8) × words t (0..4).
            let words = row_words(width);
            let banks: std::collections::HashSet<usize> = (0..8)
                .flat_map(|g| (0..4).map(move |t| (g * words + t) % 32))
                .collect();
            assert_eq!(banks.len(), 32, "width {width}");
        }
        assert_eq!(shared_bytes(256, 5), 4 * 80 * 132 * 4);
    }

    #[test]
    fn warps_share_the_tiles() {
        assert_eq!(chain_warp_tiles(&[784, 256, 256, 10]), 4);
        assert_eq!(chain_warp_tiles(&[784, 128, 128, 10]), 2);
        assert_eq!(chain_warp_tiles(&[784, 100, 10]), 2);
        assert_eq!(chain_warp_tiles(&[3, 5, 64]), 1);
        assert_eq!(chain_warp_tiles(&[784, 1024, 10]), 4);
        assert_eq!(padded_tiles(10, 4), 32);
        assert_eq!(padded_tiles(256, 4), 32);
        assert_eq!(padded_tiles(1000, 4), 128);
        assert_eq!(padded_tiles(130, 2), 32);
    }
}
