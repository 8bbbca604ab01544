use ndarray::{Array2, ArrayView2};

use crate::csr::check_dims;
use crate::{
    Csr, FormatError, PADDING_COLUMN, SparseMatrix, checked_len, dense_from_rows, product_from_rows,
};

/// ELLPACK: every row padded to the same `width`, the length of the longest row.
///
/// Layout: two `nrows × width` arrays stored **column-major** (slot `k` of row `i` is at
/// `k * nrows + i`), so GPU threads that each own one row read consecutive addresses
/// for the same slot `k`.
///
/// Padding convention: a row of length `len < width` holds its entries in slots
/// `0..len` (columns strictly increasing) and padding in slots `len..width`; a padding
/// slot has column index [`PADDING_COLUMN`] (`u32::MAX`, never a valid column) and
/// value `0.0`. Readers may stop a row at its first padding slot. Explicitly stored
/// zeros of a source CSR are kept as entries (with their real column index).
#[derive(Debug, Clone, PartialEq)]
pub struct Ell {
    nrows: usize,
    ncols: usize,
    width: usize,
    col_indices: Vec<u32>,
    values: Vec<f32>,
    nnz: usize,
}

impl Ell {
    /// Converts a CSR matrix; the width becomes its longest row's length.
    ///
    /// Errors with [`FormatError::BadParameter`] when `nrows · width` does not fit `u32`.
    pub fn from_csr(csr: &Csr) -> Result<Self, FormatError> {
        let (nrows, ncols) = (csr.nrows(), csr.ncols());
        let width = csr.max_row_len();
        let len = checked_len(nrows, width, "ELL padded storage (rows * width)")?;
        let mut col_indices = vec![PADDING_COLUMN; len];
        let mut values = vec![0f32; len];
        for row in 0..nrows {
            let (cols, vals) = csr.row(row);
            for (k, (&col, &value)) in cols.iter().zip(vals).enumerate() {
                col_indices[k * nrows + row] = col;
                values[k * nrows + row] = value;
            }
        }
        Ok(Self {
            nrows,
            ncols,
            width,
            col_indices,
            values,
            nnz: csr.nnz(),
        })
    }

    /// Builds the matrix from `(row, col, value)` triplets (see [`Csr::from_triplets`]).
    pub fn from_triplets(
        nrows: usize,
        ncols: usize,
        triplets: &[(u32, u32, f32)],
    ) -> Result<Self, FormatError> {
        Self::from_csr(&Csr::from_triplets(nrows, ncols, triplets)?)
    }

    /// Builds the matrix from its column-major arrays, checking every invariant: both
    /// arrays `nrows · width` long, each row's entries first with strictly increasing
    /// in-range columns and finite values, then only padding ([`PADDING_COLUMN`], `0.0`),
    /// and `width` equal to the longest row's length.
    pub fn from_parts(
        nrows: usize,
        ncols: usize,
        width: usize,
        col_indices: Vec<u32>,
        values: Vec<f32>,
    ) -> Result<Self, FormatError> {
        check_dims(nrows, ncols, 0)?;
        let len = checked_len(nrows, width, "ELL padded storage (rows * width)")?;
        check_storage_lengths(len, &col_indices, &values)?;
        let mut nnz = 0;
        let mut max_len = 0;
        for row in 0..nrows {
            let slots = (0..width).map(|k| (col_indices[k * nrows + row], values[k * nrows + row]));
            let row_len = check_padded_row(row, slots, nrows, ncols)?;
            nnz += row_len;
            max_len = max_len.max(row_len);
        }
        if max_len != width {
            return Err(FormatError::BadStructure(format!(
                "ELL width {width} differs from the longest row's length {max_len}"
            )));
        }
        Ok(Self {
            nrows,
            ncols,
            width,
            col_indices,
            values,
            nnz,
        })
    }

    /// Back to CSR (padding dropped, explicit zeros kept).
    pub fn to_csr(&self) -> Csr {
        let mut row_offsets = Vec::with_capacity(self.nrows + 1);
        row_offsets.push(0u32);
        let mut col_indices = Vec::with_capacity(self.nnz);
        let mut values = Vec::with_capacity(self.nnz);
        for row in 0..self.nrows {
            for (col, value) in self.row_entries(row) {
                col_indices.push(col);
                values.push(value);
            }
            row_offsets.push(col_indices.len() as u32);
        }
        Csr::from_parts_unchecked(self.nrows, self.ncols, row_offsets, col_indices, values)
    }

    /// Slots per row (the longest row's length).
    pub fn width(&self) -> usize {
        self.width
    }

    /// Column index of every slot, column-major (`k * nrows + row`).
    pub fn col_indices(&self) -> &[u32] {
        &self.col_indices
    }

    /// Value of every slot, column-major (`k * nrows + row`).
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// The entries `(col, value)` of row `row`, padding excluded.
    ///
    /// # Panics
    /// When `row >= nrows()` (an indexing bug, not bad input).
    pub fn row_entries(&self, row: usize) -> impl Iterator<Item = (u32, f32)> + '_ {
        assert!(
            row < self.nrows,
            "row {row} out of range for {} rows",
            self.nrows
        );
        (0..self.width)
            .map(move |k| {
                (
                    self.col_indices[k * self.nrows + row],
                    self.values[k * self.nrows + row],
                )
            })
            .take_while(|&(col, _)| col != PADDING_COLUMN)
    }
}

impl SparseMatrix for Ell {
    fn nrows(&self) -> usize {
        self.nrows
    }

    fn ncols(&self) -> usize {
        self.ncols
    }

    fn nnz(&self) -> usize {
        self.nnz
    }

    fn to_dense(&self) -> Array2<f32> {
        dense_from_rows(self.nrows, self.ncols, |row| self.row_entries(row))
    }

    fn left_multiply(&self, y: ArrayView2<'_, f32>) -> Result<Array2<f32>, FormatError> {
        product_from_rows(y, self.nrows, self.ncols, |row| self.row_entries(row))
    }
}

/// Checks that both padded arrays are `len` long.
pub(crate) fn check_storage_lengths(
    len: usize,
    col_indices: &[u32],
    values: &[f32],
) -> Result<(), FormatError> {
    for (what, found) in [
        ("padded column indices length", col_indices.len()),
        ("padded values length", values.len()),
    ] {
        if found != len {
            return Err(FormatError::ShapeMismatch {
                what,
                expected: len,
                found,
            });
        }
    }
    Ok(())
}

/// Checks one padded row given its slots in order and returns its entry count.
///
/// Rows at or past `nrows` (the padding rows of a sliced-ELL slice) must be all padding.
pub(crate) fn check_padded_row(
    row: usize,
    slots: impl Iterator<Item = (u32, f32)>,
    nrows: usize,
    ncols: usize,
) -> Result<usize, FormatError> {
    let mut row_len = 0;
    let mut in_padding = row >= nrows;
    let mut previous: Option<u32> = None;
    for (k, (col, value)) in slots.enumerate() {
        if col == PADDING_COLUMN {
            in_padding = true;
            if value != 0.0 {
                return Err(FormatError::BadStructure(format!(
                    "padding slot {k} of row {row} holds {value}, must be 0"
                )));
            }
            continue;
        }
        if in_padding {
            return Err(FormatError::BadStructure(format!(
                "slot {k} of row {row} holds column {col} after padding (or in a padding row \
                 past row {nrows})"
            )));
        }
        if col as usize >= ncols {
            return Err(FormatError::IndexOutOfRange {
                row: row as u64,
                col: col.into(),
                nrows,
                ncols,
            });
        }
        if let Some(previous) = previous
            && previous >= col
        {
            return Err(if previous == col {
                FormatError::DuplicateEntry {
                    row: row as u32,
                    col,
                }
            } else {
                FormatError::BadStructure(format!(
                    "column indices of row {row} are not increasing ({previous} then {col})"
                ))
            });
        }
        if !value.is_finite() {
            return Err(FormatError::NonFiniteValue {
                row: row as u32,
                col,
                value,
            });
        }
        previous = Some(col);
        row_len += 1;
    }
    Ok(row_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u32 = PADDING_COLUMN;

    fn sample() -> Csr {
        // 3x4:
        // [0 1 0 2]
        // [0 0 0 0]
        // [3 0 0 0]
        Csr::from_triplets(3, 4, &[(0, 1, 1.0), (0, 3, 2.0), (2, 0, 3.0)]).unwrap()
    }

    #[test]
    fn layout_is_column_major_with_trailing_padding() {
        let m = Ell::from_csr(&sample()).unwrap();
        assert_eq!(m.width(), 2);
        assert_eq!(m.col_indices(), &[1, P, 0, 3, P, P]);
        assert_eq!(m.values(), &[1.0, 0.0, 3.0, 2.0, 0.0, 0.0]);
        assert_eq!(m.nnz(), 3);
        assert_eq!(m.to_csr(), sample());
        assert_eq!(m.to_dense(), sample().to_dense());
    }

    #[test]
    fn explicit_zeros_survive() {
        let csr = Csr::from_triplets(2, 2, &[(0, 1, 0.0), (1, 0, 1.0)]).unwrap();
        let m = Ell::from_csr(&csr).unwrap();
        assert_eq!(m.nnz(), 2);
        assert_eq!(m.to_csr(), csr);
    }

    #[test]
    fn parts_round_trip_and_bad_parts_are_errors() {
        let m = Ell::from_csr(&sample()).unwrap();
        let (c, v) = (m.col_indices().to_vec(), m.values().to_vec());
        let parts = |cols: Vec<u32>, vals: Vec<f32>| Ell::from_parts(3, 4, 2, cols, vals);
        assert_eq!(parts(c.clone(), v.clone()).unwrap(), m);
        assert!(matches!(
            parts(c[1..].to_vec(), v.clone()),
            Err(FormatError::ShapeMismatch { .. })
        ));
        assert!(matches!(
            parts(c.clone(), v[1..].to_vec()),
            Err(FormatError::ShapeMismatch { .. })
        ));
        // Width larger than the longest row.
        assert!(matches!(
            Ell::from_parts(
                3,
                4,
                3,
                [c.clone(), vec![P; 3]].concat(),
                [v.clone(), vec![0.0; 3]].concat()
            ),
            Err(FormatError::BadStructure(_))
        ));
        // Entry after padding in row 1.
        assert!(matches!(
            parts(vec![1, P, 0, 3, 2, P], v.clone()),
            Err(FormatError::BadStructure(_))
        ));
        // Nonzero padding value.
        assert!(matches!(
            parts(c.clone(), vec![1.0, 5.0, 3.0, 2.0, 0.0, 0.0]),
            Err(FormatError::BadStructure(_))
        ));
        // Column out of range, decreasing, duplicate.
        assert!(matches!(
            parts(vec![1, P, 0, 4, P, P], v.clone()),
            Err(FormatError::IndexOutOfRange { .. })
        ));
        assert!(matches!(
            parts(vec![3, P, 0, 1, P, P], v.clone()),
            Err(FormatError::BadStructure(_))
        ));
        assert!(matches!(
            parts(vec![1, P, 0, 1, P, P], v.clone()),
            Err(FormatError::DuplicateEntry { row: 0, col: 1 })
        ));
        // Non-finite value.
        assert!(matches!(
            parts(c, vec![f32::NAN, 0.0, 3.0, 2.0, 0.0, 0.0]),
            Err(FormatError::NonFiniteValue { .. })
        ));
        // Storage too large for u32 indices.
        assert!(matches!(
            Ell::from_parts(1 << 20, 4, 1 << 13, vec![], vec![]),
            Err(FormatError::BadParameter(_))
        ));
    }

    #[test]
    fn empty_shapes_work() {
        let m = Ell::from_csr(&Csr::zeros(0, 3).unwrap()).unwrap();
        assert_eq!((m.width(), m.nnz()), (0, 0));
        let m = Ell::from_csr(&Csr::zeros(4, 3).unwrap()).unwrap();
        assert_eq!((m.width(), m.to_dense()), (0, Array2::zeros((4, 3))));
    }

    #[test]
    fn product_with_wrong_operand_width_is_error() {
        let m = Ell::from_csr(&sample()).unwrap();
        assert!(matches!(
            m.left_multiply(Array2::zeros((2, 4)).view()),
            Err(FormatError::ShapeMismatch { .. })
        ));
    }
}
