//! The inference pass itself.

// Lane loops (`for g in 0..GROUP`) index several arrays in lockstep: the shape the
// vectorizer handles best.
#![allow(clippy::needless_range_loop)]

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use serde::Serialize;
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_sdgc::SdgcError;
use spdnn_sdgc::benchmark::{official_bias, validate_activation};

use crate::stats::{Counters, LayerStats};
use crate::{Element, ReferenceError};

/// The activation after each layer: add `bias` where `Y·W` is structurally nonzero, then
/// clip to `[0, upper_bound]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Activation {
    /// Added to every structurally nonzero entry of `Y·W`.
    pub bias: f32,
    /// Activations are clipped to `[0, upper_bound]`.
    pub upper_bound: f32,
}

impl Activation {
    /// The challenge's domain: `bias < 0` and `upper_bound > 0`, both finite.
    pub fn new(bias: f32, upper_bound: f32) -> Result<Self, ReferenceError> {
        validate_activation(bias, upper_bound).map_err(ReferenceError::Activation)?;
        Ok(Self { bias, upper_bound })
    }

    /// The official activation for `neurons` (its bias, bound 32), if `neurons` is an
    /// official size.
    pub fn official(neurons: usize) -> Option<Self> {
        official_bias(neurons).map(|bias| Self {
            bias,
            upper_bound: spdnn_sdgc::UPPER_BOUND,
        })
    }
}

/// What [`infer`] keeps and measures besides the categories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Return the final activations as a dense `rows × N` array.
    pub keep_output: bool,
    /// Gather [`LayerStats`] for every layer (cheap: done inside the same pass).
    pub collect_stats: bool,
    /// Segment lengths for [`crate::SegmentStats`]; each must be at least 1.
    pub segment_lengths: Vec<usize>,
}

impl Default for Options {
    /// No output kept, statistics on, segments of 32, 256 and 1024 neurons.
    fn default() -> Self {
        Self {
            keep_output: false,
            collect_stats: true,
            segment_lengths: vec![32, 256, 1024],
        }
    }
}

/// The result of [`infer`].
#[derive(Debug, Clone, PartialEq)]
pub struct Inference<T> {
    /// 1-based rows of the final activations with a nonzero row sum, ascending.
    pub categories: Vec<u32>,
    /// The final activations (`rows × N`), when [`Options::keep_output`] was set.
    pub output: Option<Array2<T>>,
    /// One entry per layer, describing that layer's output (empty unless
    /// [`Options::collect_stats`]); see [`crate::input_stats`] for layer 0.
    pub stats: Vec<LayerStats>,
}

/// Runs `input` (`rows × N`, row = image) through `layers` (`layers[l]` is
/// `N_l × N_{l+1}`, row = input neuron) with the official semantics, accumulating in `T`.
///
/// Any finite bias is accepted here (the structural-nonzero rule matters only for
/// `bias > 0`); [`Activation::new`] checks the challenge's domain. With no layers the
/// output is the input. Errors when the bias or bound is not finite or the bound is not
/// positive, when the input's width or a layer's rows do not chain, or when a segment
/// length is 0.
pub fn infer<T: Element>(
    layers: &[Csr],
    input: &Csr,
    activation: Activation,
    options: &Options,
) -> Result<Inference<T>, ReferenceError> {
    check_arguments(layers, input, activation, options)?;
    run_layers(
        layers,
        input,
        Biases::One(activation.bias),
        activation.upper_bound,
        options,
    )
}

/// [`infer`] with a bias per output neuron: `biases[l][k]` is added to output `k` of layer
/// `l` where it is structurally nonzero, then the result is clipped to `[0, upper_bound]`.
/// A positive bias follows the same rule: an output that no nonzero input reaches stays 0
/// (plain `ReLU(Y·W + b)` would give `min(b, U)` there). Errors as [`infer`] does, and when a
/// layer's biases are not one finite value per output.
pub fn infer_with_biases<T: Element>(
    layers: &[Csr],
    input: &Csr,
    biases: &[Vec<f32>],
    upper_bound: f32,
    options: &Options,
) -> Result<Inference<T>, ReferenceError> {
    let activation = Activation {
        bias: -1.0,
        upper_bound,
    };
    check_arguments(layers, input, activation, options)?;
    if biases.len() != layers.len() {
        return Err(ReferenceError::Biases(format!(
            "{} bias vectors for {} layers",
            biases.len(),
            layers.len()
        )));
    }
    for (l, (b, w)) in biases.iter().zip(layers).enumerate() {
        if b.len() != w.ncols() {
            return Err(ReferenceError::Biases(format!(
                "layer {} has {} outputs but {} biases",
                l + 1,
                w.ncols(),
                b.len()
            )));
        }
        if let Some(k) = b.iter().position(|v| !v.is_finite()) {
            return Err(ReferenceError::Biases(format!(
                "the bias of neuron {} of layer {} is {}, not finite",
                k + 1,
                l + 1,
                b[k]
            )));
        }
    }
    run_layers(
        layers,
        input,
        Biases::PerNeuron(biases),
        upper_bound,
        options,
    )
}

/// The bias of every layer: one for all neurons, or one per output neuron.
#[derive(Clone, Copy)]
enum Biases<'a> {
    One(f32),
    PerNeuron(&'a [Vec<f32>]),
}

impl Biases<'_> {
    /// Whether some bias of layer `l` is positive.
    fn positive(&self, l: usize) -> bool {
        match self {
            Self::One(b) => *b > 0.0,
            Self::PerNeuron(all) => all[l].iter().any(|&b| b > 0.0),
        }
    }

    /// Layer `l`'s bias of each of its `outputs` neurons.
    fn of_layer<T: Element>(&self, l: usize, outputs: usize) -> Vec<T> {
        match self {
            Self::One(b) => vec![T::from_f32(*b); outputs],
            Self::PerNeuron(all) => all[l].iter().map(|&b| T::from_f32(b)).collect(),
        }
    }
}

/// The layer loop of [`infer`] and [`infer_with_biases`], arguments checked.
fn run_layers<T: Element>(
    layers: &[Csr],
    input: &Csr,
    biases: Biases<'_>,
    upper_bound: f32,
    options: &Options,
) -> Result<Inference<T>, ReferenceError> {
    let rows = input.nrows();
    let width = layers.last().map_or(input.ncols(), SparseMatrix::ncols);
    let lengths: &[usize] = if options.collect_stats {
        &options.segment_lengths
    } else {
        &[]
    };
    let mut pieces = vec![SparseRows::from_input(input)];
    let mut stats = Vec::new();
    // The pull kernel reads the weights by output neuron; it serves only biases ≤ 0. Each
    // transpose is sequential, so the next layers' are made together, in parallel.
    let ahead = rayon::current_num_threads().clamp(1, TRANSPOSE_AHEAD);
    let mut transposes: std::collections::VecDeque<Option<Csr>> = Default::default();
    for (l, weights) in layers.iter().enumerate() {
        let bias: Vec<T> = biases.of_layer(l, weights.ncols());
        let positive = biases.positive(l);
        if transposes.is_empty() && !pieces.is_empty() {
            let end = (l + ahead).min(layers.len());
            transposes = (l..end)
                .into_par_iter()
                .map(|k| (!biases.positive(k)).then(|| layers[k].transpose()))
                .collect::<Vec<_>>()
                .into();
        }
        let transposed = transposes.pop_front().flatten();
        let step = Step {
            weights,
            transposed: transposed.as_ref(),
            bias: &bias,
            positive,
            upper_bound: T::from_f32(upper_bound),
            lengths,
            collect_stats: options.collect_stats,
        };
        let tasks = plan_tasks(&pieces);
        let results: Vec<(SparseRows<T>, Counters)> = tasks
            .par_iter()
            .map_init(
                || Scratch::new(weights.nrows(), weights.ncols()),
                |scratch, task| step.run(&pieces, task, scratch),
            )
            .collect();
        let mut total = Counters::new(lengths.len());
        pieces.clear();
        for (piece, counters) in results {
            total.merge(&counters);
            if !piece.ids.is_empty() {
                pieces.push(piece);
            }
        }
        if options.collect_stats {
            stats.push(total.finish(l + 1, rows, weights.ncols(), lengths));
        }
    }

    let categories = pieces
        .iter()
        .flat_map(|p| p.ids.iter().map(|&id| id + 1))
        .collect::<Vec<u32>>();
    let output = options.keep_output.then(|| {
        let mut dense = Array2::from_elem((rows, width), T::ZERO);
        for piece in &pieces {
            for (r, &id) in piece.ids.iter().enumerate() {
                let (idx, val) = piece.row(r);
                let mut out = dense.row_mut(id as usize);
                for (&k, &v) in idx.iter().zip(val) {
                    out[k as usize] = v;
                }
            }
        }
        dense
    });
    Ok(Inference {
        categories,
        output,
        stats,
    })
}

/// 1-based rows of `output` whose sum is nonzero (the official `find(sum(Y, 2))`).
pub fn categories_of<T: Element>(output: ArrayView2<'_, T>) -> Vec<u32> {
    output
        .rows()
        .into_iter()
        .enumerate()
        .filter(|(_, row)| row.iter().fold(T::ZERO, |s, &v| s + v) != T::ZERO)
        .map(|(r, _)| r as u32 + 1)
        .collect()
}

/// The class each row of `scores` predicts: the index of its largest value, the lowest
/// index among equal largest values; `None` when no value is above 0 (a row that is not a
/// category predicts nothing). For a trained network `scores` is its last layer's output,
/// clipped as every layer's is.
pub fn predictions<T: Element>(scores: ArrayView2<'_, T>) -> Vec<Option<u32>> {
    scores
        .rows()
        .into_iter()
        .map(|row| {
            let mut best: Option<(usize, T)> = None;
            for (k, &v) in row.iter().enumerate() {
                if v > T::ZERO && best.is_none_or(|(_, b)| v > b) {
                    best = Some((k, v));
                }
            }
            best.map(|(k, _)| k as u32)
        })
        .collect()
}

/// How many `predictions` equal their `labels` (a row without a prediction is wrong).
pub fn correct(predictions: &[Option<u32>], labels: &[u8]) -> usize {
    predictions
        .iter()
        .zip(labels)
        .filter(|(p, l)| **p == Some(u32::from(**l)))
        .count()
}

fn check_arguments(
    layers: &[Csr],
    input: &Csr,
    activation: Activation,
    options: &Options,
) -> Result<(), ReferenceError> {
    if !activation.bias.is_finite() {
        return Err(ReferenceError::Activation(SdgcError::Parameter(format!(
            "the bias must be finite, got {}",
            activation.bias
        ))));
    }
    if !(activation.upper_bound.is_finite() && activation.upper_bound > 0.0) {
        return Err(ReferenceError::Activation(SdgcError::Parameter(format!(
            "the upper bound must be positive and finite, got {}",
            activation.upper_bound
        ))));
    }
    if let Some(first) = layers.first()
        && first.nrows() != input.ncols()
    {
        return Err(ReferenceError::InputWidth {
            expected: first.nrows(),
            found: input.ncols(),
        });
    }
    for (l, pair) in layers.windows(2).enumerate() {
        if pair[1].nrows() != pair[0].ncols() {
            return Err(ReferenceError::LayerShape {
                layer: l + 2,
                expected: pair[0].ncols(),
                found: pair[1].nrows(),
            });
        }
    }
    if let Some(index) = options.segment_lengths.iter().position(|&l| l == 0) {
        return Err(ReferenceError::ZeroSegmentLength { index });
    }
    Ok(())
}

/// Most layers transposed ahead of their steps, in parallel (at N = 65536 a layer's
/// transpose is about 25 MB).
const TRANSPOSE_AHEAD: usize = 16;

/// Rows processed together by the grouped kernel: one weight entry updates all of them.
const GROUP: usize = 8;

/// A group uses the pull kernel when at least this share of its input neurons is set.
const PULL_NUMERATOR: usize = 2;
const PULL_DENOMINATOR: usize = 5;

/// Outputs the pull kernel sums side by side.
const PULL_OUTPUTS: usize = 4;

/// Tasks per rayon thread and layer (more tasks balance better as rows die unevenly).
const TASKS_PER_THREAD: usize = 8;

/// The least work (stored activations plus rows) worth a task of its own.
const MIN_TASK_WORK: usize = 1 << 14;

/// Sparse rows of activations: row `r` is global row `ids[r]`, its nonzeros
/// `idx/val[offsets[r]..offsets[r + 1]]` with increasing indices.
struct SparseRows<T> {
    ids: Vec<u32>,
    offsets: Vec<usize>,
    idx: Vec<u32>,
    val: Vec<T>,
}

impl<T: Element> SparseRows<T> {
    fn new() -> Self {
        Self {
            ids: Vec::new(),
            offsets: vec![0],
            idx: Vec::new(),
            val: Vec::new(),
        }
    }

    /// The nonzero entries of every nonzero row of `input` (stored zeros are not
    /// activations).
    fn from_input(input: &Csr) -> Self {
        let mut rows = Self::new();
        for row in 0..input.nrows() {
            let (cols, vals) = input.row(row);
            for (&c, &v) in cols.iter().zip(vals) {
                if v != 0.0 {
                    rows.idx.push(c);
                    rows.val.push(T::from_f32(v));
                }
            }
            rows.finish_row(row as u32);
        }
        rows
    }

    fn len(&self) -> usize {
        self.ids.len()
    }

    fn row(&self, r: usize) -> (&[u32], &[T]) {
        let range = self.offsets[r]..self.offsets[r + 1];
        (&self.idx[range.clone()], &self.val[range])
    }

    /// Closes the row being pushed as global row `id`, or drops it when it is empty;
    /// returns where its entries start when it was kept.
    fn finish_row(&mut self, id: u32) -> Option<usize> {
        let start = *self.offsets.last().expect("offsets start with 0");
        if self.idx.len() > start {
            self.ids.push(id);
            self.offsets.push(self.idx.len());
            Some(start)
        } else {
            None
        }
    }
}

/// Rows `range` of piece `piece`.
type Span = (usize, std::ops::Range<usize>);

/// Cuts the rows of `pieces` (in order) into tasks of about equal work.
fn plan_tasks<T: Element>(pieces: &[SparseRows<T>]) -> Vec<Vec<Span>> {
    let work: usize = pieces.iter().map(|p| p.idx.len() + p.len()).sum();
    let target = (work / (rayon::current_num_threads() * TASKS_PER_THREAD)).max(MIN_TASK_WORK);
    let mut tasks = Vec::new();
    let mut task: Vec<Span> = Vec::new();
    let mut task_work = 0;
    for (p, piece) in pieces.iter().enumerate() {
        let mut start = 0;
        for r in 0..piece.len() {
            task_work += piece.offsets[r + 1] - piece.offsets[r] + 1;
            if task_work >= target {
                task.push((p, start..r + 1));
                tasks.push(std::mem::take(&mut task));
                start = r + 1;
                task_work = 0;
            }
        }
        if start < piece.len() {
            task.push((p, start..piece.len()));
        }
    }
    if !task.is_empty() {
        tasks.push(task);
    }
    tasks
}

/// Buffers of one task, reused across the tasks a rayon worker runs.
struct Scratch<T> {
    /// Input activations of the group, `[input neuron][row of the group]`.
    inputs: Vec<[T; GROUP]>,
    /// Input neurons set in `inputs`, one bit each.
    inputs_set: Vec<u64>,
    /// Push kernels' sums, `[output neuron][row of the group]` (the scalar kernel uses
    /// lane 0).
    sums: Vec<[T; GROUP]>,
    /// Output neurons touched by the push kernels, one bit each.
    touched: Vec<u64>,
    /// The group's outputs before they are appended: row `g` owns
    /// `out_idx/out_val[g · N_out ..][.. out_len[g]]`.
    out_idx: Vec<u32>,
    out_val: Vec<T>,
    out_len: [usize; GROUP],
}

impl<T: Element> Scratch<T> {
    fn new(inputs: usize, outputs: usize) -> Self {
        Self {
            inputs: vec![[T::ZERO; GROUP]; inputs],
            inputs_set: vec![0; inputs.div_ceil(64)],
            sums: vec![[T::ZERO; GROUP]; outputs],
            touched: vec![0; outputs.div_ceil(64)],
            out_idx: vec![0; GROUP * outputs],
            out_val: vec![T::ZERO; GROUP * outputs],
            out_len: [0; GROUP],
        }
    }
}

/// Where a group's kernel writes its activations (see [`Scratch::out_idx`]).
struct GroupOutputs<'a, T> {
    width: usize,
    idx: &'a mut [u32],
    val: &'a mut [T],
    len: &'a mut [usize; GROUP],
}

/// One layer applied to some rows.
struct Step<'a, T> {
    weights: &'a Csr,
    /// `weights` transposed (row = output neuron), when every bias is ≤ 0.
    transposed: Option<&'a Csr>,
    /// The bias of each output neuron.
    bias: &'a [T],
    /// Whether some bias is positive (then a structural zero differs from an entry of 0).
    positive: bool,
    upper_bound: T,
    lengths: &'a [usize],
    collect_stats: bool,
}

impl<T: Element> Step<'_, T> {
    /// Applies the layer to the rows of `task`, returning the rows still alive and the
    /// statistics of their outputs. Runs a copy compiled for AVX2 where the CPU has it
    /// (the same operations in the same order: only the vector width differs).
    fn run(
        &self,
        pieces: &[SparseRows<T>],
        task: &[Span],
        scratch: &mut Scratch<T>,
    ) -> (SparseRows<T>, Counters) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, as just checked.
            return unsafe { self.run_avx2(pieces, task, scratch) };
        }
        self.run_portable(pieces, task, scratch)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn run_avx2(
        &self,
        pieces: &[SparseRows<T>],
        task: &[Span],
        scratch: &mut Scratch<T>,
    ) -> (SparseRows<T>, Counters) {
        self.run_portable(pieces, task, scratch)
    }

    #[inline(always)]
    fn run_portable(
        &self,
        pieces: &[SparseRows<T>],
        task: &[Span],
        scratch: &mut Scratch<T>,
    ) -> (SparseRows<T>, Counters) {
        let mut out = SparseRows::new();
        let mut counters = Counters::new(self.lengths.len());
        let rows = task
            .iter()
            .flat_map(|(p, range)| range.clone().map(move |r| (&pieces[*p], r)));
        if self.positive {
            // Only a positive bias tells a structural zero from no entry at all.
            for (piece, r) in rows {
                let (idx, val) = piece.row(r);
                self.scalar_row(idx, val, scratch, &mut out);
                self.finish_row(piece.ids[r], &mut out, &mut counters);
            }
        } else {
            let mut group: Vec<(u32, &[u32], &[T])> = Vec::with_capacity(GROUP);
            for (piece, r) in rows {
                let (idx, val) = piece.row(r);
                group.push((piece.ids[r], idx, val));
                if group.len() == GROUP {
                    self.grouped_rows(&group, scratch, &mut out, &mut counters);
                    group.clear();
                }
            }
            if !group.is_empty() {
                self.grouped_rows(&group, scratch, &mut out, &mut counters);
            }
        }
        (out, counters)
    }

    fn finish_row(&self, id: u32, out: &mut SparseRows<T>, counters: &mut Counters) {
        if let Some(start) = out.finish_row(id)
            && self.collect_stats
        {
            counters.add_row(
                &out.idx[start..],
                &out.val[start..],
                self.upper_bound,
                self.lengths,
                self.weights.ncols(),
            );
        }
    }

    /// `sum + bias` clipped to the bound, and whether it is above 0 (a NaN, reachable
    /// only through overflow, is not).
    #[inline(always)]
    fn activate(&self, sum: T, bias: T) -> (T, bool) {
        let v = sum + bias;
        (
            if v > self.upper_bound {
                self.upper_bound
            } else {
                v
            },
            v > T::ZERO,
        )
    }

    /// Appends the activations of output `k` of every row of the group, without branches.
    #[inline(always)]
    fn emit(&self, k: usize, sum: &[T; GROUP], out: &mut GroupOutputs<'_, T>) {
        let bias = self.bias[k];
        for g in 0..GROUP {
            let (v, keep) = self.activate(sum[g], bias);
            let slot = g * out.width + out.len[g];
            out.idx[slot] = k as u32;
            out.val[slot] = v;
            out.len[g] += usize::from(keep);
        }
    }

    /// One row, any bias: scatter `y_j · W_j*` into lane 0 of the sums, marking every
    /// stored entry met, then activate exactly the marked outputs.
    #[inline(always)]
    fn scalar_row(
        &self,
        idx: &[u32],
        val: &[T],
        scratch: &mut Scratch<T>,
        out: &mut SparseRows<T>,
    ) {
        let Scratch { sums, touched, .. } = scratch;
        for (&j, &y) in idx.iter().zip(val) {
            let (cols, ws) = self.weights.row(j as usize);
            for (&c, &w) in cols.iter().zip(ws) {
                let c = c as usize;
                sums[c][0] = sums[c][0] + y * T::from_f32(w);
                touched[c >> 6] |= 1u64 << (c & 63);
            }
        }
        for_each_set_bit(touched, |k| {
            let (v, keep) =
                self.activate(std::mem::replace(&mut sums[k][0], T::ZERO), self.bias[k]);
            if keep {
                out.idx.push(k as u32);
                out.val.push(v);
            }
        });
    }

    /// Up to [`GROUP`] rows at once, for biases ≤ 0: an output whose sum is 0 stays 0
    /// whether or not it is structurally nonzero, so each weight can update every row of
    /// the group, including rows whose input there is 0 (adding an exact 0). Uses the
    /// pull kernel when the group's inputs are dense, the push kernel otherwise; both sum
    /// over the inputs in increasing order, as [`Self::scalar_row`] does, so every kernel
    /// gives the same bits whatever the grouping.
    #[inline(always)]
    fn grouped_rows(
        &self,
        group: &[(u32, &[u32], &[T])],
        scratch: &mut Scratch<T>,
        out: &mut SparseRows<T>,
        counters: &mut Counters,
    ) {
        let Scratch {
            inputs,
            inputs_set,
            sums,
            touched,
            out_idx,
            out_val,
            out_len,
        } = scratch;
        for (g, &(_, idx, val)) in group.iter().enumerate() {
            for (&j, &y) in idx.iter().zip(val) {
                let j = j as usize;
                inputs[j][g] = y;
                inputs_set[j >> 6] |= 1u64 << (j & 63);
            }
        }
        let mut outputs = GroupOutputs {
            width: sums.len(),
            idx: out_idx,
            val: out_val,
            len: out_len,
        };
        let set: usize = inputs_set.iter().map(|w| w.count_ones() as usize).sum();
        match self.transposed {
            Some(transposed) if set * PULL_DENOMINATOR >= inputs.len() * PULL_NUMERATOR => {
                self.pull(transposed, inputs, &mut outputs);
                for_each_set_bit(inputs_set, |j| inputs[j] = [T::ZERO; GROUP]);
            }
            _ => self.push(inputs, inputs_set, sums, touched, &mut outputs),
        }
        for (g, &(id, _, _)) in group.iter().enumerate() {
            let start = g * outputs.width;
            let end = start + outputs.len[g];
            out.idx.extend_from_slice(&outputs.idx[start..end]);
            out.val.extend_from_slice(&outputs.val[start..end]);
            outputs.len[g] = 0;
            self.finish_row(id, out, counters);
        }
        outputs.len.fill(0);
    }

    /// Push kernel: each stored weight `W_jk` of an input `j` set in the group adds
    /// `y_j · W_jk` to the sums of output `k` of every row, marking `k`; then the marked
    /// outputs are activated. Clears what it used.
    #[inline(always)]
    fn push(
        &self,
        inputs: &mut [[T; GROUP]],
        inputs_set: &mut [u64],
        sums: &mut [[T; GROUP]],
        touched: &mut [u64],
        out: &mut GroupOutputs<'_, T>,
    ) {
        for_each_set_bit(inputs_set, |j| {
            let y = std::mem::replace(&mut inputs[j], [T::ZERO; GROUP]);
            let (cols, ws) = self.weights.row(j);
            for (&c, &w) in cols.iter().zip(ws) {
                let c = c as usize;
                add_product(&mut sums[c], &y, w);
                touched[c >> 6] |= 1u64 << (c & 63);
            }
        });
        for_each_set_bit(touched, |k| {
            let sum = std::mem::replace(&mut sums[k], [T::ZERO; GROUP]);
            self.emit(k, &sum, out);
        });
    }

    /// Pull kernel, for groups whose inputs are dense: each output `k` sums
    /// `y_j · W_jk` over its stored weights in registers (inputs not set add an exact 0),
    /// [`PULL_OUTPUTS`] outputs side by side so that their additions overlap.
    #[inline(always)]
    fn pull(&self, transposed: &Csr, inputs: &[[T; GROUP]], out: &mut GroupOutputs<'_, T>) {
        let outputs = transposed.nrows();
        let mut k = 0;
        while k + PULL_OUTPUTS <= outputs {
            let columns: [(&[u32], &[f32]); PULL_OUTPUTS] =
                std::array::from_fn(|q| transposed.row(k + q));
            let common = columns.iter().map(|(js, _)| js.len()).min().unwrap_or(0);
            // Cut to the common length first, so the loop below needs no bounds checks.
            let heads: [(&[u32], &[f32]); PULL_OUTPUTS] =
                std::array::from_fn(|q| (&columns[q].0[..common], &columns[q].1[..common]));
            // Four named sums (not an array indexed by output) stay in registers even
            // where the optimizer does not unroll the loop over outputs (opt-level 2).
            let [h0, h1, h2, h3] = heads;
            let [mut s0, mut s1, mut s2, mut s3] = [[T::ZERO; GROUP]; PULL_OUTPUTS];
            for e in 0..common {
                add_product(&mut s0, &inputs[h0.0[e] as usize], h0.1[e]);
                add_product(&mut s1, &inputs[h1.0[e] as usize], h1.1[e]);
                add_product(&mut s2, &inputs[h2.0[e] as usize], h2.1[e]);
                add_product(&mut s3, &inputs[h3.0[e] as usize], h3.1[e]);
            }
            let mut sums = [s0, s1, s2, s3];
            for q in 0..PULL_OUTPUTS {
                let (js, ws) = columns[q];
                add_column(&mut sums[q], inputs, &js[common..], &ws[common..]);
                if !js.is_empty() {
                    self.emit(k + q, &sums[q], out);
                }
            }
            k += PULL_OUTPUTS;
        }
        for k in k..outputs {
            let (js, ws) = transposed.row(k);
            if !js.is_empty() {
                let mut sum = [T::ZERO; GROUP];
                add_column(&mut sum, inputs, js, ws);
                self.emit(k, &sum, out);
            }
        }
    }
}

/// `sum += Σ y_j · w` over the entries `(j, w)` of one output, in order.
#[inline(always)]
fn add_column<T: Element>(sum: &mut [T; GROUP], inputs: &[[T; GROUP]], js: &[u32], ws: &[f32]) {
    for (&j, &w) in js.iter().zip(ws) {
        add_product(sum, &inputs[j as usize], w);
    }
}

/// `sum += y · w`, lane by lane.
#[inline(always)]
fn add_product<T: Element>(sum: &mut [T; GROUP], y: &[T; GROUP], w: f32) {
    let w = T::from_f32(w);
    for g in 0..GROUP {
        sum[g] = sum[g] + y[g] * w;
    }
}

/// Calls `f` with the index of every set bit of `bits`, in increasing order, clearing them.
#[inline(always)]
fn for_each_set_bit(bits: &mut [u64], mut f: impl FnMut(usize)) {
    for (word_index, word) in bits.iter_mut().enumerate() {
        let mut w = std::mem::take(word);
        while w != 0 {
            f(word_index * 64 + w.trailing_zeros() as usize);
            w &= w - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(lengths: &[usize]) -> SparseRows<f32> {
        let mut rows = SparseRows::new();
        for (id, &len) in lengths.iter().enumerate() {
            for k in 0..len {
                rows.idx.push(k as u32);
                rows.val.push(1.0);
            }
            rows.finish_row(id as u32);
        }
        rows
    }

    #[test]
    fn tasks_cover_every_row_once_in_order() {
        let big = MIN_TASK_WORK;
        let pieces = vec![
            rows(&[big, 3, big / 2, big / 2]),
            rows(&[1, 2]),
            rows(&[big * 3]),
        ];
        let tasks = plan_tasks(&pieces);
        let flat: Vec<(usize, usize)> = tasks
            .iter()
            .flatten()
            .flat_map(|(p, range)| range.clone().map(move |r| (*p, r)))
            .collect();
        let expected: Vec<(usize, usize)> = pieces
            .iter()
            .enumerate()
            .flat_map(|(p, piece)| (0..piece.len()).map(move |r| (p, r)))
            .collect();
        assert_eq!(flat, expected);
        assert!(tasks.len() >= 3, "{tasks:?}");
        assert!(
            tasks
                .iter()
                .all(|t| !t.is_empty() && t.iter().all(|(_, r)| !r.is_empty()))
        );
        assert!(plan_tasks::<f32>(&[]).is_empty());
    }

    #[test]
    fn finish_row_drops_empty_rows() {
        let mut rows = SparseRows::<f64>::new();
        assert_eq!(rows.finish_row(7), None);
        rows.idx.push(3);
        rows.val.push(1.5);
        assert_eq!(rows.finish_row(9), Some(0));
        assert_eq!(rows.ids, vec![9]);
        assert_eq!(rows.row(0), (&[3u32][..], &[1.5][..]));
    }
}
