use ndarray::{Array2, ArrayView2};

use crate::csr::check_dims;
use crate::{Csr, FormatError, SparseMatrix, check_left_operand, checked_len};

/// Block compressed sparse rows with a fixed block shape `r × c`.
///
/// The matrix is cut into block rows of `r` rows and block columns of `c` columns.
/// `block_row_offsets[i]..block_row_offsets[i + 1]` index the stored blocks of block
/// row `i`; `block_col_indices` holds each stored block's block-column index (strictly
/// increasing within a block row). Block `k` occupies
/// `block_values[k * r * c..(k + 1) * r * c]`, dense and row-major: the value at local
/// position `(i, j)` is at `k * r * c + i * c + j`.
///
/// When `nrows` or `ncols` is not a multiple of the block shape, the last block row or
/// column reaches past the matrix; those positions are padding and always hold `0.0`.
/// Zeros inside blocks are not entries: [`SparseMatrix::nnz`] counts the nonzero values
/// (for a CSR without explicitly stored zeros, the source's entry count), and
/// [`Bcsr::to_csr`] emits only nonzero values.
#[derive(Debug, Clone, PartialEq)]
pub struct Bcsr {
    nrows: usize,
    ncols: usize,
    block_rows: usize,
    block_cols: usize,
    block_row_offsets: Vec<u32>,
    block_col_indices: Vec<u32>,
    block_values: Vec<f32>,
    nnz: usize,
}

impl Bcsr {
    /// Converts a CSR matrix into blocks of `block_rows × block_cols`.
    ///
    /// Errors with [`FormatError::BadParameter`] on a zero block dimension or when the
    /// padded block storage does not fit `u32` indices. Explicitly stored zeros of `csr`
    /// are dropped.
    pub fn from_csr(csr: &Csr, block_rows: usize, block_cols: usize) -> Result<Self, FormatError> {
        check_block_shape(block_rows, block_cols)?;
        let (nrows, ncols) = (csr.nrows(), csr.ncols());
        let n_block_rows = nrows.div_ceil(block_rows);
        let n_block_cols = ncols.div_ceil(block_cols);
        let block_len = block_rows * block_cols;

        // Stored position of each block column within the current block row.
        const ABSENT: u32 = u32::MAX;
        let mut slot_of_block_col = vec![ABSENT; n_block_cols];
        let mut block_row_offsets = Vec::with_capacity(n_block_rows + 1);
        block_row_offsets.push(0u32);
        let mut block_col_indices: Vec<u32> = Vec::new();
        let mut block_values: Vec<f32> = Vec::new();
        let mut nnz = 0usize;

        for block_row in 0..n_block_rows {
            let first_row = block_row * block_rows;
            let rows = first_row..(first_row + block_rows).min(nrows);
            let first_block = block_col_indices.len();
            for row in rows.clone() {
                let (cols, vals) = csr.row(row);
                for (&col, &value) in cols.iter().zip(vals) {
                    let block_col = col as usize / block_cols;
                    if value != 0.0 && slot_of_block_col[block_col] == ABSENT {
                        slot_of_block_col[block_col] = 0;
                        block_col_indices.push(block_col as u32);
                    }
                }
            }
            block_col_indices[first_block..].sort_unstable();
            for (k, &block_col) in block_col_indices[first_block..].iter().enumerate() {
                slot_of_block_col[block_col as usize] = (first_block + k) as u32;
            }
            let n_blocks = block_col_indices.len();
            let n_values = checked_len(n_blocks, block_len, "BCSR padded block values")?;
            block_values.resize(n_values, 0.0);
            for row in rows {
                let local_row = row - first_row;
                let (cols, vals) = csr.row(row);
                for (&col, &value) in cols.iter().zip(vals) {
                    if value == 0.0 {
                        continue;
                    }
                    let block_col = col as usize / block_cols;
                    let slot = slot_of_block_col[block_col] as usize;
                    let local_col = col as usize - block_col * block_cols;
                    block_values[slot * block_len + local_row * block_cols + local_col] = value;
                    nnz += 1;
                }
            }
            for &block_col in &block_col_indices[first_block..] {
                slot_of_block_col[block_col as usize] = ABSENT;
            }
            block_row_offsets.push(n_blocks as u32);
        }
        Ok(Self {
            nrows,
            ncols,
            block_rows,
            block_cols,
            block_row_offsets,
            block_col_indices,
            block_values,
            nnz,
        })
    }

    /// Builds the matrix from `(row, col, value)` triplets (see [`Csr::from_triplets`]).
    pub fn from_triplets(
        nrows: usize,
        ncols: usize,
        triplets: &[(u32, u32, f32)],
        block_rows: usize,
        block_cols: usize,
    ) -> Result<Self, FormatError> {
        check_block_shape(block_rows, block_cols)?;
        Self::from_csr(
            &Csr::from_triplets(nrows, ncols, triplets)?,
            block_rows,
            block_cols,
        )
    }

    /// Builds the matrix from its arrays (layout in the type's documentation), checking
    /// every invariant: block shape nonzero, offsets monotone from 0 to the block count,
    /// block-column indices in range and strictly increasing within each block row,
    /// `block_values.len() == blocks · r · c`, values finite, padding positions zero.
    #[allow(clippy::too_many_arguments)]
    pub fn from_parts(
        nrows: usize,
        ncols: usize,
        block_rows: usize,
        block_cols: usize,
        block_row_offsets: Vec<u32>,
        block_col_indices: Vec<u32>,
        block_values: Vec<f32>,
    ) -> Result<Self, FormatError> {
        check_block_shape(block_rows, block_cols)?;
        check_dims(nrows, ncols, 0)?;
        let n_block_rows = nrows.div_ceil(block_rows);
        let n_block_cols = ncols.div_ceil(block_cols);
        let n_blocks = block_col_indices.len();
        let block_len = block_rows * block_cols;
        let n_values = checked_len(n_blocks, block_len, "BCSR padded block values")?;
        if block_row_offsets.len() != n_block_rows + 1 {
            return Err(FormatError::ShapeMismatch {
                what: "block row offsets length (block rows + 1)",
                expected: n_block_rows + 1,
                found: block_row_offsets.len(),
            });
        }
        if block_values.len() != n_values {
            return Err(FormatError::ShapeMismatch {
                what: "block values length (blocks * r * c)",
                expected: n_values,
                found: block_values.len(),
            });
        }
        if block_row_offsets[0] != 0 || block_row_offsets[n_block_rows] as usize != n_blocks {
            return Err(FormatError::BadStructure(format!(
                "block row offsets must run from 0 to {n_blocks}, found {}..{}",
                block_row_offsets[0], block_row_offsets[n_block_rows]
            )));
        }
        let mut nnz = 0usize;
        for block_row in 0..n_block_rows {
            let (start, end) = (
                block_row_offsets[block_row],
                block_row_offsets[block_row + 1],
            );
            if start > end || end as usize > n_blocks {
                return Err(FormatError::BadStructure(format!(
                    "block row offsets of block row {block_row} are out of order \
                     ({start}..{end} with {n_blocks} blocks)"
                )));
            }
            let rows_inside = (nrows - block_row * block_rows).min(block_rows);
            for k in start as usize..end as usize {
                let block_col = block_col_indices[k];
                if block_col as usize >= n_block_cols {
                    return Err(FormatError::BadStructure(format!(
                        "block column {block_col} of block row {block_row} is outside the \
                         {n_block_cols} block columns"
                    )));
                }
                if k > start as usize && block_col_indices[k - 1] >= block_col {
                    return Err(FormatError::BadStructure(format!(
                        "block columns of block row {block_row} are not strictly increasing \
                         ({} then {block_col})",
                        block_col_indices[k - 1]
                    )));
                }
                let cols_inside = (ncols - block_col as usize * block_cols).min(block_cols);
                let block = &block_values[k * block_len..(k + 1) * block_len];
                for (position, &value) in block.iter().enumerate() {
                    let (local_row, local_col) = (position / block_cols, position % block_cols);
                    let row = (block_row * block_rows + local_row) as u32;
                    let col = (block_col as usize * block_cols + local_col) as u32;
                    if !value.is_finite() {
                        return Err(FormatError::NonFiniteValue { row, col, value });
                    }
                    if value != 0.0 {
                        if local_row >= rows_inside || local_col >= cols_inside {
                            return Err(FormatError::BadStructure(format!(
                                "padding position ({row}, {col}) of a {nrows}x{ncols} matrix \
                                 holds {value}, must be 0"
                            )));
                        }
                        nnz += 1;
                    }
                }
            }
        }
        Ok(Self {
            nrows,
            ncols,
            block_rows,
            block_cols,
            block_row_offsets,
            block_col_indices,
            block_values,
            nnz,
        })
    }

    /// Back to CSR, with every nonzero value as an entry (padding and zeros dropped).
    pub fn to_csr(&self) -> Csr {
        let mut row_offsets = Vec::with_capacity(self.nrows + 1);
        row_offsets.push(0u32);
        let mut col_indices = Vec::with_capacity(self.nnz);
        let mut values = Vec::with_capacity(self.nnz);
        let (r, c) = (self.block_rows, self.block_cols);
        for row in 0..self.nrows {
            let (block_row, local_row) = (row / r, row % r);
            for k in self.block_range(block_row) {
                let first_col = self.block_col_indices[k] as usize * c;
                let block_row_values = &self.block(k)[local_row * c..(local_row + 1) * c];
                let cols_inside = (self.ncols - first_col).min(c);
                for (local_col, &value) in block_row_values[..cols_inside].iter().enumerate() {
                    if value != 0.0 {
                        col_indices.push((first_col + local_col) as u32);
                        values.push(value);
                    }
                }
            }
            row_offsets.push(col_indices.len() as u32);
        }
        Csr::from_parts_unchecked(self.nrows, self.ncols, row_offsets, col_indices, values)
    }

    /// Block shape `(r, c)`.
    pub fn block_shape(&self) -> (usize, usize) {
        (self.block_rows, self.block_cols)
    }

    /// Number of block rows, `ceil(nrows / r)`.
    pub fn n_block_rows(&self) -> usize {
        self.block_row_offsets.len() - 1
    }

    /// Number of block columns, `ceil(ncols / c)`.
    pub fn n_block_cols(&self) -> usize {
        self.ncols.div_ceil(self.block_cols)
    }

    /// Number of stored blocks.
    pub fn n_blocks(&self) -> usize {
        self.block_col_indices.len()
    }

    /// Block row offsets, `n_block_rows() + 1` long.
    pub fn block_row_offsets(&self) -> &[u32] {
        &self.block_row_offsets
    }

    /// Block-column index of every stored block, block row by block row.
    pub fn block_col_indices(&self) -> &[u32] {
        &self.block_col_indices
    }

    /// All block values, `n_blocks() · r · c` long, each block dense row-major.
    pub fn block_values(&self) -> &[f32] {
        &self.block_values
    }

    /// The dense row-major values of stored block `k`.
    ///
    /// # Panics
    /// When `k >= n_blocks()` (an indexing bug, not bad input).
    pub fn block(&self, k: usize) -> &[f32] {
        let len = self.block_rows * self.block_cols;
        &self.block_values[k * len..(k + 1) * len]
    }

    /// Indices of the stored blocks of block row `block_row`.
    fn block_range(&self, block_row: usize) -> std::ops::Range<usize> {
        self.block_row_offsets[block_row] as usize..self.block_row_offsets[block_row + 1] as usize
    }
}

impl SparseMatrix for Bcsr {
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
        let (r, c) = (self.block_rows, self.block_cols);
        let mut dense = Array2::zeros((self.nrows, self.ncols));
        for block_row in 0..self.n_block_rows() {
            for k in self.block_range(block_row) {
                let first_col = self.block_col_indices[k] as usize * c;
                for (position, &value) in self.block(k).iter().enumerate() {
                    let (row, col) = (block_row * r + position / c, first_col + position % c);
                    if row < self.nrows && col < self.ncols {
                        dense[[row, col]] = value;
                    }
                }
            }
        }
        dense
    }

    fn left_multiply(&self, y: ArrayView2<'_, f32>) -> Result<Array2<f32>, FormatError> {
        check_left_operand(&y, self.nrows)?;
        let (r, c) = (self.block_rows, self.block_cols);
        // Accumulate into rows padded to whole block columns, then cut to ncols.
        let padded_cols = self.n_block_cols() * c;
        let mut acc = vec![0f32; padded_cols];
        let mut out = Array2::zeros((y.nrows(), self.ncols));
        for (y_row, mut out_row) in y.rows().into_iter().zip(out.rows_mut()) {
            acc.fill(0.0);
            for (j, &y_j) in y_row.iter().enumerate() {
                if y_j == 0.0 {
                    continue;
                }
                let (block_row, local_row) = (j / r, j % r);
                for k in self.block_range(block_row) {
                    let first_col = self.block_col_indices[k] as usize * c;
                    let block_row_values = &self.block(k)[local_row * c..(local_row + 1) * c];
                    for (a, &w) in acc[first_col..first_col + c]
                        .iter_mut()
                        .zip(block_row_values)
                    {
                        *a += y_j * w;
                    }
                }
            }
            for (o, &a) in out_row.iter_mut().zip(&acc) {
                *o = a;
            }
        }
        Ok(out)
    }
}

fn check_block_shape(block_rows: usize, block_cols: usize) -> Result<(), FormatError> {
    if block_rows == 0 || block_cols == 0 {
        return Err(FormatError::BadParameter(format!(
            "BCSR block shape must be at least 1x1, got {block_rows}x{block_cols}"
        )));
    }
    checked_len(block_rows, block_cols, "BCSR block size")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Csr {
        // 3x5:
        // [1 0 0 2 0]
        // [0 0 0 0 3]
        // [0 4 0 0 0]
        Csr::from_triplets(3, 5, &[(0, 0, 1.0), (0, 3, 2.0), (1, 4, 3.0), (2, 1, 4.0)]).unwrap()
    }

    #[test]
    fn layout_of_2x2_blocks_with_padding() {
        let m = Bcsr::from_csr(&sample(), 2, 2).unwrap();
        assert_eq!(m.n_block_rows(), 2);
        assert_eq!(m.n_block_cols(), 3);
        assert_eq!(m.block_row_offsets(), &[0, 3, 4]);
        assert_eq!(m.block_col_indices(), &[0, 1, 2, 0]);
        assert_eq!(m.block(0), &[1.0, 0.0, 0.0, 0.0]);
        assert_eq!(m.block(1), &[0.0, 2.0, 0.0, 0.0]);
        // Column 5 and row 3 are padding.
        assert_eq!(m.block(2), &[0.0, 0.0, 3.0, 0.0]);
        assert_eq!(m.block(3), &[0.0, 4.0, 0.0, 0.0]);
        assert_eq!(m.nnz(), 4);
        assert_eq!(m.to_dense(), sample().to_dense());
        assert_eq!(m.to_csr(), sample());
    }

    #[test]
    fn zero_block_dimension_is_bad_parameter() {
        for (r, c) in [(0, 1), (1, 0), (0, 0)] {
            assert!(matches!(
                Bcsr::from_csr(&sample(), r, c),
                Err(FormatError::BadParameter(_))
            ));
            assert!(matches!(
                Bcsr::from_triplets(2, 2, &[], r, c),
                Err(FormatError::BadParameter(_))
            ));
            assert!(matches!(
                Bcsr::from_parts(0, 0, r, c, vec![0], vec![], vec![]),
                Err(FormatError::BadParameter(_))
            ));
        }
        assert!(matches!(
            Bcsr::from_csr(&sample(), usize::MAX, 2),
            Err(FormatError::BadParameter(_))
        ));
    }

    #[test]
    fn explicit_zeros_are_not_entries() {
        let csr = Csr::from_triplets(2, 2, &[(0, 0, 0.0), (1, 1, 5.0)]).unwrap();
        let m = Bcsr::from_csr(&csr, 1, 1).unwrap();
        assert_eq!(m.nnz(), 1);
        assert_eq!(m.n_blocks(), 1);
        assert_eq!(
            m.to_csr(),
            Csr::from_triplets(2, 2, &[(1, 1, 5.0)]).unwrap()
        );
    }

    #[test]
    fn parts_round_trip_and_bad_parts_are_errors() {
        let m = Bcsr::from_csr(&sample(), 2, 2).unwrap();
        let parts = |offsets: Vec<u32>, cols: Vec<u32>, values: Vec<f32>| {
            Bcsr::from_parts(3, 5, 2, 2, offsets, cols, values)
        };
        let (o, c, v) = (
            m.block_row_offsets().to_vec(),
            m.block_col_indices().to_vec(),
            m.block_values().to_vec(),
        );
        assert_eq!(parts(o.clone(), c.clone(), v.clone()).unwrap(), m);
        // Wrong offsets length.
        assert!(matches!(
            parts(vec![0, 4], c.clone(), v.clone()),
            Err(FormatError::ShapeMismatch { .. })
        ));
        // Wrong values length.
        assert!(matches!(
            parts(o.clone(), c.clone(), v[1..].to_vec()),
            Err(FormatError::ShapeMismatch { .. })
        ));
        // Offsets not ending at the block count, and an interior offset past the end.
        assert!(matches!(
            parts(vec![0, 3, 3], c.clone(), v.clone()),
            Err(FormatError::BadStructure(_))
        ));
        assert!(matches!(
            parts(vec![0, 9, 4], c.clone(), v.clone()),
            Err(FormatError::BadStructure(_))
        ));
        // Block column out of range and not increasing.
        assert!(matches!(
            parts(o.clone(), vec![0, 1, 3, 0], v.clone()),
            Err(FormatError::BadStructure(_))
        ));
        assert!(matches!(
            parts(o.clone(), vec![1, 0, 2, 0], v.clone()),
            Err(FormatError::BadStructure(_))
        ));
        // Nonzero in padding: block 2 covers column 5 (outside a 5-column matrix).
        let mut bad = v.clone();
        bad[2 * 4 + 1] = 7.0;
        assert!(matches!(
            parts(o.clone(), c.clone(), bad),
            Err(FormatError::BadStructure(_))
        ));
        // Non-finite value.
        let mut bad = v.clone();
        bad[0] = f32::INFINITY;
        assert!(matches!(
            parts(o, c, bad),
            Err(FormatError::NonFiniteValue { .. })
        ));
    }

    #[test]
    fn product_with_wrong_operand_width_is_error() {
        let m = Bcsr::from_csr(&sample(), 2, 2).unwrap();
        assert!(matches!(
            m.left_multiply(Array2::zeros((1, 4)).view()),
            Err(FormatError::ShapeMismatch { .. })
        ));
    }
}
