//! Loading networks, inputs and truths from what the user named.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use spdnn_formats::SparseMatrix;
use spdnn_sdgc::benchmark::WeightsOrigin;
use spdnn_sdgc::{Input, InputOrigin, Network, cache, generator, images, tsv};

use crate::run::Truth;

/// Where a network comes from.
#[derive(Debug, Clone)]
pub enum WeightsSpec {
    /// A folder of TSV files, the official `neuron{N}.tar.gz`, or a binary cache.
    Path(PathBuf),
    /// The RadiX-Net generator with this seed.
    Generated { seed: u64 },
    /// The random unstructured generator with this fan-in and seed.
    Random { seed: u64, fan_in: usize },
}

/// Loads `layers` layers of an `neurons`-neuron network.
///
/// `progress(done)` is called after each layer read from text files.
pub fn load_network(
    spec: &WeightsSpec,
    neurons: Option<usize>,
    layers: usize,
    progress: &mut dyn FnMut(usize),
) -> Result<(Network, WeightsOrigin)> {
    match spec {
        WeightsSpec::Generated { seed } => {
            let Some(neurons) = neurons else {
                bail!("a generated network needs --neurons")
            };
            let network = generator::network(neurons, layers, *seed)?;
            progress(layers);
            Ok((network, WeightsOrigin::Generated { seed: *seed }))
        }
        WeightsSpec::Random { seed, fan_in } => {
            let Some(neurons) = neurons else {
                bail!("a random network needs --neurons")
            };
            let network = generator::random_network(neurons, layers, *fan_in, *seed)?;
            progress(layers);
            Ok((
                network,
                WeightsOrigin::Random {
                    seed: *seed,
                    fan_in: *fan_in,
                },
            ))
        }
        WeightsSpec::Path(path) => {
            let network = tsv::read_network(path, neurons, layers, progress)
                .with_context(|| format!("reading the network {}", path.display()))?;
            if let Some(n) = neurons
                && network.neurons() != n
            {
                bail!(
                    "{} has N = {}, but --neurons {n} was given",
                    path.display(),
                    network.neurons()
                );
            }
            Ok((network, weights_origin(path)))
        }
    }
}

/// Official files are named `neuron{N}…`; anything else is a user file.
fn weights_origin(path: &Path) -> WeightsOrigin {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let shown = path.display().to_string();
    if name.starts_with("neuron") {
        WeightsOrigin::Official { path: shown }
    } else {
        WeightsOrigin::File { path: shown }
    }
}

/// Where an input comes from.
#[derive(Debug, Clone)]
pub enum InputSpec {
    /// An images file (TSV, TSV.gz, MatrixMarket) or an input cache.
    File(PathBuf),
    /// MNIST through the official recipe (fails when MNIST is not fetched).
    Mnist,
    /// Seeded synthetic images of ~10% density.
    Synthetic { seed: u64 },
    /// MNIST when it has been fetched, otherwise synthetic with seed 0 (labelled so).
    MnistOrSynthetic,
}

/// Loads the input of `neurons` features; `rows` keeps the first rows.
///
/// MNIST-derived inputs are cached under `data_dir/cache/` (making them for N = 65536
/// takes minutes). `progress(done, total)` reports image making.
pub fn load_input(
    spec: &InputSpec,
    neurons: usize,
    rows: Option<usize>,
    data_dir: &Path,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Input> {
    let input = match spec {
        InputSpec::File(path) => {
            if cache::is_cache(path) {
                cache::read_input(path)?
            } else {
                let features = tsv::read_images(path, neurons, rows)?;
                Input {
                    features,
                    origin: InputOrigin::File {
                        path: path.display().to_string(),
                    },
                }
            }
        }
        InputSpec::Mnist => mnist_input(neurons, data_dir, progress)?,
        InputSpec::Synthetic { seed } => images::synthetic(
            rows.unwrap_or(spdnn_sdgc::benchmark::OFFICIAL_ROWS),
            neurons,
            *seed,
        )?,
        InputSpec::MnistOrSynthetic => {
            if images::load_mnist_train(data_dir).is_ok() {
                mnist_input(neurons, data_dir, progress)?
            } else {
                images::synthetic(
                    rows.unwrap_or(spdnn_sdgc::benchmark::OFFICIAL_ROWS),
                    neurons,
                    0,
                )?
            }
        }
    };
    if input.features.ncols() != neurons {
        bail!(
            "the input has {} features, the network {neurons} neurons",
            input.features.ncols()
        );
    }
    Ok(match rows {
        Some(r) if r > input.rows() => {
            bail!(
                "asked for {r} rows, but the input has only {}",
                input.rows()
            )
        }
        Some(r) => input.head(r),
        None => input,
    })
}

/// The MNIST-recipe input for `neurons`, from the cache when it is there.
fn mnist_input(
    neurons: usize,
    data_dir: &Path,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Input> {
    let cache_path = data_dir
        .join("cache")
        .join(format!("mnist-images-{neurons}.bin"));
    if cache_path.exists() {
        match cache::read_input(&cache_path) {
            Ok(input) if input.origin == InputOrigin::Mnist => return Ok(input),
            _ => eprintln!(
                "warning: ignoring unreadable input cache {}",
                cache_path.display()
            ),
        }
    }
    let mnist = images::load_mnist_train(data_dir)?;
    let input = images::from_mnist(&mnist, neurons, progress)?;
    let cached = match cache_path.parent() {
        Some(parent) => std::fs::create_dir_all(parent)
            .map_err(|e| e.to_string())
            .and_then(|()| cache::write_input(&cache_path, &input).map_err(|e| e.to_string())),
        None => Ok(()),
    };
    if let Err(e) = cached {
        eprintln!("warning: could not cache the input: {e}");
    }
    Ok(input)
}

/// Reads a truth file and restricts it to the rows that were run.
pub fn load_truth(path: &Path, rows: usize) -> Result<Truth> {
    let categories = tsv::read_categories(path)?;
    Ok(Truth {
        categories,
        source: path.display().to_string(),
        rows: usize::MAX,
    }
    .restricted(rows))
}

/// The official network, truth and bias of `N-L` when the files are at hand
/// (in the data folder or `../shared/data/sdgc`).
pub fn official_files(root: &Path, neurons: usize, layers: usize) -> Option<(PathBuf, PathBuf)> {
    let weights = spdnn_sdgc::paths::find_official(root, &format!("neuron{neurons}.tar.gz"))
        .or_else(|| spdnn_sdgc::paths::find_official(root, &format!("neuron{neurons}")))?;
    let truth = spdnn_sdgc::paths::find_official(
        root,
        &format!("neuron{neurons}-l{layers}-categories.tsv"),
    )?;
    Some((weights, truth))
}
