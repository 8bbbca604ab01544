//! Sparse matrix formats for sparse deep-neural-network inference.
//!
//! Every format holds `f32` values and `u32` indices, checks its invariants when it is
//! built and never panics on bad input: construction returns a [`FormatError`].
//!
//! Ordering contract: the column indices of each row of a [`Csr`] are strictly
//! increasing (sorted, no duplicates). [`Csr::from_triplets`] sorts its input and
//! rejects duplicate coordinates; [`Csr::from_parts`] checks the order.
//!
//! Formats: [`Csr`] (the hub every other format converts from and back to),
//! [`Bcsr`] (dense `r × c` blocks), [`Ell`] (one padded width, column-major) and
//! [`SlicedEll`] (a padded width per slice of rows, column-major within a slice).
//!
//! The product used everywhere in this workspace is `Y · W`, where `Y` is a dense
//! row-major block of rows (`rows × nrows(W)`) and `W` the sparse matrix; see
//! [`SparseMatrix::left_multiply`].

mod bcsr;
mod column_slabs;
mod csr;
mod ell;
mod error;
mod sliced_ell;

pub use bcsr::Bcsr;
pub use column_slabs::ColumnSlabs;
pub use csr::Csr;
pub use ell::Ell;
pub use error::FormatError;
pub use sliced_ell::SlicedEll;

/// Column index of a padding slot in [`Ell`] and [`SlicedEll`] (its value is `0.0`).
///
/// Never a valid column: every matrix has at most `u32::MAX` columns, so real column
/// indices are below `u32::MAX`.
pub const PADDING_COLUMN: u32 = u32::MAX;

use ndarray::{Array2, ArrayView2};

/// What every sparse format in this crate offers.
pub trait SparseMatrix {
    /// Number of rows.
    fn nrows(&self) -> usize;
    /// Number of columns.
    fn ncols(&self) -> usize;
    /// Number of stored entries (explicit zeros stored by padding are not counted).
    fn nnz(&self) -> usize;
    /// The matrix as a dense array.
    fn to_dense(&self) -> Array2<f32>;
    /// `Y · self` for a dense block of rows `Y` (`rows × self.nrows()`), in f32.
    ///
    /// Returns an error when `Y` has the wrong number of columns.
    fn left_multiply(&self, y: ArrayView2<'_, f32>) -> Result<Array2<f32>, FormatError>;
}

/// Checks that `y` has as many columns as the matrix has rows.
pub(crate) fn check_left_operand(y: &ArrayView2<'_, f32>, nrows: usize) -> Result<(), FormatError> {
    if y.ncols() != nrows {
        return Err(FormatError::ShapeMismatch {
            what: "left operand columns",
            expected: nrows,
            found: y.ncols(),
        });
    }
    Ok(())
}

/// `a · b` as a storage length that `u32` indices can address, or
/// [`FormatError::BadParameter`] naming `what`.
pub(crate) fn checked_len(a: usize, b: usize, what: &str) -> Result<usize, FormatError> {
    a.checked_mul(b)
        .filter(|&len| len <= u32::MAX as usize)
        .ok_or_else(|| {
            FormatError::BadParameter(format!("{what} of {a} x {b} does not fit u32 indices"))
        })
}

/// `to_dense` for a format that lists each row's `(col, value)` entries.
pub(crate) fn dense_from_rows<I: Iterator<Item = (u32, f32)>>(
    nrows: usize,
    ncols: usize,
    row_entries: impl Fn(usize) -> I,
) -> Array2<f32> {
    let mut dense = Array2::zeros((nrows, ncols));
    for row in 0..nrows {
        for (col, value) in row_entries(row) {
            dense[[row, col as usize]] = value;
        }
    }
    dense
}

/// `Y · W` for a format that lists each row's `(col, value)` entries, skipping zero `y_j`.
pub(crate) fn product_from_rows<I: Iterator<Item = (u32, f32)>>(
    y: ArrayView2<'_, f32>,
    nrows: usize,
    ncols: usize,
    row_entries: impl Fn(usize) -> I,
) -> Result<Array2<f32>, FormatError> {
    check_left_operand(&y, nrows)?;
    let mut out = Array2::zeros((y.nrows(), ncols));
    for (y_row, mut out_row) in y.rows().into_iter().zip(out.rows_mut()) {
        let acc = out_row
            .as_slice_mut()
            .expect("a fresh Array2 is contiguous");
        for (j, &y_j) in y_row.iter().enumerate() {
            if y_j != 0.0 {
                for (col, value) in row_entries(j) {
                    acc[col as usize] += y_j * value;
                }
            }
        }
    }
    Ok(out)
}
