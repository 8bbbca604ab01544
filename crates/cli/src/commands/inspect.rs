//! `spdnn inspect`: statistics of a network, an input, or a forward pass through both.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use spdnn_engine::data::{InputSpec, load_network};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_reference::{Activation, Inference, LayerStats, Options};
use spdnn_sdgc::{UPPER_BOUND, paths};

use crate::{Outcome, WeightsArgs, progress};

/// Arguments of `spdnn inspect`.
#[derive(Args)]
pub struct InspectArgs {
    #[command(flatten)]
    weights: WeightsArgs,
    /// N (needed for images alone and for generated networks).
    #[arg(long)]
    neurons: Option<usize>,
    /// Layers of the network to read.
    #[arg(long, default_value_t = 120)]
    layers: usize,
    /// Images file; with weights too, the forward pass's statistics are printed.
    #[arg(long)]
    images: Option<PathBuf>,
    /// Use the MNIST-recipe input.
    #[arg(long)]
    mnist: bool,
    /// Keep the first R rows of the input.
    #[arg(long)]
    rows: Option<usize>,
    /// Bias for the forward pass (default: the official one for N).
    #[arg(long, allow_hyphen_values = true)]
    bias: Option<f32>,
    /// Segment lengths for the all-upper-bound shares (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "32,256,1024")]
    segments: Vec<usize>,
    /// Write the table as CSV to this file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Weight statistics of one layer.
#[derive(Serialize)]
struct WeightStats {
    layer: usize,
    nnz: usize,
    min_row_entries: usize,
    max_row_entries: usize,
    min_col_entries: usize,
    max_col_entries: usize,
    min_value: f32,
    max_value: f32,
    distinct_values: usize,
}

/// Prints what was asked.
pub fn run(args: &InspectArgs) -> Result<Outcome> {
    let show = progress::enabled(args.json);
    let has_weights = args.weights.weights.is_some() || args.weights.generate_seed.is_some();
    let has_input = args.images.is_some() || args.mnist;
    if !has_weights && !has_input {
        anyhow::bail!("give --weights/--generate-seed, --images/--mnist, or both");
    }
    let network = if has_weights {
        let bar = progress::bar(show, args.layers as u64, "weights");
        let (network, _) =
            load_network(&args.weights.spec()?, args.neurons, args.layers, &mut |d| {
                bar.set_position(d as u64)
            })?;
        bar.finish_and_clear();
        Some(network)
    } else {
        None
    };
    let neurons = network.as_ref().map(|n| n.neurons()).or(args.neurons);
    let input = if has_input {
        let Some(neurons) = neurons else {
            anyhow::bail!("--images needs --neurons (or --weights)")
        };
        let spec = match &args.images {
            Some(path) => InputSpec::File(path.clone()),
            None => InputSpec::Mnist,
        };
        let input = super::load_input_shown(&spec, neurons, args.rows, &paths::data_dir(), show)?;
        Some(input)
    } else {
        None
    };

    let (json, table) = match (&network, &input) {
        (Some(network), None) => {
            let stats: Vec<WeightStats> = network
                .layers()
                .iter()
                .enumerate()
                .map(|(l, w)| weight_stats(l + 1, w))
                .collect();
            (serde_json::to_value(&stats)?, weight_table(&stats))
        }
        (None, Some(input)) => {
            let stats = spdnn_reference::input_stats(&input.features, UPPER_BOUND, &args.segments);
            (
                serde_json::to_value(&stats)?,
                activation_table(std::slice::from_ref(&stats)),
            )
        }
        (Some(network), Some(input)) => {
            let bias = match args
                .bias
                .or_else(|| spdnn_sdgc::benchmark::official_bias(network.neurons()))
            {
                Some(b) => b,
                None => anyhow::bail!(
                    "N = {} is not an official size: give --bias",
                    network.neurons()
                ),
            };
            let activation = Activation::new(bias, UPPER_BOUND)?;
            let options = Options {
                keep_output: false,
                collect_stats: true,
                segment_lengths: args.segments.clone(),
            };
            let spinner = progress::spinner(show, "forward pass");
            let out: Inference<f32> =
                spdnn_reference::infer(network.layers(), &input.features, activation, &options)?;
            spinner.finish_and_clear();
            let mut stats = vec![spdnn_reference::input_stats(
                &input.features,
                UPPER_BOUND,
                &args.segments,
            )];
            stats.extend(out.stats);
            (serde_json::to_value(&stats)?, activation_table(&stats))
        }
        (None, None) => unreachable!("checked above"),
    };
    if let Some(path) = &args.csv {
        let csv: String = table.iter().map(|row| row.join(",") + "\n").collect();
        std::fs::write(path, csv).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print!("{}", aligned(&table));
    }
    Ok(Outcome::Success)
}

fn weight_stats(layer: usize, w: &Csr) -> WeightStats {
    let row_lengths: Vec<usize> = w
        .row_offsets()
        .windows(2)
        .map(|p| (p[1] - p[0]) as usize)
        .collect();
    let mut col_lengths = vec![0usize; w.ncols()];
    for &c in w.col_indices() {
        col_lengths[c as usize] += 1;
    }
    let mut distinct: Vec<u32> = w.values().iter().map(|v| v.to_bits()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    WeightStats {
        layer,
        nnz: w.nnz(),
        min_row_entries: row_lengths.iter().copied().min().unwrap_or(0),
        max_row_entries: row_lengths.iter().copied().max().unwrap_or(0),
        min_col_entries: col_lengths.iter().copied().min().unwrap_or(0),
        max_col_entries: col_lengths.iter().copied().max().unwrap_or(0),
        min_value: w.values().iter().copied().fold(f32::INFINITY, f32::min),
        max_value: w.values().iter().copied().fold(f32::NEG_INFINITY, f32::max),
        distinct_values: distinct.len(),
    }
}

fn weight_table(stats: &[WeightStats]) -> Vec<Vec<String>> {
    let mut table = vec![
        [
            "layer",
            "nnz",
            "row min",
            "row max",
            "col min",
            "col max",
            "min value",
            "max value",
            "distinct",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for s in stats {
        table.push(vec![
            s.layer.to_string(),
            s.nnz.to_string(),
            s.min_row_entries.to_string(),
            s.max_row_entries.to_string(),
            s.min_col_entries.to_string(),
            s.max_col_entries.to_string(),
            format!("{}", s.min_value),
            format!("{}", s.max_value),
            s.distinct_values.to_string(),
        ]);
    }
    table
}

fn activation_table(stats: &[LayerStats]) -> Vec<Vec<String>> {
    let mut header: Vec<String> = [
        "layer",
        "rows",
        "active rows",
        "nonzeros",
        "density",
        "at bound",
    ]
    .map(String::from)
    .to_vec();
    if let Some(first) = stats.first() {
        header.extend(
            first
                .segments
                .iter()
                .map(|s| format!("all-bound seg{}", s.length)),
        );
    }
    let mut table = vec![header];
    for s in stats {
        let mut row = vec![
            s.layer.to_string(),
            s.rows.to_string(),
            s.active_rows.to_string(),
            s.nonzeros.to_string(),
            format!("{:.5}", s.density()),
            format!("{:.5}", s.upper_bound_share()),
        ];
        row.extend(
            s.segments
                .iter()
                .map(|seg| format!("{:.5}", share(seg.all_upper_bound, seg.total))),
        );
        table.push(row);
    }
    table
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

fn aligned(table: &[Vec<String>]) -> String {
    let columns = table.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            table
                .iter()
                .filter_map(|r| r.get(c))
                .map(String::len)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in table {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, &w)| format!("{cell:>w$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  "));
    }
    out
}
