//! `spdnn-train`: trains Table 4's MNIST networks (run through `cargo xtask train-nets`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Parser;
use spdnn_train::{NetSpec, train};

#[derive(Parser)]
#[command(
    name = "spdnn-train",
    about = "Train the SNICIT paper's sparse MNIST networks (Table 4)"
)]
struct Args {
    /// Networks to train (A 128-18, B 256-18, C 256-12).
    #[arg(long, value_delimiter = ',', default_value = "A,B,C")]
    nets: Vec<String>,
    /// Passes over the 60000 training images.
    #[arg(long, default_value_t = 10)]
    epochs: usize,
    /// Seed of masks, initial weights and image order.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Data folder (MNIST under mnist/, fetched by `spdnn fetch --mnist`).
    #[arg(long, default_value = "data")]
    data: PathBuf,
    /// Where the networks go (default: DATA/nets).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let specs = args
        .nets
        .iter()
        .map(|n| NetSpec::table4(n.trim(), args.epochs, args.seed))
        .collect::<Result<Vec<_>>>()?;
    let train_set = spdnn_sdgc::images::load_mnist_train_labelled(&args.data)?;
    let test_set = spdnn_sdgc::images::load_mnist_test(&args.data)?;
    let out = args.out.unwrap_or_else(|| args.data.join("nets"));
    for spec in &specs {
        let report = train(spec, &train_set, &test_set, &out, |line| {
            eprintln!("{line}")
        })?;
        println!(
            "net {} ({}-{}): {:.1} s, test accuracy {:.2}% -> {}",
            spec.name,
            spec.neurons,
            spec.sparse_layers,
            report.train_seconds,
            100.0 * report.test_accuracy,
            out.join(format!("{}.safetensors", spec.name)).display()
        );
    }
    Ok(())
}
