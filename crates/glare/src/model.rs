//! The GLARE paper's global-memory access model (its Table II) and the choice of the
//! segment length `m` from per-layer statistics of the activations.
//!
//! For a block that reads `n/m` input units and writes `n/m` output units, each unit of
//! `m` values not at the bound with probability `1 − P`, the paper's sum
//! `m Σ_k C(n/m, k) (1 − P)^k P^(n/m − k) k` is `m` times the mean of a binomial, that is
//! `n (1 − P)`. With `P = p^m` (every value at the bound independently with probability
//! `p`) the expected accesses per block and layer are:
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
//! kernel accepts ([`Kernel::candidates`]); ties go to the larger `m`.

/// A kernel family GLARE wraps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// BF-2019: a block per row, the row's slabs in turn.
    Bf,
    /// SNIG-2020: a block per (row, section).
    Snig,
    /// XY-2021's neuron-major kernel: a block per (16 outputs, 256 samples).
    Xy,
    /// SNICIT's post-convergence spMM (XY's row-major kernel on the non-empty rows).
    Snicit,
}

/// Samples per tile of XY's neuron-major kernel (its block size).
pub const XY_TILE: usize = 256;
/// Outputs per block of XY's neuron-major kernel on grouped layers.
pub const XY_GROUP: usize = 16;
/// Neurons per block of the row-major kernel SNICIT runs after convergence.
pub const ROW_BLOCK: usize = 128;
/// Most units per row a block keeps in shared memory (BF, SNICIT).
pub const MAX_ROW_UNITS: usize = 64;

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

impl Kernel {
    /// Every kernel, in the order of the method registry.
    pub const ALL: [Kernel; 4] = [Kernel::Bf, Kernel::Snig, Kernel::Xy, Kernel::Snicit];

    /// The registry name of the method this kernel belongs to.
    pub fn method(self) -> &'static str {
        match self {
            Kernel::Bf => "bf",
            Kernel::Snig => "snig",
            Kernel::Xy => "xy",
            Kernel::Snicit => "snicit",
        }
    }

    /// The segment lengths this kernel accepts for `shape`, ascending:
    /// - BF: powers of two from `min(slab, n)` up to the first ≥ n, at most
    ///   [`MAX_ROW_UNITS`] units per row (a slab then overlaps at most two units);
    /// - SNIG: the section width only (the unit is the block's output, paper §III-C2);
    /// - XY: powers of two from 16 (one block's outputs) up to the first ≥ n;
    /// - SNICIT: powers of two from 128 (one block's outputs) up to the first ≥ n, at
    ///   most [`MAX_ROW_UNITS`] units per row.
    ///
    /// When N is below the smallest length, the one candidate is N's power of two.
    pub fn candidates(self, shape: &Shape) -> Vec<usize> {
        let n = shape.neurons.max(1);
        let top = n.next_power_of_two();
        let powers = |low: usize| -> Vec<usize> {
            // A unit never needs to be longer than the row: short rows get one unit.
            let mut m = low.next_power_of_two().min(top);
            let mut out = Vec::new();
            while m <= top {
                out.push(m);
                m *= 2;
            }
            out
        };
        match self {
            Kernel::Bf => powers(shape.slab_width.min(n).max(1))
                .into_iter()
                .filter(|&m| n.div_ceil(m) <= MAX_ROW_UNITS)
                .collect(),
            Kernel::Snig => vec![shape.slab_width.min(n).max(1)],
            Kernel::Xy => powers(XY_GROUP),
            Kernel::Snicit => powers(ROW_BLOCK)
                .into_iter()
                .filter(|&m| n.div_ceil(m) <= MAX_ROW_UNITS)
                .collect(),
        }
    }

    /// Checks a segment length given by hand: `Err` says why it cannot be used.
    pub fn check_segment(self, shape: &Shape, segment: usize) -> Result<(), String> {
        let allowed = self.candidates(shape);
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
            self.method(),
            shape.neurons
        ))
    }

    /// The paper's expected accesses of one block in one layer (see the module docs).
    pub fn expected_accesses(
        self,
        shape: &Shape,
        m: usize,
        input: &LayerProfile,
        output: &LayerProfile,
    ) -> f64 {
        let n = shape.neurons as f64;
        let m_f = m as f64;
        let units = (shape.neurons.div_ceil(m.max(1))) as f64;
        let not_bound = |p: f64, len: f64| 1.0 - p.clamp(0.0, 1.0).powf(len);
        match self {
            Kernel::Bf => {
                2.0 * units
                    + n * not_bound(input.value_at_bound, m_f)
                    + n * not_bound(output.value_at_bound, m_f)
            }
            Kernel::Snig => {
                units
                    + 1.0
                    + n * not_bound(input.value_at_bound, m_f)
                    + m_f * not_bound(output.value_at_bound, m_f)
            }
            Kernel::Xy => {
                let s = XY_TILE as f64;
                units
                    + n * s * not_bound(input.row_at_bound, s)
                    + not_bound(output.row_at_bound, s) * (m_f * s + 1.0)
            }
            Kernel::Snicit => units,
        }
    }

    /// Picks `m` for `shape` from `profile` (index 0 the input, index l the output of
    /// layer l): the candidate with the least expected accesses summed over the layers
    /// that run with the recorder. `None` when the kernel accepts no segment length.
    pub fn choose(self, shape: &Shape, profile: &[LayerProfile]) -> Option<Choice> {
        let candidates = self.candidates(shape);
        let expected: Vec<(usize, f64)> = candidates
            .iter()
            .map(|&m| {
                let total = profile
                    .windows(2)
                    .enumerate()
                    .filter(|(layer, _)| *layer >= shape.first_layer)
                    .map(|(_, pair)| self.expected_accesses(shape, m, &pair[0], &pair[1]))
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn shape(n: usize, slab: usize, first: usize) -> Shape {
        Shape {
            neurons: n,
            slab_width: slab,
            first_layer: first,
        }
    }

    fn flat(p: f64, q: f64, layers: usize) -> Vec<LayerProfile> {
        vec![
            LayerProfile {
                value_at_bound: p,
                row_at_bound: q,
            };
            layers + 1
        ]
    }

    #[test]
    fn candidates_follow_each_kernels_layout() {
        assert_eq!(Kernel::Bf.candidates(&shape(1024, 1024, 0)), vec![1024]);
        assert_eq!(
            Kernel::Bf.candidates(&shape(16384, 8192, 0)),
            vec![8192, 16384]
        );
        assert_eq!(
            Kernel::Bf.candidates(&shape(65536, 10944, 0)),
            vec![16384, 32768, 65536]
        );
        assert_eq!(
            Kernel::Snig.candidates(&shape(65536, 10944, 0)),
            vec![10944]
        );
        assert_eq!(Kernel::Xy.candidates(&shape(64, 0, 0)), vec![16, 32, 64]);
        assert_eq!(
            Kernel::Snicit.candidates(&shape(1024, 0, 0)),
            vec![128, 256, 512, 1024]
        );
        assert_eq!(
            Kernel::Snicit.candidates(&shape(65536, 0, 0)).first(),
            Some(&1024)
        );
        // N not a power of two: the last unit is partial.
        assert_eq!(
            Kernel::Xy.candidates(&shape(96, 0, 0)),
            vec![16, 32, 64, 128]
        );
    }

    #[test]
    fn hand_given_segments_are_checked() {
        assert!(
            Kernel::Bf
                .check_segment(&shape(1024, 1024, 0), 1024)
                .is_ok()
        );
        let err = Kernel::Bf
            .check_segment(&shape(1024, 1024, 0), 512)
            .unwrap_err();
        assert!(err.contains("accepts 1024"), "{err}");
        assert!(Kernel::Xy.check_segment(&shape(1024, 0, 0), 48).is_err());
    }

    #[test]
    fn saturated_rows_want_the_longest_units() {
        // Every live value at the bound: only the recorder traffic n/m is left.
        let profile = flat(1.0, 1.0, 10);
        for kernel in [Kernel::Bf, Kernel::Xy, Kernel::Snicit] {
            let s = shape(4096, 1024, 0);
            let choice = kernel.choose(&s, &profile).unwrap();
            assert_eq!(choice.segment, 4096, "{kernel:?}");
        }
    }

    #[test]
    fn bf_prefers_shorter_units_when_a_few_values_miss_the_bound() {
        // p just below 1: long units are rarely all at the bound.
        let profile = flat(0.9999, 0.0, 100);
        let choice = Kernel::Bf
            .choose(&shape(65536, 10944, 0), &profile)
            .unwrap();
        assert_eq!(choice.segment, 16384);
        assert_eq!(choice.expected.len(), 3);
        assert!(choice.expected[0].1 < choice.expected[2].1);
    }

    #[test]
    fn layers_before_the_first_recorded_one_do_not_count() {
        let mut profile = flat(1.0, 1.0, 30);
        for layer in profile.iter_mut().take(22) {
            layer.row_at_bound = 0.5;
        }
        let s = shape(1024, 0, 22);
        let late = Kernel::Xy.choose(&s, &profile).unwrap();
        assert_eq!(late.segment, 1024);
        let early = Kernel::Xy.choose(&shape(1024, 0, 0), &profile).unwrap();
        assert!(early.expected[0].1 > late.expected[0].1);
    }

    proptest! {
        #[test]
        fn the_choice_is_a_candidate_with_the_least_expected_accesses(
            log_n in 5u32..17, p in 0.0f64..=1.0, q in 0.0f64..=1.0, layers in 1usize..40,
            kernel in 0usize..4,
        ) {
            let kernel = Kernel::ALL[kernel];
            let n = 1usize << log_n;
            let s = shape(n, (n / 4).max(32), 0);
            let choice = kernel.choose(&s, &flat(p, q, layers)).unwrap();
            prop_assert!(kernel.candidates(&s).contains(&choice.segment));
            let best = choice.expected.iter().map(|e| e.1).fold(f64::INFINITY, f64::min);
            let chosen = choice.expected.iter().find(|e| e.0 == choice.segment).unwrap().1;
            prop_assert!(chosen <= best);
            prop_assert!(choice.expected.iter().all(|e| e.1.is_finite() && e.1 >= 0.0));
        }
    }
}
