use ndarray::{Array2, ArrayView2};

use crate::csr::check_dims;
use crate::ell::{check_padded_row, check_storage_lengths};
use crate::{Csr, FormatError, PADDING_COLUMN, SparseMatrix, dense_from_rows, product_from_rows};

/// Sliced ELLPACK: rows grouped into slices of `slice_height` rows, each slice padded to
/// its own width (the length of its longest row).
///
/// Layout: slice `s` covers rows `s·h..(s+1)·h` (`h = slice_height`) and occupies slots
/// `slice_offsets[s]..slice_offsets[s + 1]`, exactly `h · width(s)` of them, even for a
/// last slice that extends past `nrows` (its missing rows are all padding). Within a
/// slice the storage is **column-major**: slot `k` of the slice's local row `i` is at
/// `slice_offsets[s] + k·h + i`, so when `h` is the warp size, lane `i` reads row `i` and
/// the warp reads `h` consecutive addresses per slot `k`.
///
/// Padding follows [`Ell`](crate::Ell): each row's entries come first, columns strictly
/// increasing, then slots with column [`PADDING_COLUMN`] and value `0.0`. Explicitly
/// stored zeros of a source CSR are kept as entries.
#[derive(Debug, Clone, PartialEq)]
pub struct SlicedEll {
    nrows: usize,
    ncols: usize,
    slice_height: usize,
    slice_offsets: Vec<u32>,
    col_indices: Vec<u32>,
    values: Vec<f32>,
    nnz: usize,
}

impl SlicedEll {
    /// Converts a CSR matrix into slices of `slice_height` rows.
    ///
    /// Errors with [`FormatError::BadParameter`] when `slice_height` is 0 or the padded
    /// storage does not fit `u32` indices.
    pub fn from_csr(csr: &Csr, slice_height: usize) -> Result<Self, FormatError> {
        check_slice_height(slice_height)?;
        let (nrows, ncols) = (csr.nrows(), csr.ncols());
        let n_slices = nrows.div_ceil(slice_height);
        let row_len = |row: usize| (csr.row_offsets()[row + 1] - csr.row_offsets()[row]) as usize;
        let mut slice_offsets = Vec::with_capacity(n_slices + 1);
        slice_offsets.push(0u32);
        let mut total = 0usize;
        for slice in 0..n_slices {
            let rows = slice * slice_height..((slice + 1) * slice_height).min(nrows);
            let width = rows.map(row_len).max().unwrap_or(0);
            total = slice_height
                .checked_mul(width)
                .and_then(|len| total.checked_add(len))
                .filter(|&t| t <= u32::MAX as usize)
                .ok_or_else(|| too_large(nrows, slice_height))?;
            slice_offsets.push(total as u32);
        }
        let mut col_indices = vec![PADDING_COLUMN; total];
        let mut values = vec![0f32; total];
        for row in 0..nrows {
            let (slice, local_row) = (row / slice_height, row % slice_height);
            let base = slice_offsets[slice] as usize + local_row;
            let (cols, vals) = csr.row(row);
            for (k, (&col, &value)) in cols.iter().zip(vals).enumerate() {
                col_indices[base + k * slice_height] = col;
                values[base + k * slice_height] = value;
            }
        }
        Ok(Self {
            nrows,
            ncols,
            slice_height,
            slice_offsets,
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
        slice_height: usize,
    ) -> Result<Self, FormatError> {
        check_slice_height(slice_height)?;
        Self::from_csr(&Csr::from_triplets(nrows, ncols, triplets)?, slice_height)
    }

    /// Builds the matrix from its arrays (layout in the type's documentation), checking
    /// every invariant: `slice_height > 0`; `ceil(nrows / h) + 1` offsets from 0 to the
    /// storage length, each slice's slot count a multiple of `h` whose quotient (the
    /// slice width) equals the slice's longest row; rows padded as in [`crate::Ell`];
    /// the last slice's rows past `nrows` all padding.
    pub fn from_parts(
        nrows: usize,
        ncols: usize,
        slice_height: usize,
        slice_offsets: Vec<u32>,
        col_indices: Vec<u32>,
        values: Vec<f32>,
    ) -> Result<Self, FormatError> {
        check_slice_height(slice_height)?;
        check_dims(nrows, ncols, 0)?;
        let n_slices = nrows.div_ceil(slice_height);
        if slice_offsets.len() != n_slices + 1 {
            return Err(FormatError::ShapeMismatch {
                what: "slice offsets length (slices + 1)",
                expected: n_slices + 1,
                found: slice_offsets.len(),
            });
        }
        let total = slice_offsets[n_slices] as usize;
        check_storage_lengths(total, &col_indices, &values)?;
        if slice_offsets[0] != 0 {
            return Err(FormatError::BadStructure(format!(
                "slice offsets must start at 0, found {}",
                slice_offsets[0]
            )));
        }
        let mut nnz = 0;
        for slice in 0..n_slices {
            let (start, end) = (
                slice_offsets[slice] as usize,
                slice_offsets[slice + 1] as usize,
            );
            if start > end || end > total || (end - start) % slice_height != 0 {
                return Err(FormatError::BadStructure(format!(
                    "slice {slice} spans slots {start}..{end}, not a whole number of \
                     {slice_height}-row columns within {total} slots"
                )));
            }
            let width = (end - start) / slice_height;
            let mut max_len = 0;
            // A slice of width 0 has nothing to check (and its height may be huge).
            let checked_rows = if width == 0 { 0 } else { slice_height };
            for local_row in 0..checked_rows {
                let row = slice * slice_height + local_row;
                let slots = (0..width).map(|k| {
                    let slot = start + k * slice_height + local_row;
                    (col_indices[slot], values[slot])
                });
                let row_len = check_padded_row(row, slots, nrows, ncols)?;
                nnz += row_len;
                max_len = max_len.max(row_len);
            }
            if max_len != width {
                return Err(FormatError::BadStructure(format!(
                    "slice {slice} has width {width} but its longest row has {max_len} entries"
                )));
            }
        }
        Ok(Self {
            nrows,
            ncols,
            slice_height,
            slice_offsets,
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

    /// Rows per slice.
    pub fn slice_height(&self) -> usize {
        self.slice_height
    }

    /// Number of slices, `ceil(nrows / slice_height)`.
    pub fn n_slices(&self) -> usize {
        self.slice_offsets.len() - 1
    }

    /// Slot offset of each slice, `n_slices() + 1` long.
    pub fn slice_offsets(&self) -> &[u32] {
        &self.slice_offsets
    }

    /// Slots per row in slice `slice` (its longest row's length).
    ///
    /// # Panics
    /// When `slice >= n_slices()` (an indexing bug, not bad input).
    pub fn slice_width(&self, slice: usize) -> usize {
        (self.slice_offsets[slice + 1] - self.slice_offsets[slice]) as usize / self.slice_height
    }

    /// Column index of every slot (layout in the type's documentation).
    pub fn col_indices(&self) -> &[u32] {
        &self.col_indices
    }

    /// Value of every slot (layout in the type's documentation).
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
        let (slice, local_row) = (row / self.slice_height, row % self.slice_height);
        let base = self.slice_offsets[slice] as usize + local_row;
        (0..self.slice_width(slice))
            .map(move |k| {
                let slot = base + k * self.slice_height;
                (self.col_indices[slot], self.values[slot])
            })
            .take_while(|&(col, _)| col != PADDING_COLUMN)
    }
}

impl SparseMatrix for SlicedEll {
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

fn check_slice_height(slice_height: usize) -> Result<(), FormatError> {
    if slice_height == 0 {
        return Err(FormatError::BadParameter(
            "sliced ELL slice height must be at least 1".into(),
        ));
    }
    Ok(())
}

fn too_large(nrows: usize, slice_height: usize) -> FormatError {
    FormatError::BadParameter(format!(
        "sliced ELL storage of {nrows} rows in slices of {slice_height} does not fit u32 indices"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u32 = PADDING_COLUMN;

    fn sample() -> Csr {
        // 5x4, slices of 2 rows: widths 2, 1, 1 (last slice has one padding row).
        // [0 1 0 2]
        // [0 0 0 0]
        // [3 0 0 0]
        // [0 0 4 0]
        // [0 0 0 5]
        let t = [
            (0, 1, 1.0),
            (0, 3, 2.0),
            (2, 0, 3.0),
            (3, 2, 4.0),
            (4, 3, 5.0),
        ];
        Csr::from_triplets(5, 4, &t).unwrap()
    }

    #[test]
    fn layout_is_column_major_within_each_slice() {
        let m = SlicedEll::from_csr(&sample(), 2).unwrap();
        assert_eq!(m.n_slices(), 3);
        assert_eq!(m.slice_offsets(), &[0, 4, 6, 8]);
        assert_eq!(
            (m.slice_width(0), m.slice_width(1), m.slice_width(2)),
            (2, 1, 1)
        );
        assert_eq!(m.col_indices(), &[1, P, 3, P, 0, 2, 3, P]);
        assert_eq!(m.values(), &[1.0, 0.0, 2.0, 0.0, 3.0, 4.0, 5.0, 0.0]);
        assert_eq!(m.nnz(), 5);
        assert_eq!(m.to_csr(), sample());
        assert_eq!(m.to_dense(), sample().to_dense());
    }

    #[test]
    fn zero_slice_height_is_bad_parameter() {
        assert!(matches!(
            SlicedEll::from_csr(&sample(), 0),
            Err(FormatError::BadParameter(_))
        ));
        assert!(matches!(
            SlicedEll::from_triplets(2, 2, &[], 0),
            Err(FormatError::BadParameter(_))
        ));
        assert!(matches!(
            SlicedEll::from_parts(0, 0, 0, vec![0], vec![], vec![]),
            Err(FormatError::BadParameter(_))
        ));
    }

    #[test]
    fn parts_round_trip_and_bad_parts_are_errors() {
        let m = SlicedEll::from_csr(&sample(), 2).unwrap();
        let (o, c, v) = (
            m.slice_offsets().to_vec(),
            m.col_indices().to_vec(),
            m.values().to_vec(),
        );
        let parts = |offsets: Vec<u32>, cols: Vec<u32>, vals: Vec<f32>| {
            SlicedEll::from_parts(5, 4, 2, offsets, cols, vals)
        };
        assert_eq!(parts(o.clone(), c.clone(), v.clone()).unwrap(), m);
        assert!(matches!(
            parts(vec![0, 4, 8], c.clone(), v.clone()),
            Err(FormatError::ShapeMismatch { .. })
        ));
        assert!(matches!(
            parts(o.clone(), c[1..].to_vec(), v.clone()),
            Err(FormatError::ShapeMismatch { .. })
        ));
        // Slice not a whole number of columns, interior offset past the end, not from 0.
        assert!(matches!(
            parts(vec![0, 3, 6, 8], c.clone(), v.clone()),
            Err(FormatError::BadStructure(_))
        ));
        assert!(matches!(
            parts(vec![0, 10, 6, 8], c.clone(), v.clone()),
            Err(FormatError::BadStructure(_))
        ));
        assert!(matches!(
            parts(vec![2, 4, 6, 8], c.clone(), v.clone()),
            Err(FormatError::BadStructure(_))
        ));
        // An entry in the padding row past nrows (slot 7 is local row 1 of the last slice).
        assert!(matches!(
            parts(o.clone(), vec![1, P, 3, P, 0, 2, 3, 1], v.clone()),
            Err(FormatError::BadStructure(_))
        ));
        // Slice wider than its longest row.
        assert!(matches!(
            parts(
                vec![0, 4, 8, 10],
                vec![1, P, 3, P, 0, 2, P, P, 3, P],
                vec![1.0, 0.0, 2.0, 0.0, 3.0, 4.0, 0.0, 0.0, 5.0, 0.0]
            ),
            Err(FormatError::BadStructure(_))
        ));
        // Out-of-range column, non-finite value.
        assert!(matches!(
            parts(o.clone(), vec![1, P, 3, P, 0, 2, 4, P], v.clone()),
            Err(FormatError::IndexOutOfRange { .. })
        ));
        let mut bad = v;
        bad[4] = f32::NEG_INFINITY;
        assert!(matches!(
            parts(o, c, bad),
            Err(FormatError::NonFiniteValue { .. })
        ));
    }

    #[test]
    fn product_with_wrong_operand_width_is_error() {
        let m = SlicedEll::from_csr(&sample(), 2).unwrap();
        assert!(matches!(
            m.left_multiply(Array2::zeros((1, 6)).view()),
            Err(FormatError::ShapeMismatch { .. })
        ));
    }
}
