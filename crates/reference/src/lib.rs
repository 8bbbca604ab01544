//! CPU reference inference for the Sparse DNN Graph Challenge: the oracle every GPU
//! method is checked against.
//!
//! It follows the official MATLAB `inferenceReLUvec` exactly:
//!
//! ```text
//! Z  = Y_l · W_l
//! Y' = Z + b   where Z is structurally nonzero (some y_j ≠ 0 meets a stored W_jk,
//!              even when the sum is 0), 0 elsewhere
//! Y_{l+1} = min(max(Y', 0), upper_bound)
//! categories = 1-based rows of Y_L with a nonzero row sum
//! ```
//!
//! [`infer`] goes layer by layer over the rows still alive (a row of zeros stays zero
//! forever, so it is dropped at once), keeping each row's activations sparse (indices
//! and values) between layers. Each layer cuts the alive rows into rayon tasks of equal
//! work. A task takes its rows eight at a time:
//!
//! - push kernel: `y · W = Σ_j y_j · W_j*` over the inputs set in any of the eight rows,
//!   one weight updating all eight sums, with a bit per touched output;
//! - pull kernel, when at least 40% of the inputs are set: each output sums its stored
//!   weights (the transposed layer) in registers, four outputs side by side;
//! - a positive bias (outside the challenge) makes a structural zero differ from no
//!   entry, so then each row runs alone with an exact "touched" mark per output.
//!
//! [`infer_with_biases`] takes a bias per output neuron of every layer (trained networks)
//! under the same rule; [`predictions`] reads classes off the last layer's output.
//!
//! Every kernel adds the products of one output in increasing input order, so the bits
//! of a row's result do not depend on the rows it was computed with, nor on the number
//! of threads. A copy of the kernels compiled for AVX2 runs where the CPU has it (the same
//! operations, wider registers; no fused multiply-add). Per-layer statistics
//! ([`LayerStats`]) are gathered in the same pass.

mod element;
mod error;
mod infer;
mod stats;

pub use element::Element;
pub use error::ReferenceError;
pub use infer::{
    Activation, Inference, Options, categories_of, correct, infer, infer_with_biases, predictions,
};
pub use stats::{LayerStats, SegmentStats, input_stats};
