//! What can go wrong while preparing, reading or writing an XY network.

use std::path::PathBuf;

use thiserror::Error;

/// Why an XY network could not be prepared, read or written.
#[derive(Debug, Error)]
pub enum XyError {
    /// There are no layers to prepare (or a network without layers).
    #[error("an XY network needs at least one layer, got none")]
    NoLayers,
    /// A layer's rows are not the number of values a row has before it: the previous
    /// layer's columns (layers are numbered from 1; layer 1 sets the input width `N_0`).
    #[error(
        "layer {layer} is {rows} × {cols}, but the layer before gives {previous} values a row (layers must chain N_{{l-1}} × N_l)"
    )]
    LayerShape {
        /// The 1-based layer that does not chain.
        layer: usize,
        /// Its rows.
        rows: usize,
        /// Its columns.
        cols: usize,
        /// The previous layer's columns.
        previous: usize,
    },
    /// The input width `N_0` (layer 1's rows) is 0 or does not fit the format's `u32`
    /// indices.
    #[error("the XY format needs 1 ≤ N < 2^32 neurons, got N = {0}")]
    Neurons(usize),
    /// A layer has no outputs, or more than the format's `u32` positions can index.
    #[error("layer {layer} has {cols} outputs; the XY format needs 1 ≤ outputs < 2^32")]
    Outputs {
        /// The 1-based layer.
        layer: usize,
        /// Its columns.
        cols: usize,
    },
    /// Data breaks the format: wrong magic or version, truncated, a checksum mismatch or
    /// contents that violate an invariant (the message names the layer, 1-based).
    #[error("invalid XY data: {0}")]
    Invalid(String),
    /// Reading or writing a stream failed.
    #[error("XY data I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// A file operation of the cache failed.
    #[error("{}: {cause}", path.display())]
    File {
        path: PathBuf,
        cause: std::io::Error,
    },
}
