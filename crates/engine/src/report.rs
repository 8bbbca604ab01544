//! Run reports: one JSON object per run, and tables for terminals and Markdown.

use serde::{Deserialize, Serialize};
use spdnn_sdgc::benchmark::Benchmark;

use crate::glare::Summary;
use crate::method::{Details, MethodOutput, Timing};

/// The outcome of comparing categories with a truth.
#[derive(Debug, Clone, Serialize, Deserialize)]
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

/// Everything a run reports; `--json` prints this object (and `spdnn bench` writes a list
/// of them, which reads back into this type).
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// Bias (serialised as given: -0.3, not -0.30000001192092896).
    #[serde(serialize_with = "spdnn_sdgc::benchmark::shortest_f32")]
    pub bias: f32,
    /// Upper bound.
    #[serde(serialize_with = "spdnn_sdgc::benchmark::shortest_f32")]
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
    /// Of `total_ms`, the time the run waited for its kernels to be compiled and loaded, ms
    /// (GPU methods; the rest of `details.compile` says what was compiled). A method's own
    /// preprocessing time leaves it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_ms: Option<f64>,
    /// rows·32·N·L / infer time, in 10^12 edges per second.
    pub teraedges_per_s: f64,
    /// How times were taken.
    pub timing: Timing,
    /// Method-specific details.
    pub details: Details,
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
            compile_ms: output.details.compile.map(|c| c.waited_ms),
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

impl RunReport {
    /// The stage times of one profiled run, in order (empty for one-stage methods).
    pub fn stages(&self) -> Vec<(String, f64)> {
        self.details
            .stages
            .iter()
            .map(|s| (s.stage.clone(), s.ms))
            .collect()
    }

    /// The per-layer times of one profiled run, ms (empty when not measured).
    pub fn layer_times(&self) -> Vec<f64> {
        self.details.layer_ms.clone()
    }

    /// GLARE's segment and access reduction, for runs of a `+glare` method.
    pub fn glare(&self) -> Option<Summary> {
        Summary::of(&self.details)
    }
}

/// Width of the label column of `spdnn infer`'s text output.
const LABEL: usize = 12;

/// Lines of a stage breakdown for terminals: each stage's ms and share of their sum.
///
/// Empty when there are no stages.
pub fn stage_lines(stages: &[(String, f64)]) -> Vec<String> {
    if stages.is_empty() {
        return Vec::new();
    }
    let sum: f64 = stages.iter().map(|(_, ms)| ms).sum();
    let width = stages.iter().map(|(s, _)| s.len()).max().unwrap_or(0);
    let mut lines = vec![format!(
        "{:<LABEL$}{sum:.3} ms in all (one profiled run)",
        "stages"
    )];
    for (stage, ms) in stages {
        let share = if sum > 0.0 {
            format!("{:5.1}%", 100.0 * ms / sum)
        } else {
            "     -".to_string()
        };
        lines.push(format!(
            "{:LABEL$}{stage:<width$}  {ms:>10.3} ms  {share}",
            ""
        ));
    }
    lines
}

/// How many layers the per-layer summary shows at each end.
const LAYER_ENDS: usize = 5;

/// Lines summarizing per-layer times for terminals: min / median / max (with the layer
/// of the extremes), then the first and last few layers (or all of them when few).
///
/// Empty when there are no times. The JSON report holds every value.
pub fn layer_lines(layer_ms: &[f64]) -> Vec<String> {
    if layer_ms.is_empty() {
        return Vec::new();
    }
    let list = |values: &[f64]| {
        values
            .iter()
            .map(|v| format!("{v:.3}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (min_at, min) = extreme(layer_ms, |a, b| a < b);
    let (max_at, max) = extreme(layer_ms, |a, b| a > b);
    let mut lines = vec![format!(
        "{:<LABEL$}{} layers: min {min:.3} (layer {}), median {:.3}, max {max:.3} (layer {}) ms",
        "per layer",
        layer_ms.len(),
        min_at + 1,
        median(layer_ms),
        max_at + 1
    )];
    if layer_ms.len() <= 2 * LAYER_ENDS {
        lines.push(format!("{:LABEL$}all    {} ms", "", list(layer_ms)));
    } else {
        let n = layer_ms.len();
        lines.push(format!(
            "{:LABEL$}first  {} ms (layers 1-{LAYER_ENDS})",
            "",
            list(&layer_ms[..LAYER_ENDS])
        ));
        lines.push(format!(
            "{:LABEL$}last   {} ms (layers {}-{n})",
            "",
            list(&layer_ms[n - LAYER_ENDS..]),
            n - LAYER_ENDS + 1
        ));
    }
    lines
}

/// Index and value of the first extreme element by `better` (ignoring NaN).
fn extreme(values: &[f64], better: fn(f64, f64) -> bool) -> (usize, f64) {
    let mut best = (0, values[0]);
    for (i, &v) in values.iter().enumerate() {
        if best.1.is_nan() || better(v, best.1) {
            best = (i, v);
        }
    }
    best
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

const COLUMNS: [&str; 12] = [
    "method",
    "N",
    "L",
    "rows",
    "weights",
    "input",
    "infer ms",
    "TeraEdges/s",
    "total ms",
    "compile ms",
    "categories",
    "matched",
];

fn cells(report: &RunReport) -> [String; 12] {
    [
        report.method.clone(),
        report.neurons.to_string(),
        report.layers.to_string(),
        report.rows.to_string(),
        report.weights.clone(),
        report.input.clone(),
        format!("{:.2}", report.infer_ms),
        format!("{:.3}", report.teraedges_per_s),
        format!("{:.0}", report.total_ms),
        report
            .compile_ms
            .map_or_else(|| "-".to_string(), |ms| format!("{ms:.0}")),
        report.categories.to_string(),
        report.matched_label().to_string(),
    ]
}

/// The `compile` line of `spdnn infer`: the time waited, and what was compiled.
pub fn compile_line(report: &RunReport) -> Option<String> {
    let ms = report.compile_ms?;
    let line = match report.details.compile {
        Some(c) => format!(
            "{ms:.0} ms waited for kernels ({} modules: {} compiled, {} from the cache; \
             {:.0} ms NVRTC and {:.0} ms loading on all threads)",
            c.loaded, c.compiled, c.from_cache, c.nvrtc_ms, c.load_ms
        ),
        None => format!("{ms:.0} ms waited for kernels"),
    };
    Some(line)
}

/// A plain-text table with aligned columns, for terminals.
pub fn terminal_table(reports: &[RunReport]) -> String {
    let rows: Vec<[String; 12]> = reports.iter().map(cells).collect();
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
    fn stage_lines_show_shares_in_order() {
        let stages = vec![
            ("pre-convergence".to_string(), 6.0),
            ("conversion".to_string(), 1.0),
            ("post-convergence".to_string(), 3.0),
        ];
        let lines = stage_lines(&stages);
        assert_eq!(lines.len(), 4);
        assert!(lines[0].contains("10.000 ms in all"), "{}", lines[0]);
        assert!(lines[1].contains("pre-convergence") && lines[1].contains("60.0%"));
        assert!(lines[2].contains("conversion") && lines[2].contains("10.0%"));
        assert!(lines[3].contains("post-convergence") && lines[3].contains("30.0%"));
        assert!(stage_lines(&[]).is_empty());
        let zero = stage_lines(&[("a".to_string(), 0.0)]);
        assert!(zero[1].trim_end().ends_with('-'), "{}", zero[1]);
    }

    #[test]
    fn layer_lines_summarize_long_lists() {
        let mut times: Vec<f64> = (0..1920).map(|i| 1.0 + i as f64 * 1e-3).collect();
        times[7] = 9.5;
        times[100] = 0.25;
        let lines = layer_lines(&times);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("1920 layers"));
        assert!(lines[0].contains("min 0.250 (layer 101)"), "{}", lines[0]);
        assert!(lines[0].contains("max 9.500 (layer 8)"), "{}", lines[0]);
        assert!(lines[1].contains("first  1.000 1.001 1.002 1.003 1.004 ms (layers 1-5)"));
        assert!(lines[2].contains("(layers 1916-1920)"), "{}", lines[2]);
        let total: usize = lines.iter().map(|l| l.len()).sum();
        assert!(total < 400, "the summary is not compact: {total} chars");

        let short = layer_lines(&[2.0, 1.0, 3.0]);
        assert_eq!(short.len(), 2);
        assert!(short[0].contains("median 2.000"));
        assert!(short[1].contains("all    2.000 1.000 3.000 ms"));
        assert!(layer_lines(&[]).is_empty());
    }

    #[test]
    fn details_without_stages_give_nothing() {
        let report = RunReport::new(
            "cpu",
            &Benchmark::new(
                64,
                2,
                3,
                Some(-0.3),
                spdnn_sdgc::benchmark::WeightsOrigin::Generated { seed: 0 },
                spdnn_sdgc::InputOrigin::Synthetic { seed: 0 },
            )
            .unwrap(),
            &MethodOutput {
                categories: vec![1, 3],
                infer_ms: vec![2.0],
                total_ms: 2.0,
                timing: Timing::WallClock,
                details: Details::default(),
            },
            None,
        );
        assert!(report.stages().is_empty());
        assert!(report.layer_times().is_empty());
        assert!(report.glare().is_none());
        let value = serde_json::to_value(&report).unwrap();
        assert_eq!(value["bias"], serde_json::json!(-0.3), "the bias as given");
        assert!(
            serde_json::to_string(&value)
                .unwrap()
                .contains("\"bias\":-0.3,")
        );
        let back: RunReport = serde_json::from_value(value).unwrap();
        assert_eq!((back.categories, back.rows, back.layers), (2, 3, 2));
        assert_eq!(back.bias, -0.3);
    }

    #[test]
    fn compile_time_is_reported_apart_for_gpu_runs() {
        let benchmark = Benchmark::new(
            64,
            2,
            3,
            Some(-0.3),
            spdnn_sdgc::benchmark::WeightsOrigin::Generated { seed: 0 },
            spdnn_sdgc::InputOrigin::Synthetic { seed: 0 },
        )
        .unwrap();
        let output = |compile| MethodOutput {
            categories: vec![1],
            infer_ms: vec![2.0],
            total_ms: 1500.0,
            timing: Timing::CudaEvents,
            details: Details {
                compile,
                ..Details::default()
            },
        };
        let stats = spdnn_cuda::CompileStats {
            waited_ms: 812.4,
            nvrtc_ms: 2900.0,
            load_ms: 3.5,
            compiled: 6,
            from_cache: 1,
            loaded: 7,
        };
        let gpu = RunReport::new("sz", &benchmark, &output(Some(stats)), None);
        assert_eq!(gpu.compile_ms, Some(812.4));
        let value = serde_json::to_value(&gpu).unwrap();
        assert_eq!(value["compile_ms"], 812.4);
        assert_eq!(value["details"]["compile"]["compiled"], 6);
        let back: RunReport = serde_json::from_value(value).unwrap();
        assert_eq!(back.details.compile, Some(stats));
        let line = compile_line(&gpu).unwrap();
        assert!(
            line.starts_with("812 ms waited") && line.contains("7 modules: 6 compiled, 1 from"),
            "{line}"
        );

        let cpu = RunReport::new("cpu", &benchmark, &output(None), None);
        assert_eq!(cpu.compile_ms, None);
        assert!(compile_line(&cpu).is_none());
        assert!(
            serde_json::to_value(&cpu)
                .unwrap()
                .get("compile_ms")
                .is_none()
        );

        let table = terminal_table(&[gpu, cpu]);
        let lines: Vec<&str> = table.lines().collect();
        let column = lines[0].find("compile ms").unwrap();
        assert!(lines[0].contains("total ms"));
        assert_eq!(&lines[2][column..column + 3], "812");
        assert_eq!(&lines[3][column..column + 1], "-");
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }
}
