//! `spdnn images`: the input in the official images format.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use spdnn_engine::data::InputSpec;
use spdnn_sdgc::{InputOrigin, cache, paths, tsv};

use crate::{Outcome, progress};

/// Arguments of `spdnn images`.
#[derive(Args)]
pub struct ImagesArgs {
    /// N, the number of features (a square: 1024, 4096, 16384, 65536 …).
    #[arg(long)]
    neurons: usize,
    /// Output file (official TSV; .gz compresses).
    #[arg(long)]
    out: PathBuf,
    /// Keep only the first R rows.
    #[arg(long)]
    rows: Option<usize>,
    /// Seeded synthetic images (~10% density) instead of MNIST.
    #[arg(long)]
    synthetic: bool,
    /// Seed for --synthetic.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also write the binary input cache to this file.
    #[arg(long)]
    cache: Option<PathBuf>,
}

/// Makes the input and writes it.
pub fn run(args: &ImagesArgs) -> Result<Outcome> {
    let spec = if args.synthetic {
        InputSpec::Synthetic { seed: args.seed }
    } else {
        InputSpec::Mnist
    };
    let show = progress::enabled(false);
    let input = super::load_input_shown(&spec, args.neurons, args.rows, &paths::data_dir(), show)?;
    tsv::write_images(&args.out, &input.features)?;
    if let Some(path) = &args.cache {
        cache::write_input(path, &input)?;
    }
    let label = match input.origin {
        InputOrigin::Synthetic { seed } => format!("SYNTHETIC (seed {seed})"),
        _ => "MNIST recipe".to_string(),
    };
    eprintln!(
        "wrote {} rows × {} features, {} nonzeros, {label}, to {}",
        input.rows(),
        args.neurons,
        input.features.values().len(),
        args.out.display()
    );
    Ok(Outcome::Success)
}
