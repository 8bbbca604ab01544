//! `spdnn sweep`: one method over a list of values of one of its parameters, on the
//! benchmarks `spdnn bench` would run; JSON, Markdown and the figure of the paper's
//! parameter study (SNICIT's Fig. 8: runtime against the threshold layer).
//!
//! Each value is applied by parsing the command line again with `--NAME VALUE` added, so
//! a swept value means exactly what the flag means to `spdnn infer` and `spdnn bench`, and
//! is checked the same way.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser};
use spdnn_engine::{OptionSet, Registry, RunReport};

use super::bench::{BenchArgs, reuse};
use crate::method_args::MethodArgs;
use crate::results::{ResultsDoc, Sweep};
use crate::{Outcome, figures, progress};

/// Arguments of `spdnn sweep`: the method, the parameter and its values, and any flag of
/// `spdnn bench` (benchmarks, rows, repetitions, other method parameters).
#[derive(Args)]
#[command(mut_arg("methods", |methods| methods.hide(true)))]
pub struct SweepArgs {
    /// The method to run (one; --glare and --compress swap it for its variant).
    #[arg(long)]
    method: String,
    /// The parameter and its values: a method flag without its dashes, `=`, and the values
    /// separated by commas (threshold=10,20,30,40).
    #[arg(long, value_name = "NAME=V1,V2,…")]
    param: String,
    #[command(flatten)]
    bench: BenchArgs,
}

/// Every flag of [`MethodArgs`] that takes a value (what `--param` can sweep).
fn sweepable() -> Vec<String> {
    MethodArgs::augment_args(clap::Command::new("spdnn"))
        .get_arguments()
        .filter(|arg| arg.get_action().takes_values())
        .filter_map(|arg| arg.get_long().map(str::to_string))
        .collect()
}

/// `NAME=V1,V2,…` as the flag's name and its values; errors say what is wrong.
fn parse_param(param: &str) -> Result<(String, Vec<String>)> {
    let Some((name, values)) = param.split_once('=') else {
        bail!("--param {param}: expected NAME=V1,V2,… (e.g. threshold=10,20,30,40)");
    };
    let name = name.trim().trim_start_matches("--").to_string();
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        bail!("--param {param}: a value is empty");
    }
    let flags = sweepable();
    if !flags.contains(&name) {
        bail!(
            "--param: {name:?} is not a method flag that takes a value; one of: {}",
            flags.join(", ")
        );
    }
    Ok((name, values))
}

/// The sweep's arguments with `--name value` added to `argv` (the command line as given).
fn point(argv: &[OsString], name: &str, value: &str) -> Result<SweepArgs> {
    let mut argv = argv.to_vec();
    argv.push(format!("--{name}").into());
    argv.push(value.into());
    match crate::Cli::try_parse_from(argv) {
        Ok(crate::Cli {
            command: crate::Command::Sweep(args),
        }) => Ok(args),
        Ok(_) => bail!("the command line is not a sweep"),
        Err(error) => bail!(
            "--param {name}={value}: {}",
            error.render().to_string().trim()
        ),
    }
}

/// Options of a [`MethodArgs`] that hold `--name value` alone, to ask who reads the flag.
#[derive(Parser)]
struct Alone {
    #[command(flatten)]
    flags: MethodArgs,
}

/// Runs the sweep. `argv` is the whole command line (`spdnn sweep …`).
pub fn run(args: &SweepArgs, argv: &[OsString]) -> Result<Outcome> {
    let bench = &args.bench;
    if !bench.named_methods().is_empty() {
        bail!("spdnn sweep runs one method: give --method, not --methods");
    }
    let (name, values) = parse_param(&args.param)?;
    let flag = format!("--{name}");
    if argv.iter().any(|a| {
        a.to_str()
            .is_some_and(|a| a == flag || a.starts_with(&format!("{flag}=")))
    }) {
        bail!("{flag} is swept by --param; do not give it as a flag too");
    }
    let registry = Registry::default();
    let chosen = registry.get(&args.method)?.name();
    let (names, mut warnings) = bench.method_args().resolve_methods(&registry, &[chosen]);
    let method = registry.get(names[0])?;
    // The swept flag must be one the method reads.
    let alone = Alone::try_parse_from(["spdnn", flag.as_str(), values[0].as_str()])
        .map_err(|e| anyhow::anyhow!("{}", e.render().to_string().trim()))?;
    if let Some(unused) = alone
        .flags
        .unused_warnings(&registry, &[method.name()])
        .first()
    {
        bail!("{}", unused.trim_start_matches("warning: "));
    }
    warnings.extend(
        bench
            .method_args()
            .unused_warnings(&registry, &[method.name()]),
    );
    for warning in warnings {
        eprintln!("{warning}");
    }
    // Every point's options, checked before anything runs.
    let (neurons, layers) = bench.shapes();
    let mut points: Vec<(String, OptionSet)> = Vec::new();
    for value in &values {
        let options = point(argv, &name, value)?.bench.method_args().options()?;
        for &n in neurons {
            method.check(&options, n)?;
        }
        points.push((value.clone(), options));
    }

    let log = progress::Log::stderr(bench.json());
    let mut cases = reuse::Cases::new(bench, &log);
    let mut notes = Vec::new();
    let mut reports: Vec<RunReport> = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    for &n in neurons {
        for &l in layers {
            for case in cases.of(bench, n, l, &mut notes)? {
                for (value, options) in &points {
                    let report = reuse::run(method, &case, bench, options, &log)?;
                    if !bench.json() {
                        eprintln!(
                            "{:<14} {:<9} {flag} {value:<6} {:>10.2} ms  matched {}",
                            report.method,
                            report.benchmark,
                            report.infer_ms,
                            report.matched_label()
                        );
                    }
                    reports.push(report);
                    labels.push(value.clone());
                }
            }
            spdnn_engine::forget_shared_preparations();
        }
    }

    let mut doc = ResultsDoc::now(reports, notes);
    doc.sweep = Some(Sweep {
        method: method.name().to_string(),
        param: name.clone(),
        values: values.clone(),
        points: labels,
    });
    let stem = format!(
        "{}-sweep-{}",
        doc.stem(),
        crate::results::sanitize(&format!("{}-{name}", method.name()))
    );
    let written = write(bench.out_dir(), &stem, &doc)?;
    if bench.json() {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!();
        print!("{}", table(&doc));
        for note in &doc.notes {
            println!("note: {note}");
        }
        let shown: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        println!("wrote {}", shown.join(", "));
    }
    Ok(if doc.reports.iter().all(|r| r.matched != Some(false)) {
        Outcome::Success
    } else {
        Outcome::Mismatch
    })
}

/// Writes `<stem>.json`, `<stem>.md` and the sweep's figure into `dir`.
fn write(dir: &std::path::Path, stem: &str, doc: &ResultsDoc) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let json = dir.join(format!("{stem}.json"));
    std::fs::write(&json, serde_json::to_string_pretty(doc)?)
        .with_context(|| format!("writing {}", json.display()))?;
    let md = dir.join(format!("{stem}.md"));
    let mut text = format!(
        "# spdnn sweep, {} on {}\n\nGPU: {}. CPU threads: {}.\n\n{}",
        doc.date,
        doc.host,
        doc.gpu.as_deref().unwrap_or("none"),
        doc.cpu_threads,
        table(doc)
    );
    for note in &doc.notes {
        text.push_str(&format!("\n- {note}"));
    }
    text.push('\n');
    std::fs::write(&md, text).with_context(|| format!("writing {}", md.display()))?;
    let mut paths = vec![json, md];
    let figures = figures::of_document(&doc.reports, doc.sweep.as_ref())?;
    paths.extend(figures::write(dir, stem, &figures)?);
    Ok(paths)
}

/// A Markdown table: one row per benchmark, one column per value, `ms (matched)`.
fn table(doc: &ResultsDoc) -> String {
    let Some(sweep) = &doc.sweep else {
        return String::new();
    };
    let mut cases: Vec<String> = Vec::new();
    for report in &doc.reports {
        let case = figures::Case::of(report).label();
        if !cases.contains(&case) {
            cases.push(case);
        }
    }
    let mut out = format!(
        "| {} (ms) | {} |\n|---|{}\n",
        sweep.method,
        sweep
            .values
            .iter()
            .map(|v| format!("--{} {v}", sweep.param))
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(sweep.values.len())
    );
    for case in &cases {
        let cells: Vec<String> = sweep
            .values
            .iter()
            .map(|value| {
                doc.reports
                    .iter()
                    .zip(&sweep.points)
                    .find(|(r, p)| *p == value && figures::Case::of(r).label() == *case)
                    .map(|(r, _)| match r.matched {
                        Some(false) => format!("{:.2} (NOT matched)", r.infer_ms),
                        _ => format!("{:.2}", r.infer_ms),
                    })
                    .unwrap_or_else(|| "–".into())
            })
            .collect();
        out.push_str(&format!("| {case} | {} |\n", cells.join(" | ")));
    }
    out
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

    fn argv(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn help_hides_the_bench_flag_it_refuses() {
        // `--methods` comes with the bench flags but a sweep runs one method (--method):
        // it is refused (below), so the help does not offer it.
        let mut command = SweepArgs::augment_args(clap::Command::new("sweep"));
        let help = command.render_long_help().to_string();
        assert!(help.contains("--method <METHOD>"), "{help}");
        assert!(!help.contains("--methods"), "{help}");
    }

    fn parse(args: &[&str]) -> SweepArgs {
        match crate::Cli::try_parse_from(argv(args)) {
            Ok(crate::Cli {
                command: crate::Command::Sweep(s),
            }) => s,
            _ => panic!("not a sweep: {args:?}"),
        }
    }

    #[test]
    fn params_name_a_method_flag_that_takes_values() {
        let (name, values) = parse_param("threshold=10, 20,30").unwrap();
        assert_eq!((name.as_str(), values.len()), ("threshold", 3));
        assert_eq!(parse_param("--epsilon=0.01").unwrap().0, "epsilon");
        for (bad, says) in [
            ("threshold", "NAME=V1"),
            ("threshold=10,,30", "empty"),
            ("glare=1", "not a method flag"),
            ("neurons=1024", "not a method flag"),
        ] {
            let error = parse_param(bad).unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
        let flags = sweepable();
        for flag in [
            "threshold",
            "samples",
            "delete-at",
            "glare-segment",
            "minibatch",
        ] {
            assert!(flags.contains(&flag.to_string()), "{flag}");
        }
    }

    #[test]
    fn each_value_is_parsed_as_its_flag() {
        let line = [
            "spdnn",
            "sweep",
            "--method",
            "snicit",
            "--param",
            "threshold=10,20",
            "--samples",
            "16",
        ];
        let p = point(&argv(&line), "threshold", "20").unwrap();
        let options = p.bench.method_args().options().unwrap();
        let snicit: spdnn_engine::spdnn_snicit::SnicitOptions = options.get();
        assert_eq!((snicit.threshold, snicit.samples), (20, 16));
        let error = error_of(point(&argv(&line), "threshold", "0"));
        assert!(
            error.contains("threshold=0") && error.contains("at least 1"),
            "{error}"
        );
    }

    #[test]
    fn mistakes_are_errors_before_anything_runs() {
        let cases: [(&[&str], &str); 4] = [
            (
                &[
                    "spdnn",
                    "sweep",
                    "--method",
                    "xy",
                    "--param",
                    "threshold=10",
                ],
                "no effect on xy",
            ),
            (
                &[
                    "spdnn",
                    "sweep",
                    "--method",
                    "snicit",
                    "--param",
                    "threshold=10",
                    "--threshold",
                    "5",
                ],
                "swept by --param",
            ),
            (
                &[
                    "spdnn",
                    "sweep",
                    "--method",
                    "snicit",
                    "--methods",
                    "xy",
                    "--param",
                    "threshold=1",
                ],
                "--method, not --methods",
            ),
            (
                &[
                    "spdnn",
                    "sweep",
                    "--method",
                    "nope",
                    "--param",
                    "threshold=1",
                ],
                "nope",
            ),
        ];
        for (line, says) in cases {
            let error = error_of(run(&parse(line), &argv(line)));
            assert!(error.contains(says), "{line:?}: {error}");
        }
    }

    #[test]
    fn the_table_has_a_row_per_benchmark_and_a_column_per_value() {
        let report = |ms: f64| -> RunReport {
            serde_json::from_value(crate::results::tests::report_json("snicit", 1024, 120, ms))
                .unwrap()
        };
        let mut doc = ResultsDoc::now(vec![report(7.0), report(5.9)], Vec::new());
        doc.reports[1].matched = Some(false);
        doc.sweep = Some(Sweep {
            method: "snicit".into(),
            param: "threshold".into(),
            values: vec!["10".into(), "30".into()],
            points: vec!["10".into(), "30".into()],
        });
        let text = table(&doc);
        assert!(
            text.contains("| snicit (ms) | --threshold 10 | --threshold 30 |"),
            "{text}"
        );
        assert!(
            text.contains("| 1024-120 | 7.00 | 5.90 (NOT matched) |"),
            "{text}"
        );
        let dir = tempfile::tempdir().unwrap();
        let paths = write(dir.path(), "s", &doc).unwrap();
        assert_eq!(paths.len(), 3, "{paths:?}");
        let back = crate::results::read(&paths[0]).unwrap();
        assert_eq!(back.sweep, doc.sweep);
    }
}
