//! `spdnn plot`: draws the figures of saved results files again.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Args;
use spdnn_engine::RunReport;

use crate::{Outcome, figures, results};

/// Arguments of `spdnn plot`.
#[derive(Args)]
pub struct PlotArgs {
    /// Results files of `spdnn bench` or `spdnn sweep` (results/*.json). Several bench
    /// files are drawn together, a later file's run of a method on a benchmark replacing an
    /// earlier one's; a sweep file is drawn on its own.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Folder for the figures [default: the first file's folder].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Stem of the figure files, `<stem>-throughput.svg` … [default: the file's stem, or
    /// `combined` for several files].
    #[arg(long)]
    name: Option<String>,
    /// Only the runs of these methods (comma-separated).
    #[arg(long, value_delimiter = ',')]
    methods: Vec<String>,
}

/// Reads every file, then draws and writes the figures.
pub fn run(args: &PlotArgs) -> Result<Outcome> {
    let docs = args
        .files
        .iter()
        .map(|path| results::read(path))
        .collect::<Result<Vec<_>>>()?;
    let sweeps = docs.iter().filter(|d| d.sweep.is_some()).count();
    if sweeps > 0 && docs.len() > 1 {
        bail!("a sweep's results file is plotted on its own: give it alone");
    }
    let mut reports: Vec<RunReport> = Vec::new();
    let mut points: Vec<String> = Vec::new();
    for doc in &docs {
        for (i, report) in doc.reports.iter().enumerate() {
            if args.methods.is_empty() || args.methods.contains(&report.method) {
                reports.push(report.clone());
                if let Some(sweep) = &doc.sweep {
                    points.push(sweep.points[i].clone());
                }
            }
        }
    }
    if reports.is_empty() && !args.methods.is_empty() {
        bail!(
            "--methods {}: no run of these in the files, nothing to draw",
            args.methods.join(",")
        );
    }
    for name in &args.methods {
        if !reports.iter().any(|r| &r.method == name) {
            eprintln!("warning: --methods: no run of {name} in the files");
        }
    }
    let sweep = docs[0].sweep.clone().map(|mut s| {
        s.points = points;
        s
    });
    let figures = figures::of_document(&reports, sweep.as_ref())?;
    if figures.is_empty() {
        eprintln!("nothing to draw: no run has a rate, layer or stage times, or a census");
        return Ok(Outcome::Success);
    }
    let first = &args.files[0];
    let dir = match &args.out {
        Some(dir) => dir.clone(),
        None => first.parent().unwrap_or(Path::new(".")).to_path_buf(),
    };
    let stem = match (&args.name, args.files.len()) {
        (Some(name), _) => name.clone(),
        (None, 1) => first
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "results".into()),
        (None, _) => "combined".into(),
    };
    for path in figures::write(&dir, &stem, &figures)? {
        println!("wrote {}", path.display());
    }
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error of a call expected to fail, with its causes.
    fn error_of<T>(result: Result<T>) -> String {
        match result {
            Err(e) => format!("{e:#}"),
            Ok(_) => panic!("expected an error"),
        }
    }
    use crate::figures::tests::has_text;
    use crate::results::tests::report_json;

    fn write_doc(dir: &Path, name: &str, reports: Vec<serde_json::Value>) -> PathBuf {
        let path = dir.join(name);
        let doc = serde_json::json!({"date": "2026-11-23", "host": "vm", "reports": reports});
        std::fs::write(&path, doc.to_string()).unwrap();
        path
    }

    #[test]
    fn several_files_are_drawn_together() {
        let dir = tempfile::tempdir().unwrap();
        let a = write_doc(
            dir.path(),
            "a.json",
            vec![report_json("bf", 1024, 120, 86.0)],
        );
        let b = write_doc(
            dir.path(),
            "b.json",
            vec![
                report_json("blockdepend", 65536, 1920, 10.7),
                report_json("hp", 65536, 1920, 5917.0),
            ],
        );
        let out = dir.path().join("figures");
        let args = PlotArgs {
            files: vec![a, b],
            out: Some(out.clone()),
            name: Some("h200".into()),
            methods: vec!["bf".into(), "blockdepend".into()],
        };
        assert!(matches!(run(&args), Ok(Outcome::Success)));
        let svg = std::fs::read_to_string(out.join("h200-throughput.svg")).unwrap();
        assert!(has_text(&svg, "bf") && has_text(&svg, "blockdepend"));
        assert!(!has_text(&svg, "hp"), "--methods leaves hp out");
    }

    #[test]
    fn a_sweep_file_goes_alone_and_bad_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let bench = write_doc(
            dir.path(),
            "a.json",
            vec![report_json("bf", 1024, 120, 86.0)],
        );
        let sweep = dir.path().join("s.json");
        let doc = serde_json::json!({
            "reports": [report_json("snicit", 1024, 120, 7.0), report_json("snicit", 1024, 120, 6.0)],
            "sweep": {"method": "snicit", "param": "threshold", "values": ["10", "30"],
                      "points": ["10", "30"]}
        });
        std::fs::write(&sweep, doc.to_string()).unwrap();
        let args = |files: Vec<PathBuf>| PlotArgs {
            files,
            out: None,
            name: None,
            methods: Vec::new(),
        };
        let error = error_of(run(&args(vec![bench.clone(), sweep.clone()])));
        assert!(error.contains("on its own"), "{error}");
        assert!(run(&args(vec![sweep])).is_ok());
        assert!(dir.path().join("s-sweep-snicit-threshold.svg").exists());

        let broken = dir.path().join("broken.json");
        std::fs::write(&broken, "not json").unwrap();
        let error = error_of(run(&args(vec![bench, broken])));
        assert!(error.contains("broken.json"), "{error}");
    }
}
