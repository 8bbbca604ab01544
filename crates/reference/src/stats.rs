//! Per-layer statistics of the activations, gathered inside the inference pass.

use serde::Serialize;
use spdnn_formats::{Csr, SparseMatrix};

use crate::Element;

/// Segments of `length` consecutive neurons of one row (neurons `s·length ..
/// min((s+1)·length, N)`; the last, partial segment counts like the others).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentStats {
    /// Neurons per segment.
    pub length: usize,
    /// Segments over all rows: `rows · ceil(N / length)`.
    pub total: u64,
    /// Segments whose every neuron is at the upper bound.
    pub all_upper_bound: u64,
    /// Segments whose every neuron is zero (dead rows included).
    pub all_zero: u64,
}

impl SegmentStats {
    /// `all_upper_bound / total` (0 when there are no segments).
    pub fn all_upper_bound_share(&self) -> f64 {
        ratio(self.all_upper_bound, self.total)
    }

    /// `all_zero / total` (0 when there are no segments).
    pub fn all_zero_share(&self) -> f64 {
        ratio(self.all_zero, self.total)
    }
}

/// The activations after one layer (layer 0: the input), over all rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerStats {
    /// 1-based layer whose output this describes; 0 for the input.
    pub layer: usize,
    /// Rows of the input (dead rows included).
    pub rows: usize,
    /// Neurons per row (the layer's output width, N).
    pub neurons: usize,
    /// Rows with at least one nonzero activation.
    pub active_rows: usize,
    /// Nonzero activations.
    pub nonzeros: u64,
    /// Activations at (or above) the upper bound.
    pub at_upper_bound: u64,
    /// One entry per requested segment length, in the order requested.
    pub segments: Vec<SegmentStats>,
}

impl LayerStats {
    /// `nonzeros / (rows · neurons)`.
    pub fn density(&self) -> f64 {
        ratio(self.nonzeros, self.rows as u64 * self.neurons as u64)
    }

    /// `nonzeros / (active_rows · neurons)`: the density of the rows still alive.
    pub fn active_density(&self) -> f64 {
        ratio(self.nonzeros, self.active_rows as u64 * self.neurons as u64)
    }

    /// `active_rows / rows`.
    pub fn active_row_share(&self) -> f64 {
        ratio(self.active_rows as u64, self.rows as u64)
    }

    /// `at_upper_bound / nonzeros`: the share of the nonzeros that sit at the bound.
    pub fn upper_bound_share(&self) -> f64 {
        ratio(self.at_upper_bound, self.nonzeros)
    }

    /// The statistics of segments of `length`, if that length was requested.
    pub fn segment(&self, length: usize) -> Option<&SegmentStats> {
        self.segments.iter().find(|s| s.length == length)
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Statistics of the input (layer 0): `upper_bound` is the bound activations are compared
/// with, `segment_lengths` the segment sizes (a length of 0 is skipped).
pub fn input_stats(input: &Csr, upper_bound: f32, segment_lengths: &[usize]) -> LayerStats {
    let lengths: Vec<usize> = segment_lengths.iter().copied().filter(|&l| l > 0).collect();
    let mut counters = Counters::new(lengths.len());
    let mut idx = Vec::new();
    let mut val = Vec::new();
    for row in 0..input.nrows() {
        let (cols, vals) = input.row(row);
        idx.clear();
        val.clear();
        for (&c, &v) in cols.iter().zip(vals) {
            if v != 0.0 {
                idx.push(c);
                val.push(v);
            }
        }
        counters.add_row(&idx, &val, upper_bound, &lengths, input.ncols());
    }
    counters.finish(0, input.nrows(), input.ncols(), &lengths)
}

/// Counts of one layer over some rows; merged over blocks, then turned into [`LayerStats`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Counters {
    active_rows: usize,
    nonzeros: u64,
    at_upper_bound: u64,
    /// Per segment length: segments all at the bound.
    segments_upper: Vec<u64>,
    /// Per segment length: segments with a nonzero.
    segments_nonzero: Vec<u64>,
}

impl Counters {
    pub(crate) fn new(lengths: usize) -> Self {
        Self {
            segments_upper: vec![0; lengths],
            segments_nonzero: vec![0; lengths],
            ..Self::default()
        }
    }

    /// Adds one row given by its nonzeros, indices strictly increasing, all `< width`.
    pub(crate) fn add_row<T: Element>(
        &mut self,
        idx: &[u32],
        val: &[T],
        upper_bound: T,
        lengths: &[usize],
        width: usize,
    ) {
        if idx.is_empty() {
            return;
        }
        self.active_rows += 1;
        self.nonzeros += idx.len() as u64;
        let at_bound = val.iter().filter(|&&v| v >= upper_bound).count();
        self.at_upper_bound += at_bound as u64;
        for (s, &length) in lengths.iter().enumerate() {
            let (nonzero, upper) =
                walk_segments(idx, val, upper_bound, at_bound > 0, length, width);
            self.segments_nonzero[s] += nonzero;
            self.segments_upper[s] += upper;
        }
    }

    pub(crate) fn merge(&mut self, other: &Counters) {
        self.active_rows += other.active_rows;
        self.nonzeros += other.nonzeros;
        self.at_upper_bound += other.at_upper_bound;
        for (a, b) in self.segments_upper.iter_mut().zip(&other.segments_upper) {
            *a += b;
        }
        for (a, b) in self
            .segments_nonzero
            .iter_mut()
            .zip(&other.segments_nonzero)
        {
            *a += b;
        }
    }

    pub(crate) fn finish(
        &self,
        layer: usize,
        rows: usize,
        width: usize,
        lengths: &[usize],
    ) -> LayerStats {
        let segments = lengths
            .iter()
            .enumerate()
            .map(|(s, &length)| {
                let total = rows as u64 * width.div_ceil(length) as u64;
                SegmentStats {
                    length,
                    total,
                    all_upper_bound: self.segments_upper[s],
                    all_zero: total - self.segments_nonzero[s],
                }
            })
            .collect();
        LayerStats {
            layer,
            rows,
            neurons: width,
            active_rows: self.active_rows,
            nonzeros: self.nonzeros,
            at_upper_bound: self.at_upper_bound,
            segments,
        }
    }
}

/// Segments of `length` holding a nonzero, and segments whose every neuron is at the
/// bound (looked for only when `any_at_bound`). Jumps from segment to segment: a segment
/// is full when its last possible entry is where a full segment would put it.
fn walk_segments<T: Element>(
    idx: &[u32],
    val: &[T],
    upper_bound: T,
    any_at_bound: bool,
    length: usize,
    width: usize,
) -> (u64, u64) {
    let (mut nonzero, mut upper) = (0u64, 0u64);
    let n = idx.len();
    let mut p = 0;
    while p < n {
        let start = idx[p] as usize / length * length;
        let end = (start + length).min(width);
        let size = end - start;
        nonzero += 1;
        if p + size <= n && idx[p + size - 1] as usize == end - 1 {
            // Indices increase strictly, so entries p..p + size are exactly start..end.
            if any_at_bound
                && val[p..p + size]
                    .iter()
                    .fold(true, |all, &v| all & (v >= upper_bound))
            {
                upper += 1;
            }
            p += size;
        } else {
            let limit = (p + size).min(n);
            p += idx[p..limit].partition_point(|&k| (k as usize) < end);
        }
    }
    (nonzero, upper)
}
