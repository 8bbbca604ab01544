//! Property tests: every format agrees with CSR on random matrices.
//!
//! Values are dyadic (`k / 4`, small `k`) and the left operand holds small integers, so
//! every product and sum is exact in f32 and results are compared with `==`.

use std::collections::BTreeSet;

use ndarray::Array2;
use proptest::prelude::*;
use spdnn_formats::{Bcsr, ColumnSlabs, Csr, Ell, SlicedEll, SparseMatrix};

/// A random matrix: shape, and duplicate-free triplets in shuffled order. About one
/// value in 17 is an explicitly stored zero.
fn matrix() -> impl Strategy<Value = (usize, usize, Vec<(u32, u32, f32)>)> {
    (0usize..=37, 0usize..=37, 0u8..=100).prop_flat_map(|(nrows, ncols, density)| {
        let cells = proptest::collection::vec((0u8..100, -8i8..=8), nrows * ncols);
        cells
            .prop_map(move |cells| {
                cells
                    .into_iter()
                    .enumerate()
                    .filter(|&(_, (draw, _))| draw < density)
                    .map(|(i, (_, k))| ((i / ncols) as u32, (i % ncols) as u32, f32::from(k) / 4.0))
                    .collect::<Vec<_>>()
            })
            .prop_shuffle()
            .prop_map(move |triplets| (nrows, ncols, triplets))
    })
}

/// A dense left operand with `width` columns and mostly small integers (many zeros).
fn left_operand(width: usize) -> impl Strategy<Value = Array2<f32>> {
    (0usize..=5).prop_flat_map(move |rows| {
        proptest::collection::vec(prop_oneof![2 => Just(0i8), 3 => -3i8..=3], rows * width)
            .prop_map(move |v| {
                Array2::from_shape_vec((rows, width), v.into_iter().map(f32::from).collect())
                    .expect("length is rows * width")
            })
    })
}

fn case() -> impl Strategy<Value = (Csr, Array2<f32>, (usize, usize), usize)> {
    matrix().prop_flat_map(|(nrows, ncols, triplets)| {
        let csr = Csr::from_triplets(nrows, ncols, &triplets).expect("valid triplets");
        (
            Just(csr),
            left_operand(nrows),
            (1usize..=9, 1usize..=9),
            1usize..=40,
        )
    })
}

/// `csr` without its explicitly stored zeros.
fn without_zeros(csr: &Csr) -> Csr {
    let kept: Vec<_> = csr.triplets().filter(|&(_, _, v)| v != 0.0).collect();
    Csr::from_triplets(csr.nrows(), csr.ncols(), &kept).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_format_matches_csr((csr, y, (r, c), h) in case()) {
        let dense = csr.to_dense();
        let expected_product = y.dot(&dense);
        prop_assert_eq!(csr.left_multiply(y.view()).unwrap(), expected_product.clone());
        prop_assert_eq!(csr.transpose().to_dense(), dense.t().to_owned());

        // BCSR: zeros are not entries; blocks are exactly those holding a nonzero.
        let bcsr = Bcsr::from_csr(&csr, r, c).unwrap();
        let nonzero = without_zeros(&csr);
        prop_assert_eq!(bcsr.block_shape(), (r, c));
        prop_assert_eq!(bcsr.to_dense(), dense.clone());
        prop_assert_eq!(bcsr.left_multiply(y.view()).unwrap(), expected_product.clone());
        prop_assert_eq!(bcsr.to_csr(), nonzero.clone());
        prop_assert_eq!(bcsr.nnz(), nonzero.nnz());
        let occupied: BTreeSet<(u32, u32)> =
            nonzero.triplets().map(|(i, j, _)| (i / r as u32, j / c as u32)).collect();
        prop_assert_eq!(bcsr.n_blocks(), occupied.len());
        prop_assert_eq!(bcsr.n_block_rows(), csr.nrows().div_ceil(r));
        let rebuilt = Bcsr::from_parts(
            csr.nrows(), csr.ncols(), r, c,
            bcsr.block_row_offsets().to_vec(),
            bcsr.block_col_indices().to_vec(),
            bcsr.block_values().to_vec(),
        ).unwrap();
        prop_assert_eq!(&rebuilt, &bcsr);

        // ELL: width is the longest row; explicit zeros kept.
        let ell = Ell::from_csr(&csr).unwrap();
        prop_assert_eq!(ell.width(), csr.max_row_len());
        prop_assert_eq!(ell.nnz(), csr.nnz());
        prop_assert_eq!(ell.to_dense(), dense.clone());
        prop_assert_eq!(ell.left_multiply(y.view()).unwrap(), expected_product.clone());
        prop_assert_eq!(ell.to_csr(), csr.clone());
        let rebuilt = Ell::from_parts(
            csr.nrows(), csr.ncols(), ell.width(),
            ell.col_indices().to_vec(), ell.values().to_vec(),
        ).unwrap();
        prop_assert_eq!(&rebuilt, &ell);

        // Sliced ELL: each slice as wide as its longest row.
        let sell = SlicedEll::from_csr(&csr, h).unwrap();
        prop_assert_eq!(sell.n_slices(), csr.nrows().div_ceil(h));
        for s in 0..sell.n_slices() {
            let longest = (s * h..((s + 1) * h).min(csr.nrows()))
                .map(|row| csr.row(row).0.len())
                .max()
                .unwrap_or(0);
            prop_assert_eq!(sell.slice_width(s), longest);
        }
        prop_assert_eq!(sell.nnz(), csr.nnz());
        prop_assert_eq!(sell.to_dense(), dense.clone());
        prop_assert_eq!(sell.left_multiply(y.view()).unwrap(), expected_product.clone());
        prop_assert_eq!(sell.to_csr(), csr.clone());
        let rebuilt = SlicedEll::from_parts(
            csr.nrows(), csr.ncols(), h,
            sell.slice_offsets().to_vec(),
            sell.col_indices().to_vec(),
            sell.values().to_vec(),
        ).unwrap();
        prop_assert_eq!(&rebuilt, &sell);

        // Column slabs of h columns: every entry lands in exactly one slab.
        let slabs = ColumnSlabs::from_csr(&csr, h).unwrap();
        prop_assert_eq!(slabs.num_slabs(), csr.ncols().div_ceil(h).max(1));
        prop_assert_eq!(slabs.nnz(), csr.nnz());
        prop_assert_eq!(slabs.to_dense(), dense.clone());
        prop_assert_eq!(slabs.left_multiply(y.view()).unwrap(), expected_product);
        prop_assert_eq!(slabs.to_csr(), csr.clone());
    }

    #[test]
    fn triplet_constructors_agree_with_from_csr(
        (nrows, ncols, triplets) in matrix(), r in 1usize..=6, c in 1usize..=6, h in 1usize..=12,
    ) {
        let csr = Csr::from_triplets(nrows, ncols, &triplets).unwrap();
        prop_assert_eq!(
            Bcsr::from_triplets(nrows, ncols, &triplets, r, c).unwrap(),
            Bcsr::from_csr(&csr, r, c).unwrap()
        );
        prop_assert_eq!(Ell::from_triplets(nrows, ncols, &triplets).unwrap(), Ell::from_csr(&csr).unwrap());
        prop_assert_eq!(
            SlicedEll::from_triplets(nrows, ncols, &triplets, h).unwrap(),
            SlicedEll::from_csr(&csr, h).unwrap()
        );
    }
}

#[test]
fn triplet_errors_pass_through() {
    let duplicate = [(0, 0, 1.0), (0, 0, 2.0)];
    assert!(Bcsr::from_triplets(2, 2, &duplicate, 2, 2).is_err());
    assert!(Ell::from_triplets(2, 2, &duplicate).is_err());
    assert!(SlicedEll::from_triplets(2, 2, &duplicate, 2).is_err());
    let outside = [(2, 0, 1.0)];
    assert!(Bcsr::from_triplets(2, 2, &outside, 1, 1).is_err());
    assert!(Ell::from_triplets(2, 2, &outside).is_err());
    assert!(SlicedEll::from_triplets(2, 2, &outside, 1).is_err());
}

#[test]
fn huge_parameters_are_errors_or_cheap() {
    let csr = Csr::from_triplets(3, 3, &[(0, 0, 1.0), (2, 2, 2.0)]).unwrap();
    // A slice taller than the matrix is fine; one too tall for u32 storage is an error.
    let one_slice = SlicedEll::from_csr(&csr, 1000).unwrap();
    assert_eq!((one_slice.n_slices(), one_slice.slice_width(0)), (1, 1));
    assert_eq!(one_slice.to_csr(), csr);
    assert!(SlicedEll::from_csr(&csr, usize::MAX).is_err());
    // A zero-width slice of enormous height is validated without visiting its rows.
    let empty = SlicedEll::from_parts(3, 3, usize::MAX, vec![0, 0], vec![], vec![]).unwrap();
    assert_eq!(empty.nnz(), 0);
    // Blocks larger than u32 storage are an error.
    assert!(Bcsr::from_csr(&csr, 1 << 20, 1 << 20).is_err());
}
