use ndarray::{Array2, ArrayView2};

use crate::{FormatError, SparseMatrix, check_left_operand};

/// Compressed sparse rows: `row_offsets[i]..row_offsets[i + 1]` index the entries of row `i`.
///
/// Column indices of a row are strictly increasing; values are finite.
#[derive(Debug, Clone, PartialEq)]
pub struct Csr {
    nrows: usize,
    ncols: usize,
    row_offsets: Vec<u32>,
    col_indices: Vec<u32>,
    values: Vec<f32>,
}

impl Csr {
    /// Builds a matrix from `(row, col, value)` triplets in any order (0-based).
    ///
    /// Errors on an index out of range, a duplicate coordinate, a non-finite value or
    /// more entries than `u32` can address.
    pub fn from_triplets(
        nrows: usize,
        ncols: usize,
        triplets: &[(u32, u32, f32)],
    ) -> Result<Self, FormatError> {
        check_dims(nrows, ncols, triplets.len())?;
        let mut counts = vec![0u32; nrows + 1];
        for &(row, col, value) in triplets {
            if row as usize >= nrows || col as usize >= ncols {
                return Err(FormatError::IndexOutOfRange {
                    row: row.into(),
                    col: col.into(),
                    nrows,
                    ncols,
                });
            }
            if !value.is_finite() {
                return Err(FormatError::NonFiniteValue { row, col, value });
            }
            counts[row as usize + 1] += 1;
        }
        for i in 0..nrows {
            counts[i + 1] += counts[i];
        }
        let row_offsets = counts;
        let mut next = row_offsets.clone();
        let mut col_indices = vec![0u32; triplets.len()];
        let mut values = vec![0f32; triplets.len()];
        for &(row, col, value) in triplets {
            let slot = next[row as usize] as usize;
            col_indices[slot] = col;
            values[slot] = value;
            next[row as usize] += 1;
        }
        let mut order: Vec<usize> = Vec::new();
        for row in 0..nrows {
            let (start, end) = (row_offsets[row] as usize, row_offsets[row + 1] as usize);
            let cols = &mut col_indices[start..end];
            if cols.windows(2).all(|w| w[0] < w[1]) {
                continue;
            }
            order.clear();
            order.extend(0..cols.len());
            order.sort_by_key(|&k| cols[k]);
            let sorted_cols: Vec<u32> = order.iter().map(|&k| cols[k]).collect();
            let sorted_vals: Vec<f32> = order.iter().map(|&k| values[start + k]).collect();
            if let Some(w) = sorted_cols.windows(2).find(|w| w[0] == w[1]) {
                return Err(FormatError::DuplicateEntry {
                    row: row as u32,
                    col: w[0],
                });
            }
            cols.copy_from_slice(&sorted_cols);
            values[start..end].copy_from_slice(&sorted_vals);
        }
        Ok(Self {
            nrows,
            ncols,
            row_offsets,
            col_indices,
            values,
        })
    }

    /// Builds a matrix from its three arrays, checking every invariant.
    pub fn from_parts(
        nrows: usize,
        ncols: usize,
        row_offsets: Vec<u32>,
        col_indices: Vec<u32>,
        values: Vec<f32>,
    ) -> Result<Self, FormatError> {
        check_dims(nrows, ncols, col_indices.len())?;
        if row_offsets.len() != nrows + 1 {
            return Err(FormatError::ShapeMismatch {
                what: "row offsets length (rows + 1)",
                expected: nrows + 1,
                found: row_offsets.len(),
            });
        }
        if values.len() != col_indices.len() {
            return Err(FormatError::ShapeMismatch {
                what: "values length (= column indices length)",
                expected: col_indices.len(),
                found: values.len(),
            });
        }
        if row_offsets[0] != 0 || row_offsets[nrows] as usize != col_indices.len() {
            return Err(FormatError::BadStructure(format!(
                "row offsets must run from 0 to {}, found {}..{}",
                col_indices.len(),
                row_offsets[0],
                row_offsets[nrows]
            )));
        }
        // Cheap passes first (they vectorise); only when one fails does the detailed
        // walk below run, to name the offending entry.
        let offsets_monotone = row_offsets.windows(2).all(|w| w[0] <= w[1]);
        let values_finite = values.iter().all(|v| v.is_finite());
        let cols_in_range = col_indices.iter().all(|&c| (c as usize) < ncols);
        let rows_sorted = offsets_monotone
            && row_offsets.windows(2).all(|w| {
                col_indices[w[0] as usize..w[1] as usize]
                    .windows(2)
                    .all(|c| c[0] < c[1])
            });
        if !(values_finite && cols_in_range && rows_sorted) {
            Self::find_invalid_entry(nrows, ncols, &row_offsets, &col_indices, &values)?;
        }
        Ok(Self {
            nrows,
            ncols,
            row_offsets,
            col_indices,
            values,
        })
    }

    /// Wraps arrays that the caller has already built to satisfy every invariant
    /// (used by conversions from the other formats, which produce sorted rows).
    pub(crate) fn from_parts_unchecked(
        nrows: usize,
        ncols: usize,
        row_offsets: Vec<u32>,
        col_indices: Vec<u32>,
        values: Vec<f32>,
    ) -> Self {
        debug_assert!(
            Self::from_parts(
                nrows,
                ncols,
                row_offsets.clone(),
                col_indices.clone(),
                values.clone()
            )
            .is_ok()
        );
        Self {
            nrows,
            ncols,
            row_offsets,
            col_indices,
            values,
        }
    }

    /// The rows `range` as a matrix of their own (same columns). Panics-free: the range is
    /// clamped to the matrix.
    pub fn rows_slice(&self, range: std::ops::Range<usize>) -> Csr {
        let end = range.end.min(self.nrows);
        let start = range.start.min(end);
        let first = self.row_offsets[start];
        let last = self.row_offsets[end];
        let row_offsets = self.row_offsets[start..=end]
            .iter()
            .map(|&o| o - first)
            .collect();
        let entries = first as usize..last as usize;
        Self::from_parts_unchecked(
            end - start,
            self.ncols,
            row_offsets,
            self.col_indices[entries.clone()].to_vec(),
            self.values[entries].to_vec(),
        )
    }

    /// Length of the longest row (0 for a matrix without rows).
    pub fn max_row_len(&self) -> usize {
        self.row_offsets
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0)
    }

    /// The detailed check behind [`Csr::from_parts`]: the first invalid offset or entry.
    fn find_invalid_entry(
        nrows: usize,
        ncols: usize,
        row_offsets: &[u32],
        col_indices: &[u32],
        values: &[f32],
    ) -> Result<(), FormatError> {
        for row in 0..nrows {
            let (start, end) = (row_offsets[row], row_offsets[row + 1]);
            if start > end {
                return Err(FormatError::BadStructure(format!(
                    "row offsets decrease at row {row} ({start} > {end})"
                )));
            }
            if end as usize > col_indices.len() {
                return Err(FormatError::BadStructure(format!(
                    "row offset {end} of row {row} exceeds the {} entries",
                    col_indices.len()
                )));
            }
            let cols = &col_indices[start as usize..end as usize];
            for (k, &col) in cols.iter().enumerate() {
                if col as usize >= ncols {
                    return Err(FormatError::IndexOutOfRange {
                        row: row as u64,
                        col: col.into(),
                        nrows,
                        ncols,
                    });
                }
                if k > 0 && cols[k - 1] >= col {
                    return Err(if cols[k - 1] == col {
                        FormatError::DuplicateEntry {
                            row: row as u32,
                            col,
                        }
                    } else {
                        FormatError::BadStructure(format!(
                            "column indices of row {row} are not increasing ({} then {col})",
                            cols[k - 1]
                        ))
                    });
                }
                let value = values[start as usize + k];
                if !value.is_finite() {
                    return Err(FormatError::NonFiniteValue {
                        row: row as u32,
                        col,
                        value,
                    });
                }
            }
        }
        Ok(())
    }

    /// An empty (all-zero) matrix.
    pub fn zeros(nrows: usize, ncols: usize) -> Result<Self, FormatError> {
        Self::from_parts(nrows, ncols, vec![0; nrows + 1], Vec::new(), Vec::new())
    }

    /// Row offsets, `nrows + 1` long.
    pub fn row_offsets(&self) -> &[u32] {
        &self.row_offsets
    }

    /// Column index of every entry, row by row.
    pub fn col_indices(&self) -> &[u32] {
        &self.col_indices
    }

    /// Value of every entry, row by row.
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// Column indices and values of row `row`.
    ///
    /// # Panics
    /// When `row >= nrows()` (an indexing bug, not bad input).
    pub fn row(&self, row: usize) -> (&[u32], &[f32]) {
        let range = self.row_offsets[row] as usize..self.row_offsets[row + 1] as usize;
        (&self.col_indices[range.clone()], &self.values[range])
    }

    /// Every entry as `(row, col, value)`, row by row.
    pub fn triplets(&self) -> impl Iterator<Item = (u32, u32, f32)> + '_ {
        (0..self.nrows).flat_map(move |row| {
            let (cols, vals) = self.row(row);
            cols.iter()
                .zip(vals)
                .map(move |(&c, &v)| (row as u32, c, v))
        })
    }

    /// The transpose, also in CSR (i.e. this matrix in CSC).
    pub fn transpose(&self) -> Csr {
        let mut counts = vec![0u32; self.ncols + 1];
        for &col in &self.col_indices {
            counts[col as usize + 1] += 1;
        }
        for i in 0..self.ncols {
            counts[i + 1] += counts[i];
        }
        let mut next = counts.clone();
        let mut col_indices = vec![0u32; self.nnz()];
        let mut values = vec![0f32; self.nnz()];
        for row in 0..self.nrows {
            let (cols, vals) = self.row(row);
            for (&col, &value) in cols.iter().zip(vals) {
                let slot = next[col as usize] as usize;
                col_indices[slot] = row as u32;
                values[slot] = value;
                next[col as usize] += 1;
            }
        }
        // Rows were visited in increasing order, so each transposed row is sorted.
        Csr {
            nrows: self.ncols,
            ncols: self.nrows,
            row_offsets: counts,
            col_indices,
            values,
        }
    }

    /// xxh3-64 of the shape (rows, columns, stored entries, each as 8 little-endian bytes)
    /// and of the offsets, columns and value bits: the content key of the caches that
    /// recognise a network (XY's and S&Z's files, BlockDepend's preparation).
    pub fn content_hash(&self) -> u64 {
        let mut sum = xxhash_rust::xxh3::Xxh3::new();
        for size in [self.nrows, self.ncols, self.nnz()] {
            sum.update(&(size as u64).to_le_bytes());
        }
        sum.update(bytemuck::cast_slice(&self.row_offsets));
        sum.update(bytemuck::cast_slice(&self.col_indices));
        sum.update(bytemuck::cast_slice(&self.values));
        sum.digest()
    }

    /// xxh3-64 of a chain of layers: the layer count (8 little-endian bytes), then each
    /// layer's [`Csr::content_hash`] (computed in parallel, one layer per task) in order: the
    /// key of XY's and S&Z's cache files.
    pub fn chain_content_hash(layers: &[Csr]) -> u64 {
        use rayon::prelude::*;
        let per_layer: Vec<u64> = layers.par_iter().map(Csr::content_hash).collect();
        let mut sum = xxhash_rust::xxh3::Xxh3::new();
        sum.update(&(layers.len() as u64).to_le_bytes());
        for digest in per_layer {
            sum.update(&digest.to_le_bytes());
        }
        sum.digest()
    }

    /// Adds `scale · row(row)` into the dense accumulator `acc` (length `ncols`).
    #[inline]
    pub fn axpy_row(&self, row: usize, scale: f32, acc: &mut [f32]) {
        let (cols, vals) = self.row(row);
        for (&col, &value) in cols.iter().zip(vals) {
            acc[col as usize] += scale * value;
        }
    }
}

impl SparseMatrix for Csr {
    fn nrows(&self) -> usize {
        self.nrows
    }

    fn ncols(&self) -> usize {
        self.ncols
    }

    fn nnz(&self) -> usize {
        self.col_indices.len()
    }

    fn to_dense(&self) -> Array2<f32> {
        let mut dense = Array2::zeros((self.nrows, self.ncols));
        for (row, col, value) in self.triplets() {
            dense[[row as usize, col as usize]] = value;
        }
        dense
    }

    fn left_multiply(&self, y: ArrayView2<'_, f32>) -> Result<Array2<f32>, FormatError> {
        check_left_operand(&y, self.nrows)?;
        let mut out = Array2::zeros((y.nrows(), self.ncols));
        for (y_row, mut out_row) in y.rows().into_iter().zip(out.rows_mut()) {
            let acc = out_row
                .as_slice_mut()
                .expect("a fresh Array2 is contiguous");
            for (j, &y_j) in y_row.iter().enumerate() {
                if y_j != 0.0 {
                    self.axpy_row(j, y_j, acc);
                }
            }
        }
        Ok(out)
    }
}

/// Checks that the sizes fit the `u32` indices this crate uses.
pub(crate) fn check_dims(nrows: usize, ncols: usize, nnz: usize) -> Result<(), FormatError> {
    let limit = u32::MAX as usize;
    if nrows > limit || ncols > limit || nnz > limit {
        return Err(FormatError::BadParameter(format!(
            "a {nrows}x{ncols} matrix with {nnz} entries does not fit u32 indices"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_hashes_see_values_shapes_order_and_count() {
        let a = Csr::from_triplets(2, 3, &[(0, 1, 0.5), (1, 2, -1.0)]).unwrap();
        let b = Csr::from_triplets(2, 3, &[(0, 1, 0.5), (1, 2, 1.0)]).unwrap();
        let wide = Csr::from_triplets(2, 4, &[(0, 1, 0.5), (1, 2, -1.0)]).unwrap();
        assert_eq!(a.content_hash(), a.clone().content_hash());
        assert_ne!(a.content_hash(), b.content_hash());
        assert_ne!(a.content_hash(), wide.content_hash());
        let chain = |layers: &[Csr]| Csr::chain_content_hash(layers);
        assert_eq!(
            chain(&[a.clone(), b.clone()]),
            chain(&[a.clone(), b.clone()])
        );
        assert_ne!(
            chain(&[a.clone(), b.clone()]),
            chain(&[b.clone(), a.clone()])
        );
        assert_ne!(
            chain(std::slice::from_ref(&a)),
            chain(&[a.clone(), a.clone()])
        );
        assert_ne!(chain(&[]), chain(&[a]));
    }

    #[test]
    fn triplets_are_sorted_within_rows() {
        let m = Csr::from_triplets(2, 3, &[(1, 2, 3.0), (0, 1, 1.0), (1, 0, 2.0)]).unwrap();
        assert_eq!(m.row_offsets(), &[0, 1, 3]);
        assert_eq!(m.col_indices(), &[1, 0, 2]);
        assert_eq!(m.values(), &[1.0, 2.0, 3.0]);
    }

    #[test]
    fn row_slices_keep_their_rows() {
        let m = Csr::from_triplets(4, 3, &[(0, 1, 1.0), (1, 0, 2.0), (1, 2, 3.0), (3, 1, 4.0)])
            .unwrap();
        let middle = m.rows_slice(1..3);
        assert_eq!(middle.nrows(), 2);
        assert_eq!(
            middle.triplets().collect::<Vec<_>>(),
            vec![(0, 0, 2.0), (0, 2, 3.0)]
        );
        assert_eq!(
            m.rows_slice(3..9).triplets().collect::<Vec<_>>(),
            vec![(0, 1, 4.0)]
        );
        assert_eq!(m.rows_slice(5..9).nrows(), 0);
    }

    #[test]
    fn bad_triplets_are_errors() {
        assert!(matches!(
            Csr::from_triplets(2, 2, &[(2, 0, 1.0)]),
            Err(FormatError::IndexOutOfRange { .. })
        ));
        assert!(matches!(
            Csr::from_triplets(2, 2, &[(0, 1, 1.0), (0, 1, 2.0)]),
            Err(FormatError::DuplicateEntry { row: 0, col: 1 })
        ));
        assert!(matches!(
            Csr::from_triplets(2, 2, &[(0, 1, f32::NAN)]),
            Err(FormatError::NonFiniteValue { .. })
        ));
    }

    #[test]
    fn bad_parts_are_errors() {
        assert!(Csr::from_parts(2, 2, vec![0, 1], vec![0], vec![1.0]).is_err());
        assert!(Csr::from_parts(2, 2, vec![0, 2, 1], vec![0, 1], vec![1.0, 1.0]).is_err());
        assert!(Csr::from_parts(1, 2, vec![0, 2], vec![1, 0], vec![1.0, 1.0]).is_err());
        assert!(Csr::from_parts(1, 2, vec![0, 1], vec![0], vec![]).is_err());
        assert!(Csr::from_parts(1, 2, vec![0, 1], vec![0], vec![1.0]).is_ok());
        // An interior offset past the end must be an error, not a slicing panic.
        assert!(matches!(
            Csr::from_parts(2, 2, vec![0, 5, 1], vec![0], vec![1.0]),
            Err(FormatError::BadStructure(_))
        ));
    }

    #[test]
    fn product_matches_hand_computation() {
        // W = [[1, 2], [0, 3]], Y = [[1, 1], [2, 0]] -> Y·W = [[1, 5], [2, 4]]
        let w = Csr::from_triplets(2, 2, &[(0, 0, 1.0), (0, 1, 2.0), (1, 1, 3.0)]).unwrap();
        let y = ndarray::array![[1.0f32, 1.0], [2.0, 0.0]];
        let z = w.left_multiply(y.view()).unwrap();
        assert_eq!(z, ndarray::array![[1.0f32, 5.0], [2.0, 4.0]]);
        assert!(
            w.left_multiply(ndarray::Array2::zeros((1, 3)).view())
                .is_err()
        );
    }

    #[test]
    fn transpose_twice_is_identity() {
        let m = Csr::from_triplets(3, 2, &[(2, 1, 3.0), (0, 1, 1.0), (1, 0, 2.0)]).unwrap();
        assert_eq!(m.transpose().transpose(), m);
        assert_eq!(m.transpose().to_dense(), m.to_dense().t());
    }
}
