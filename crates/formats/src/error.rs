use thiserror::Error;

/// Why a sparse matrix could not be built.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum FormatError {
    /// An index lies outside the matrix.
    #[error("entry ({row}, {col}) lies outside a {nrows}x{ncols} matrix (0-based)")]
    IndexOutOfRange {
        row: u64,
        col: u64,
        nrows: usize,
        ncols: usize,
    },
    /// The same coordinate was given twice.
    #[error("duplicate entry at ({row}, {col}) (0-based)")]
    DuplicateEntry { row: u32, col: u32 },
    /// A value is NaN or infinite.
    #[error("value at ({row}, {col}) is not finite: {value}")]
    NonFiniteValue { row: u32, col: u32, value: f32 },
    /// Two lengths that must agree do not.
    #[error("{what}: expected {expected}, found {found}")]
    ShapeMismatch {
        what: &'static str,
        expected: usize,
        found: usize,
    },
    /// Row offsets are not monotone, or column indices in a row are not strictly increasing.
    #[error("{0}")]
    BadStructure(String),
    /// A size does not fit the index type or violates a format parameter.
    #[error("{0}")]
    BadParameter(String),
}
