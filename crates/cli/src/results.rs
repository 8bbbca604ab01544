//! The results document that `spdnn bench` and `spdnn sweep` write
//! (`results/<date>-<host>.json`) and `spdnn plot` reads back.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use spdnn_engine::RunReport;

/// `{date, host, gpu, cpu_threads, reports, notes}`, and `sweep` for a sweep's file.
///
/// Everything but `reports` may be missing when read (files written by older builds).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResultsDoc {
    /// Local date of the run, `YYYY-MM-DD`.
    #[serde(default)]
    pub date: String,
    /// Host name.
    #[serde(default)]
    pub host: String,
    /// Name of GPU 0, when there was one.
    #[serde(default)]
    pub gpu: Option<String>,
    /// Threads the CPU reference could use.
    #[serde(default)]
    pub cpu_threads: usize,
    /// One report per run.
    pub reports: Vec<RunReport>,
    /// What the tables should be read with (slices of rows, synthetic inputs, …).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The parameter a `spdnn sweep` varied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
}

/// One parameter swept over a list of values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// The method run.
    pub method: String,
    /// The flag set, without dashes (`threshold`).
    pub param: String,
    /// Its values, in the order run.
    pub values: Vec<String>,
    /// The value of each report, in the order of `reports`.
    pub points: Vec<String>,
}

impl ResultsDoc {
    /// A document of `reports` stamped with today's date, this host and its GPU.
    pub fn now(reports: Vec<RunReport>, notes: Vec<String>) -> Self {
        Self {
            date: chrono::Local::now().format("%Y-%m-%d").to_string(),
            host: host_name(),
            gpu: spdnn_engine::gpu_name(),
            cpu_threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            reports,
            notes,
            sweep: None,
        }
    }

    /// `<date>-<host>` with the host made safe for file names.
    pub fn stem(&self) -> String {
        format!("{}-{}", self.date, sanitize(&self.host))
    }
}

/// Reads a results file; errors name the file (and the line and column of malformed JSON).
pub fn read(path: &Path) -> Result<ResultsDoc> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let not_results = || {
        format!(
            "{} is not a results file of spdnn bench or spdnn sweep",
            path.display()
        )
    };
    // Through a JSON value first: a key written twice in one object (a method's own
    // `compression` detail beside a `+compress` run's report) keeps its last value.
    let value: serde_json::Value = serde_json::from_str(&text).with_context(not_results)?;
    let doc: ResultsDoc = serde_json::from_value(value).with_context(not_results)?;
    if let Some(sweep) = &doc.sweep
        && sweep.points.len() != doc.reports.len()
    {
        anyhow::bail!(
            "{}: the sweep names {} points for {} reports",
            path.display(),
            sweep.points.len(),
            doc.reports.len()
        );
    }
    Ok(doc)
}

/// The host name, from the kernel or `$HOSTNAME`.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".into())
}

/// `name` with every character but ASCII letters, digits and `-` replaced by `_`.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A report as `spdnn bench` writes it (the fields every report has).
    pub fn report_json(method: &str, neurons: usize, layers: usize, ms: f64) -> serde_json::Value {
        serde_json::json!({
            "method": method, "benchmark": format!("{neurons}-{layers}"),
            "neurons": neurons, "layers": layers, "rows": 60000, "bias": -0.3,
            "upper_bound": 32.0, "weights": "generated(seed 0)", "input": "mnist",
            "categories": 1812, "matched": true, "check": null, "infer_ms": ms,
            "infer_ms_runs": [ms], "total_ms": 10.0 * ms,
            "teraedges_per_s": 60000.0 * 32.0 * (neurons * layers) as f64 / (ms * 1e-3) / 1e12,
            "timing": "cuda-events", "details": {}
        })
    }

    #[test]
    fn a_bench_file_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let mut report = report_json("snicit", 1024, 120, 5.83);
        report["details"] = serde_json::json!({
            "gpu": "H200", "centroids": "1",
            "stages_ms": [{"stage": "pre-convergence", "ms": 3.7}],
            "layer_ms": [0.5, 0.25], "parameters": {"threshold": 30}
        });
        let doc = serde_json::json!({
            "date": "2026-11-23", "host": "vm", "gpu": "NVIDIA H200", "cpu_threads": 16,
            "reports": [report], "notes": []
        });
        std::fs::write(&path, doc.to_string()).unwrap();
        let doc = read(&path).unwrap();
        assert_eq!(doc.reports.len(), 1);
        assert_eq!(doc.reports[0].layer_times(), vec![0.5, 0.25]);
        assert_eq!(doc.reports[0].stages()[0].0, "pre-convergence");
        assert!(doc.sweep.is_none());
        assert_eq!(doc.stem(), "2026-11-23-vm");
    }

    #[test]
    fn bad_files_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.json");
        let error = format!("{:#}", read(&missing).unwrap_err());
        assert!(error.contains("missing.json"), "{error}");

        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\"reports\": [1, 2]}").unwrap();
        let error = format!("{:#}", read(&bad).unwrap_err());
        assert!(
            error.contains("bad.json") && error.contains("invalid type"),
            "{error}"
        );
        std::fs::write(&bad, "{\"reports\": [").unwrap();
        let error = format!("{:#}", read(&bad).unwrap_err());
        assert!(
            error.contains("bad.json") && error.contains("line 1"),
            "{error}"
        );

        let uneven = dir.path().join("uneven.json");
        let doc = serde_json::json!({
            "reports": [report_json("snicit", 1024, 120, 5.0)],
            "sweep": {"method": "snicit", "param": "threshold", "values": ["10"], "points": []}
        });
        std::fs::write(&uneven, doc.to_string()).unwrap();
        let error = format!("{:#}", read(&uneven).unwrap_err());
        assert!(error.contains("0 points for 1 reports"), "{error}");
    }

    #[test]
    fn stems_are_safe_file_names() {
        assert_eq!(sanitize("gpu node.7/x"), "gpu_node_7_x");
    }
}
