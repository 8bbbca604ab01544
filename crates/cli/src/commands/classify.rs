//! `spdnn classify`: a trained network (a bias per neuron) over the 10000 MNIST test
//! images with one or more methods: top-1 accuracy beside the categories and times, and
//! whether each method's predictions are the CPU reference's.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde::Serialize;
use spdnn_engine::{Problem, Registry, RunConfig, SharedWork};
use spdnn_formats::SparseMatrix;
use spdnn_sdgc::{Input, InputOrigin, Network, paths};

use crate::method_args::MethodArgs;
use crate::{Outcome, PrecisionArg};

/// The method `classify` runs without `--methods`.
const AUTO: &str = "auto";

/// `--methods all`: the comparison `spdnn bench` runs by default, then [`AUTO`].
const ALL_METHODS: &str = "all";

/// Arguments of `spdnn classify`.
#[derive(Args)]
pub struct ClassifyArgs {
    /// The network: a `.safetensors` file (docs/real-networks.md names its tensors), or an
    /// official TSV folder / neuron{N}.tar.gz with --biases.
    #[arg(long)]
    network: PathBuf,
    /// Bias file of a TSV network: `layer<TAB>neuron<TAB>bias` lines, 1-based.
    #[arg(long)]
    biases: Option<PathBuf>,
    /// N of a TSV network (from its file names when omitted).
    #[arg(long)]
    neurons: Option<usize>,
    /// L of a TSV network.
    #[arg(long)]
    layers: Option<usize>,
    /// Upper bound of the activations (default: the file's `upper_bound`, else 32).
    #[arg(long, allow_hyphen_values = true)]
    upper_bound: Option<f32>,
    /// Score on the 10000 MNIST test images (after `spdnn fetch --mnist`).
    #[arg(long, required = true)]
    mnist_test: bool,
    /// Keep only the first R images.
    #[arg(long)]
    rows: Option<usize>,
    /// Methods to run, comma-separated, each compared with the CPU reference (the oracle,
    /// which runs first in any case) [default: `auto`, which picks the method for the network
    /// and says why]. `all`: every method this machine can run, as `spdnn bench` chooses them
    /// (the CPU reference and, with a GPU, every GPU method but the `+` variants, `dense`, the
    /// cuBLAS yardstick, included), then `auto`.
    #[arg(long, value_delimiter = ',')]
    methods: Vec<String>,
    /// Untimed runs before the timed ones.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Timed runs (the median is reported).
    #[arg(long, default_value_t = 3)]
    repetitions: usize,
    /// Precision of the CPU reference.
    #[arg(long, value_enum, default_value_t = PrecisionArg::F32)]
    precision: PrecisionArg,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    method_options: MethodArgs,
}

/// One method's result.
#[derive(Debug, Serialize)]
struct Row {
    method: String,
    /// Median timed-region time, ms.
    infer_ms: f64,
    total_ms: f64,
    /// Top-1 accuracy on the labelled images.
    accuracy: f64,
    /// Accuracy minus the reference's (0 for exact methods).
    accuracy_loss: f64,
    categories: usize,
    /// Whether the categories equal the reference's.
    categories_match: bool,
    /// Rows whose prediction differs from the reference's.
    predictions_differ: usize,
    /// Of those, rows where the reference's two best scores are within float tolerance
    /// (a tie the summation order may break either way).
    near_ties: usize,
    /// The run's error, when it failed (a method that refuses the network says why).
    error: Option<String>,
    /// What `auto` chose and why (`auto` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    choice: Option<String>,
}

#[derive(Serialize)]
struct Report {
    network: String,
    widths: Vec<usize>,
    nnz: usize,
    upper_bound: f32,
    rows: usize,
    reference_accuracy: f64,
    results: Vec<Row>,
}

/// Loads the network with its biases and the bound to run it with.
fn load(args: &ClassifyArgs) -> Result<(Network, f32)> {
    let is_safetensors = args
        .network
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("safetensors"));
    let (network, file_bound) = if is_safetensors {
        if args.biases.is_some() {
            bail!("--biases is for TSV networks; a .safetensors file carries its biases");
        }
        let trained = spdnn_sdgc::trained::read_safetensors(&args.network)?;
        (trained.network, trained.upper_bound)
    } else {
        let biases = args
            .biases
            .as_ref()
            .context("a TSV network needs --biases FILE (a .safetensors file carries its own)")?;
        let layers = args.layers.context("a TSV network needs --layers L")?;
        let network =
            spdnn_sdgc::tsv::read_network(&args.network, args.neurons, layers, &mut |_| {})?;
        (crate::biases::with_bias_file(network, biases)?, None)
    };
    Ok((
        network,
        crate::biases::upper_bound(args.upper_bound, file_bound)?,
    ))
}

/// Runs, compares, prints.
pub fn run(args: &ClassifyArgs) -> Result<Outcome> {
    let (network, upper_bound) = load(args)?;
    let set = spdnn_sdgc::images::load_mnist_test(&paths::data_dir())?;
    let mut features = set.features()?;
    let mut labels = set.labels.clone();
    if let Some(rows) = args.rows {
        let rows = rows.clamp(1, features.nrows());
        features = features.rows_slice(0..rows);
        labels.truncate(rows);
    }
    if features.ncols() != network.neurons() {
        bail!(
            "the network takes {} inputs, the MNIST images have {} pixels",
            network.neurons(),
            features.ncols()
        );
    }
    let input = Input {
        features,
        origin: InputOrigin::File {
            path: "MNIST t10k-images-idx3-ubyte".into(),
        },
    };
    let biases = network.biases().context("the network has no biases")?;

    // The oracle, with its scores for the tie analysis.
    let options = spdnn_reference::Options {
        keep_output: true,
        collect_stats: false,
        ..spdnn_reference::Options::default()
    };
    let oracle: spdnn_reference::Inference<f32> = spdnn_reference::infer_with_biases(
        network.layers(),
        &input.features,
        biases,
        upper_bound,
        &options,
    )?;
    let scores = oracle.output.context("the reference kept no output")?;
    let truth = spdnn_reference::predictions(scores.view());
    let reference_accuracy =
        spdnn_reference::correct(&truth, &labels) as f64 / labels.len().max(1) as f64;
    let tolerance = 1e-5 * upper_bound;
    let near_tie = |row: usize| {
        let mut values: Vec<f32> = scores.row(row).to_vec();
        values.sort_by(|a, b| b.total_cmp(a));
        values.len() >= 2 && values[0] - values[1] <= tolerance
    };

    let registry = Registry::default();
    let names: Vec<&str> = if args.methods.is_empty() {
        vec![AUTO]
    } else if args.methods.len() == 1 && args.methods[0].trim() == ALL_METHODS {
        let (mut names, left_out) = super::default_methods(&registry);
        if !left_out.is_empty() {
            eprintln!(
                "note: no CUDA GPU here, so `--methods {ALL_METHODS}` leaves out {}",
                left_out.join(", ")
            );
        }
        names.push(AUTO);
        names
    } else {
        args.methods.iter().map(|n| n.trim()).collect()
    };
    let method_options = args.method_options.options()?;
    let problem = Problem {
        network: &network,
        input: &input,
        bias: -1.0,
        upper_bound,
    };
    let mut rows = Vec::new();
    for name in names {
        let method = registry.get(name)?;
        let config = RunConfig {
            warmup: args.warmup,
            repetitions: args.repetitions.max(1),
            precision: args.precision.into(),
            options: method_options.clone(),
            shared: SharedWork::default(),
        };
        let outcome = method
            .check(&method_options, network.neurons())
            .and_then(|()| method.run(&problem, &config));
        let row = match outcome {
            Ok(output) => {
                let predictions = output
                    .details
                    .predictions
                    .clone()
                    .context("the method returned no predictions")?;
                let differ: Vec<usize> = (0..truth.len())
                    .filter(|&r| predictions.get(r) != Some(&truth[r]))
                    .collect();
                let accuracy = spdnn_reference::correct(&predictions, &labels) as f64
                    / labels.len().max(1) as f64;
                let mut times = output.infer_ms.clone();
                times.sort_by(f64::total_cmp);
                Row {
                    method: method.name().to_string(),
                    infer_ms: times.get(times.len() / 2).copied().unwrap_or(0.0),
                    total_ms: output.total_ms,
                    accuracy,
                    accuracy_loss: reference_accuracy - accuracy,
                    categories: output.categories.len(),
                    categories_match: output.categories == oracle.categories,
                    predictions_differ: differ.len(),
                    near_ties: differ.iter().filter(|&&r| near_tie(r)).count(),
                    error: None,
                    choice: super::auto_choice(&output.details.found),
                }
            }
            Err(e) => Row {
                method: method.name().to_string(),
                infer_ms: 0.0,
                total_ms: 0.0,
                accuracy: 0.0,
                accuracy_loss: 0.0,
                categories: 0,
                categories_match: false,
                predictions_differ: 0,
                near_ties: 0,
                error: Some(format!("{e:#}")),
                choice: None,
            },
        };
        rows.push(row);
    }

    let widths: Vec<usize> = std::iter::once(network.neurons())
        .chain(
            network
                .layers()
                .iter()
                .map(spdnn_formats::SparseMatrix::ncols),
        )
        .collect();
    let report = Report {
        network: args.network.display().to_string(),
        widths,
        nnz: network.nnz(),
        upper_bound,
        rows: labels.len(),
        reference_accuracy,
        results: rows,
    };
    let wrong = report
        .results
        .iter()
        .any(|r| r.error.is_none() && (!r.categories_match || r.predictions_differ > r.near_ties));
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report);
    }
    // A method that did not run (no GPU, a network it refuses, a failure), named or of the
    // default run, makes the run an error after the table, as in `bench`.
    let failed: Vec<&str> = report
        .results
        .iter()
        .filter(|r| r.error.is_some())
        .map(|r| r.method.as_str())
        .collect();
    if !failed.is_empty() {
        anyhow::bail!(
            "{} of {} methods did not run: {} (the reasons are in the table)",
            failed.len(),
            report.results.len(),
            failed.join(", ")
        );
    }
    Ok(if wrong {
        Outcome::Mismatch
    } else {
        Outcome::Success
    })
}

fn print_text(report: &Report) {
    let layers = report.widths.len() - 1;
    println!(
        "network     {} ({} layers, widths {}, {} weights)",
        report.network,
        layers,
        report
            .widths
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("-"),
        report.nnz
    );
    println!(
        "input       {} MNIST test images, bound {}",
        report.rows, report.upper_bound
    );
    println!(
        "reference   top-1 accuracy {:.2}%",
        100.0 * report.reference_accuracy
    );
    println!(
        "{:<16} {:>10} {:>10} {:>9} {:>10} {:>11} {:>18}",
        "method",
        "infer ms",
        "total ms",
        "accuracy",
        "categories",
        "= reference",
        "predictions differ"
    );
    for r in &report.results {
        match &r.error {
            Some(e) => println!("{:<16} refused: {e}", r.method),
            None => println!(
                "{:<16} {:>10.3} {:>10.1} {:>8.2}% {:>10} {:>11} {:>18}",
                r.method,
                r.infer_ms,
                r.total_ms,
                100.0 * r.accuracy,
                r.categories,
                if r.categories_match { "yes" } else { "NO" },
                if r.predictions_differ == 0 {
                    "0".to_string()
                } else {
                    format!("{} ({} near ties)", r.predictions_differ, r.near_ties)
                }
            ),
        }
        if let Some(choice) = &r.choice {
            println!("{:<16} {choice}", "");
        }
    }
}
