//! `spdnn-train`: trains Table 4's MNIST networks (run through `cargo xtask train-nets`).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, ValueEnum};
use spdnn_train::{NetSpec, Schedule, train};

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
    /// Adam's peak learning rate (default: the recipe's, 10⁻³).
    #[arg(long)]
    learning_rate: Option<f64>,
    /// How the learning rate moves (default: the recipe's, cosine).
    #[arg(long, value_enum)]
    schedule: Option<ScheduleArg>,
    /// Share of the steps spent warming up with --schedule cosine (default 0.05).
    #[arg(long)]
    warmup: Option<f64>,
    /// Scale the gradient down to this global L2 norm when larger (default: no clipping).
    #[arg(long)]
    clip_norm: Option<f64>,
    /// Data folder (MNIST under mnist/, fetched by `spdnn fetch --mnist`).
    #[arg(long, default_value = "data")]
    data: PathBuf,
    /// Where the networks go (default: DATA/nets).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// `--schedule`.
#[derive(Clone, Copy, ValueEnum)]
enum ScheduleArg {
    /// The peak rate throughout.
    Constant,
    /// A linear warm-up (--warmup), then a cosine decay towards 0.
    Cosine,
}

impl Args {
    /// Table 4's net `name` with the recipe's defaults and this command line's changes.
    fn spec(&self, name: &str) -> Result<NetSpec> {
        let mut spec = NetSpec::table4(name, self.epochs, self.seed)?;
        if let Some(rate) = self.learning_rate {
            spec.learning_rate = rate;
        }
        let default_warmup = match spec.schedule {
            Schedule::WarmupCosine { warmup } => warmup,
            Schedule::Constant => 0.05,
        };
        spec.schedule = match (self.schedule, self.warmup) {
            (Some(ScheduleArg::Constant), Some(_)) => {
                anyhow::bail!("--warmup goes with --schedule cosine")
            }
            (Some(ScheduleArg::Constant), None) => Schedule::Constant,
            (Some(ScheduleArg::Cosine), warmup) => Schedule::WarmupCosine {
                warmup: warmup.unwrap_or(default_warmup),
            },
            (None, Some(warmup)) => Schedule::WarmupCosine { warmup },
            (None, None) => spec.schedule,
        };
        if self.clip_norm.is_some() {
            spec.clip_norm = self.clip_norm;
        }
        spec.validate()?;
        Ok(spec)
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let specs = args
        .nets
        .iter()
        .map(|n| args.spec(n.trim()))
        .collect::<Result<Vec<_>>>()?;
    let train_set = spdnn_sdgc::images::load_mnist_train_labelled(&args.data)?;
    let test_set = spdnn_sdgc::images::load_mnist_test(&args.data)?;
    let out = args.out.clone().unwrap_or_else(|| args.data.join("nets"));
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
