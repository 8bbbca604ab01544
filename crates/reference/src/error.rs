use spdnn_sdgc::SdgcError;
use thiserror::Error;

/// Why the reference inference could not run.
#[derive(Debug, Error)]
pub enum ReferenceError {
    /// The bias or the upper bound is outside its domain.
    #[error("invalid activation: {0}")]
    Activation(#[source] SdgcError),
    /// The input's width does not equal the first layer's number of rows (N).
    #[error("the input has {found} columns but layer 1 has {expected} rows")]
    InputWidth { expected: usize, found: usize },
    /// A layer's rows do not equal the previous layer's columns (`layer` is 1-based).
    #[error("layer {layer} has {found} rows but layer {previous} has {expected} columns", previous = layer - 1)]
    LayerShape {
        layer: usize,
        expected: usize,
        found: usize,
    },
    /// Per-neuron biases that do not fit the layers (count, lengths, a value not finite).
    #[error("invalid biases: {0}")]
    Biases(String),
    /// A segment length of the statistics is 0 (`index` is 0-based in the options' list).
    #[error("segment length {index} of the statistics options is 0")]
    ZeroSegmentLength { index: usize },
}
