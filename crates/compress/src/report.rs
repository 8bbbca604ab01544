//! A compact, serialisable account of a compression and a retirement analysis.

use serde::{Deserialize, Serialize};

use crate::{Retirement, Summary};

/// One layer of a [`CompressReport`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerReport {
    /// 1-based layer number.
    pub layer: usize,
    /// Original output width `N_l`.
    pub width: usize,
    /// Classes of identical outputs: the compressed width `N'_l`.
    pub classes: usize,
    /// Size of the largest class.
    pub largest_class: usize,
    /// Classes with two or more members.
    pub merged_classes: usize,
    /// Compressed rows `N'_{l-1}`.
    pub compressed_rows: usize,
    /// Stored entries before compression.
    pub nnz: usize,
    /// Stored entries after compression.
    pub compressed_nnz: usize,
    /// Whether the (compressed) layer was proved to preserve all-at-bound rows
    /// (`None` without a retirement analysis).
    pub preserves: Option<bool>,
    /// The proof's least certified margin (`None` without an analysis, or without
    /// non-empty columns; see [`crate::LayerProof::min_margin`]).
    pub min_margin: Option<f64>,
}

/// Class counts and compressed widths per layer, the preserving layers, and the
/// preparation times, ready for a JSON report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompressReport {
    /// Whether nothing was merged (the compressed network is the original).
    pub identity: bool,
    /// Input width `N_0` (never compressed).
    pub input_width: usize,
    /// `Σ N_l / Σ N'_l` over the layers (1 for the identity).
    pub width_ratio: f64,
    /// Stored entries before over after (1 for the identity).
    pub nnz_ratio: f64,
    /// Per layer, in order.
    pub layers: Vec<LayerReport>,
    /// First layer (0-based) of the longest preserving suffix; a row all at the bound
    /// after that many layers is finished (`None` without a retirement analysis).
    pub suffix_start: Option<usize>,
    /// Milliseconds spent compressing.
    pub compress_ms: f64,
    /// Milliseconds spent proving retirement (`None` without an analysis).
    pub retirement_ms: Option<f64>,
}

impl CompressReport {
    /// The report of a compression, with the retirement analysis of the compressed layers
    /// when one is given (its layers are matched to the summary's by position; extra or
    /// missing ones are left out).
    pub fn new(summary: &Summary, retirement: Option<&Retirement>) -> Self {
        let proofs = retirement.map(Retirement::layers).unwrap_or(&[]);
        let layers: Vec<LayerReport> = summary
            .layers
            .iter()
            .enumerate()
            .map(|(l, s)| {
                let proof = proofs.get(l);
                LayerReport {
                    layer: l + 1,
                    width: s.width,
                    classes: s.classes,
                    largest_class: s.largest_class,
                    merged_classes: s.merged_classes,
                    compressed_rows: s.compressed_rows,
                    nnz: s.nnz,
                    compressed_nnz: s.compressed_nnz,
                    preserves: proof.map(|p| p.preserves),
                    min_margin: proof.map(|p| p.min_margin).filter(|m| m.is_finite()),
                }
            })
            .collect();
        let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
        let width: usize = layers.iter().map(|l| l.width).sum();
        let classes: usize = layers.iter().map(|l| l.classes).sum();
        let nnz: usize = layers.iter().map(|l| l.nnz).sum();
        let compressed_nnz: usize = layers.iter().map(|l| l.compressed_nnz).sum();
        Self {
            identity: summary.is_identity(),
            input_width: summary.input_width,
            width_ratio: ratio(width, classes),
            nnz_ratio: ratio(nnz, compressed_nnz),
            layers,
            suffix_start: retirement.map(Retirement::suffix_start),
            compress_ms: summary.compress_time.as_secs_f64() * 1e3,
            retirement_ms: retirement.map(|r| r.analysis_time().as_secs_f64() * 1e3),
        }
    }
}
