use spdnn_formats::FormatError;
use thiserror::Error;

/// Why a network could not be compressed or analysed, or a row not classified.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CompressError {
    /// The network has no layers: there is nothing to compress and no width to report.
    #[error("the network has no layers")]
    NoLayers,
    /// A layer's rows do not equal the previous layer's columns (`layer` is 1-based).
    #[error("layer {layer} has {found} rows but layer {previous} has {expected} columns", previous = layer - 1)]
    LayerShape {
        /// The 1-based layer whose rows do not chain.
        layer: usize,
        /// The previous layer's number of columns.
        expected: usize,
        /// This layer's number of rows.
        found: usize,
    },
    /// The bias is not finite and negative, or the upper bound not finite and positive.
    #[error(
        "the activation needs a finite bias < 0 and a finite upper bound > 0, got bias {bias} and bound {upper_bound}"
    )]
    Activation {
        /// The bias given.
        bias: f32,
        /// The upper bound given.
        upper_bound: f32,
    },
    /// Per-neuron biases that do not fit the network (a count, a length, a value that is
    /// not finite), or an analysis asked of the wrong kind of bias (the message says which).
    #[error("per-neuron biases: {0}")]
    Biases(String),
    /// A buffer has the wrong length (`what` names it).
    #[error("{what}: expected {expected} values, found {found}")]
    Length {
        /// What was measured.
        what: &'static str,
        /// The length it must have.
        expected: usize,
        /// The length it has.
        found: usize,
    },
    /// A layer index lies past the network (`index` counts layers done, 0 = the input).
    #[error("layer index {index} lies past the network's {layers} layers")]
    LayerIndex {
        /// The index given.
        index: usize,
        /// The number of layers.
        layers: usize,
    },
    /// A sparse row's neuron indices are out of range or not strictly increasing.
    #[error("sparse row: {0}")]
    SparseRow(String),
    /// A class map is not numbered by smallest member (see `Classes::from_class_map`).
    #[error("class map: {0}")]
    ClassMap(String),
    /// Building a compressed layer failed (a size past `u32` indices).
    #[error("building a compressed layer: {0}")]
    Format(#[from] FormatError),
}
