//! The binary form of an [`XyNetwork`] and the on-disk cache of prepared networks.
//!
//! Layout (integers and floats little-endian):
//!
//! ```text
//! magic        8 bytes  "SPDNNXY1"
//! version      u32      FORMAT_VERSION
//! neurons      u64      N_0, the input width (every layer's N in a square network)
//! layers       u64      L
//! header_sum   u64      xxh3-64 of version ‖ neurons ‖ layers
//! L records, record i (0-based) being
//!   group u32, blocks u32, inputs_len u32, max_input_runs u32,
//!   block_offsets (blocks + 1) × u32, inputs inputs_len × u32,
//!   values inputs_len·group × f32, outputs N_{i+1} = blocks·group × u32,
//!   sum u64 = xxh3-64 with seed i of everything in the record before it
//! ```
//!
//! Nothing follows the last record. A layer's width is its `blocks · group`, so chains of
//! rectangular layers (`N_{l-1} × N_l`, e.g. compressed networks) need nothing more; a
//! square network's bytes are those of the first version of this layout, which is why the
//! version did not change when rectangular layers came. [`XyNetwork::read_from`] checks the checksums and
//! then every invariant of the format ([`XyNetwork::validate`]); it reads arrays in
//! bounded chunks, so a corrupt length fails at the end of the data instead of
//! allocating what the header claims.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytemuck::Pod;
use spdnn_formats::{Csr, SparseMatrix};
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use crate::error::XyError;
use crate::format::{GROUP, XyLayer, XyNetwork, check_layers};

/// The first 8 bytes of every serialized XY network.
pub const MAGIC: [u8; 8] = *b"SPDNNXY1";

/// The layout version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Elements read per step: arrays grow with the data actually present.
const READ_CHUNK: usize = 1 << 16;

/// The largest cache file read or written, in bytes; a larger network is prepared in
/// memory every run (and still shared within the process). The file only pays where
/// reading it beats preparing: on the GPU machine (16 cores, 2026-11-26) 65536-120's
/// 1.1 GB file was read in 1.2 s, as long as preparing and writing it took, while
/// 65536-1920's 17 GB file, prepared and written in 19 s, was not read back in 440 s.
pub const MAX_CACHE_FILE_BYTES: u64 = 2 << 30;

/// What [`XyNetwork::load_or_prepare`] did with the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheUse {
    /// No cache folder was given: the network was prepared.
    Disabled,
    /// The network was read from the cache.
    Hit,
    /// The network was prepared (no usable cache file), and written to the cache if
    /// the folder allowed it.
    Miss,
}

/// A content hash of `layers` ([`Csr::chain_content_hash`]): the cache file's key.
pub fn fingerprint(layers: &[Csr]) -> u64 {
    Csr::chain_content_hash(layers)
}

/// The cache file of `layers` in `dir`: `xy-n{N_0}-l{L}-{fingerprint:016x}.xybin`. The
/// fingerprint covers every layer's rows and columns, so chains of other widths (a
/// compressed network) have other files.
pub fn cache_path(dir: &Path, layers: &[Csr]) -> PathBuf {
    let neurons = layers.first().map_or(0, |layer| layer.nrows());
    dir.join(format!(
        "xy-n{neurons}-l{}-{:016x}.xybin",
        layers.len(),
        fingerprint(layers)
    ))
}

impl XyNetwork {
    /// Writes the network in the binary layout of this module.
    ///
    /// Errors when the network breaks an invariant ([`XyNetwork::validate`]), so that
    /// what is written can always be read back, or when the writer fails.
    pub fn write_to(&self, w: &mut impl Write) -> Result<(), XyError> {
        self.validate()?;
        let header = header_bytes(
            FORMAT_VERSION,
            self.neurons as u64,
            self.layers.len() as u64,
        );
        w.write_all(&MAGIC)?;
        w.write_all(&header)?;
        w.write_all(&xxh3_64(&header).to_le_bytes())?;
        for (index, layer) in self.layers.iter().enumerate() {
            let mut sum = Xxh3::with_seed(index as u64);
            // validate() bounds every count by N < 2^32 or by the u32 block offsets.
            let counts = [
                layer.group,
                layer.blocks() as u32,
                layer.inputs.len() as u32,
                layer.max_input_runs,
            ];
            write_array(w, &mut sum, &counts)?;
            write_array(w, &mut sum, &layer.block_offsets)?;
            write_array(w, &mut sum, &layer.inputs)?;
            write_array(w, &mut sum, &layer.values)?;
            write_array(w, &mut sum, &layer.outputs)?;
            w.write_all(&sum.digest().to_le_bytes())?;
        }
        Ok(())
    }

    /// [`XyNetwork::read_from`] over bytes in memory: one non-generic instance, compiled
    /// in this crate (so the fuzzer's coverage counters see the reader).
    pub fn read_from_bytes(bytes: &[u8]) -> Result<XyNetwork, XyError> {
        Self::read_from(&mut &bytes[..])
    }

    /// Reads a network written by [`XyNetwork::write_to`], checking the magic, the
    /// version, every checksum, that nothing follows the last layer, and every invariant
    /// of the format. Errors (never panics) on any mismatch.
    pub fn read_from(r: &mut impl Read) -> Result<XyNetwork, XyError> {
        let mut magic = [0u8; 8];
        read_exact(r, &mut magic, "the magic")?;
        if magic != MAGIC {
            return Err(XyError::Invalid(
                "not a serialized XY network (wrong magic)".into(),
            ));
        }
        let mut header = [0u8; 20];
        read_exact(r, &mut header, "the header")?;
        let version = u32::from_le_bytes(header_field(&header, 0));
        if version != FORMAT_VERSION {
            return Err(XyError::Invalid(format!(
                "layout version {version}, this build reads version {FORMAT_VERSION}"
            )));
        }
        let mut header_sum = [0u8; 8];
        read_exact(r, &mut header_sum, "the header checksum")?;
        if u64::from_le_bytes(header_sum) != xxh3_64(&header) {
            return Err(XyError::Invalid("header checksum mismatch".into()));
        }
        let neurons = u64::from_le_bytes(header_field(&header, 4));
        let layer_count = u64::from_le_bytes(header_field(&header, 12));
        let neurons = usize::try_from(neurons)
            .ok()
            .filter(|&n| n > 0 && u32::try_from(n).is_ok())
            .ok_or_else(|| XyError::Invalid(format!("N = {neurons} is out of range")))?;
        if layer_count == 0 {
            return Err(XyError::Invalid("no layers".into()));
        }
        let mut layers = Vec::new();
        let mut width = neurons;
        for index in 0..layer_count {
            let layer = read_layer(r, index, width)?;
            width = layer.width();
            layers.push(layer);
        }
        let mut probe = [0u8; 1];
        if read_some(r, &mut probe)? != 0 {
            return Err(XyError::Invalid("bytes follow the last layer".into()));
        }
        let network = XyNetwork { neurons, layers };
        network.validate()?;
        Ok(network)
    }

    /// [`XyNetwork::prepare`] through a cache in `cache_dir` (`None`: no cache).
    ///
    /// The file is [`cache_path`]`(dir, layers)`. A readable file that matches the layers
    /// is a [`CacheUse::Hit`]. A missing, unreadable or corrupt file is a
    /// [`CacheUse::Miss`]: the network is prepared and written atomically (a temporary
    /// file in `dir`, then a rename). When the cache cannot be written (e.g. a read-only
    /// folder) a one-line warning goes to stderr and the prepared network is returned.
    ///
    /// Errors only as [`XyNetwork::prepare`] does.
    pub fn load_or_prepare(
        layers: &[Csr],
        cache_dir: Option<&Path>,
    ) -> Result<(XyNetwork, CacheUse), XyError> {
        let Some(dir) = cache_dir else {
            return Ok((Self::prepare(layers)?, CacheUse::Disabled));
        };
        check_layers(layers)?;
        Self::load_or_prepare_at(layers, &cache_path(dir, layers), MAX_CACHE_FILE_BYTES)
    }

    /// [`XyNetwork::load_or_prepare`] with the cache file `path` (of `layers`, checked),
    /// reading and writing only files of at most `max_file_bytes`.
    fn load_or_prepare_at(
        layers: &[Csr],
        path: &Path,
        max_file_bytes: u64,
    ) -> Result<(XyNetwork, CacheUse), XyError> {
        let path = path.to_path_buf();
        let too_large = fs::metadata(&path).is_ok_and(|m| m.len() > max_file_bytes);
        match if too_large {
            Ok(None)
        } else {
            read_cache_file(&path)
        } {
            Ok(Some(network)) if network.describes(layers) => return Ok((network, CacheUse::Hit)),
            Ok(Some(_)) => eprintln!(
                "spdnn-xy: warning: {} does not match the layers; preparing again",
                path.display()
            ),
            Ok(None) => {}
            Err(error) => eprintln!(
                "spdnn-xy: warning: ignoring the XY cache file {}: {error}",
                path.display()
            ),
        }
        let network = Self::prepare(layers)?;
        if network.serialized_bytes() <= max_file_bytes
            && let Err(error) = write_cache_file(&path, &network)
        {
            eprintln!("spdnn-xy: warning: could not write the XY cache: {error}");
        }
        Ok((network, CacheUse::Miss))
    }

    /// The size of this network's cache file, in bytes (what [`XyNetwork::write_to`]
    /// writes).
    pub fn serialized_bytes(&self) -> u64 {
        let head = (MAGIC.len() + 20 + 8) as u64;
        let words: u64 = self
            .layers
            .iter()
            .map(|layer| {
                (4 + layer.block_offsets.len()
                    + layer.inputs.len()
                    + layer.values.len()
                    + layer.outputs.len()) as u64
            })
            .sum();
        head + 4 * words + 8 * self.layers.len() as u64
    }

    /// [`XyNetwork::load_or_prepare`] through the process's [`SharedXyNetworks`] as well:
    /// the network prepared (or read) last in this process, when `layers` have its
    /// fingerprint, without reading the file again (a [`CacheUse::Hit`]). Without a cache
    /// folder the network is prepared, as `load_or_prepare` does.
    pub fn load_or_prepare_shared(
        layers: &[Csr],
        cache_dir: Option<&Path>,
    ) -> Result<(Arc<XyNetwork>, CacheUse), XyError> {
        SHARED.load_or_prepare(layers, cache_dir)
    }

    /// Whether this network has the shape of `layers`: the layer count, every layer's
    /// rows and columns and its number of weights (a cheap guard against a misnamed cache
    /// file).
    fn describes(&self, layers: &[Csr]) -> bool {
        self.layers.len() == layers.len()
            && self
                .widths()
                .windows(2)
                .zip(&self.layers)
                .zip(layers)
                .all(|((pair, xy), layer)| {
                    (layer.nrows(), layer.ncols()) == (pair[0], pair[1])
                        && xy.values.len() == layer.nnz()
                })
    }
}

/// The XY network a process prepared last, by its cache file (whose name holds the
/// layers' [`fingerprint`]): every GPU's run of a benchmark, at every GPU count, prepares
/// the same network, and reading its file again costs seconds to minutes at N = 65536.
/// Callers asking at once wait for one preparation. Only the last network is kept.
#[derive(Default)]
pub struct SharedXyNetworks {
    last: Mutex<Option<(PathBuf, SharedCell)>>,
}

/// One shared preparation, filled by the first caller.
type SharedCell = Arc<Mutex<Option<Arc<XyNetwork>>>>;

impl SharedXyNetworks {
    /// A store that holds nothing yet.
    pub const fn new() -> Self {
        Self {
            last: Mutex::new(None),
        }
    }

    /// See [`XyNetwork::load_or_prepare_shared`].
    pub fn load_or_prepare(
        &self,
        layers: &[Csr],
        cache_dir: Option<&Path>,
    ) -> Result<(Arc<XyNetwork>, CacheUse), XyError> {
        let Some(dir) = cache_dir else {
            return Ok((Arc::new(XyNetwork::prepare(layers)?), CacheUse::Disabled));
        };
        check_layers(layers)?;
        let path = cache_path(dir, layers);
        let cell = {
            let mut last = lock(&self.last);
            match last.as_ref() {
                Some((held, cell)) if *held == path => cell.clone(),
                _ => {
                    let cell = SharedCell::default();
                    *last = Some((path.clone(), cell.clone()));
                    cell
                }
            }
        };
        let mut value = lock(&cell);
        if let Some(network) = value.as_ref()
            && network.describes(layers)
        {
            return Ok((network.clone(), CacheUse::Hit));
        }
        let (network, used) = XyNetwork::load_or_prepare_at(layers, &path, MAX_CACHE_FILE_BYTES)?;
        let network = Arc::new(network);
        *value = Some(network.clone());
        Ok((network, used))
    }

    /// Drops the network held (callers keep theirs).
    pub fn forget(&self) {
        *lock(&self.last) = None;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The process's store.
static SHARED: SharedXyNetworks = SharedXyNetworks::new();

/// Frees the XY network the process holds ([`XyNetwork::load_or_prepare_shared`]).
pub fn forget_shared() {
    SHARED.forget();
}

/// Version, N and layer count as the 20 header bytes.
fn header_bytes(version: u32, neurons: u64, layers: u64) -> [u8; 20] {
    let mut header = [0u8; 20];
    header[..4].copy_from_slice(&version.to_le_bytes());
    header[4..12].copy_from_slice(&neurons.to_le_bytes());
    header[12..].copy_from_slice(&layers.to_le_bytes());
    header
}

/// `N` bytes of `header` from `start` (the caller's ranges lie inside the header).
fn header_field<const N: usize>(header: &[u8; 20], start: usize) -> [u8; N] {
    let mut field = [0u8; N];
    field.copy_from_slice(&header[start..start + N]);
    field
}

/// Reads and checks record `index` (0-based) of a layer reading `inputs` positions (the
/// width before it); its width is `blocks · group`.
fn read_layer(r: &mut impl Read, index: u64, inputs: usize) -> Result<XyLayer, XyError> {
    let layer = index + 1;
    let invalid = |message: String| XyError::Invalid(format!("layer {layer}: {message}"));
    let mut sum = Xxh3::with_seed(index);
    let counts: Vec<u32> = read_array(r, &mut sum, 4, layer)?;
    let [group, blocks, inputs_len, max_input_runs] = [counts[0], counts[1], counts[2], counts[3]];
    if group != 1 && group as usize != GROUP {
        return Err(invalid(format!("group {group} is neither 1 nor {GROUP}")));
    }
    let width = u64::from(blocks) * u64::from(group);
    if width == 0 || width > u64::from(u32::MAX) {
        return Err(invalid(format!(
            "{blocks} blocks of {group} make {width} outputs (the format needs 1 ≤ outputs < 2^32)"
        )));
    }
    let width = usize::try_from(width)
        .map_err(|_| invalid(format!("{width} outputs do not fit this machine")))?;
    // A block reads each input position at most once.
    if u64::from(inputs_len) > u64::from(blocks) * inputs as u64 {
        return Err(invalid(format!(
            "{inputs_len} inputs for {blocks} blocks of {inputs} positions"
        )));
    }
    let too_large = || invalid(format!("{inputs_len} inputs do not fit this machine"));
    let offsets_len = (blocks as usize).checked_add(1).ok_or_else(too_large)?;
    let values_len = (inputs_len as usize)
        .checked_mul(group as usize)
        .ok_or_else(too_large)?;
    let block_offsets = read_array(r, &mut sum, offsets_len, layer)?;
    let inputs = read_array(r, &mut sum, inputs_len as usize, layer)?;
    let values = read_array(r, &mut sum, values_len, layer)?;
    let outputs = read_array(r, &mut sum, width, layer)?;
    let mut stored_sum = [0u8; 8];
    read_exact(
        r,
        &mut stored_sum,
        &format!("the checksum of layer {layer}"),
    )?;
    if u64::from_le_bytes(stored_sum) != sum.digest() {
        return Err(invalid("checksum mismatch".into()));
    }
    Ok(XyLayer {
        group,
        block_offsets,
        inputs,
        values,
        outputs,
        max_input_runs,
    })
}

/// Reads the cache file at `path`: `None` when there is none.
fn read_cache_file(path: &Path) -> Result<Option<XyNetwork>, XyError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(cause) if cause.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(cause) => return Err(file_error(path, cause)),
    };
    XyNetwork::read_from(&mut BufReader::new(file)).map(Some)
}

/// Writes `network` to `path` through a temporary file in the same folder.
fn write_cache_file(path: &Path, network: &XyNetwork) -> Result<(), XyError> {
    static TEMP_SERIAL: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|cause| file_error(dir, cause))?;
    let name = path
        .file_name()
        .map_or_else(|| "xy".into(), |name| name.to_string_lossy().into_owned());
    let temp = dir.join(format!(
        ".{name}.{}-{}.partial",
        std::process::id(),
        TEMP_SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let written = write_new_file(&temp, network)
        .and_then(|()| fs::rename(&temp, path).map_err(|cause| file_error(path, cause)));
    if written.is_err() {
        // The temporary file may not exist; its removal failing changes nothing.
        let _ = fs::remove_file(&temp);
    }
    written
}

/// Creates `path` (which must not exist) and writes `network` into it.
fn write_new_file(path: &Path, network: &XyNetwork) -> Result<(), XyError> {
    let file = File::options()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|cause| file_error(path, cause))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    network.write_to(&mut out).map_err(|error| match error {
        XyError::Io(cause) => file_error(path, cause),
        other => other,
    })?;
    out.flush().map_err(|cause| file_error(path, cause))
}

fn file_error(path: &Path, cause: io::Error) -> XyError {
    XyError::File {
        path: path.to_owned(),
        cause,
    }
}

/// A 32-bit word stored little-endian.
trait LeWord: Pod {
    /// Converts between this machine's order and little-endian (an involution).
    fn swap_le(self) -> Self;
}

impl LeWord for u32 {
    fn swap_le(self) -> Self {
        self.to_le()
    }
}

impl LeWord for f32 {
    fn swap_le(self) -> Self {
        f32::from_bits(self.to_bits().to_le())
    }
}

/// Writes `data` little-endian, adding the bytes written to `sum`.
fn write_array<T: LeWord>(w: &mut impl Write, sum: &mut Xxh3, data: &[T]) -> io::Result<()> {
    if cfg!(target_endian = "little") {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        sum.update(bytes);
        return w.write_all(bytes);
    }
    let mut buffer = Vec::with_capacity(data.len().min(READ_CHUNK));
    for chunk in data.chunks(READ_CHUNK) {
        buffer.clear();
        buffer.extend(chunk.iter().map(|&x| x.swap_le()));
        let bytes: &[u8] = bytemuck::cast_slice(&buffer);
        sum.update(bytes);
        w.write_all(bytes)?;
    }
    Ok(())
}

/// Reads `len` little-endian words of layer `layer`, adding their bytes to `sum`; the
/// array grows chunk by chunk with the data actually read.
fn read_array<T: LeWord>(
    r: &mut impl Read,
    sum: &mut Xxh3,
    len: usize,
    layer: u64,
) -> Result<Vec<T>, XyError> {
    let mut data: Vec<T> = Vec::with_capacity(len.min(READ_CHUNK));
    while data.len() < len {
        let start = data.len();
        data.resize(start + (len - start).min(READ_CHUNK), T::zeroed());
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut data[start..]);
        read_exact(r, bytes, &format!("layer {layer}"))?;
        sum.update(bytes);
    }
    if cfg!(target_endian = "big") {
        for x in &mut data {
            *x = x.swap_le();
        }
    }
    Ok(data)
}

/// `read_exact`, with the end of the data reported as a truncation inside `what`.
fn read_exact(r: &mut impl Read, buffer: &mut [u8], what: &str) -> Result<(), XyError> {
    r.read_exact(buffer).map_err(|cause| {
        if cause.kind() == io::ErrorKind::UnexpectedEof {
            XyError::Invalid(format!("the data ends inside {what} (truncated)"))
        } else {
            XyError::Io(cause)
        }
    })
}

/// One `read`, retried when interrupted.
fn read_some(r: &mut impl Read, buffer: &mut [u8]) -> Result<usize, XyError> {
    loop {
        match r.read(buffer) {
            Err(cause) if cause.kind() == io::ErrorKind::Interrupted => continue,
            result => return Ok(result?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small network with a grouped and a general layer.
    fn small_layers() -> Vec<Csr> {
        let mut grouped = Vec::new();
        for k in 0..32u32 {
            let first = if k % 2 == 0 { 3 } else { 7 };
            for j in [first, first + 1, 20] {
                grouped.push((j, k, (k * 32 + j) as f32 / 8.0));
            }
        }
        let general: Vec<(u32, u32, f32)> = (0..32)
            .flat_map(|k| (0..k % 3).map(move |d| ((k * 5 + d) % 32, k, 1.0 + d as f32)))
            .collect();
        vec![
            Csr::from_triplets(32, 32, &grouped).unwrap(),
            Csr::from_triplets(32, 32, &general).unwrap(),
        ]
    }

    fn serialized(network: &XyNetwork) -> Vec<u8> {
        let mut bytes = Vec::new();
        network.write_to(&mut bytes).unwrap();
        bytes
    }

    #[test]
    fn a_shared_network_is_prepared_once_per_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let store = SharedXyNetworks::new();
        let layers = small_layers();
        let (first, used) = store.load_or_prepare(&layers, Some(dir.path())).unwrap();
        assert_eq!(used, CacheUse::Miss);
        assert_eq!(*first, XyNetwork::prepare(&layers).unwrap());
        // The same layers, another allocation: the network held, the file not read.
        std::fs::remove_file(cache_path(dir.path(), &layers)).unwrap();
        let (again, used) = store
            .load_or_prepare(&layers.clone(), Some(dir.path()))
            .unwrap();
        assert_eq!(used, CacheUse::Hit);
        assert!(Arc::ptr_eq(&first, &again));
        // Other layers replace it; the first ones are then read from their file again.
        let other = spdnn_sdgc::generator::network(64, 2, 1).unwrap();
        let (second, _) = store
            .load_or_prepare(other.layers(), Some(dir.path()))
            .unwrap();
        assert_eq!(*second, XyNetwork::prepare(other.layers()).unwrap());
        let (back, used) = store.load_or_prepare(&layers, Some(dir.path())).unwrap();
        assert_eq!(used, CacheUse::Miss);
        assert!(!Arc::ptr_eq(&first, &back));
        assert_eq!(*back, *first);
        // No cache folder: prepared every time, nothing held.
        store.forget();
        let (plain, used) = store.load_or_prepare(&layers, None).unwrap();
        assert_eq!(used, CacheUse::Disabled);
        assert_eq!(*plain, *first);
        assert!(lock(&store.last).is_none());
        // Callers at once share one preparation.
        let all: Vec<Arc<XyNetwork>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| store.load_or_prepare(&layers, Some(dir.path())).unwrap().0))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(all.iter().all(|n| Arc::ptr_eq(n, &all[0])));
    }

    #[test]
    fn round_trip_is_equal() {
        let network = XyNetwork::prepare(&small_layers()).unwrap();
        assert!(network.layers[0].is_grouped() && !network.layers[1].is_grouped());
        let bytes = serialized(&network);
        assert_eq!(
            XyNetwork::read_from(&mut bytes.as_slice()).unwrap(),
            network
        );
        let generated = spdnn_sdgc::generator::network(512, 3, 2).unwrap();
        let network = XyNetwork::prepare(generated.layers()).unwrap();
        let bytes = serialized(&network);
        assert_eq!(
            XyNetwork::read_from(&mut bytes.as_slice()).unwrap(),
            network
        );
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let bytes = serialized(&XyNetwork::prepare(&small_layers()).unwrap());
        for index in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut corrupt = bytes.clone();
                corrupt[index] ^= flip;
                assert!(
                    XyNetwork::read_from(&mut corrupt.as_slice()).is_err(),
                    "flip {flip:#x} at byte {index} of {} went unnoticed",
                    bytes.len()
                );
            }
        }
    }

    #[test]
    fn every_truncation_and_any_trailing_byte_is_detected() {
        let mut bytes = serialized(&XyNetwork::prepare(&small_layers()).unwrap());
        for len in 0..bytes.len() {
            let error = XyNetwork::read_from(&mut &bytes[..len]).unwrap_err();
            assert!(
                matches!(error, XyError::Invalid(_)),
                "length {len}: {error}"
            );
        }
        bytes.push(0);
        let error = XyNetwork::read_from(&mut bytes.as_slice()).unwrap_err();
        assert!(error.to_string().contains("follow"), "{error}");
    }

    #[test]
    fn huge_claimed_sizes_fail_without_allocating_them() {
        // A header claiming N = 2^32 − 1 and 2^40 layers, with a valid checksum.
        let header = header_bytes(FORMAT_VERSION, u64::from(u32::MAX), 1 << 40);
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&header);
        bytes.extend_from_slice(&xxh3_64(&header).to_le_bytes());
        bytes.extend_from_slice(bytemuck::cast_slice(&[1u32, u32::MAX, 0, 0]));
        let error = XyNetwork::read_from(&mut bytes.as_slice()).unwrap_err();
        assert!(error.to_string().contains("truncated"), "{error}");
    }

    #[test]
    fn invalid_networks_are_not_written() {
        let mut network = XyNetwork::prepare(&small_layers()).unwrap();
        network.layers[1].inputs[0] = 40;
        assert!(matches!(
            network.write_to(&mut Vec::new()),
            Err(XyError::Invalid(_))
        ));
        network.layers.clear();
        assert!(matches!(
            network.write_to(&mut Vec::new()),
            Err(XyError::NoLayers)
        ));
    }

    #[test]
    fn fingerprints_follow_shapes_and_values() {
        let layers = small_layers();
        let base = fingerprint(&layers);
        assert_eq!(base, fingerprint(&small_layers()));
        let mut changed = layers.clone();
        let triplets: Vec<_> = changed[1]
            .triplets()
            .map(|(r, c, v)| (r, c, if (r, c) == (5, 1) { v + 1.0 } else { v }))
            .collect();
        changed[1] = Csr::from_triplets(32, 32, &triplets).unwrap();
        assert_ne!(base, fingerprint(&changed));
        assert_ne!(base, fingerprint(&layers[..1]));
        assert_ne!(fingerprint(&layers[..1]), fingerprint(&layers[1..]));
    }

    #[test]
    fn cache_misses_then_hits_and_replaces_corrupt_files() {
        let dir = tempfile::tempdir().unwrap();
        let layers = small_layers();
        let prepared = XyNetwork::prepare(&layers).unwrap();
        let (network, used) = XyNetwork::load_or_prepare(&layers, None).unwrap();
        assert_eq!((network == prepared, used), (true, CacheUse::Disabled));

        let (network, used) = XyNetwork::load_or_prepare(&layers, Some(dir.path())).unwrap();
        assert_eq!((network == prepared, used), (true, CacheUse::Miss));
        let path = cache_path(dir.path(), &layers);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(
            name,
            format!("xy-n32-l2-{:016x}.xybin", fingerprint(&layers))
        );
        let files: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(files.len(), 1, "only the cache file remains");

        let (network, used) = XyNetwork::load_or_prepare(&layers, Some(dir.path())).unwrap();
        assert_eq!((network == prepared, used), (true, CacheUse::Hit));

        let mut bytes = fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x10;
        fs::write(&path, &bytes).unwrap();
        let (network, used) = XyNetwork::load_or_prepare(&layers, Some(dir.path())).unwrap();
        assert_eq!((network == prepared, used), (true, CacheUse::Miss));
        assert_eq!(fs::read(&path).unwrap(), serialized(&prepared), "rewritten");
        let (_, used) = XyNetwork::load_or_prepare(&layers, Some(dir.path())).unwrap();
        assert_eq!(used, CacheUse::Hit);
    }

    #[test]
    fn files_over_the_limit_are_neither_written_nor_read() {
        let dir = tempfile::tempdir().unwrap();
        let layers = small_layers();
        let prepared = XyNetwork::prepare(&layers).unwrap();
        let size = prepared.serialized_bytes();
        assert_eq!(size, serialized(&prepared).len() as u64);
        let path = cache_path(dir.path(), &layers);
        // One byte under the file's size: prepared, not written.
        let (network, used) = XyNetwork::load_or_prepare_at(&layers, &path, size - 1).unwrap();
        assert_eq!((network == prepared, used), (true, CacheUse::Miss));
        assert!(!path.exists());
        // At the limit: written, then read.
        let (_, used) = XyNetwork::load_or_prepare_at(&layers, &path, size).unwrap();
        assert_eq!(used, CacheUse::Miss);
        assert_eq!(fs::read(&path).unwrap(), serialized(&prepared));
        let (_, used) = XyNetwork::load_or_prepare_at(&layers, &path, size).unwrap();
        assert_eq!(used, CacheUse::Hit);
        // A file over a smaller limit is not read (and left as it is).
        let (network, used) = XyNetwork::load_or_prepare_at(&layers, &path, size - 1).unwrap();
        assert_eq!((network == prepared, used), (true, CacheUse::Miss));
        assert!(path.exists());
    }

    #[test]
    fn an_unwritable_cache_is_a_miss_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the cache folder should be: the folder cannot be made.
        let blocked = dir.path().join("blocked");
        fs::write(&blocked, b"not a folder").unwrap();
        let layers = small_layers();
        let (network, used) = XyNetwork::load_or_prepare(&layers, Some(&blocked)).unwrap();
        assert_eq!(used, CacheUse::Miss);
        assert_eq!(network, XyNetwork::prepare(&layers).unwrap());
    }

    /// A chain of rectangular layers: 32 → 48 (grouped) → 20 (general) → 7.
    fn rectangular_layers() -> Vec<Csr> {
        let mut grouped = Vec::new();
        for k in 0..48u32 {
            let first = 3 * (k % 3);
            for j in [first, first + 1, 30] {
                grouped.push((j, k, (k * 48 + j) as f32 / 8.0));
            }
        }
        let general: Vec<(u32, u32, f32)> = (0..20)
            .flat_map(|k| (0..1 + k % 3).map(move |d| ((k * 7 + d * 5) % 48, k, 1.0 + d as f32)))
            .collect();
        let last: Vec<(u32, u32, f32)> = (0..20).map(|j| (j, j % 7, 0.5)).collect();
        vec![
            Csr::from_triplets(32, 48, &grouped).unwrap(),
            Csr::from_triplets(48, 20, &general).unwrap(),
            Csr::from_triplets(20, 7, &last).unwrap(),
        ]
    }

    #[test]
    fn rectangular_round_trip_is_equal_and_every_flip_is_detected() {
        let network = XyNetwork::prepare(&rectangular_layers()).unwrap();
        assert_eq!(network.widths(), [32, 48, 20, 7]);
        assert!(network.layers[0].is_grouped() && !network.layers[1].is_grouped());
        let bytes = serialized(&network);
        assert_eq!(
            XyNetwork::read_from(&mut bytes.as_slice()).unwrap(),
            network
        );
        for index in 0..bytes.len() {
            let mut corrupt = bytes.clone();
            corrupt[index] ^= 0x01;
            assert!(
                XyNetwork::read_from(&mut corrupt.as_slice()).is_err(),
                "a flip at byte {index} of {} went unnoticed",
                bytes.len()
            );
        }
        for len in 0..bytes.len() {
            assert!(XyNetwork::read_from(&mut &bytes[..len]).is_err());
        }
    }

    #[test]
    fn cache_files_follow_the_widths() {
        // One entry per layer, the same triplets in layers of other widths.
        let square = vec![Csr::from_triplets(32, 32, &[(1, 2, 1.0)]).unwrap()];
        let wide = vec![Csr::from_triplets(32, 48, &[(1, 2, 1.0)]).unwrap()];
        assert_ne!(fingerprint(&square), fingerprint(&wide));
        let dir = Path::new("cache");
        assert_ne!(cache_path(dir, &square), cache_path(dir, &wide));
        let prepared = XyNetwork::prepare(&square).unwrap();
        assert!(prepared.describes(&square));
        assert!(!prepared.describes(&wide), "a network of other widths");
        let rectangular = rectangular_layers();
        let network = XyNetwork::prepare(&rectangular).unwrap();
        assert!(network.describes(&rectangular));
        assert!(!network.describes(&rectangular[..2]));

        let dir = tempfile::tempdir().unwrap();
        for layers in [&square, &wide, &rectangular] {
            let (_, used) = XyNetwork::load_or_prepare(layers, Some(dir.path())).unwrap();
            assert_eq!(used, CacheUse::Miss);
        }
        for layers in [&square, &wide, &rectangular] {
            let (network, used) = XyNetwork::load_or_prepare(layers, Some(dir.path())).unwrap();
            assert_eq!(used, CacheUse::Hit);
            assert_eq!(network, XyNetwork::prepare(layers).unwrap());
        }
        // A misnamed file of other widths is not taken for these layers.
        fs::copy(
            cache_path(dir.path(), &wide),
            cache_path(dir.path(), &square),
        )
        .unwrap();
        let (network, used) = XyNetwork::load_or_prepare(&square, Some(dir.path())).unwrap();
        assert_eq!((network, used), (prepared, CacheUse::Miss));
    }

    #[test]
    fn a_record_wider_than_its_reader_allows_is_invalid() {
        let network = XyNetwork::prepare(&rectangular_layers()).unwrap();
        // Layer 3 reads 20 positions; position 30 is below N_0 = 32 and N_1 = 48 but not
        // below the 20 values layer 2 gives.
        let mut wrong = network.clone();
        wrong.layers[2].inputs[0] = 30;
        let error = wrong.validate().unwrap_err().to_string();
        assert!(
            error.contains("layer 3") && error.contains("not below"),
            "{error}"
        );
        assert!(matches!(
            wrong.write_to(&mut Vec::new()),
            Err(XyError::Invalid(_))
        ));
    }

    #[test]
    fn bad_layers_are_errors_even_with_a_cache() {
        let dir = tempfile::tempdir().unwrap();
        let error = XyNetwork::load_or_prepare(&[], Some(dir.path())).unwrap_err();
        assert!(matches!(error, XyError::NoLayers));
    }
}
