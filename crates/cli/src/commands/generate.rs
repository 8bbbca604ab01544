//! `spdnn generate`: a challenge-shaped (RadiX-Net) or random unstructured network in the
//! official format.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use spdnn_formats::Csr;
use spdnn_sdgc::{cache, generator, tsv};

use crate::{Outcome, progress};

/// Arguments of `spdnn generate`.
#[derive(Args)]
pub struct GenerateArgs {
    /// N, of the form 16·2^k ≥ 32 (any N ≥ the fan-in with --random).
    #[arg(long)]
    neurons: usize,
    /// L, the number of layers.
    #[arg(long)]
    layers: usize,
    /// Seed of the per-cycle input permutations (with --random: of the inputs and weights).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// A random unstructured network instead of RadiX-Net: every output takes --fan-in
    /// distinct random inputs with weights uniform on ±3·√(2/fan-in).
    #[arg(long)]
    random: bool,
    /// Inputs per output neuron of a --random network.
    #[arg(long, requires = "random", default_value_t = generator::DEFAULT_FAN_IN)]
    fan_in: usize,
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
    if args.random {
        generator::check_random(args.neurons, args.fan_in)?;
    } else {
        generator::check_neurons(args.neurons)?;
    }
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
    let write = |index: usize, layer: Csr| -> Result<()> {
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
    };
    if args.random {
        generator::for_each_random_layer(args.neurons, args.layers, args.fan_in, args.seed, write)?;
    } else {
        generator::for_each_layer(args.neurons, args.layers, args.seed, write)?;
    }
    if let Some(writer) = writer {
        writer.finish()?;
    }
    bar.finish_and_clear();
    eprintln!(
        "wrote {} {} layers of N = {} (seed {}){}{}",
        args.layers,
        if args.random {
            format!("random (fan-in {})", args.fan_in)
        } else {
            "RadiX-Net".to_string()
        },
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
