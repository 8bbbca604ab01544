//! Challenge-shaped (RadiX-Net) networks for any `N = 16·2^k ≥ 32`.
//!
//! With `G = N/16` groups and `c = log2(G)` layers per cycle, layer `l` (1-based) has
//! offset exponent `p = (l − 1) mod c` and cycle `k = (l − 1) div c`, and
//!
//! ```text
//! W_l[r, j] = 1/16   iff   (π_k(r) − j) mod G ∈ {0, 2^p}
//! ```
//!
//! where `r` is the input neuron (row), `j` the output neuron (column), `π_0` the identity
//! and `π_k` (`k ≥ 1`) a seeded random permutation of the `N` inputs shared by the `c`
//! layers of cycle `k`. Every row and every column holds exactly 32 entries. For
//! `N = 1024` layers 1–6 (cycle 0) equal the official files entry for entry; the official
//! permutations of later cycles are unknown, so later cycles only share their structure.
//!
//! # The permutation, exactly
//!
//! [`cycle_permutation`]`(N, seed, k)` for `k ≥ 1`:
//!
//! 1. A `ChaCha8Rng` (rand_chacha) seeded with the 32 bytes
//!    `seed.to_le_bytes() ‖ k.to_le_bytes() ‖ [0; 16]` (via `SeedableRng::from_seed`).
//! 2. `π = [0, 1, …, N − 1]`, then a Fisher–Yates shuffle: for `i = N − 1` down to `1`,
//!    draw `j` uniform in `0..=i` and swap `π[i]` and `π[j]`.
//! 3. A uniform `j` in `0..b` (`b = i + 1`) is drawn by Lemire's multiply-and-reject
//!    method on `next_u64()`: `m = x·b` as a 128-bit product, `lo = m mod 2^64`; while
//!    `lo < (2^64 − b) mod b`, draw a new `x`; then `j = m div 2^64`.
//!
//! Random unstructured networks (any `N`, `fan_in` random inputs per output, random real
//! weights), the general-network benchmark: [`random_network`] (`generator/random.rs`).

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;
use spdnn_formats::Csr;

use crate::{Network, SdgcError};

mod random;
pub use random::{
    DEFAULT_FAN_IN, check_random, for_each_random_layer, random_layer, random_network,
    random_weight_bound,
};

/// The value of every generated weight, 1/16.
pub const WEIGHT: f32 = 0.0625;

/// Entries per row of a residue class: each output group holds `N / G = 16` neurons.
const GROUP_WIDTH: usize = 16;

/// Checks that `neurons` has the generator's form `16·2^k` with `k ≥ 1` (i.e. 32, 64, …).
pub fn check_neurons(neurons: usize) -> Result<(), SdgcError> {
    if neurons >= 2 * GROUP_WIDTH
        && neurons.is_multiple_of(GROUP_WIDTH)
        && (neurons / GROUP_WIDTH).is_power_of_two()
        && u32::try_from(neurons).is_ok()
    {
        Ok(())
    } else {
        Err(SdgcError::Parameter(format!(
            "the generator needs N = 16·2^k with k ≥ 1 (32, 64, 128, …, 1024, 4096, …), got N = {neurons}"
        )))
    }
}

/// Number of layers in one cycle, `c = log2(N/16)` (6 for N = 1024). `neurons` must be valid.
pub fn layers_per_cycle(neurons: usize) -> usize {
    (neurons / GROUP_WIDTH).trailing_zeros() as usize
}

/// The input permutation `π_k` of cycle `k` (0-based) as `π[r]`, derived from `(seed, k)` as
/// the module documentation describes; the identity for `k = 0`.
pub fn cycle_permutation(neurons: usize, seed: u64, cycle: u64) -> Result<Vec<u32>, SdgcError> {
    check_neurons(neurons)?;
    let mut permutation: Vec<u32> = (0..neurons as u32).collect();
    if cycle == 0 {
        return Ok(permutation);
    }
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&cycle.to_le_bytes());
    let mut rng = ChaCha8Rng::from_seed(key);
    for i in (1..neurons).rev() {
        let j = uniform_below(&mut rng, i as u64 + 1) as usize;
        permutation.swap(i, j);
    }
    Ok(permutation)
}

/// A uniform integer in `0..bound` (`bound ≥ 1`) by Lemire's multiply-and-reject method.
fn uniform_below(rng: &mut ChaCha8Rng, bound: u64) -> u64 {
    let threshold = bound.wrapping_neg() % bound;
    loop {
        let product = u128::from(rng.next_u64()) * u128::from(bound);
        if (product as u64) >= threshold {
            return (product >> 64) as u64;
        }
    }
}

/// Builds layer `layer` (1-based) of the generated `neurons`-neuron network.
///
/// Errors when `neurons` is not `16·2^k ≥ 32` or `layer` is 0.
pub fn layer(neurons: usize, layer: usize, seed: u64) -> Result<Csr, SdgcError> {
    check_neurons(neurons)?;
    if layer == 0 {
        return Err(SdgcError::Parameter(
            "generator layers are numbered from 1, got layer 0".into(),
        ));
    }
    let per_cycle = layers_per_cycle(neurons);
    let exponent = (layer - 1) % per_cycle;
    let cycle = ((layer - 1) / per_cycle) as u64;
    let permutation = cycle_permutation(neurons, seed, cycle)?;
    Ok(layer_from_permutation(neurons, exponent, &permutation))
}

/// The CSR of `W[r, j] = WEIGHT iff (π(r) − j) mod G ∈ {0, 2^exponent}`, built row by row.
fn layer_from_permutation(neurons: usize, exponent: usize, permutation: &[u32]) -> Csr {
    let groups = neurons / GROUP_WIDTH;
    let offset = 1usize << exponent;
    let per_row = 2 * GROUP_WIDTH;
    let row_offsets: Vec<u32> = (0..=neurons).map(|r| (r * per_row) as u32).collect();
    let mut col_indices = vec![0u32; neurons * per_row];
    for (row, cols) in col_indices.chunks_exact_mut(per_row).enumerate() {
        let first = permutation[row] as usize % groups;
        let second = (first + groups - offset) % groups;
        let (low, high) = if first < second {
            (first, second)
        } else {
            (second, first)
        };
        for (t, pair) in cols.chunks_exact_mut(2).enumerate() {
            pair[0] = (low + groups * t) as u32;
            pair[1] = (high + groups * t) as u32;
        }
    }
    let values = vec![WEIGHT; col_indices.len()];
    Csr::from_parts(neurons, neurons, row_offsets, col_indices, values)
        .expect("generated rows are sorted, in range and finite by construction")
}

/// The whole generated network of `layers` layers, built in parallel.
///
/// Errors when `neurons` is not `16·2^k ≥ 32` or `layers` is 0.
pub fn network(neurons: usize, layers: usize, seed: u64) -> Result<Network, SdgcError> {
    check_layers(neurons, layers)?;
    let built: Vec<Csr> = (1..=layers)
        .into_par_iter()
        .map(|l| layer(neurons, l, seed))
        .collect::<Result<_, _>>()?;
    Network::new(neurons, built)
}

/// Hands the generated layers to `consume` in order (with their 1-based index), building a
/// window of about two layers per rayon thread in parallel at a time, so that at most one
/// window is in memory: a 65536-neuron, 1920-layer network can be streamed to disk.
///
/// Stops at the first error, from the generator or from `consume`.
pub fn for_each_layer<E: From<SdgcError>>(
    neurons: usize,
    layers: usize,
    seed: u64,
    mut consume: impl FnMut(usize, Csr) -> Result<(), E>,
) -> Result<(), E> {
    check_layers(neurons, layers)?;
    let window = 2 * rayon::current_num_threads().max(1);
    let mut start = 1;
    while start <= layers {
        let end = (start + window - 1).min(layers);
        let built: Vec<Csr> = (start..=end)
            .into_par_iter()
            .map(|l| layer(neurons, l, seed))
            .collect::<Result<_, _>>()?;
        for (index, csr) in (start..=end).zip(built) {
            consume(index, csr)?;
        }
        start = end + 1;
    }
    Ok(())
}

fn check_layers(neurons: usize, layers: usize) -> Result<(), SdgcError> {
    check_neurons(neurons)?;
    crate::limits::check_neurons(neurons)?;
    if layers == 0 {
        return Err(SdgcError::Parameter(
            "a generated network needs at least one layer".into(),
        ));
    }
    crate::limits::check_layers(layers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_layer_of_n32_follows_the_formula() {
        let w = layer(32, 1, 7).unwrap();
        // G = 2, offset 1: every row has both residues, i.e. all 32 columns.
        for r in 0..32 {
            assert_eq!(w.row(r).0, (0..32).collect::<Vec<u32>>().as_slice());
        }
    }

    #[test]
    fn permutations_are_permutations_and_depend_on_cycle_and_seed() {
        let a = cycle_permutation(1024, 1, 1).unwrap();
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1024).collect::<Vec<u32>>());
        assert_ne!(a, cycle_permutation(1024, 1, 2).unwrap());
        assert_ne!(a, cycle_permutation(1024, 2, 1).unwrap());
        assert_eq!(a, cycle_permutation(1024, 1, 1).unwrap());
    }

    #[test]
    fn uniform_below_stays_in_range() {
        let mut rng = ChaCha8Rng::from_seed([3; 32]);
        for bound in [1u64, 2, 3, 7, 1000, u64::MAX] {
            for _ in 0..100 {
                assert!(uniform_below(&mut rng, bound) < bound);
            }
        }
    }

    #[test]
    fn layer_zero_is_an_error() {
        assert!(layer(1024, 0, 0).is_err());
        assert!(network(1024, 0, 0).is_err());
    }
}
