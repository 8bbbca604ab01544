//! Random unstructured networks: the general-network benchmark (issue 12).
//!
//! Every layer is `N × N`; every output column `j` draws `fan_in` distinct input neurons
//! uniformly at random, each with a weight uniform on `(−a, a)`, `a = 3·√(2 / fan_in)`
//! ([`random_weight_bound`]); rows get whatever the columns chose (about `fan_in` each).
//! There are no shared input sets, no identical columns and no repeated values, so exact
//! compression finds nothing (identity) and every method does the full work.
//!
//! # Why these weights
//!
//! The weights have mean 0 and variance `a²/3 = 6/fan_in`, three times He's `2/fan_in`:
//! a ReLU layer then multiplies the second moment of a row's activations by about 3, so
//! rows grow until the bound of 32 holds them, instead of dying under the negative bias
//! (which a variance at or below He's lets happen within a few layers). Positive weights do
//! not serve: their rows either die or saturate entirely within about ten layers, as the
//! challenge's networks do, and a row all at the bound is then retired by a proof, which
//! would leave a "general" benchmark with nothing to compute. Measured with the official
//! bias on the MNIST-recipe input (N = 1024 and 4096, 120 layers, fan-in 8 to 64): about
//! 97–99% of the rows live through all 120 layers (the others die before layer 30), half of
//! a live row's neurons are nonzero and about a quarter are at the bound, every row
//! different from the others. The net is chaotic: rounding differences grow from layer to
//! layer, so the final values of two correct methods may differ (f32 against the f64
//! reference by up to the bound), while the categories, settled in the first 30 layers,
//! agree (they did on 20000 rows at N = 1024).
//!
//! # The draws, exactly
//!
//! Layer `l` (1-based) uses its own `ChaCha8Rng` (rand_chacha), seeded with the 32 bytes
//! `seed.to_le_bytes() ‖ l.to_le_bytes() ‖ fan_in.to_le_bytes() ‖ b"random\0\0"` (all
//! `u64`), so layers can be built in any order and in parallel. For each output column
//! `j = 0, 1, …, N − 1` in turn:
//!
//! 1. Its inputs by Floyd's algorithm: for `t = N − fan_in … N − 1`, draw `r` uniform in
//!    `0..=t` (the generator's Lemire draw on `next_u64()`); keep `r` unless already kept,
//!    then `t`. The kept inputs are sorted ascending.
//! 2. One weight per input, in ascending input order: `u = next_u32() >> 8`, and
//!    `w = (2u + 1 − 2^24) · (a · 2^−24)` in f32 (an odd integer times a power of two times
//!    `a`: never 0, strictly inside `(−a, a)`).

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;
use spdnn_formats::Csr;

use super::uniform_below;
use crate::{Network, SdgcError};

/// The fan-in of the challenge's networks (32 entries a column), the default.
pub const DEFAULT_FAN_IN: usize = 32;

/// Half the width of the weights' range, `a = 3·√(2 / fan_in)` (0.75 at fan-in 32).
pub fn random_weight_bound(fan_in: usize) -> f32 {
    (3.0 * (2.0 / fan_in.max(1) as f64).sqrt()) as f32
}

/// Checks `1 ≤ fan_in ≤ neurons` and that `neurons` indexes with 32 bits (and its
/// `fan_in · neurons` entries too).
pub fn check_random(neurons: usize, fan_in: usize) -> Result<(), SdgcError> {
    if neurons == 0 || u32::try_from(neurons).is_err() {
        return Err(SdgcError::Parameter(format!(
            "a random network needs 1 to {} neurons, got N = {neurons}",
            u32::MAX
        )));
    }
    if fan_in == 0 || fan_in > neurons {
        return Err(SdgcError::Parameter(format!(
            "the fan-in must be 1 to N = {neurons} (distinct inputs per output), got {fan_in}"
        )));
    }
    if neurons
        .checked_mul(fan_in)
        .is_none_or(|n| u32::try_from(n).is_err())
    {
        return Err(SdgcError::Parameter(format!(
            "N = {neurons} with fan-in {fan_in} has too many entries for 32-bit offsets"
        )));
    }
    Ok(())
}

/// Layer `layer` (1-based) of the random network: `neurons × neurons`, each column with
/// `fan_in` distinct inputs and weights uniform on `(−a, a)` (module documentation).
///
/// Errors when the sizes are out of range ([`check_random`]) or `layer` is 0.
pub fn random_layer(
    neurons: usize,
    layer: usize,
    fan_in: usize,
    seed: u64,
) -> Result<Csr, SdgcError> {
    check_random(neurons, fan_in)?;
    if layer == 0 {
        return Err(SdgcError::Parameter(
            "generator layers are numbered from 1, got layer 0".into(),
        ));
    }
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&(layer as u64).to_le_bytes());
    key[16..24].copy_from_slice(&(fan_in as u64).to_le_bytes());
    key[24..].copy_from_slice(b"random\0\0");
    let mut rng = ChaCha8Rng::from_seed(key);
    // a · 2^-24 is exact: a power-of-two scaling.
    let step = random_weight_bound(fan_in) / (1u32 << 24) as f32;
    let mut offsets = Vec::with_capacity(neurons + 1);
    let mut inputs = Vec::with_capacity(neurons * fan_in);
    let mut weights = Vec::with_capacity(neurons * fan_in);
    offsets.push(0u32);
    let mut chosen: Vec<u32> = Vec::with_capacity(fan_in);
    // Which inputs the current column holds (cleared after each column).
    let mut taken = vec![false; neurons];
    for _ in 0..neurons {
        chosen.clear();
        for t in (neurons - fan_in)..neurons {
            let r = uniform_below(&mut rng, t as u64 + 1) as usize;
            let pick = if taken[r] { t } else { r };
            taken[pick] = true;
            chosen.push(pick as u32);
        }
        chosen.sort_unstable();
        for &input in &chosen {
            taken[input as usize] = false;
            let u = (rng.next_u32() >> 8) as i32;
            let odd = 2 * u + 1 - (1 << 24);
            inputs.push(input);
            weights.push(odd as f32 * step);
        }
        offsets.push(inputs.len() as u32);
    }
    // Built by output column (its inputs sorted); the network's layers are by input row.
    let columns = Csr::from_parts(neurons, neurons, offsets, inputs, weights)
        .map_err(|e| SdgcError::Parameter(format!("random layer {layer}: {e}")))?;
    Ok(columns.transpose())
}

/// The whole random network of `layers` layers, built in parallel.
///
/// Errors when the sizes are out of range ([`check_random`]) or `layers` is 0.
pub fn random_network(
    neurons: usize,
    layers: usize,
    fan_in: usize,
    seed: u64,
) -> Result<Network, SdgcError> {
    check_random(neurons, fan_in)?;
    if layers == 0 {
        return Err(SdgcError::Parameter(
            "a generated network needs at least one layer".into(),
        ));
    }
    let built: Vec<Csr> = (1..=layers)
        .into_par_iter()
        .map(|l| random_layer(neurons, l, fan_in, seed))
        .collect::<Result<_, _>>()?;
    Network::new(neurons, built)
}

/// Hands the random layers to `consume` in order (with their 1-based index), building a
/// window of about two layers per rayon thread at a time, as
/// [`for_each_layer`](super::for_each_layer) does for RadiX-Net.
///
/// Stops at the first error, from the generator or from `consume`.
pub fn for_each_random_layer<E: From<SdgcError>>(
    neurons: usize,
    layers: usize,
    fan_in: usize,
    seed: u64,
    mut consume: impl FnMut(usize, Csr) -> Result<(), E>,
) -> Result<(), E> {
    check_random(neurons, fan_in)?;
    if layers == 0 {
        return Err(
            SdgcError::Parameter("a generated network needs at least one layer".into()).into(),
        );
    }
    let window = 2 * rayon::current_num_threads().max(1);
    let mut start = 1;
    while start <= layers {
        let end = (start + window - 1).min(layers);
        let built: Vec<Csr> = (start..=end)
            .into_par_iter()
            .map(|l| random_layer(neurons, l, fan_in, seed))
            .collect::<Result<_, _>>()?;
        for (index, csr) in (start..=end).zip(built) {
            consume(index, csr)?;
        }
        start = end + 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_nonzero_and_inside_the_range() {
        let w = random_layer(100, 3, 7, 1).unwrap();
        let a = random_weight_bound(7);
        assert!(w.values().iter().all(|&v| v != 0.0 && v.abs() < a));
        assert_eq!(random_weight_bound(32), 0.75);
    }

    #[test]
    fn full_fan_in_takes_every_input() {
        let w = random_layer(5, 1, 5, 9).unwrap().transpose();
        for c in 0..5 {
            assert_eq!(w.row(c).0, &[0, 1, 2, 3, 4]);
        }
    }

    #[test]
    fn bad_sizes_are_errors() {
        assert!(random_layer(0, 1, 1, 0).is_err());
        assert!(random_layer(4, 1, 5, 0).is_err());
        assert!(random_layer(4, 1, 0, 0).is_err());
        assert!(random_layer(4, 0, 2, 0).is_err());
        assert!(random_network(4, 0, 2, 0).is_err());
        let e = check_random(1 << 31, 4).unwrap_err().to_string();
        assert!(e.contains("32-bit"), "{e}");
    }
}
