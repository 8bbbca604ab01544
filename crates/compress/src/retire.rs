//! Retired rows: which layers map a row all at the upper bound to a row all at the upper
//! bound, proved from the weights in every summation order the kernels may use.

use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::Serialize;
use spdnn_formats::{Csr, SparseMatrix};

use crate::CompressError;

/// Unit roundoff of f32, round to nearest: 2^-24.
pub const F32_UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << 24) as f64;

/// Relative error allowed for one product `y·w` in the kernel model: 2^-20 (16 units).
/// An IEEE f32 product errs by at most 2^-24, a fused multiply-add's product by 0, and
/// fp32 emulated on tensor cores from split TF32/BF16 pieces stays far below 2^-20.
pub const PRODUCT_RELATIVE_ERROR: f64 = 1.0 / (1u64 << 20) as f64;

/// Unit roundoff of f64, 2^-53 (the proof's own arithmetic).
const F64_UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << 53) as f64;

/// Smallest normal f32, 2^-126: the most that flushing one subnormal to zero can lose.
const F32_MIN_NORMAL: f64 = f32::MIN_POSITIVE as f64;

/// Rows per rayon task when summing a layer's columns.
const ROWS_PER_TASK: usize = 4096;

/// Whether one layer maps a row all at the upper bound to a row all at the upper bound,
/// and by how much.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LayerProof {
    /// Input neurons (rows of the layer).
    pub rows: usize,
    /// Output neurons (columns of the layer).
    pub width: usize,
    /// Proved: every column's value on an all-at-bound row is the bound, in every
    /// summation order of the kernel model (see the crate documentation).
    pub preserves: bool,
    /// Columns without a stored entry (they give 0, never the bound).
    pub empty_columns: usize,
    /// Over the non-empty columns, the least certified margin: a lower bound of the
    /// computed `Σ U·w + b`, in any order, minus the bound `U`. `+∞` without non-empty
    /// columns; negative where the proof fails (which need not mean the layer does not
    /// preserve: the proof is conservative).
    pub min_margin: f64,
    /// The column with the least margin (`None` without non-empty columns).
    pub weakest_column: Option<u32>,
}

/// Proves (or fails to prove) that `layer` maps a row whose activations all equal
/// `upper_bound` to a row whose activations all equal `upper_bound`, with the activation
/// `min(max(Y·W + bias, 0), upper_bound)`.
///
/// For each column `j` with `n ≥ 1` stored weights `w_1..w_n`, the kernels compute some
/// f32 evaluation of `S_j = bias + Σ_i U·w_i`; the column gives `U` exactly iff that value
/// is `≥ U`. Whatever the order (any summation tree, the bias added anywhere, products
/// rounded or fused, subnormals kept or flushed), the computed value is at least
/// `S_j − (γ_{n+1} + p(1 + γ_{n+1}))·A_j − (n + 1)(U + 2)·2^-126`, where
/// `A_j = |bias| + Σ_i |U·w_i|`, `γ_k = k·u/(1 − k·u)`, `u = 2^-24` and
/// `p` = [`PRODUCT_RELATIVE_ERROR`]. `S_j` and `A_j` are bounded rigorously in f64 (each
/// `U·w_i` is exact there). The layer preserves when every column is non-empty and every
/// such lower bound is `≥ U` (with a further relative slack of 2^-45 for the f64
/// arithmetic of the check itself), and `|U·w|` sums stay far from f32 overflow.
///
/// Negative weights are allowed: the input row is exactly all `U`, so no monotonicity is
/// needed. The f64 reference evaluates the same `S_j` with a smaller rounding error, so
/// the proof covers it too.
pub fn prove_layer(layer: &Csr, bias: f32, upper_bound: f32) -> Result<LayerProof, CompressError> {
    check_activation(bias, upper_bound)?;
    Ok(prove_columns(layer, upper_bound, |_| bias))
}

/// [`prove_layer`] with a bias per output neuron (`biases[j]` of column `j`, one finite
/// value per column; trained networks): column `j` must reach the bound with its own bias,
/// `S_j = biases[j] + Σ_i U·w_i`, with the same bound of the error in every order (its
/// `A_j` holds `|biases[j]|`). One column whose bias pulls its sum below the bound (by
/// less than the rounding error bound, or at all) keeps the whole layer from preserving,
/// however strong the others are.
///
/// The biases may have either sign: a row all at `U > 0` is nonzero at every input, so
/// every non-empty column is structurally nonzero and the official rule adds its bias
/// there, as `clip(Z + b)` does. Errors when the biases are not one finite value per
/// column or the bound is not finite and positive.
pub fn prove_layer_per_neuron(
    layer: &Csr,
    biases: &[f32],
    upper_bound: f32,
) -> Result<LayerProof, CompressError> {
    check_upper(upper_bound)?;
    crate::compress::check_layer_biases("the layer", layer.ncols(), biases)?;
    Ok(prove_columns(layer, upper_bound, |j| biases[j]))
}

/// The proof of every column of `layer`, column `j` with the bias `bias_of(j)`.
fn prove_columns(layer: &Csr, upper_bound: f32, bias_of: impl Fn(usize) -> f32) -> LayerProof {
    let width = layer.ncols();
    let upper = f64::from(upper_bound);
    let (sums, magnitudes, counts) = column_sums(layer, upper);
    let mut proof = LayerProof {
        rows: layer.nrows(),
        width,
        preserves: true,
        empty_columns: 0,
        min_margin: f64::INFINITY,
        weakest_column: None,
    };
    for j in 0..width {
        let n = counts[j] as u64;
        if n == 0 {
            proof.empty_columns += 1;
            proof.preserves = false;
            continue;
        }
        let bias = f64::from(bias_of(j));
        let (margin, certain) = column_margin(sums[j], magnitudes[j], n, bias, upper);
        if margin < proof.min_margin || proof.weakest_column.is_none() {
            proof.min_margin = margin;
            proof.weakest_column = Some(j as u32);
        }
        if !certain {
            proof.preserves = false;
        }
    }
    proof
}

/// Per column: `Σ U·w` and `Σ |U·w|` in f64 (any order) and the number of stored weights.
fn column_sums(layer: &Csr, upper: f64) -> (Vec<f64>, Vec<f64>, Vec<u32>) {
    let width = layer.ncols();
    let empty = || (vec![0f64; width], vec![0f64; width], vec![0u32; width]);
    let tasks = layer.nrows().div_ceil(ROWS_PER_TASK);
    (0..tasks)
        .into_par_iter()
        .fold(empty, |(mut s, mut a, mut n), task| {
            let end = ((task + 1) * ROWS_PER_TASK).min(layer.nrows());
            for row in task * ROWS_PER_TASK..end {
                let (cols, vals) = layer.row(row);
                for (&c, &w) in cols.iter().zip(vals) {
                    // Exact: a product of two f32 values fits the f64 significand.
                    let t = upper * f64::from(w);
                    s[c as usize] += t;
                    a[c as usize] += t.abs();
                    n[c as usize] += 1;
                }
            }
            (s, a, n)
        })
        .reduce(empty, |(mut s, mut a, mut n), (s2, a2, n2)| {
            for j in 0..width {
                s[j] += s2[j];
                a[j] += a2[j];
                n[j] += n2[j];
            }
            (s, a, n)
        })
}

/// The certified margin of one column with `n ≥ 1` weights whose f64 sums are `sum`
/// (of `U·w`) and `magnitude` (of `|U·w|`), and whether it proves the column reaches `U`.
fn column_margin(sum: f64, magnitude: f64, n: u64, bias: f64, upper: f64) -> (f64, bool) {
    let terms = n as f64 + 1.0;
    // The f64 sums of `terms` values (in any summation tree) err by at most γ64·A.
    let g64 = terms * F64_UNIT_ROUNDOFF / (1.0 - terms * F64_UNIT_ROUNDOFF);
    let a_up = (magnitude + bias.abs()) * (1.0 + 2.0 * g64);
    let s_low = (sum + bias) - g64 * a_up;
    // The kernel's f32 evaluation, any order: every term passes at most `terms` roundings
    // (n additions and its product).
    let ku = terms * F32_UNIT_ROUNDOFF;
    if ku >= 0.5 || !a_up.is_finite() || a_up > f64::from(f32::MAX) / 4.0 {
        return (f64::NEG_INFINITY, false);
    }
    let g32 = ku / (1.0 - ku);
    let relative = g32 + PRODUCT_RELATIVE_ERROR * (1.0 + g32);
    let underflow = terms * (upper + 2.0) * F32_MIN_NORMAL;
    let margin = s_low - relative * a_up - underflow - upper;
    let slack = (a_up + upper) * (1.0 / (1u64 << 45) as f64);
    (margin, margin >= slack)
}

/// Checks the challenge's activation domain: finite `bias < 0`, finite `upper_bound > 0`.
pub(crate) fn check_activation(bias: f32, upper_bound: f32) -> Result<(), CompressError> {
    if bias.is_finite() && bias < 0.0 && upper_bound.is_finite() && upper_bound > 0.0 {
        Ok(())
    } else {
        Err(CompressError::Activation { bias, upper_bound })
    }
}

/// Checks the bound of a network with per-neuron biases: finite and `> 0`.
fn check_upper(upper_bound: f32) -> Result<(), CompressError> {
    if upper_bound.is_finite() && upper_bound > 0.0 {
        Ok(())
    } else {
        Err(CompressError::Biases(format!(
            "the upper bound must be finite and positive, got {upper_bound}"
        )))
    }
}

/// Where a row stands after some layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RowState {
    /// Every activation is 0: it stays 0 through every later layer (the bias is added
    /// only to structural nonzeros, and a bias ≤ 0 never lifts a 0 under `clip(Z + b)`
    /// either; a kernel computing `clip(Z + b)` with a positive per-neuron bias would lift
    /// it, which the official rule does not). Finished; not a category.
    Zero,
    /// Every activation equals the upper bound and every later layer preserves that:
    /// the final row is all at the bound. Finished; a category.
    AtBound,
    /// Neither: the row must be computed on.
    Active,
}

impl RowState {
    /// Whether the row needs no more layers.
    pub fn is_finished(self) -> bool {
        !matches!(self, RowState::Active)
    }
}

/// The retirement analysis of a network: which layers preserve all-at-bound rows and the
/// longest suffix of such layers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Retirement {
    input_width: usize,
    proofs: Vec<LayerProof>,
    suffix_start: usize,
    /// The one bias of every neuron; `None` for a network with a bias per neuron.
    bias: Option<f32>,
    upper_bound: f32,
    analysis_time: Duration,
}

impl Retirement {
    /// Proves every layer ([`prove_layer`]) of a network (`layers[l]` is `N_l × N_{l+1}`).
    ///
    /// Errors when there are no layers, the layers do not chain, or the activation is
    /// outside the challenge's domain (finite `bias < 0`, finite `upper_bound > 0`).
    pub fn analyze(layers: &[Csr], bias: f32, upper_bound: f32) -> Result<Self, CompressError> {
        let start = Instant::now();
        check_activation(bias, upper_bound)?;
        let proofs = layers
            .iter()
            .map(|layer| prove_layer(layer, bias, upper_bound))
            .collect::<Result<Vec<_>, _>>()?;
        let mut retirement = Self::from_proofs(proofs, bias, upper_bound)?;
        retirement.analysis_time = start.elapsed();
        Ok(retirement)
    }

    /// [`Retirement::analyze`] for a network with a bias per output neuron of every layer
    /// (`biases[l][j]`, one finite value per column of `layers[l]`; trained networks):
    /// every layer is proved with each column's own bias ([`prove_layer_per_neuron`]).
    ///
    /// Errors when there are no layers, the layers do not chain, the biases do not fit the
    /// layers, or the bound is not finite and positive.
    pub fn analyze_per_neuron(
        layers: &[Csr],
        biases: &[Vec<f32>],
        upper_bound: f32,
    ) -> Result<Self, CompressError> {
        let start = Instant::now();
        check_upper(upper_bound)?;
        crate::compress::check_biases(layers, biases)?;
        let proofs = layers
            .iter()
            .zip(biases)
            .map(|(layer, b)| prove_columns(layer, upper_bound, |j| b[j]))
            .collect();
        let mut retirement = Self::assemble(proofs, None, upper_bound)?;
        retirement.analysis_time = start.elapsed();
        Ok(retirement)
    }

    /// Assembles the analysis from per-layer proofs made one at a time (for layers that
    /// are streamed rather than held). Errors like [`Retirement::analyze`].
    pub fn from_proofs(
        proofs: Vec<LayerProof>,
        bias: f32,
        upper_bound: f32,
    ) -> Result<Self, CompressError> {
        check_activation(bias, upper_bound)?;
        Self::assemble(proofs, Some(bias), upper_bound)
    }

    /// [`Retirement::from_proofs`] for proofs made with per-neuron biases
    /// ([`prove_layer_per_neuron`]).
    pub fn from_proofs_per_neuron(
        proofs: Vec<LayerProof>,
        upper_bound: f32,
    ) -> Result<Self, CompressError> {
        check_upper(upper_bound)?;
        Self::assemble(proofs, None, upper_bound)
    }

    fn assemble(
        proofs: Vec<LayerProof>,
        bias: Option<f32>,
        upper_bound: f32,
    ) -> Result<Self, CompressError> {
        let first = proofs.first().ok_or(CompressError::NoLayers)?;
        for (l, pair) in proofs.windows(2).enumerate() {
            if pair[1].rows != pair[0].width {
                return Err(CompressError::LayerShape {
                    layer: l + 2,
                    expected: pair[0].width,
                    found: pair[1].rows,
                });
            }
        }
        let suffix_start = proofs
            .iter()
            .rposition(|p| !p.preserves)
            .map_or(0, |last| last + 1);
        Ok(Self {
            input_width: first.rows,
            suffix_start,
            proofs,
            bias,
            upper_bound,
            analysis_time: Duration::ZERO,
        })
    }

    /// The per-layer proofs, in order.
    pub fn layers(&self) -> &[LayerProof] {
        &self.proofs
    }

    /// Whether layer `layer` (0-based) was proved to preserve all-at-bound rows (`false`
    /// past the last layer).
    pub fn preserves(&self, layer: usize) -> bool {
        self.proofs.get(layer).is_some_and(|p| p.preserves)
    }

    /// The 0-based index of the first layer of the longest suffix of preserving layers
    /// (the number of layers when the last one does not preserve). A row all at the bound
    /// after `suffix_start()` or more layers is finished.
    pub fn suffix_start(&self) -> usize {
        self.suffix_start
    }

    /// Number of layers in the preserving suffix.
    pub fn preserving_suffix_len(&self) -> usize {
        self.proofs.len() - self.suffix_start
    }

    /// The one bias the proofs assumed for every neuron; `None` when each column was
    /// proved with its own ([`Retirement::analyze_per_neuron`]).
    pub fn bias(&self) -> Option<f32> {
        self.bias
    }

    /// The upper bound the proofs assumed.
    pub fn upper_bound(&self) -> f32 {
        self.upper_bound
    }

    /// Time [`Retirement::analyze`] took (zero when assembled by `from_proofs`).
    pub fn analysis_time(&self) -> Duration {
        self.analysis_time
    }

    /// Width of a row after `done` layers (`done = 0`: the input), or `None` past the end.
    pub fn width_after(&self, done: usize) -> Option<usize> {
        if done == 0 {
            Some(self.input_width)
        } else {
            self.proofs.get(done - 1).map(|p| p.width)
        }
    }

    fn checked_width(&self, done: usize) -> Result<usize, CompressError> {
        self.width_after(done).ok_or(CompressError::LayerIndex {
            index: done,
            layers: self.proofs.len(),
        })
    }

    /// Where a row stands after `done` layers (`row` holds its dense activations, as many
    /// as the width after `done` layers; `done = 0` is an input row).
    ///
    /// [`RowState::Zero`] for a row of zeros; [`RowState::AtBound`] for a row all at the
    /// upper bound when `done ≥ suffix_start()`; otherwise [`RowState::Active`]. Errors
    /// when `done` exceeds the layers or `row` has the wrong width.
    pub fn row_state(&self, done: usize, row: &[f32]) -> Result<RowState, CompressError> {
        let width = self.checked_width(done)?;
        if row.len() != width {
            return Err(CompressError::Length {
                what: "dense row (the width after the layers done)",
                expected: width,
                found: row.len(),
            });
        }
        Ok(if row.iter().all(|&v| v == 0.0) {
            RowState::Zero
        } else if done >= self.suffix_start && row.iter().all(|&v| v == self.upper_bound) {
            RowState::AtBound
        } else {
            RowState::Active
        })
    }

    /// [`Retirement::row_state`] for a sparse row: its stored neurons (strictly
    /// increasing, below the width) and their values; neurons not stored are 0.
    pub fn sparse_row_state(
        &self,
        done: usize,
        neurons: &[u32],
        values: &[f32],
    ) -> Result<RowState, CompressError> {
        let width = self.checked_width(done)?;
        if neurons.len() != values.len() {
            return Err(CompressError::Length {
                what: "sparse row values (one per neuron)",
                expected: neurons.len(),
                found: values.len(),
            });
        }
        if let Some(k) = neurons.windows(2).position(|w| w[0] >= w[1]) {
            return Err(CompressError::SparseRow(format!(
                "neuron {} follows neuron {} (indices must increase)",
                neurons[k + 1],
                neurons[k]
            )));
        }
        if let Some(&last) = neurons.last()
            && last as usize >= width
        {
            return Err(CompressError::SparseRow(format!(
                "neuron {last} lies past the width {width}"
            )));
        }
        Ok(if values.iter().all(|&v| v == 0.0) {
            RowState::Zero
        } else if done >= self.suffix_start
            && neurons.len() == width
            && values.iter().all(|&v| v == self.upper_bound)
        {
            RowState::AtBound
        } else {
            RowState::Active
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(rows: usize, cols: usize, t: &[(u32, u32, f32)]) -> Csr {
        Csr::from_triplets(rows, cols, t).unwrap()
    }

    #[test]
    fn challenge_like_columns_preserve_with_a_wide_margin() {
        // 32 weights of 1/16 per column, U = 32, b = −0.3: Σ = 64 − 0.3 ≥ 32.
        let t: Vec<(u32, u32, f32)> = (0..32)
            .flat_map(|r| (0..2).map(move |c| (r, c, 0.0625)))
            .collect();
        let p = prove_layer(&csr(32, 2, &t), -0.3, 32.0).unwrap();
        assert!(p.preserves);
        assert_eq!(p.empty_columns, 0);
        assert!((p.min_margin - 31.7).abs() < 1e-3, "{}", p.min_margin);
    }

    #[test]
    fn an_empty_column_or_a_short_sum_does_not_preserve() {
        let p = prove_layer(&csr(1, 2, &[(0, 0, 2.0)]), -0.5, 4.0).unwrap();
        assert!(!p.preserves);
        assert_eq!(p.empty_columns, 1);
        // 4·1.1 − 0.5 = 3.9 < 4.
        let p = prove_layer(&csr(1, 1, &[(0, 0, 1.1)]), -0.5, 4.0).unwrap();
        assert!(!p.preserves);
        assert!(p.min_margin < 0.0);
    }

    #[test]
    fn the_exact_threshold_is_not_proved_but_just_above_is() {
        // U·w + b = U exactly: true in exact arithmetic, but the proof keeps a margin.
        let p = prove_layer(&csr(1, 1, &[(0, 0, 1.125)]), -0.5, 4.0).unwrap();
        assert!(!p.preserves);
        let p = prove_layer(&csr(1, 1, &[(0, 0, 1.126)]), -0.5, 4.0).unwrap();
        assert!(p.preserves);
    }

    #[test]
    fn negative_weights_count_against_the_sum() {
        let p = prove_layer(&csr(2, 1, &[(0, 0, 3.0), (1, 0, -1.0)]), -0.25, 1.0).unwrap();
        assert!(p.preserves, "3 − 1 − 0.25 = 1.75 ≥ 1");
        let p = prove_layer(&csr(2, 1, &[(0, 0, 3.0), (1, 0, -2.0)]), -0.25, 1.0).unwrap();
        assert!(!p.preserves, "3 − 2 − 0.25 = 0.75 < 1");
    }

    #[test]
    fn overflowing_sums_are_not_proved() {
        let p = prove_layer(&csr(1, 1, &[(0, 0, 3.0e38)]), -0.5, 32.0).unwrap();
        assert!(!p.preserves);
    }

    #[test]
    fn the_suffix_and_row_states() {
        let keep = csr(2, 2, &[(0, 0, 1.0), (1, 1, 1.0), (0, 1, 1.0), (1, 0, 1.0)]);
        let weak = csr(2, 2, &[(0, 0, 0.5), (1, 1, 0.5)]);
        let layers = [keep.clone(), weak, keep.clone(), keep];
        let r = Retirement::analyze(&layers, -0.5, 1.0).unwrap();
        assert_eq!(
            r.layers().iter().map(|p| p.preserves).collect::<Vec<_>>(),
            vec![true, false, true, true]
        );
        assert_eq!(r.suffix_start(), 2);
        assert_eq!(r.preserving_suffix_len(), 2);
        assert_eq!(r.row_state(0, &[0.0, 0.0]).unwrap(), RowState::Zero);
        assert_eq!(r.row_state(1, &[1.0, 1.0]).unwrap(), RowState::Active);
        assert_eq!(r.row_state(2, &[1.0, 1.0]).unwrap(), RowState::AtBound);
        assert_eq!(r.row_state(4, &[1.0, 1.0]).unwrap(), RowState::AtBound);
        assert_eq!(r.row_state(3, &[1.0, 0.5]).unwrap(), RowState::Active);
        assert!(r.row_state(5, &[1.0, 1.0]).is_err());
        assert!(r.row_state(2, &[1.0]).is_err());
        assert_eq!(
            r.sparse_row_state(3, &[0, 1], &[1.0, 1.0]).unwrap(),
            RowState::AtBound
        );
        assert_eq!(
            r.sparse_row_state(3, &[1], &[1.0]).unwrap(),
            RowState::Active
        );
        assert_eq!(r.sparse_row_state(1, &[], &[]).unwrap(), RowState::Zero);
        assert_eq!(r.sparse_row_state(1, &[0], &[0.0]).unwrap(), RowState::Zero);
        assert!(r.sparse_row_state(1, &[1, 0], &[1.0, 1.0]).is_err());
        assert!(r.sparse_row_state(1, &[2], &[1.0]).is_err());
        assert!(r.sparse_row_state(1, &[0], &[]).is_err());
        assert!(RowState::Zero.is_finished() && !RowState::Active.is_finished());
    }

    #[test]
    fn one_columns_own_bias_breaks_the_proof() {
        // Every column sums to U·2 = 2 from a row all at U = 1: S_j = 2 + b_j.
        let t: Vec<(u32, u32, f32)> = (0..2)
            .flat_map(|r| (0..3).map(move |c| (r, c, 1.0)))
            .collect();
        let w = csr(2, 3, &t);
        assert!(prove_layer(&w, -0.1, 1.0).unwrap().preserves);
        // A bias of 0 (trained networks have many) and a positive one are proved as well.
        let p = prove_layer_per_neuron(&w, &[-0.1, 0.0, 0.5], 1.0).unwrap();
        assert!(p.preserves);
        assert_eq!(p.weakest_column, Some(0));
        assert!((p.min_margin - 0.9).abs() < 1e-5, "{}", p.min_margin);
        // Column 2 with its own bias: 2 − 1 = U exactly (not proved: the proof keeps a
        // margin), then 2 − 1.5 < U; the other columns are as strong as before.
        for b2 in [-1.0f32, -1.5] {
            let p = prove_layer_per_neuron(&w, &[-0.1, -0.1, b2], 1.0).unwrap();
            assert!(!p.preserves, "bias {b2}");
            assert_eq!(p.weakest_column, Some(2));
            assert!(p.min_margin <= 0.0, "{}", p.min_margin);
        }
        // Just past the threshold it holds again.
        let p = prove_layer_per_neuron(&w, &[-0.1, -0.1, -0.999], 1.0).unwrap();
        assert!(p.preserves, "{p:?}");
        // The scalar proof with the biases' mean (−0.4) would pass; the weakest decides.
        assert!(prove_layer(&w, -0.4, 1.0).unwrap().preserves);
        // An empty column fails whatever its bias.
        let e = csr(2, 2, &[(0, 0, 4.0)]);
        let p = prove_layer_per_neuron(&e, &[0.0, 5.0], 1.0).unwrap();
        assert!(!p.preserves);
        assert_eq!(p.empty_columns, 1);
    }

    #[test]
    fn the_suffix_with_per_neuron_biases() {
        let keep = csr(2, 2, &[(0, 0, 1.0), (1, 1, 1.0), (0, 1, 1.0), (1, 0, 1.0)]);
        let layers = [keep.clone(), keep.clone(), keep.clone(), keep];
        // Layer 2's second column: 2 − 1.25 < 1. Every other column: 2 − 0.5 ≥ 1.
        let biases = vec![
            vec![-0.5, -0.5],
            vec![-0.5, -1.25],
            vec![0.0, -0.5],
            vec![-0.5, -0.0],
        ];
        let r = Retirement::analyze_per_neuron(&layers, &biases, 1.0).unwrap();
        assert_eq!(
            r.layers().iter().map(|p| p.preserves).collect::<Vec<_>>(),
            vec![true, false, true, true]
        );
        assert_eq!(r.suffix_start(), 2);
        assert_eq!(r.bias(), None);
        assert_eq!(r.upper_bound(), 1.0);
        assert_eq!(r.row_state(2, &[1.0, 1.0]).unwrap(), RowState::AtBound);
        assert_eq!(r.row_state(1, &[1.0, 1.0]).unwrap(), RowState::Active);
        // The same layers with one bias of −0.5 preserve everywhere.
        let one = Retirement::analyze(&layers, -0.5, 1.0).unwrap();
        assert_eq!((one.suffix_start(), one.bias()), (0, Some(-0.5)));
        // Assembled from proofs made one at a time: the same.
        let proofs: Vec<LayerProof> = layers
            .iter()
            .zip(&biases)
            .map(|(w, b)| prove_layer_per_neuron(w, b, 1.0).unwrap())
            .collect();
        let assembled = Retirement::from_proofs_per_neuron(proofs, 1.0).unwrap();
        assert_eq!(assembled.layers(), r.layers());
        assert_eq!(assembled.suffix_start(), 2);
    }

    #[test]
    fn bad_per_neuron_biases_are_errors() {
        let w = csr(2, 2, &[(0, 0, 1.0)]);
        let layers = [w.clone(), w.clone()];
        let bad = |biases: Vec<Vec<f32>>, upper: f32| match Retirement::analyze_per_neuron(
            &layers, &biases, upper,
        ) {
            Err(CompressError::Biases(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(bad(vec![vec![0.0; 2]], 1.0).contains("1 bias vectors for 2 layers"));
        let m = bad(vec![vec![0.0; 2], vec![0.0; 3]], 1.0);
        assert!(m.contains("layer 2 has 2 outputs but 3 biases"), "{m}");
        let m = bad(vec![vec![0.0; 2], vec![0.0, f32::NAN]], 1.0);
        assert!(m.contains("neuron 2 of layer 2"), "{m}");
        for upper in [0.0, -1.0, f32::INFINITY] {
            let m = bad(vec![vec![0.0; 2]; 2], upper);
            assert!(m.contains("upper bound"), "{m}");
        }
        assert!(prove_layer_per_neuron(&w, &[0.0], 1.0).is_err());
        assert!(matches!(
            Retirement::analyze_per_neuron(&[], &[], 1.0),
            Err(CompressError::NoLayers)
        ));
        assert!(matches!(
            Retirement::from_proofs_per_neuron(vec![], 1.0),
            Err(CompressError::NoLayers)
        ));
    }

    #[test]
    fn bad_activations_and_shapes_are_errors() {
        let w = csr(2, 2, &[(0, 0, 1.0)]);
        for (b, u) in [
            (0.0, 1.0),
            (-1.0, 0.0),
            (f32::NAN, 1.0),
            (-1.0, f32::INFINITY),
        ] {
            assert!(matches!(
                Retirement::analyze(std::slice::from_ref(&w), b, u),
                Err(CompressError::Activation { .. })
            ));
        }
        assert!(matches!(
            Retirement::analyze(&[], -1.0, 1.0),
            Err(CompressError::NoLayers)
        ));
        let v = csr(3, 2, &[]);
        assert!(matches!(
            Retirement::analyze(&[w, v], -1.0, 1.0),
            Err(CompressError::LayerShape { layer: 2, .. })
        ));
    }
}
