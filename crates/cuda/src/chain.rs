//! The layer chain every GPU method runs, apart from the harness ([`crate::method`]) so that
//! the memory models ([`crate::memory`]) and the harness both depend on it and not on each
//! other.

use spdnn_formats::{Csr, SparseMatrix};

use crate::CudaError;

/// The layer chain a method runs: its layers (`N × N` for the challenge's networks,
/// `N_{l-1} × N_l` in general, e.g. after compression or in a trained network), the bias
/// (one for all neurons, or one per output neuron of every layer) and the upper bound. A
/// method written for square layers refuses others in `prepare`
/// ([`crate::rows::check_chain`]); the harness refuses per-neuron biases to a method that
/// does not declare them ([`crate::method::KernelMethod::ACCEPTS_PER_NEURON_BIAS`]).
#[derive(Debug, Clone, Copy)]
pub struct LayerChain<'a> {
    /// The layers, in order.
    pub layers: &'a [Csr],
    /// The bias of every neuron (negative: `clip(Z + b)` then equals the official structural
    /// rule). With [`Self::biases`] set it is unused, and −1 (a placeholder that the width
    /// checks accept).
    pub bias: f32,
    /// A bias per output neuron of every layer (`biases[l][k]`), for trained networks.
    pub biases: Option<&'a [Vec<f32>]>,
    /// The upper bound of the activations.
    pub upper: f32,
}

impl<'a> LayerChain<'a> {
    /// The chain of `layers` with one `bias` for every neuron and `upper`.
    pub fn new(layers: &'a [Csr], bias: f32, upper: f32) -> Self {
        Self {
            layers,
            bias,
            biases: None,
            upper,
        }
    }

    /// The chain of `layers` with a bias per output neuron (`biases[l][k]`) and `upper`.
    pub fn with_biases(layers: &'a [Csr], biases: &'a [Vec<f32>], upper: f32) -> Self {
        Self {
            layers,
            bias: -1.0,
            biases: Some(biases),
            upper,
        }
    }

    /// The input width `N_0` (0 without layers).
    pub fn neurons(&self) -> usize {
        self.layers.first().map_or(0, |w| w.nrows())
    }

    /// Layer `l`'s per-neuron biases, when the chain has them.
    pub fn layer_biases(&self, l: usize) -> Option<&'a [f32]> {
        self.biases.and_then(|b| b.get(l)).map(Vec::as_slice)
    }

    /// Device bytes of layer `l`'s per-neuron biases (0 without them), for memory models.
    pub fn bias_bytes(&self, l: usize) -> usize {
        self.layer_biases(l).map_or(0, |b| 4 * b.len())
    }

    /// `bytes[l]` plus [`Self::bias_bytes`] of layer `l`, for memory models.
    pub fn with_bias_bytes(&self, mut bytes: Vec<usize>) -> Vec<usize> {
        for (l, b) in bytes.iter_mut().enumerate() {
            *b += self.bias_bytes(l);
        }
        bytes
    }

    /// The first positive per-neuron bias as (1-based layer, 1-based neuron, value).
    pub fn first_positive_bias(&self) -> Option<(usize, usize, f32)> {
        self.biases?.iter().enumerate().find_map(|(l, b)| {
            b.iter()
                .position(|&v| v > 0.0)
                .map(|k| (l + 1, k + 1, b[k]))
        })
    }

    /// Checks the chain against `input` ([`crate::rows::check_problem`]), and its
    /// per-neuron biases (one finite value per output of every layer); returns the input
    /// width.
    pub fn check(&self, input: &Csr) -> Result<usize, CudaError> {
        let n = crate::rows::check_problem(self.layers, input, self.bias, self.upper)?;
        if let Some(biases) = self.biases {
            if biases.len() != self.layers.len() {
                return Err(CudaError::InvalidArgument(format!(
                    "{} bias vectors for {} layers",
                    biases.len(),
                    self.layers.len()
                )));
            }
            for (l, (b, w)) in biases.iter().zip(self.layers).enumerate() {
                if b.len() != w.ncols() || b.iter().any(|v| !v.is_finite()) {
                    return Err(CudaError::InvalidArgument(format!(
                        "layer {} needs {} finite biases, got {} values",
                        l + 1,
                        w.ncols(),
                        b.len()
                    )));
                }
            }
        }
        Ok(n)
    }
}
