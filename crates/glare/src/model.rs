//! The GLARE paper's global-memory access model (its Table II) and the choice of the
//! segment length `m` from per-layer statistics of the activations.
//!
//! For a block that reads `n/m` input units and writes `n/m` output units, each unit of
//! `m` values not at the bound with probability `1 − P`, the paper's sum
//! `m Σ_k C(n/m, k) (1 − P)^k P^(n/m − k) k` is `m` times the mean of a binomial, that is
//! `n (1 − P)`. With `P = p^m` (every value at the bound independently with probability
//! `p`) the expected accesses per block and layer of each kernel are its row of the table,
//! written beside the kernel ([`GlareKernel::expected_accesses`]):
//!
//! | kernel | unit | expected accesses `E(m)` |
//! |---|---|---|
//! | BF | `m` neurons of a row | `2n/m + n(1 − p_I^m) + n(1 − p_O^m)` |
//! | SNIG | the block's section of a row | `n/m + 1 + n(1 − p_I^m) + m(1 − p_O^m)` |
//! | XY | `m` neurons × a tile of `s` samples | `n/m + n s (1 − q_I^s) + (1 − q_O^s)(m s + 1)` |
//! | SNICIT | `m` neurons of a row | `n/m` |
//!
//! where `p` is the share of the values of live rows at the bound and `q` the share of
//! live rows entirely at the bound (XY's samples are columns). `m` minimises the sum of
//! `E(m)` over the layers each kernel runs with the recorder, among the lengths the
//! kernel accepts ([`GlareKernel::candidates`]); ties go to the larger `m` ([`choose`]).

use spdnn_cuda::method::KernelMethod;

use crate::Glare;

/// Most units per row a block keeps in shared memory (BF, SNICIT, XY's row-major kernel);
/// reaches the kernels as `-D GLARE_MAX_ROW_UNITS`.
pub const MAX_ROW_UNITS: usize = 64;

/// A kernel family with a GLARE variant: what the access model knows of its recorder.
/// Implemented beside each kernel (`spdnn-bf`, `spdnn-snig`, `spdnn-xy`, `spdnn-snicit`);
/// the engine's `+glare` methods are exactly the implementers.
pub trait GlareKernel: KernelMethod {
    /// What the recorder skips, in words, for the method list (`row segments of m
    /// neurons all at the bound are neither read nor written`).
    const UNIT: &'static str;

    /// Whether a hand-given segment may be any length (SNIG, whose unit is its section)
    /// instead of a power of two.
    const ANY_LENGTH: bool = false;

    /// The segment lengths this kernel accepts for `shape`, ascending.
    fn candidates(shape: &Shape) -> Vec<usize>;

    /// The paper's expected accesses of one block in one layer with units of `m`.
    fn expected_accesses(
        shape: &Shape,
        m: usize,
        input: &LayerProfile,
        output: &LayerProfile,
    ) -> f64;

    /// The shape the model sees for a run of these options on `neurons` neurons.
    fn shape(options: &Self::Options, neurons: usize) -> Shape;

    /// These options with the recorder `glare` (the layers it serves are the method's).
    fn with_recorder(options: &Self::Options, glare: Glare) -> Self::Options;
}

/// What the model needs to know about a run's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Neurons per layer.
    pub neurons: usize,
    /// Columns per weight slab (BF) or section (SNIG); ignored by XY and SNICIT.
    pub slab_width: usize,
    /// Layers (1-based counts of layers done) before the recorder is used: XY's deletion
    /// layer, SNICIT's threshold layer; 0 for BF and SNIG.
    pub first_layer: usize,
}

/// The activations after one layer (index 0: the input), as the model sees them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerProfile {
    /// Share of the values of live rows at the upper bound (`p`).
    pub value_at_bound: f64,
    /// Share of live rows whose every value is at the upper bound (`q`).
    pub row_at_bound: f64,
}

/// The chosen segment length and the expected accesses of every candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The segment length `m`.
    pub segment: usize,
    /// `(m, Σ_layers E(m))` for every candidate, ascending `m`.
    pub expected: Vec<(usize, f64)>,
}

/// Powers of two from `low` (rounded up to one) to the first one ≥ `neurons`; when
/// `neurons` is below `low`, the one length is `neurons`' power of two (a unit never needs
/// to be longer than the row).
pub fn powers_of_two(low: usize, neurons: usize) -> Vec<usize> {
    let top = neurons.max(1).next_power_of_two();
    let mut m = low.max(1).next_power_of_two().min(top);
    let mut out = Vec::new();
    while m <= top {
        out.push(m);
        m *= 2;
    }
    out
}

/// [`powers_of_two`] keeping at most [`MAX_ROW_UNITS`] units per row.
pub fn row_unit_lengths(low: usize, neurons: usize) -> Vec<usize> {
    let n = neurons.max(1);
    powers_of_two(low, n)
        .into_iter()
        .filter(|&m| n.div_ceil(m) <= MAX_ROW_UNITS)
        .collect()
}

/// `1 − p^len`: the chance that a unit of `len` values is not all at the bound.
pub fn not_at_bound(p: f64, len: f64) -> f64 {
    1.0 - p.clamp(0.0, 1.0).powf(len)
}

/// Checks a segment length given by hand: `Err` says why `K` cannot use it.
pub fn check_segment<K: GlareKernel>(shape: &Shape, segment: usize) -> Result<(), String> {
    let allowed = K::candidates(shape);
    if allowed.contains(&segment) {
        return Ok(());
    }
    let list = allowed
        .iter()
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Err(format!(
        "{} cannot use GLARE segments of {segment} neurons for N = {}; it accepts {list}",
        K::NAME,
        shape.neurons
    ))
}

/// Picks `m` for `K` on `shape` from `profile` (index 0 the input, index l the output of
/// layer l): the candidate with the least expected accesses summed over the layers that
/// run with the recorder. `None` when the kernel accepts no segment length.
pub fn choose<K: GlareKernel>(shape: &Shape, profile: &[LayerProfile]) -> Option<Choice> {
    let expected: Vec<(usize, f64)> = K::candidates(shape)
        .iter()
        .map(|&m| {
            let total = profile
                .windows(2)
                .enumerate()
                .filter(|(layer, _)| *layer >= shape.first_layer)
                .map(|(_, pair)| K::expected_accesses(shape, m, &pair[0], &pair[1]))
                .sum();
            (m, total)
        })
        .collect();
    let mut best: Option<(usize, f64)> = None;
    for &(m, total) in &expected {
        if best.is_none_or(|(_, b)| total <= b) {
            best = Some((m, total));
        }
    }
    best.map(|(segment, _)| Choice { segment, expected })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_stop_at_the_row() {
        assert_eq!(powers_of_two(16, 64), vec![16, 32, 64]);
        assert_eq!(powers_of_two(16, 96), vec![16, 32, 64, 128]);
        assert_eq!(powers_of_two(128, 64), vec![64]);
        assert_eq!(powers_of_two(0, 1), vec![1]);
        assert_eq!(row_unit_lengths(128, 65536).first(), Some(&1024));
        assert_eq!(row_unit_lengths(128, 1024), vec![128, 256, 512, 1024]);
    }

    #[test]
    fn not_at_bound_is_a_probability() {
        assert_eq!(not_at_bound(1.0, 8.0), 0.0);
        assert_eq!(not_at_bound(0.0, 8.0), 1.0);
        assert_eq!(not_at_bound(2.0, 1.0), 0.0);
    }
}
