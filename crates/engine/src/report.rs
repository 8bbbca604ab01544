//! Run reports: one JSON object per run, and tables for terminals and Markdown.

use serde::Serialize;
use spdnn_sdgc::benchmark::Benchmark;

use crate::method::{MethodOutput, Timing};

/// The outcome of comparing categories with a truth.
#[derive(Debug, Clone, Serialize)]
pub struct CategoryCheck {
    /// Whether the sets are equal.
    pub matched: bool,
    /// Where the truth came from.
    pub truth: String,
    /// Rows in the truth but not in the result (at most 10 shown).
    pub missing: Vec<u32>,
    /// Rows in the result but not in the truth (at most 10 shown).
    pub extra: Vec<u32>,
    /// Total number of missing rows.
    pub missing_count: usize,
    /// Total number of extra rows.
    pub extra_count: usize,
}

impl CategoryCheck {
    /// Compares two ascending category lists.
    pub fn compare(found: &[u32], truth: &[u32], source: &str) -> Self {
        let found_set: std::collections::BTreeSet<u32> = found.iter().copied().collect();
        let truth_set: std::collections::BTreeSet<u32> = truth.iter().copied().collect();
        let missing: Vec<u32> = truth_set.difference(&found_set).copied().collect();
        let extra: Vec<u32> = found_set.difference(&truth_set).copied().collect();
        Self {
            matched: missing.is_empty() && extra.is_empty(),
            truth: source.to_string(),
            missing_count: missing.len(),
            extra_count: extra.len(),
            missing: missing.into_iter().take(10).collect(),
            extra: extra.into_iter().take(10).collect(),
        }
    }
}

/// Everything a run reports; `--json` prints this object.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// Method name.
    pub method: String,
    /// `N-L`.
    pub benchmark: String,
    /// N.
    pub neurons: usize,
    /// L.
    pub layers: usize,
    /// Rows run.
    pub rows: usize,
    /// Bias.
    pub bias: f32,
    /// Upper bound.
    pub upper_bound: f32,
    /// Where the weights came from (label).
    pub weights: String,
    /// Where the input came from (label; says "synthetic" when it is).
    pub input: String,
    /// Number of categories found.
    pub categories: usize,
    /// Whether they matched the truth; `None` when no truth was given.
    pub matched: Option<bool>,
    /// Details of the comparison.
    pub check: Option<CategoryCheck>,
    /// Median timed-region time (layer loop + category extraction), ms.
    pub infer_ms: f64,
    /// Every timed repetition, ms.
    pub infer_ms_runs: Vec<f64>,
    /// One run with uploads and preparation, ms.
    pub total_ms: f64,
    /// rows·32·N·L / infer time, in 10^12 edges per second.
    pub teraedges_per_s: f64,
    /// How times were taken.
    pub timing: Timing,
    /// Method-specific details.
    pub details: serde_json::Value,
}

impl RunReport {
    /// Builds the report of one run.
    pub fn new(
        method: &str,
        benchmark: &Benchmark,
        output: &MethodOutput,
        check: Option<CategoryCheck>,
    ) -> Self {
        let infer_ms = median(&output.infer_ms);
        let edges = benchmark.rows as f64 * benchmark.challenge_edges() as f64;
        let teraedges_per_s = if infer_ms > 0.0 {
            edges / (infer_ms * 1e-3) / 1e12
        } else {
            0.0
        };
        Self {
            method: method.to_string(),
            benchmark: benchmark.name(),
            neurons: benchmark.neurons,
            layers: benchmark.layers,
            rows: benchmark.rows,
            bias: benchmark.bias,
            upper_bound: benchmark.upper_bound,
            weights: benchmark.weights.label(),
            input: benchmark.input.label(),
            categories: output.categories.len(),
            matched: check.as_ref().map(|c| c.matched),
            check,
            infer_ms,
            infer_ms_runs: output.infer_ms.clone(),
            total_ms: output.total_ms,
            teraedges_per_s,
            timing: output.timing,
            details: output.details.clone(),
        }
    }

    /// "yes", "NO" or "-" for tables.
    pub fn matched_label(&self) -> &'static str {
        match self.matched {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        }
    }
}

/// Median of a non-empty list (0 for an empty one).
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

const COLUMNS: [&str; 10] = [
    "method",
    "N",
    "L",
    "rows",
    "weights",
    "input",
    "infer ms",
    "TeraEdges/s",
    "categories",
    "matched",
];

fn cells(report: &RunReport) -> [String; 10] {
    [
        report.method.clone(),
        report.neurons.to_string(),
        report.layers.to_string(),
        report.rows.to_string(),
        report.weights.clone(),
        report.input.clone(),
        format!("{:.2}", report.infer_ms),
        format!("{:.3}", report.teraedges_per_s),
        report.categories.to_string(),
        report.matched_label().to_string(),
    ]
}

/// A plain-text table with aligned columns, for terminals.
pub fn terminal_table(reports: &[RunReport]) -> String {
    let rows: Vec<[String; 10]> = reports.iter().map(cells).collect();
    let mut widths = COLUMNS.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let header: Vec<String> = COLUMNS.iter().map(|s| s.to_string()).collect();
    let mut out = line(&header);
    out.push('\n');
    out.push_str(
        &widths
            .iter()
            .map(|&w| "-".repeat(w))
            .collect::<Vec<_>>()
            .join("  "),
    );
    for row in &rows {
        out.push('\n');
        out.push_str(&line(row));
    }
    out.push('\n');
    out
}

/// A Markdown table.
pub fn markdown_table(reports: &[RunReport]) -> String {
    let mut out = format!(
        "| {} |\n|{}\n",
        COLUMNS.join(" | "),
        "---|".repeat(COLUMNS.len())
    );
    for report in reports {
        out.push_str(&format!("| {} |\n", cells(report).join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_finds_missing_and_extra() {
        let c = CategoryCheck::compare(&[1, 2, 5], &[1, 3, 5], "t");
        assert!(!c.matched);
        assert_eq!(c.missing, vec![3]);
        assert_eq!(c.extra, vec![2]);
        assert!(CategoryCheck::compare(&[4], &[4], "t").matched);
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }
}
