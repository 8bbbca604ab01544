//! `spdnn bench`: every available method on the chosen benchmarks; a table, JSON and Markdown.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use spdnn_engine::data::{InputSpec, WeightsSpec, load_network, load_truth, official_files};
use spdnn_engine::glare;
use spdnn_engine::report::{markdown_table, terminal_table};
use spdnn_engine::run::{Precision, execute};
use spdnn_engine::{MethodOptions, Problem, Registry, RunConfig, RunReport, Truth};
use spdnn_reference::{Activation, Inference, Options};
use spdnn_sdgc::benchmark::{Benchmark, OFFICIAL_ROWS};
use spdnn_sdgc::{Input, InputOrigin, Network, paths};

use crate::method_args::MethodArgs;
use crate::{Outcome, progress};

/// Work (rows·N·L) above which the CPU runs only a slice of the rows: 4× the 1024-120 benchmark.
const CPU_WORK_LIMIT: u64 = 4 * 60_000 * 1024 * 120;

/// Arguments of `spdnn bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// N values (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1024")]
    neurons: Vec<usize>,
    /// L values (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "120")]
    layers: Vec<usize>,
    /// Input rows.
    #[arg(long, default_value_t = OFFICIAL_ROWS)]
    rows: usize,
    /// Methods to run (comma-separated; default: every method this machine can run, the
    /// +glare variants only with --glare, which swaps each method for its variant).
    #[arg(long, value_delimiter = ',')]
    methods: Vec<String>,
    /// Timed repetitions per GPU method (the median is reported).
    #[arg(long, default_value_t = 5)]
    repetitions: usize,
    /// Untimed warm-up runs per GPU method.
    #[arg(long, default_value_t = 2)]
    warmup: usize,
    /// Timed repetitions of the CPU reference.
    #[arg(long, default_value_t = 1)]
    cpu_repetitions: usize,
    /// Seed of the generated networks.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Skip the official N-L networks even when their files are at hand.
    #[arg(long)]
    no_official: bool,
    /// Rows the CPU runs (and checks) at most; default: all when cheap, else a slice.
    #[arg(long)]
    cpu_rows: Option<usize>,
    /// Folder for <date>-<host>.json and .md.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Print the JSON document instead of the table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    method_options: MethodArgs,
}

/// The results document written to `results/`.
#[derive(Serialize)]
struct ResultsFile {
    date: String,
    host: String,
    gpu: Option<String>,
    cpu_threads: usize,
    reports: Vec<RunReport>,
    notes: Vec<String>,
}

/// One benchmark to run: its network, input and truth.
struct Case {
    benchmark: Benchmark,
    network: Network,
    input: Input,
    truth: Truth,
}

/// Runs every case on every chosen method.
pub fn run(args: &BenchArgs) -> Result<Outcome> {
    let registry = Registry::default();
    let named: Vec<&'static str> = if args.methods.is_empty() {
        registry
            .all()
            .filter(|m| m.in_default_run())
            .filter(|m| !m.needs_gpu() || spdnn_engine::gpu_available())
            .map(|m| m.name())
            .collect()
    } else {
        args.methods
            .iter()
            .map(|name| registry.get(name).map(|m| m.name()))
            .collect::<Result<_>>()?
    };
    let (names, mut warnings) = args.method_options.resolve_methods(&registry, &named);
    let methods: Vec<&dyn spdnn_engine::Method> = names
        .iter()
        .map(|name| registry.get(name))
        .collect::<Result<_>>()?;
    let method_options = args.method_options.options()?;
    warnings.extend(args.method_options.unused_warnings(&names));
    for warning in warnings {
        eprintln!("{warning}");
    }
    // A hand-given GLARE segment is checked for every N before anything runs.
    for &neurons in &args.neurons {
        for name in &names {
            glare::check_method(name, neurons, &method_options)?;
        }
    }
    let show = progress::enabled(args.json);
    let data_dir = paths::data_dir();
    let mut notes = Vec::new();
    let mut reports = Vec::new();

    for &neurons in &args.neurons {
        for &layers in &args.layers {
            let mut cases = vec![generated_case(
                args, neurons, layers, &data_dir, show, &mut notes,
            )?];
            if !args.no_official
                && let Some(case) =
                    official_case(args, neurons, layers, &data_dir, show, &mut notes)?
            {
                cases.push(case);
            }
            for case in &cases {
                let profile = glare_profile(case, &names, &method_options, show)?;
                for &method in &methods {
                    let report = run_case(method, case, args, &method_options, &profile, show)
                        .with_context(|| {
                            format!("{} on {}", method.name(), case.benchmark.name())
                        })?;
                    if !args.json {
                        eprintln!(
                            "{:<14} {:<9} {:>10.2} ms  matched {}",
                            report.method,
                            report.benchmark,
                            report.infer_ms,
                            report.matched_label()
                        );
                        if let Some(glare) = report.glare() {
                            eprintln!("{:<14} {}", "", glare.text());
                        }
                    }
                    reports.push(report);
                }
            }
        }
    }

    let results = ResultsFile {
        date: chrono::Local::now().format("%Y-%m-%d").to_string(),
        host: host_name(),
        gpu: spdnn_engine::gpu_name(),
        cpu_threads: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        reports,
        notes,
    };
    let (json_path, md_path) = write_results(&args.out, &results)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        println!();
        print!("{}", terminal_table(&results.reports));
        for line in glare_lines(&results.reports) {
            println!("{line}");
        }
        for note in &results.notes {
            println!("note: {note}");
        }
        println!("wrote {} and {}", json_path.display(), md_path.display());
    }
    let all_matched = results.reports.iter().all(|r| r.matched != Some(false));
    Ok(if all_matched {
        Outcome::Success
    } else {
        Outcome::Mismatch
    })
}

/// Rows the CPU may run for an N-L benchmark.
fn cpu_rows(args: &BenchArgs, neurons: usize, layers: usize) -> usize {
    let affordable = (CPU_WORK_LIMIT / (neurons as u64 * layers as u64)).max(1) as usize;
    args.cpu_rows.unwrap_or(affordable).min(args.rows)
}

/// The generated N-L network with the MNIST (or synthetic) input; truth from the CPU in f64.
fn generated_case(
    args: &BenchArgs,
    neurons: usize,
    layers: usize,
    data_dir: &Path,
    show: bool,
    notes: &mut Vec<String>,
) -> Result<Case> {
    let spinner = progress::spinner(show, &format!("generating {neurons}-{layers}"));
    let (network, weights) = load_network(
        &WeightsSpec::Generated { seed: args.seed },
        Some(neurons),
        layers,
        &mut |_| {},
    )?;
    spinner.finish_and_clear();
    let input = super::load_input_shown(
        &InputSpec::MnistOrSynthetic,
        neurons,
        Some(args.rows),
        data_dir,
        show,
    )?;
    if let InputOrigin::Synthetic { seed } = input.origin {
        notes.push(format!(
            "{neurons}-{layers}: MNIST not fetched, SYNTHETIC input (seed {seed}); run `spdnn fetch --mnist`"
        ));
    }
    let benchmark = Benchmark::new(
        neurons,
        layers,
        input.rows(),
        None,
        weights,
        input.origin.clone(),
    )?;
    let check_rows = cpu_rows(args, neurons, layers);
    let spinner = progress::spinner(show, &format!("truth {neurons}-{layers}"));
    let truth = reference_truth(&network, &input, &benchmark, check_rows)?;
    spinner.finish_and_clear();
    if check_rows < input.rows() {
        notes.push(format!(
            "{neurons}-{layers}: truth from the CPU reference (f64) on the first {check_rows} rows only"
        ));
    }
    Ok(Case {
        benchmark,
        network,
        input,
        truth,
    })
}

/// The official N-L network with its official truth, when the files and MNIST are at hand.
fn official_case(
    args: &BenchArgs,
    neurons: usize,
    layers: usize,
    data_dir: &Path,
    show: bool,
    notes: &mut Vec<String>,
) -> Result<Option<Case>> {
    let root = std::env::current_dir().context("reading the current directory")?;
    let Some((weights_path, truth_path)) = official_files(&root, neurons, layers) else {
        return Ok(None);
    };
    if spdnn_sdgc::images::load_mnist_train(data_dir).is_err() {
        notes.push(format!(
            "official {neurons}-{layers} skipped: its truth needs the MNIST input (`spdnn fetch --mnist`)"
        ));
        return Ok(None);
    }
    let bar = progress::bar(show, layers as u64, "official net");
    let (network, weights) = load_network(
        &WeightsSpec::Path(weights_path),
        Some(neurons),
        layers,
        &mut |done| bar.set_position(done as u64),
    )?;
    bar.finish_and_clear();
    let input =
        super::load_input_shown(&InputSpec::Mnist, neurons, Some(args.rows), data_dir, show)?;
    let benchmark = Benchmark::new(
        neurons,
        layers,
        input.rows(),
        None,
        weights,
        input.origin.clone(),
    )?;
    let truth = load_truth(&truth_path, input.rows())?;
    Ok(Some(Case {
        benchmark,
        network,
        input,
        truth,
    }))
}

/// Categories of the first `rows` rows by the CPU reference in f64.
fn reference_truth(
    network: &Network,
    input: &Input,
    benchmark: &Benchmark,
    rows: usize,
) -> Result<Truth> {
    let activation = Activation::new(benchmark.bias, benchmark.upper_bound)?;
    let options = Options {
        keep_output: false,
        collect_stats: false,
        ..Options::default()
    };
    let head = input.head(rows);
    let out: Inference<f64> =
        spdnn_reference::infer(network.layers(), &head.features, activation, &options)?;
    Ok(Truth {
        categories: out.categories,
        source: "cpu reference f64".into(),
        rows,
    })
}

/// The GLARE access model's statistics of a case, computed once for all the `+glare`
/// methods that will run on it (none when no model runs).
fn glare_profile(
    case: &Case,
    names: &[&str],
    method_options: &MethodOptions,
    show: bool,
) -> Result<Option<Arc<glare::Profile>>> {
    if !glare::needs_profile(names, &method_options.glare) {
        return Ok(None);
    }
    let problem = Problem {
        network: &case.network,
        input: &case.input,
        bias: case.benchmark.bias,
        upper_bound: case.benchmark.upper_bound,
    };
    let spinner = progress::spinner(show, &format!("GLARE model {}", case.benchmark.name()));
    let profile = glare::shared_profile(names, &problem, &method_options.glare)?;
    spinner.finish_and_clear();
    Ok(profile)
}

/// One line per GLARE run: its method, benchmark, segment and access reduction.
fn glare_lines(reports: &[RunReport]) -> Vec<String> {
    reports
        .iter()
        .filter_map(|r| {
            let glare = r.glare()?;
            Some(format!(
                "glare: {} on {}: {}",
                r.method,
                r.benchmark,
                glare.text()
            ))
        })
        .collect()
}

/// Runs one method on one case (the CPU on its affordable slice of rows).
fn run_case(
    method: &dyn spdnn_engine::Method,
    case: &Case,
    args: &BenchArgs,
    method_options: &MethodOptions,
    glare_profile: &Option<Arc<glare::Profile>>,
    show: bool,
) -> Result<RunReport> {
    let spinner = progress::spinner(
        show,
        &format!("{} {}", method.name(), case.benchmark.name()),
    );
    let (input, config) = if method.needs_gpu() {
        let config = RunConfig {
            warmup: args.warmup,
            repetitions: args.repetitions.max(1),
            precision: Precision::F32,
            methods: method_options.clone(),
            glare_profile: glare_profile.clone(),
        };
        (case.input.clone(), config)
    } else {
        let rows = cpu_rows(args, case.benchmark.neurons, case.benchmark.layers);
        let config = RunConfig {
            warmup: 0,
            repetitions: args.cpu_repetitions.max(1),
            precision: Precision::F32,
            methods: method_options.clone(),
            glare_profile: None,
        };
        (case.input.head(rows), config)
    };
    let benchmark = Benchmark {
        rows: input.rows(),
        ..case.benchmark.clone()
    };
    let problem = Problem {
        network: &case.network,
        input: &input,
        bias: benchmark.bias,
        upper_bound: benchmark.upper_bound,
    };
    let execution = execute(method, &benchmark, &problem, &config, Some(&case.truth))?;
    spinner.finish_and_clear();
    Ok(execution.report)
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".into())
}

fn write_results(dir: &Path, results: &ResultsFile) -> Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let stem = format!("{}-{}", results.date, sanitize(&results.host));
    let json_path = dir.join(format!("{stem}.json"));
    let md_path = dir.join(format!("{stem}.md"));
    std::fs::write(&json_path, serde_json::to_string_pretty(results)?)
        .with_context(|| format!("writing {}", json_path.display()))?;
    let mut md = format!(
        "# spdnn bench, {} on {}\n\nGPU: {}. CPU threads: {}.\n\n",
        results.date,
        results.host,
        results.gpu.as_deref().unwrap_or("none"),
        results.cpu_threads
    );
    md.push_str(&markdown_table(&results.reports));
    for line in glare_lines(&results.reports) {
        md.push_str(&format!("\n- {line}"));
    }
    for note in &results.notes {
        md.push_str(&format!("\n- {note}"));
    }
    md.push('\n');
    std::fs::write(&md_path, md).with_context(|| format!("writing {}", md_path.display()))?;
    Ok((json_path, md_path))
}

fn sanitize(name: &str) -> String {
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
