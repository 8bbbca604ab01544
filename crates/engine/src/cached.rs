//! What a benchmark keeps on disk between runs, under the data folder's `cache/`: generated
//! networks in the binary cache format ([`generated_network`]) and the oracle's truths
//! ([`TruthCache`]).
//!
//! **Networks** (`cache/networks/{kind}-n{N}-s{seed}-l{L}.bin`, kind `radix` or
//! `random-f{fan-in}`): a generated layer depends only on (kind, N, seed, its index), so a
//! file of `L' ≥ L` layers serves the first `L`. The layer read last is generated again and
//! compared, so a file left by another generator is noticed (and replaced). Without a file,
//! the layers are generated a window at a time in parallel, each window written to the file
//! while the next is generated.
//!
//! **Truths** (`cache/truth/truth-{key}.json`): the categories the oracle found, keyed by the
//! content fingerprints of the network and the input ([`spdnn_compress::fingerprint`]),
//! the bias, the bound, and how the truth was made (the rows the uncompressed oracle
//! checks, whether the compressed oracle ran). The file repeats its key and is used only
//! when the key matches.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use spdnn_formats::Csr;
use spdnn_sdgc::benchmark::WeightsOrigin;
use spdnn_sdgc::{Input, Network, cache, generator};

use crate::data::WeightsSpec;
use crate::run::Truth;

/// The folder of the generated-network cache under `data_dir`.
pub fn network_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("cache").join("networks")
}

/// The folder of the truth cache under `data_dir`.
pub fn truth_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("cache").join("truth")
}

/// Where a generated network came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkSource {
    /// Generated; not cached.
    Generated,
    /// Generated and written to this cache file.
    Written(PathBuf),
    /// Read from this cache file.
    Read(PathBuf),
}

impl NetworkSource {
    /// A few words for a log line.
    pub fn text(&self) -> String {
        match self {
            NetworkSource::Generated => "generated".into(),
            NetworkSource::Written(path) => {
                format!("generated, written to the cache {}", path.display())
            }
            NetworkSource::Read(path) => format!("read from the cache {}", path.display()),
        }
    }
}

/// A generated network, its origin, and whether the cache gave it.
pub struct GeneratedNetwork {
    /// The network.
    pub network: Network,
    /// Its origin for reports.
    pub origin: WeightsOrigin,
    /// Generated, written, or read.
    pub source: NetworkSource,
    /// What went wrong with the cache, when something did (the network is right anyway).
    pub warning: Option<String>,
}

/// The generator's parameters of a generated spec; `None` for a file.
fn generated_kind(spec: &WeightsSpec) -> Option<(String, u64, WeightsOrigin)> {
    match *spec {
        WeightsSpec::Generated { seed } => {
            Some(("radix".into(), seed, WeightsOrigin::Generated { seed }))
        }
        WeightsSpec::Random { seed, fan_in } => Some((
            format!("random-f{fan_in}"),
            seed,
            WeightsOrigin::Random { seed, fan_in },
        )),
        WeightsSpec::Path(_) => None,
    }
}

/// Layer `index` (1-based) of the generated network of `spec`.
fn generated_layer(spec: &WeightsSpec, neurons: usize, index: usize) -> Result<Csr> {
    Ok(match *spec {
        WeightsSpec::Generated { seed } => generator::layer(neurons, index, seed)?,
        WeightsSpec::Random { seed, fan_in } => {
            generator::random_layer(neurons, index, fan_in, seed)?
        }
        WeightsSpec::Path(_) => bail!("not a generated network"),
    })
}

/// The cache file name of `layers` layers of a generated network.
fn file_name(kind: &str, neurons: usize, seed: u64, layers: usize) -> String {
    format!("{kind}-n{neurons}-s{seed}-l{layers}.bin")
}

/// The cache file in `dir` holding at least `layers` layers of (kind, N, seed): the one
/// with the fewest such layers.
fn find_cached(
    dir: &Path,
    kind: &str,
    neurons: usize,
    seed: u64,
    layers: usize,
) -> Option<PathBuf> {
    let prefix = format!("{kind}-n{neurons}-s{seed}-l");
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let held: usize = name
                .strip_prefix(&prefix)?
                .strip_suffix(".bin")?
                .parse()
                .ok()?;
            (held >= layers).then(|| (held, dir.join(name)))
        })
        .min_by_key(|(held, _)| *held)
        .map(|(_, path)| path)
}

/// The generated network of `spec` (RadiX-Net or random), `layers` layers of `neurons`:
/// from a cache file in `cache_dir` when one holds it, else generated in parallel and, with
/// a `cache_dir`, written there for the next run. `on_layer(done)` reports progress.
///
/// A cache that cannot be read, or whose last layer read differs from the generator's, is
/// replaced; a cache that cannot be written is skipped. Both say so in `warning`.
pub fn generated_network(
    spec: &WeightsSpec,
    neurons: usize,
    layers: usize,
    cache_dir: Option<&Path>,
    on_layer: &(dyn Fn(usize) + Sync),
) -> Result<GeneratedNetwork> {
    let Some((kind, seed, origin)) = generated_kind(spec) else {
        bail!("only a generated network can come from the network cache");
    };
    match spec {
        WeightsSpec::Generated { .. } => generator::check_neurons(neurons)?,
        WeightsSpec::Random { fan_in, .. } => generator::check_random(neurons, *fan_in)?,
        WeightsSpec::Path(_) => {}
    }
    if layers == 0 {
        bail!("a generated network needs at least one layer");
    }
    let mut warning = None;
    if let Some(dir) = cache_dir
        && let Some(path) = find_cached(dir, &kind, neurons, seed, layers)
    {
        match read_checked(spec, neurons, layers, &path) {
            Ok(network) => {
                on_layer(layers);
                return Ok(GeneratedNetwork {
                    network,
                    origin,
                    source: NetworkSource::Read(path),
                    warning: None,
                });
            }
            Err(e) => {
                warning = Some(format!(
                    "ignoring the network cache {}: {e:#}; generating again",
                    path.display()
                ));
                // A file that does not hold this network is replaced below when it has
                // the name the new one gets; another one is removed.
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    let target = cache_dir.map(|dir| dir.join(file_name(&kind, neurons, seed, layers)));
    let (network, written) = generate_streamed(spec, neurons, layers, target.as_deref(), on_layer)?;
    let source = match (target, written) {
        (Some(path), Ok(true)) => NetworkSource::Written(path),
        (Some(path), Err(e)) => {
            warning = Some(format!(
                "{}the network cache {} was not written: {e:#}",
                warning.map(|w| format!("{w}; ")).unwrap_or_default(),
                path.display()
            ));
            NetworkSource::Generated
        }
        _ => NetworkSource::Generated,
    };
    Ok(GeneratedNetwork {
        network,
        origin,
        source,
        warning,
    })
}

/// Reads the first `layers` layers of `path` and checks the last against the generator.
fn read_checked(spec: &WeightsSpec, neurons: usize, layers: usize, path: &Path) -> Result<Network> {
    let network = cache::read_network(path, Some(layers))?;
    if network.neurons() != neurons {
        bail!("it holds N = {}, not {neurons}", network.neurons());
    }
    let expected = generated_layer(spec, neurons, layers)?;
    if network.layers()[layers - 1] != expected {
        bail!("its layer {layers} is not the generator's");
    }
    Ok(network)
}

/// Generates the network a window of layers at a time (two per rayon thread, in parallel),
/// writing each window to `target` while the next one is generated. Returns the network and
/// whether the file was written (`Ok(false)` without a target; an error of the file alone
/// leaves the network whole).
fn generate_streamed(
    spec: &WeightsSpec,
    neurons: usize,
    layers: usize,
    target: Option<&Path>,
    on_layer: &(dyn Fn(usize) + Sync),
) -> Result<(Network, Result<bool>)> {
    use rayon::prelude::*;

    let window = 2 * rayon::current_num_threads().max(1);
    let build = |start: usize| -> Result<Vec<Csr>> {
        let end = (start + window - 1).min(layers);
        (start..=end)
            .into_par_iter()
            .map(|index| generated_layer(spec, neurons, index))
            .collect()
    };
    // The file's writer, or why there is none (`Ok(None)`: no file asked for).
    let mut writer: Result<Option<cache::NetworkCacheWriter>> = target
        .map(|path| {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            Ok(cache::NetworkCacheWriter::create(path, neurons, layers)?)
        })
        .transpose();
    let mut built: Vec<Csr> = Vec::with_capacity(layers);
    let mut pending = build(1)?;
    loop {
        let next_start = built.len() + pending.len() + 1;
        let (write, next) = rayon::join(
            || -> Result<()> {
                if let Ok(Some(w)) = writer.as_mut() {
                    for layer in &pending {
                        w.push_layer(layer)?;
                    }
                }
                Ok(())
            },
            || (next_start <= layers).then(|| build(next_start)),
        );
        if let Err(e) = write {
            // Dropping the writer removes its partial file; the generation goes on.
            writer = Err(e);
        }
        built.append(&mut pending);
        on_layer(built.len());
        match next {
            Some(next) => pending = next?,
            None => break,
        }
    }
    let written = match writer {
        Ok(Some(w)) => w.finish().map(|()| true).map_err(anyhow::Error::from),
        Ok(None) => Ok(false),
        Err(e) => Err(e),
    };
    Ok((Network::new(neurons, built)?, written))
}

/// Version of the truth files: a change in what a truth means changes it.
const TRUTH_VERSION: u32 = 1;

/// Everything a bench's truth depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruthKey {
    /// [`TRUTH_VERSION`].
    pub version: u32,
    /// The network's content fingerprint, hex.
    pub network: String,
    /// The input's content fingerprint, hex (its rows included).
    pub input: String,
    /// Rows of the input.
    pub rows: usize,
    /// The bias's bits.
    pub bias_bits: u32,
    /// The upper bound's bits.
    pub upper_bits: u32,
    /// Rows the uncompressed oracle ran.
    pub checked_rows: usize,
    /// Whether the compressed oracle was asked for (every row).
    pub compressed_oracle: bool,
}

impl TruthKey {
    /// The key of the truth of `network` on `input` with `bias` and `upper_bound`, made by
    /// the uncompressed oracle on the first `checked_rows` rows and, when
    /// `compressed_oracle`, the compressed one on every row. Fingerprints the network and the
    /// input (at memory speed, in parallel).
    pub fn new(
        network: &Network,
        input: &Input,
        bias: f32,
        upper_bound: f32,
        checked_rows: usize,
        compressed_oracle: bool,
    ) -> Self {
        let network_print = spdnn_compress::fingerprint(network.layers(), network.biases());
        let input_print = spdnn_compress::fingerprint(std::slice::from_ref(&input.features), None);
        Self {
            version: TRUTH_VERSION,
            network: format!("{network_print:032x}"),
            input: format!("{input_print:032x}"),
            rows: input.rows(),
            bias_bits: bias.to_bits(),
            upper_bits: upper_bound.to_bits(),
            checked_rows,
            compressed_oracle,
        }
    }

    /// The file name of this key's truth.
    fn file_name(&self) -> String {
        let text = serde_json::to_string(self).unwrap_or_default();
        format!(
            "truth-{:032x}.json",
            xxhash_rust::xxh3::xxh3_128(text.as_bytes())
        )
    }
}

/// A truth as stored.
#[derive(Serialize, Deserialize)]
struct TruthFile {
    key: TruthKey,
    source: String,
    rows: usize,
    categories: Vec<u32>,
}

/// Truths kept in a folder (see the module documentation).
pub struct TruthCache {
    dir: PathBuf,
}

impl TruthCache {
    /// The cache in `dir` (created when a truth is first written).
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The file of `key`'s truth.
    pub fn path(&self, key: &TruthKey) -> PathBuf {
        self.dir.join(key.file_name())
    }

    /// The truth stored for `key`: `Ok(None)` when there is none, an error when the file
    /// is there but unreadable or holds another key (the caller computes it again).
    pub fn read(&self, key: &TruthKey) -> Result<Option<Truth>> {
        let path = self.path(key);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let file: TruthFile = serde_json::from_str(&text)
            .with_context(|| format!("reading the truth {}", path.display()))?;
        if file.key != *key {
            bail!(
                "{} holds the truth of another network or input",
                path.display()
            );
        }
        let ascending = file.categories.windows(2).all(|w| w[0] < w[1]);
        let in_range = file
            .categories
            .iter()
            .all(|&c| c >= 1 && c as usize <= file.rows.min(key.rows));
        if !ascending || !in_range || file.rows > key.rows {
            bail!(
                "{} holds categories that are not ascending rows of the input",
                path.display()
            );
        }
        Ok(Some(Truth {
            categories: file.categories,
            source: file.source,
            rows: file.rows,
        }))
    }

    /// Stores `truth` for `key`, written whole or not at all; returns the file.
    pub fn write(&self, key: &TruthKey, truth: &Truth) -> Result<PathBuf> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        let path = self.path(key);
        let partial = path.with_extension("json.partial");
        let file = TruthFile {
            key: key.clone(),
            source: truth.source.clone(),
            rows: truth.rows,
            categories: truth.categories.clone(),
        };
        std::fs::write(&partial, serde_json::to_string(&file)?)
            .with_context(|| format!("writing {}", partial.display()))?;
        std::fs::rename(&partial, &path).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer_count(path: &Path) -> usize {
        cache::NetworkCacheReader::open(path).unwrap().layers()
    }

    #[test]
    fn a_generated_network_is_cached_then_read_and_serves_fewer_layers() {
        let dir = tempfile::tempdir().unwrap();
        let spec = WeightsSpec::Generated { seed: 3 };
        let seen = std::sync::atomic::AtomicUsize::new(0);
        let progress = |done: usize| {
            seen.store(done, std::sync::atomic::Ordering::Relaxed);
        };
        let first = generated_network(&spec, 64, 9, Some(dir.path()), &progress).unwrap();
        let path = dir.path().join("radix-n64-s3-l9.bin");
        assert_eq!(first.source, NetworkSource::Written(path.clone()));
        assert!(first.warning.is_none());
        assert_eq!(seen.load(std::sync::atomic::Ordering::Relaxed), 9);
        assert_eq!(layer_count(&path), 9);
        let plain = generator::network(64, 9, 3).unwrap();
        assert_eq!(first.network.layers(), plain.layers());
        assert_eq!(first.origin, WeightsOrigin::Generated { seed: 3 });

        let again = generated_network(&spec, 64, 9, Some(dir.path()), &|_| {}).unwrap();
        assert_eq!(again.source, NetworkSource::Read(path.clone()));
        assert_eq!(again.network.layers(), plain.layers());
        // Fewer layers: the same file, its first layers.
        let fewer = generated_network(&spec, 64, 4, Some(dir.path()), &|_| {}).unwrap();
        assert_eq!(fewer.source, NetworkSource::Read(path.clone()));
        assert_eq!(fewer.network.layers(), &plain.layers()[..4]);
        // More layers, another seed, another N: generated (and cached) anew.
        let more = generated_network(&spec, 64, 12, Some(dir.path()), &|_| {}).unwrap();
        assert!(matches!(more.source, NetworkSource::Written(_)));
        let seed = WeightsSpec::Generated { seed: 4 };
        let other = generated_network(&seed, 64, 4, Some(dir.path()), &|_| {}).unwrap();
        assert!(matches!(other.source, NetworkSource::Written(_)));
        assert_eq!(
            other.network.layers(),
            generator::network(64, 4, 4).unwrap().layers()
        );
        // Now 9 layers come from the 9-layer file, not the 12-layer one.
        let nine = generated_network(&spec, 64, 9, Some(dir.path()), &|_| {}).unwrap();
        assert_eq!(nine.source, NetworkSource::Read(path));
        // No folder: generated only.
        let none = generated_network(&spec, 64, 9, None, &|_| {}).unwrap();
        assert_eq!(none.source, NetworkSource::Generated);
    }

    #[test]
    fn random_networks_are_cached_under_their_fan_in() {
        let dir = tempfile::tempdir().unwrap();
        let spec = WeightsSpec::Random { seed: 1, fan_in: 5 };
        let first = generated_network(&spec, 40, 3, Some(dir.path()), &|_| {}).unwrap();
        let path = dir.path().join("random-f5-n40-s1-l3.bin");
        assert_eq!(first.source, NetworkSource::Written(path.clone()));
        let again = generated_network(&spec, 40, 3, Some(dir.path()), &|_| {}).unwrap();
        assert_eq!(again.source, NetworkSource::Read(path));
        assert_eq!(
            again.network.layers(),
            generator::random_network(40, 3, 5, 1).unwrap().layers()
        );
        assert_eq!(again.origin, WeightsOrigin::Random { seed: 1, fan_in: 5 });
        let fan = WeightsSpec::Random { seed: 1, fan_in: 6 };
        let other = generated_network(&fan, 40, 3, Some(dir.path()), &|_| {}).unwrap();
        assert!(matches!(other.source, NetworkSource::Written(_)));
    }

    #[test]
    fn a_cache_of_another_network_or_a_damaged_one_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let spec = WeightsSpec::Generated { seed: 3 };
        // A file under this network's name holding another seed's layers.
        let path = dir.path().join("radix-n64-s3-l6.bin");
        cache::write_network(&path, &generator::network(64, 6, 9).unwrap()).unwrap();
        let got = generated_network(&spec, 64, 6, Some(dir.path()), &|_| {}).unwrap();
        let warning = got.warning.unwrap();
        assert!(warning.contains("is not the generator's"), "{warning}");
        assert_eq!(got.source, NetworkSource::Written(path.clone()));
        assert_eq!(
            got.network.layers(),
            generator::network(64, 6, 3).unwrap().layers()
        );
        // The replacement is this network's.
        let again = generated_network(&spec, 64, 6, Some(dir.path()), &|_| {}).unwrap();
        assert_eq!(again.source, NetworkSource::Read(path.clone()));
        // A damaged file: a flipped byte fails its checksum.
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 20;
        bytes[last] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        let got = generated_network(&spec, 64, 6, Some(dir.path()), &|_| {}).unwrap();
        assert!(got.warning.unwrap().contains("ignoring the network cache"));
        assert_eq!(
            got.network.layers(),
            generator::network(64, 6, 3).unwrap().layers()
        );
    }

    #[test]
    fn a_cache_that_cannot_be_written_leaves_the_network_whole() {
        let dir = tempfile::tempdir().unwrap();
        // The cache folder is a file: nothing can be written under it.
        let blocked = dir.path().join("networks");
        std::fs::write(&blocked, b"not a folder").unwrap();
        let spec = WeightsSpec::Generated { seed: 0 };
        let got = generated_network(&spec, 64, 7, Some(&blocked), &|_| {}).unwrap();
        assert_eq!(got.source, NetworkSource::Generated);
        assert!(got.warning.unwrap().contains("was not written"));
        assert_eq!(
            got.network.layers(),
            generator::network(64, 7, 0).unwrap().layers()
        );
        // A file path is not a generated network.
        let path = WeightsSpec::Path(dir.path().to_path_buf());
        assert!(generated_network(&path, 64, 7, None, &|_| {}).is_err());
        assert!(generated_network(&spec, 64, 0, None, &|_| {}).is_err());
        assert!(generated_network(&spec, 48, 1, None, &|_| {}).is_err());
    }

    fn truth_of(categories: &[u32], rows: usize) -> Truth {
        Truth {
            categories: categories.to_vec(),
            source: "cpu reference f64".into(),
            rows,
        }
    }

    #[test]
    fn a_truth_is_stored_under_its_key_and_read_only_for_that_key() {
        let dir = tempfile::tempdir().unwrap();
        let store = TruthCache::new(dir.path().join("truth"));
        let network = generator::network(64, 3, 0).unwrap();
        let input = spdnn_sdgc::images::synthetic(20, 64, 1).unwrap();
        let key = TruthKey::new(&network, &input, -0.3, 32.0, 20, true);
        assert!(store.read(&key).unwrap().is_none());
        let truth = truth_of(&[2, 5, 11], 20);
        let path = store.write(&key, &truth).unwrap();
        let back = store.read(&key).unwrap().unwrap();
        assert_eq!(back.categories, truth.categories);
        assert_eq!((back.source.as_str(), back.rows), ("cpu reference f64", 20));
        // Anything the truth depends on gives another key, and no truth.
        let others = [
            TruthKey::new(
                &generator::network(64, 3, 1).unwrap(),
                &input,
                -0.3,
                32.0,
                20,
                true,
            ),
            TruthKey::new(&network, &input.head(19), -0.3, 32.0, 19, true),
            TruthKey::new(
                &network,
                &spdnn_sdgc::images::synthetic(20, 64, 2).unwrap(),
                -0.3,
                32.0,
                20,
                true,
            ),
            TruthKey::new(&network, &input, -0.35, 32.0, 20, true),
            TruthKey::new(&network, &input, -0.3, 16.0, 20, true),
            TruthKey::new(&network, &input, -0.3, 32.0, 10, true),
            TruthKey::new(&network, &input, -0.3, 32.0, 20, false),
        ];
        for other in &others {
            assert_ne!(other, &key);
            assert_ne!(store.path(other), path);
            assert!(store.read(other).unwrap().is_none());
        }
        // A file whose key is not the one asked for, or whose rows are not rows: refused.
        let mut file: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        file["key"]["checked_rows"] = 3.into();
        std::fs::write(&path, file.to_string()).unwrap();
        assert!(
            store
                .read(&key)
                .unwrap_err()
                .to_string()
                .contains("another")
        );
        store.write(&key, &truth_of(&[5, 2], 20)).unwrap();
        assert!(store.read(&key).is_err());
        store.write(&key, &truth_of(&[21], 20)).unwrap();
        assert!(store.read(&key).is_err());
        std::fs::write(&path, "{").unwrap();
        assert!(store.read(&key).is_err());
    }
}
