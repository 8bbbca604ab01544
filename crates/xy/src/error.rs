//! What can go wrong while preparing, reading or writing an XY network.

use std::path::PathBuf;

use thiserror::Error;

/// Why an XY network could not be prepared, read or written.
#[derive(Debug, Error)]
pub enum XyError {
    /// There are no layers to prepare (or a network without layers).
    #[error("an XY network needs at least one layer, got none")]
    NoLayers,
    /// A layer is not N × N with the first layer's N (layers are numbered from 1).
    #[error(
        "layer {layer} is {rows} × {cols}, but every layer must be N × N with the first layer's N = {neurons}"
    )]
    LayerShape {
        layer: usize,
        rows: usize,
        cols: usize,
        neurons: usize,
    },
    /// N is 0 or does not fit the format's `u32` indices.
    #[error("the XY format needs 1 ≤ N < 2^32 neurons, got N = {0}")]
    Neurons(usize),
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
