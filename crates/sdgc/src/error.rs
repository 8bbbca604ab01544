use std::path::PathBuf;

use spdnn_formats::FormatError;
use thiserror::Error;

/// Why challenge data could not be read, written or made.
#[derive(Debug, Error)]
pub enum SdgcError {
    /// The operating system refused a file operation.
    #[error("{}: {cause}", path.display())]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// A line of a text file is malformed (line numbers are 1-based).
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        path: PathBuf,
        line: u64,
        message: String,
    },
    /// The entries of a file are well formed but do not make a valid matrix.
    #[error("{}: {cause}", path.display())]
    Matrix { path: PathBuf, cause: FormatError },
    /// A file or folder is invalid as a whole (empty, missing layer, wrong sizes, bad checksum…).
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    /// A parameter is out of its domain (e.g. N not of the form 16·2^k).
    #[error("{0}")]
    Parameter(String),
}

impl SdgcError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            cause: source,
        }
    }

    /// An error about a whole file.
    pub fn invalid(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self::Invalid {
            path: path.into(),
            message: message.into(),
        }
    }
}
