//! Whole networks: a folder of layer files, the official tar(.gz), or a binary cache.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use rayon::prelude::*;
use spdnn_formats::Csr;

use super::{GZIP_MAGIC, gunzip_if_needed, layer_file_name, parse_layer, write};
use crate::{Network, SdgcError, cache};

/// A layer file's text on its way from the reader thread to the parser.
struct LayerText {
    /// 1-based layer index.
    layer: usize,
    /// N, as known when the file was found.
    neurons: usize,
    /// The file (or archive member) for messages.
    path: PathBuf,
    /// The decompressed text.
    text: Vec<u8>,
}

/// Reads layers `1..=layers` of a network.
///
/// `path` is a folder of `n{N}-l{i}.tsv` (or `.tsv.gz`) files, the official
/// `neuron{N}.tar.gz` (or a plain tar; members in any order), or a binary cache (detected
/// by its magic, see [`cache`]). `neurons = None` takes N from the file names (or the
/// cache). `progress(k)` is called after each layer read, with the number read so far.
///
/// Files are read and decompressed on a second thread while the layers already read are
/// parsed in parallel. Errors name the file and line of a malformed entry, the folder or
/// archive and the missing file when a layer is absent, and a cache with too few layers.
pub fn read_network(
    path: &Path,
    neurons: Option<usize>,
    layers: usize,
    progress: &mut dyn FnMut(usize),
) -> Result<Network, SdgcError> {
    if layers == 0 {
        return Err(SdgcError::Parameter(
            "a network needs at least one layer".into(),
        ));
    }
    crate::limits::check_layers(layers)?;
    if let Some(n) = neurons {
        crate::limits::check_neurons(n)?;
    }
    if path.is_dir() {
        let (dir, neurons) = resolve_folder(path, neurons)?;
        let files = (1..=layers)
            .map(|layer| find_layer_file(&dir, neurons, layer))
            .collect::<Result<Vec<_>, _>>()?;
        let read = pipeline(layers, progress, |send| {
            for (index, file) in files.iter().enumerate() {
                let bytes = std::fs::read(file).map_err(|e| SdgcError::io(file, e))?;
                let text = gunzip_if_needed(bytes, file)?;
                let item = LayerText {
                    layer: index + 1,
                    neurons,
                    path: file.clone(),
                    text,
                };
                if send.send(item).is_err() {
                    break;
                }
            }
            Ok(())
        })?;
        return assemble(read, path, layers);
    }
    let mut head = [0u8; 512];
    let head_len = read_head(path, &mut head)?;
    let head = &head[..head_len];
    if head.starts_with(&cache::MAGIC) {
        return read_cache(path, neurons, layers, progress);
    }
    let gzip = head.starts_with(&GZIP_MAGIC);
    let tar = head.len() >= 262 && &head[257..262] == b"ustar";
    if !gzip && !tar {
        return Err(SdgcError::invalid(
            path,
            "not a folder of layer files, a tar(.gz) archive or a network cache",
        ));
    }
    let read = pipeline(layers, progress, |send| {
        read_archive(path, gzip, neurons, layers, send)
    })?;
    assemble(read, path, layers)
}

/// The first bytes of a file (fewer when it is shorter).
fn read_head(path: &Path, head: &mut [u8]) -> Result<usize, SdgcError> {
    let mut file = File::open(path).map_err(|e| SdgcError::io(path, e))?;
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(SdgcError::io(path, e)),
        }
    }
    Ok(filled)
}

/// The layers of a cache, honouring `neurons` and `layers`.
fn read_cache(
    path: &Path,
    neurons: Option<usize>,
    layers: usize,
    progress: &mut dyn FnMut(usize),
) -> Result<Network, SdgcError> {
    let mut reader = cache::NetworkCacheReader::open(path)?;
    if let Some(n) = neurons
        && n != reader.neurons()
    {
        return Err(SdgcError::invalid(
            path,
            format!(
                "the cache holds an N = {} network, not N = {n}",
                reader.neurons()
            ),
        ));
    }
    if reader.layers() < layers {
        return Err(SdgcError::invalid(
            path,
            format!(
                "the cache holds {} layers, {layers} were asked for",
                reader.layers()
            ),
        ));
    }
    cache::read_layers(&mut reader, layers, progress)
}

/// Runs `produce` on a second thread, parsing what it sends on this one (each layer in
/// parallel chunks) and calling `progress` after each. Returns the layers by index and
/// N, or the first error (the producer's when it failed, since it comes first in the
/// data).
fn pipeline(
    layers: usize,
    progress: &mut dyn FnMut(usize),
    produce: impl FnOnce(&mpsc::SyncSender<LayerText>) -> Result<(), SdgcError> + Send,
) -> Result<(Vec<Option<Csr>>, usize), SdgcError> {
    let (send, receive) = mpsc::sync_channel::<LayerText>(4);
    let mut slots: Vec<Option<Csr>> = vec![None; layers];
    let mut neurons = 0;
    std::thread::scope(|scope| {
        let producer = scope.spawn(move || produce(&send));
        let mut parsed: Result<(), SdgcError> = Ok(());
        let mut count = 0;
        for item in receive.iter() {
            match parse_layer(&item.text, item.neurons, &item.path) {
                Ok(layer) => {
                    neurons = item.neurons;
                    if slots[item.layer - 1].replace(layer).is_none() {
                        count += 1;
                        progress(count);
                    }
                }
                Err(e) => {
                    parsed = Err(e);
                    break;
                }
            }
        }
        drop(receive);
        let produced = producer.join().unwrap_or_else(|_| {
            Err(SdgcError::Parameter(
                "the file reader thread panicked".into(),
            ))
        });
        produced.and(parsed)
    })?;
    Ok((slots, neurons))
}

/// Builds the network, naming the first missing layer file.
fn assemble(
    (slots, neurons): (Vec<Option<Csr>>, usize),
    path: &Path,
    layers: usize,
) -> Result<Network, SdgcError> {
    if slots.iter().all(Option::is_none) {
        return Err(SdgcError::invalid(
            path,
            "holds no n{N}-l{i}.tsv layer files",
        ));
    }
    let mut read = Vec::with_capacity(layers);
    for (index, slot) in slots.into_iter().enumerate() {
        match slot {
            Some(layer) => read.push(layer),
            None => {
                return Err(SdgcError::invalid(
                    path,
                    format!("missing layer file {}", layer_file_name(neurons, index + 1)),
                ));
            }
        }
    }
    Network::new(neurons, read)
}

/// `(N, layer)` when `name` is `n{N}-l{i}.tsv` or `n{N}-l{i}.tsv.gz`.
fn parse_layer_name(name: &str) -> Option<(usize, usize)> {
    let stem = name
        .strip_suffix(".tsv.gz")
        .or_else(|| name.strip_suffix(".tsv"))?;
    let (n, l) = stem.strip_prefix('n')?.split_once("-l")?;
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(n) || !all_digits(l) {
        return None;
    }
    Some((n.parse().ok()?, l.parse().ok()?))
}

/// The folder holding the layer files (the given one, or its `neuron{N}` subfolder as an
/// extracted official archive has it) and N.
fn resolve_folder(dir: &Path, neurons: Option<usize>) -> Result<(PathBuf, usize), SdgcError> {
    let sizes = |folder: &Path| -> Result<Vec<usize>, SdgcError> {
        let entries = std::fs::read_dir(folder).map_err(|e| SdgcError::io(folder, e))?;
        let mut sizes = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| SdgcError::io(folder, e))?;
            if let Some((n, _)) = entry.file_name().to_str().and_then(parse_layer_name)
                && !sizes.contains(&n)
            {
                sizes.push(n);
            }
        }
        sizes.sort_unstable();
        Ok(sizes)
    };
    let mut found = sizes(dir)?;
    let mut folder = dir.to_path_buf();
    if found.is_empty() {
        let sub = match neurons {
            Some(n) => Some(dir.join(format!("neuron{n}"))),
            None => {
                let entries = std::fs::read_dir(dir).map_err(|e| SdgcError::io(dir, e))?;
                let subs: Vec<PathBuf> = entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| {
                        p.is_dir()
                            && p.file_name().and_then(|f| f.to_str()).is_some_and(|f| {
                                f.strip_prefix("neuron").is_some_and(|n| {
                                    !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
                                })
                            })
                    })
                    .collect();
                if subs.len() == 1 {
                    subs.into_iter().next()
                } else {
                    None
                }
            }
        };
        if let Some(sub) = sub.filter(|s| s.is_dir()) {
            found = sizes(&sub)?;
            folder = sub;
        }
    }
    match neurons {
        Some(n) => Ok((folder, n)),
        None => match found[..] {
            [n] => Ok((folder, n)),
            [] => Err(SdgcError::invalid(
                dir,
                "holds no n{N}-l{i}.tsv layer files",
            )),
            _ => Err(SdgcError::invalid(
                dir,
                format!("holds layer files of several sizes N = {found:?}: give N explicitly"),
            )),
        },
    }
}

/// The file of layer `layer`: `n{N}-l{i}.tsv`, else `n{N}-l{i}.tsv.gz`.
fn find_layer_file(dir: &Path, neurons: usize, layer: usize) -> Result<PathBuf, SdgcError> {
    let plain = dir.join(layer_file_name(neurons, layer));
    if plain.is_file() {
        return Ok(plain);
    }
    let mut gz = plain.clone().into_os_string();
    gz.push(".gz");
    let gz = PathBuf::from(gz);
    if gz.is_file() {
        return Ok(gz);
    }
    Err(SdgcError::invalid(
        dir,
        format!(
            "missing layer file {} (nor .gz)",
            layer_file_name(neurons, layer)
        ),
    ))
}

/// Streams the archive, sending each wanted layer; stops once all `1..=layers` are sent.
fn read_archive(
    archive_path: &Path,
    gzip: bool,
    neurons: Option<usize>,
    layers: usize,
    send: &mpsc::SyncSender<LayerText>,
) -> Result<(), SdgcError> {
    let file = File::open(archive_path).map_err(|e| SdgcError::io(archive_path, e))?;
    let buffered = BufReader::with_capacity(1 << 20, file);
    let stream: Box<dyn Read> = if gzip {
        Box::new(flate2::read::MultiGzDecoder::new(buffered))
    } else {
        Box::new(buffered)
    };
    let broken = |e: std::io::Error| {
        SdgcError::invalid(
            archive_path,
            format!("cannot read the archive (truncated or corrupt?): {e}"),
        )
    };
    let mut archive = tar::Archive::new(stream);
    let mut size = neurons;
    let mut seen = vec![false; layers];
    let mut remaining = layers;
    for entry in archive.entries().map_err(broken)? {
        let mut entry = entry.map_err(broken)?;
        if entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let member = entry.path().map_err(broken)?.into_owned();
        let Some((n, layer)) = member
            .file_name()
            .and_then(|f| f.to_str())
            .and_then(parse_layer_name)
        else {
            continue;
        };
        match size {
            None => size = Some(n),
            Some(expected) if expected != n => {
                if neurons.is_some() {
                    continue;
                }
                return Err(SdgcError::invalid(
                    archive_path,
                    format!(
                        "holds layer files of N = {expected} and N = {n} ({}): give N explicitly",
                        member.display()
                    ),
                ));
            }
            Some(_) => {}
        }
        if layer == 0 || layer > layers || seen[layer - 1] {
            continue;
        }
        let mut bytes = Vec::with_capacity(entry.size().min(1 << 31) as usize);
        entry.read_to_end(&mut bytes).map_err(broken)?;
        let path = archive_path.join(&member);
        let text = gunzip_if_needed(bytes, &path)?;
        seen[layer - 1] = true;
        remaining -= 1;
        if send
            .send(LayerText {
                layer,
                neurons: n,
                path,
                text,
            })
            .is_err()
            || remaining == 0
        {
            break;
        }
    }
    if remaining > 0
        && let Some(n) = size
        && let Some(missing) = seen.iter().position(|s| !s)
    {
        return Err(SdgcError::invalid(
            archive_path,
            format!("missing layer file {}", layer_file_name(n, missing + 1)),
        ));
    }
    Ok(())
}

/// Writes every layer of `network` as `dir/n{N}-l{i}.tsv` in the official format,
/// creating `dir`; `progress(k)` after each file written. Layers are formatted in
/// parallel, a window of a few per thread at a time.
pub fn write_network_dir(
    dir: &Path,
    network: &Network,
    progress: &mut dyn FnMut(usize),
) -> Result<(), SdgcError> {
    std::fs::create_dir_all(dir).map_err(|e| SdgcError::io(dir, e))?;
    let window = 2 * rayon::current_num_threads().max(1);
    let neurons = network.neurons();
    for (w, layers) in network.layers().chunks(window).enumerate() {
        let texts: Vec<Vec<u8>> = layers.par_iter().map(write::layer_text).collect();
        for (k, text) in texts.iter().enumerate() {
            let index = w * window + k + 1;
            write::write_file(&dir.join(layer_file_name(neurons, index)), text)?;
            progress(index);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_names_are_recognised() {
        assert_eq!(parse_layer_name("n1024-l12.tsv"), Some((1024, 12)));
        assert_eq!(parse_layer_name("n65536-l1920.tsv.gz"), Some((65536, 1920)));
        assert_eq!(parse_layer_name("n1024-l12.tsv.bak"), None);
        assert_eq!(parse_layer_name("n-l1.tsv"), None);
        assert_eq!(parse_layer_name("neuron1024-l120-categories.tsv"), None);
        assert_eq!(parse_layer_name("n+1-l1.tsv"), None);
    }
}
