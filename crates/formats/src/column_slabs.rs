use ndarray::{Array2, ArrayView2};

use crate::{Csr, FormatError, SparseMatrix, check_left_operand};

/// CSR cut into slabs of `slab_width` consecutive columns (the last may be narrower).
///
/// Slab `s` is a CSR over all rows holding the columns `s·slab_width ..`: the entries
/// of row `j` are `offsets[s·(nrows+1) + j] .. offsets[s·(nrows+1) + j + 1]`, positions
/// into `local_cols` / `values`; a local column is the column minus `s·slab_width`.
/// This is the weight layout of BF-2019 and SNIG-2020: a slab's outputs fit in a GPU
/// block's shared memory.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSlabs {
    nrows: usize,
    ncols: usize,
    slab_width: usize,
    offsets: Vec<u32>,
    local_cols: Vec<u32>,
    values: Vec<f32>,
}

impl ColumnSlabs {
    /// Cuts `matrix` into slabs of `slab_width` columns (≥ 1).
    pub fn from_csr(matrix: &Csr, slab_width: usize) -> Result<Self, FormatError> {
        if slab_width == 0 {
            return Err(FormatError::BadParameter(
                "the slab width must be at least 1".into(),
            ));
        }
        let (nrows, ncols) = (matrix.nrows(), matrix.ncols());
        let num_slabs = ncols.div_ceil(slab_width).max(1);
        let mut offsets = Vec::with_capacity(num_slabs * (nrows + 1));
        let mut local_cols = Vec::with_capacity(matrix.nnz());
        let mut values = Vec::with_capacity(matrix.nnz());
        for slab in 0..num_slabs {
            let first = (slab * slab_width) as u32;
            let end = ((slab + 1) * slab_width).min(ncols) as u32;
            for row in 0..nrows {
                offsets.push(local_cols.len() as u32);
                let (cols, vals) = matrix.row(row);
                let start = cols.partition_point(|&c| c < first);
                let stop = cols.partition_point(|&c| c < end);
                local_cols.extend(cols[start..stop].iter().map(|&c| c - first));
                values.extend_from_slice(&vals[start..stop]);
            }
            offsets.push(local_cols.len() as u32);
        }
        Ok(Self {
            nrows,
            ncols,
            slab_width,
            offsets,
            local_cols,
            values,
        })
    }

    /// Columns per slab.
    pub fn slab_width(&self) -> usize {
        self.slab_width
    }

    /// Number of slabs, `ceil(ncols / slab_width)` (at least 1).
    pub fn num_slabs(&self) -> usize {
        self.offsets.len() / (self.nrows + 1)
    }

    /// Entry offsets, `num_slabs · (nrows + 1)` long (slab-major).
    pub fn offsets(&self) -> &[u32] {
        &self.offsets
    }

    /// Column of each entry relative to its slab's first column.
    pub fn local_cols(&self) -> &[u32] {
        &self.local_cols
    }

    /// Value of each entry.
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// Back to plain CSR.
    pub fn to_csr(&self) -> Csr {
        let mut triplets = Vec::with_capacity(self.values.len());
        self.for_each_entry(|row, col, value| triplets.push((row as u32, col as u32, value)));
        Csr::from_triplets(self.nrows, self.ncols, &triplets).expect("slabs hold a valid matrix")
    }

    fn for_each_entry(&self, mut visit: impl FnMut(usize, usize, f32)) {
        for slab in 0..self.num_slabs() {
            let base = slab * (self.nrows + 1);
            for row in 0..self.nrows {
                let range =
                    self.offsets[base + row] as usize..self.offsets[base + row + 1] as usize;
                for k in range {
                    visit(
                        row,
                        slab * self.slab_width + self.local_cols[k] as usize,
                        self.values[k],
                    );
                }
            }
        }
    }
}

impl SparseMatrix for ColumnSlabs {
    fn nrows(&self) -> usize {
        self.nrows
    }

    fn ncols(&self) -> usize {
        self.ncols
    }

    fn nnz(&self) -> usize {
        self.values.len()
    }

    fn to_dense(&self) -> Array2<f32> {
        let mut dense = Array2::zeros((self.nrows, self.ncols));
        self.for_each_entry(|row, col, value| dense[[row, col]] = value);
        dense
    }

    fn left_multiply(&self, y: ArrayView2<'_, f32>) -> Result<Array2<f32>, FormatError> {
        check_left_operand(&y, self.nrows)?;
        let mut out = Array2::zeros((y.nrows(), self.ncols));
        self.for_each_entry(|row, col, value| {
            for r in 0..y.nrows() {
                out[[r, col]] += y[[r, row]] * value;
            }
        });
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slabs_round_trip_and_split_columns() {
        let m = Csr::from_triplets(
            3,
            5,
            &[
                (0, 0, 1.0),
                (0, 4, 2.0),
                (1, 2, 3.0),
                (2, 3, 4.0),
                (2, 1, 5.0),
            ],
        )
        .unwrap();
        let slabs = ColumnSlabs::from_csr(&m, 2).unwrap();
        assert_eq!(slabs.num_slabs(), 3);
        assert_eq!(slabs.nnz(), 5);
        assert_eq!(slabs.to_csr(), m);
        assert_eq!(slabs.to_dense(), m.to_dense());
        // Slab 2 holds column 4 only, as local column 0.
        let base = 2 * 4;
        assert_eq!(&slabs.offsets()[base..base + 4], &[4, 5, 5, 5]);
        assert_eq!(slabs.local_cols()[4], 0);
        assert!(ColumnSlabs::from_csr(&m, 0).is_err());
    }

    #[test]
    fn product_equals_csr_product() {
        let m = Csr::from_triplets(2, 3, &[(0, 0, 1.0), (0, 2, 2.0), (1, 1, 3.0)]).unwrap();
        let y = ndarray::array![[1.0f32, 2.0], [0.5, 0.0]];
        let slabs = ColumnSlabs::from_csr(&m, 1).unwrap();
        assert_eq!(
            slabs.left_multiply(y.view()).unwrap(),
            m.left_multiply(y.view()).unwrap()
        );
    }
}
