//! `spdnn generate`: a challenge-shaped network in the official format.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use spdnn_sdgc::{cache, generator, tsv};

use crate::{Outcome, progress};

/// Arguments of `spdnn generate`.
#[derive(Args)]
pub struct GenerateArgs {
    /// N, of the form 16·2^k ≥ 32.
    #[arg(long)]
    neurons: usize,
    /// L, the number of layers.
    #[arg(long)]
    layers: usize,
    /// Seed of the per-cycle input permutations.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Folder for n{N}-l{i}.tsv (created when missing).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also (or only) write the binary cache to this file.
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Write .tsv.gz files instead of .tsv.
    #[arg(long)]
    gzip: bool,
}

/// Streams the generated layers to the folder and/or the cache.
pub fn run(args: &GenerateArgs) -> Result<Outcome> {
    generator::check_neurons(args.neurons)?;
    if args.out.is_none() && args.cache.is_none() {
        anyhow::bail!("give --out DIR, --cache FILE, or both");
    }
    if args.layers == 0 {
        anyhow::bail!("--layers must be at least 1");
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut writer = match &args.cache {
        Some(path) => Some(cache::NetworkCacheWriter::create(
            path,
            args.neurons,
            args.layers,
        )?),
        None => None,
    };
    let bar = progress::bar(progress::enabled(false), args.layers as u64, "generating");
    generator::for_each_layer(
        args.neurons,
        args.layers,
        args.seed,
        |index, layer| -> Result<()> {
            if let Some(dir) = &args.out {
                let mut name = tsv::layer_file_name(args.neurons, index);
                if args.gzip {
                    name.push_str(".gz");
                }
                tsv::write_layer(&dir.join(name), &layer)?;
            }
            if let Some(writer) = writer.as_mut() {
                writer.push_layer(&layer)?;
            }
            bar.inc(1);
            Ok(())
        },
    )?;
    if let Some(writer) = writer {
        writer.finish()?;
    }
    bar.finish_and_clear();
    eprintln!(
        "wrote {} layers of N = {} (seed {}){}{}",
        args.layers,
        args.neurons,
        args.seed,
        args.out
            .as_ref()
            .map(|d| format!(" to {}", d.display()))
            .unwrap_or_default(),
        args.cache
            .as_ref()
            .map(|c| format!(", cache {}", c.display()))
            .unwrap_or_default(),
    );
    Ok(Outcome::Success)
}
