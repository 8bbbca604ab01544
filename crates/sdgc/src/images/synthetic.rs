//! Seeded random binary inputs of about 10% density, for when MNIST cannot be had.
//!
//! Row `k` uses its own `ChaCha8Rng` seeded with `seed.to_le_bytes() ‖ k.to_le_bytes() ‖
//! b"synthetic-input\0"`, and feature `f` is set iff the `f`-th `next_u32()` of that stream is
//! below `⌊0.1 · 2^32⌋`. Rows are independent, so the result does not depend on threads.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

use super::binary_csr;
use crate::{Input, InputOrigin, SdgcError};

/// Probability that a synthetic pixel is set.
pub const SYNTHETIC_DENSITY: f64 = 0.1;

/// A `rows × neurons` binary input (values 1) with each pixel set independently with
/// probability [`SYNTHETIC_DENSITY`], reproducible from `seed`; its origin is
/// `InputOrigin::Synthetic { seed }`.
///
/// Errors when `rows` or `neurons` is 0 or above its [limit](crate::limits).
pub fn synthetic(rows: usize, neurons: usize, seed: u64) -> Result<Input, SdgcError> {
    if rows == 0 || neurons == 0 {
        return Err(SdgcError::Parameter(format!(
            "a synthetic input needs at least one row and one neuron, got {rows}×{neurons}"
        )));
    }
    crate::limits::check_rows(rows)?;
    crate::limits::check_neurons(neurons)?;
    let cut = (SYNTHETIC_DENSITY * 4_294_967_296.0) as u32;
    let features: Vec<Vec<u32>> = (0..rows as u64)
        .into_par_iter()
        .map(|row| {
            let mut key = [0u8; 32];
            key[..8].copy_from_slice(&seed.to_le_bytes());
            key[8..16].copy_from_slice(&row.to_le_bytes());
            key[16..].copy_from_slice(b"synthetic-input\0");
            let mut rng = ChaCha8Rng::from_seed(key);
            (0..neurons as u32)
                .filter(|_| rng.next_u32() < cut)
                .collect()
        })
        .collect();
    Ok(Input {
        features: binary_csr(neurons, features)?,
        origin: InputOrigin::Synthetic { seed },
    })
}
