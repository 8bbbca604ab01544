//! The kernel's arithmetic on the CPU, row by row, over the packed layers as the device
//! reads them (weights through the fragment layout, activations through the split): a
//! check of the layout, the scales, the split and the epilogue that needs no GPU. One
//! difference is deliberate: each k-step's three products are summed exactly here and
//! rounded to nearest once, where the tensor cores truncate (docs/tcchain.md, "Exactness").

use spdnn_formats::{Csr, SparseMatrix};

use crate::layout::{K_STEP, N_TILE, PackedLayer};
use crate::split::{f16_value, max_abs, power_of_two, scale_exponent, split};

/// The bias of every neuron, or one per output neuron of every layer.
#[derive(Debug, Clone, Copy)]
pub enum Biases<'a> {
    /// One bias for all neurons.
    Scalar(f32),
    /// `biases[l][k]` for output `k` of layer `l`.
    PerNeuron(&'a [Vec<f32>]),
}

/// The final activations (rows × `N_L`) and the row flags (a nonzero output) of `input`
/// through `layers` with `biases` and the bound `upper`, as the kernel computes them.
pub fn run(
    layers: &[PackedLayer],
    biases: Biases<'_>,
    upper: f32,
    input: &Csr,
) -> (Vec<f32>, Vec<u8>) {
    let unpacked: Vec<Vec<(u16, u16)>> = layers.iter().map(PackedLayer::unpack).collect();
    let input_exponent = scale_exponent(max_abs(input.values()));
    let act_exponent = scale_exponent(upper);
    let n_last = layers.last().map_or(0, |l| l.n_out);
    let mut output = vec![0.0f32; input.nrows() * n_last];
    let mut flags = vec![0u8; input.nrows()];
    for (row, flag) in flags.iter_mut().enumerate() {
        // The layer's input as hi + lo (f64, exact), scaled.
        let width = layers.first().map_or(0, |l| l.k_steps * K_STEP);
        let mut terms = vec![(0.0f64, 0.0f64); width];
        let scale = power_of_two(input_exponent);
        let (cols, values) = input.row(row);
        for (&c, &v) in cols.iter().zip(values) {
            terms[c as usize] = split_terms(v * scale);
        }
        let mut exponent = input_exponent;
        for (l, layer) in layers.iter().enumerate() {
            let padded = layer.n_tiles * N_TILE;
            let inv_scale = power_of_two(-layer.weight_exponent) * power_of_two(-exponent);
            let mut y = vec![0.0f32; padded];
            for (n, out) in y.iter_mut().enumerate() {
                let mut acc = 0.0f32;
                for step in 0..layer.k_steps {
                    let mut part = 0.0f64;
                    for k in step * K_STEP..(step + 1) * K_STEP {
                        let (a_hi, a_lo) = terms.get(k).copied().unwrap_or((0.0, 0.0));
                        let (w_hi, w_lo) = unpacked[l][k * padded + n];
                        let (w_hi, w_lo) = (f64::from(f16_value(w_hi)), f64::from(f16_value(w_lo)));
                        part += a_lo * w_hi + a_hi * w_hi;
                        if layer.two_term_weights {
                            part += a_hi * w_lo;
                        }
                    }
                    acc += part as f32;
                }
                let b = match biases {
                    Biases::Scalar(b) => b,
                    Biases::PerNeuron(all) => all[l].get(n).copied().unwrap_or(0.0),
                };
                *out = (acc * inv_scale + b).max(0.0).min(upper);
            }
            if l + 1 == layers.len() {
                let at = row * layer.n_out;
                output[at..at + layer.n_out].copy_from_slice(&y[..layer.n_out]);
                *flag = u8::from(y[..layer.n_out].iter().any(|&v| v != 0.0));
            } else {
                exponent = act_exponent;
                let scale = power_of_two(act_exponent);
                terms = y.iter().map(|&v| split_terms(v * scale)).collect();
            }
        }
    }
    (output, flags)
}

fn split_terms(x: f32) -> (f64, f64) {
    let (hi, lo) = split(x);
    (f64::from(f16_value(hi)), f64::from(f16_value(lo)))
}
