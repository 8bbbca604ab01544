//! A checksummed binary cache of a network or an input, loaded far faster than the text.
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! magic      8 bytes  "SPDNNBIN"
//! version    u32      FORMAT_VERSION
//! kind       u32      1 = network, 2 = input
//! header_len u32      then header_len bytes of header:
//!                       network: neurons u64, layers u64
//!                       input:   rows u64, cols u64, origin (tag u8: 0 file, 1 mnist,
//!                                2 synthetic; file: path_len u32 + UTF-8 path;
//!                                synthetic: seed u64)
//! header_sum u64      xxh3 of version ‖ kind ‖ header_len ‖ header
//! records    one per layer (a network) or one (an input), record i being
//!              nnz u64, encoding u8, row_offsets (rows + 1) × u32,
//!              col_indices nnz × u16 (encoding bit 0: when cols ≤ 65536) or × u32,
//!              values: one f32 (encoding bit 1: all values bitwise equal, nnz ≥ 1)
//!              or nnz × f32,
//!              then sum u64 = xxh3 with seed i of all of the record before it
//! ```
//!
//! The compact encodings cut an official layer (N ≤ 65536, one weight value) from 8 to
//! 2 bytes an entry, which is what makes loading fast: less to read, hash and copy.
//!
//! Nothing follows the last record. A flipped byte anywhere, a truncated file, a wrong
//! magic or version gives an error naming the file; every matrix read is also checked
//! by [`Csr::from_parts`], so a cache never yields an invalid or a wrong network.
//!
//! Writers write to `{path}.partial` and rename it to `path` in `finish`, so an
//! interrupted write never leaves a file that looks complete.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use crate::{Input, InputOrigin, Network, SdgcError};

/// The first 8 bytes of every cache file.
pub const MAGIC: [u8; 8] = *b"SPDNNBIN";

/// The layout version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

const KIND_NETWORK: u32 = 1;
const KIND_INPUT: u32 = 2;
/// Record encoding bit: column indices stored as `u16`.
const NARROW_COLS: u8 = 1;
/// Record encoding bit: one value stored for all entries.
const CONSTANT_VALUES: u8 = 2;
/// The most columns whose indices fit `u16`.
const NARROW_LIMIT: usize = 1 << 16;
/// Headers are tiny; a larger length is corruption.
const MAX_HEADER_LEN: u32 = 1 << 20;

/// Whether `path` is a file that starts with [`MAGIC`] (false when it cannot be read).
pub fn is_cache(path: &Path) -> bool {
    let mut head = [0u8; 8];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head == MAGIC
}

/// Writes a cache file: the header, then one checksummed record per matrix.
struct CacheWriter {
    path: PathBuf,
    partial: PathBuf,
    out: Option<BufWriter<File>>,
    records: u64,
}

impl CacheWriter {
    fn create(path: &Path, kind: u32, header: &[u8]) -> Result<Self, SdgcError> {
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let file = File::create(&partial).map_err(|e| SdgcError::io(&partial, e))?;
        let mut writer = Self {
            path: path.to_path_buf(),
            partial,
            out: Some(BufWriter::with_capacity(1 << 20, file)),
            records: 0,
        };
        let mut summed = Vec::with_capacity(12 + header.len());
        summed.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        summed.extend_from_slice(&kind.to_le_bytes());
        summed.extend_from_slice(&(header.len() as u32).to_le_bytes());
        summed.extend_from_slice(header);
        writer.write(&MAGIC)?;
        writer.write(&summed)?;
        writer.write(&xxh3_64(&summed).to_le_bytes())?;
        Ok(writer)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), SdgcError> {
        match self.out.as_mut() {
            Some(out) => out
                .write_all(bytes)
                .map_err(|e| SdgcError::io(&self.partial, e)),
            None => Err(SdgcError::invalid(
                &self.path,
                "the cache writer is already finished",
            )),
        }
    }

    fn push(&mut self, matrix: &Csr) -> Result<(), SdgcError> {
        let nnz = (matrix.nnz() as u64).to_le_bytes();
        let narrow = matrix.ncols() <= NARROW_LIMIT;
        let first = matrix.values().first().map(|v| v.to_bits());
        let constant = first.is_some_and(|b| matrix.values().iter().all(|v| v.to_bits() == b));
        let encoding = [(u8::from(narrow) * NARROW_COLS) | (u8::from(constant) * CONSTANT_VALUES)];
        let offsets = le_bytes(matrix.row_offsets());
        let cols: std::borrow::Cow<'_, [u8]> = if narrow {
            matrix
                .col_indices()
                .iter()
                .flat_map(|&c| (c as u16).to_le_bytes())
                .collect::<Vec<u8>>()
                .into()
        } else {
            le_bytes(matrix.col_indices())
        };
        let vals = if constant {
            le_bytes(&matrix.values()[..1])
        } else {
            le_bytes(matrix.values())
        };
        let mut hasher = Xxh3::with_seed(self.records);
        for part in [&nnz[..], &encoding, &offsets, &cols, &vals] {
            hasher.update(part);
        }
        for part in [&nnz[..], &encoding, &offsets, &cols, &vals] {
            self.write(part)?;
        }
        self.write(&hasher.digest().to_le_bytes())?;
        self.records += 1;
        Ok(())
    }

    fn finish(mut self) -> Result<(), SdgcError> {
        let Some(out) = self.out.take() else {
            return Err(SdgcError::invalid(
                &self.path,
                "the cache writer is already finished",
            ));
        };
        // No fsync: a file torn by a crash fails its checksums when read.
        let file = out
            .into_inner()
            .map_err(|e| SdgcError::io(&self.partial, e.into_error()))?;
        drop(file);
        std::fs::rename(&self.partial, &self.path).map_err(|e| SdgcError::io(&self.path, e))
    }
}

impl Drop for CacheWriter {
    fn drop(&mut self) {
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

/// Reads a cache file: checks the header, then hands out verified matrices.
struct CacheReader {
    path: PathBuf,
    input: Box<dyn Read + Send>,
    /// Bytes not yet read.
    remaining: u64,
    records: u64,
}

impl CacheReader {
    /// Opens `path`, checks magic, version, kind and the header checksum, and returns the
    /// reader with the header bytes.
    fn open(path: &Path, kind: u32) -> Result<(Self, Vec<u8>), SdgcError> {
        let file = File::open(path).map_err(|e| SdgcError::io(path, e))?;
        let length = file.metadata().map_err(|e| SdgcError::io(path, e))?.len();
        let input = Box::new(BufReader::with_capacity(1 << 16, file));
        Self::start(path, input, length, kind)
    }

    /// [`open`](Self::open) over the bytes of a file; `path` names it in errors.
    fn over_bytes(bytes: &[u8], path: &Path, kind: u32) -> Result<(Self, Vec<u8>), SdgcError> {
        let input = Box::new(std::io::Cursor::new(bytes.to_vec()));
        Self::start(path, input, bytes.len() as u64, kind)
    }

    /// Checks the header of `input` (`length` bytes) as [`open`](Self::open) does.
    fn start(
        path: &Path,
        input: Box<dyn Read + Send>,
        length: u64,
        kind: u32,
    ) -> Result<(Self, Vec<u8>), SdgcError> {
        let mut reader = Self {
            path: path.to_path_buf(),
            input,
            remaining: length,
            records: 0,
        };
        let mut magic = [0u8; 8];
        reader.read(&mut magic, "the magic")?;
        if magic != MAGIC {
            return Err(SdgcError::invalid(
                path,
                "not an spdnn cache file (wrong magic)",
            ));
        }
        let mut fixed = [0u8; 12];
        reader.read(&mut fixed, "the header")?;
        let word =
            |k: usize| u32::from_le_bytes([fixed[k], fixed[k + 1], fixed[k + 2], fixed[k + 3]]);
        let (version, found_kind, header_len) = (word(0), word(4), word(8));
        if version != FORMAT_VERSION {
            return Err(SdgcError::invalid(
                path,
                format!(
                    "cache format version {version}, this build reads version {FORMAT_VERSION}: rebuild the cache"
                ),
            ));
        }
        if header_len > MAX_HEADER_LEN || u64::from(header_len) + 8 > reader.remaining {
            return Err(SdgcError::invalid(
                path,
                "corrupt cache: impossible header length",
            ));
        }
        let mut header = vec![0u8; header_len as usize];
        reader.read(&mut header, "the header")?;
        let sum = reader.read_u64("the header checksum")?;
        let mut summed = fixed.to_vec();
        summed.extend_from_slice(&header);
        if xxh3_64(&summed) != sum {
            return Err(SdgcError::invalid(
                path,
                "corrupt cache: the header checksum does not match",
            ));
        }
        if found_kind != kind {
            let name = |k| match k {
                KIND_NETWORK => "a network",
                KIND_INPUT => "an input",
                _ => "an unknown kind of",
            };
            return Err(SdgcError::invalid(
                path,
                format!("is {} cache, not {} cache", name(found_kind), name(kind)),
            ));
        }
        Ok((reader, header))
    }

    fn read(&mut self, buffer: &mut [u8], what: &str) -> Result<(), SdgcError> {
        if buffer.len() as u64 > self.remaining {
            return Err(self.truncated(what));
        }
        self.input.read_exact(buffer).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                self.truncated(what)
            } else {
                SdgcError::io(&self.path, e)
            }
        })?;
        self.remaining -= buffer.len() as u64;
        Ok(())
    }

    fn read_u64(&mut self, what: &str) -> Result<u64, SdgcError> {
        let mut bytes = [0u8; 8];
        self.read(&mut bytes, what)?;
        Ok(u64::from_le_bytes(bytes))
    }

    fn truncated(&self, what: &str) -> SdgcError {
        SdgcError::invalid(
            &self.path,
            format!("truncated cache: the file ends inside {what}"),
        )
    }

    /// Reads the next record of an `nrows × ncols` matrix, unverified; `what` names it.
    fn read_record(
        &mut self,
        nrows: usize,
        ncols: usize,
        what: String,
    ) -> Result<RawRecord, SdgcError> {
        let mut head = [0u8; 9];
        self.read(&mut head, &what)?;
        let nnz = u64::from_le_bytes([
            head[0], head[1], head[2], head[3], head[4], head[5], head[6], head[7],
        ]);
        let encoding = head[8];
        let narrow = encoding & NARROW_COLS != 0;
        let constant = encoding & CONSTANT_VALUES != 0;
        let fits = nnz <= u64::from(u32::MAX)
            && nnz <= (nrows as u64).saturating_mul(ncols as u64)
            && encoding & !(NARROW_COLS | CONSTANT_VALUES) == 0
            && (!narrow || ncols <= NARROW_LIMIT)
            && (!constant || nnz > 0);
        let col_bytes = nnz.saturating_mul(if narrow { 2 } else { 4 });
        let val_bytes = if constant { 4 } else { nnz.saturating_mul(4) };
        let size = (nrows as u64 + 1)
            .saturating_mul(4)
            .saturating_add(col_bytes)
            .saturating_add(val_bytes)
            .saturating_add(8);
        if !fits || size > self.remaining {
            return Err(if fits {
                self.truncated(&what)
            } else {
                SdgcError::invalid(
                    &self.path,
                    format!("corrupt cache: impossible sizes in {what}"),
                )
            });
        }
        let nnz = nnz as usize;
        let mut offsets = vec![0u32; nrows + 1];
        self.read(bytemuck::cast_slice_mut(&mut offsets), &what)?;
        let cols = if narrow {
            let mut cols = vec![0u16; nnz];
            self.read(bytemuck::cast_slice_mut(&mut cols), &what)?;
            RawCols::Narrow(cols)
        } else {
            let mut cols = vec![0u32; nnz];
            self.read(bytemuck::cast_slice_mut(&mut cols), &what)?;
            RawCols::Wide(cols)
        };
        let mut vals = vec![0f32; if constant { 1 } else { nnz }];
        self.read(bytemuck::cast_slice_mut(&mut vals), &what)?;
        let sum = self.read_u64(&what)?;
        let index = self.records;
        self.records += 1;
        Ok(RawRecord {
            index,
            head,
            offsets,
            cols,
            vals,
            nnz,
            sum,
            nrows,
            ncols,
            what,
        })
    }

    /// Checks that nothing follows the last record.
    fn expect_end(&mut self) -> Result<(), SdgcError> {
        if self.remaining != 0 {
            return Err(SdgcError::invalid(
                &self.path,
                format!(
                    "corrupt cache: {} unexpected bytes after the last record",
                    self.remaining
                ),
            ));
        }
        Ok(())
    }
}

/// Column indices as stored.
enum RawCols {
    /// `u16`s in file byte order.
    Narrow(Vec<u16>),
    /// `u32`s in file byte order.
    Wide(Vec<u32>),
}

/// A record as stored: arrays still in file byte order, checksum not yet compared.
struct RawRecord {
    index: u64,
    head: [u8; 9],
    offsets: Vec<u32>,
    cols: RawCols,
    /// One value (constant encoding) or `nnz`.
    vals: Vec<f32>,
    nnz: usize,
    sum: u64,
    nrows: usize,
    ncols: usize,
    what: String,
}

impl RawRecord {
    /// Compares the checksum, then decodes and builds the matrix (checking every invariant).
    fn verify(mut self, path: &Path) -> Result<Csr, SdgcError> {
        let mut hasher = Xxh3::with_seed(self.index);
        hasher.update(&self.head);
        hasher.update(bytemuck::cast_slice(&self.offsets));
        match &self.cols {
            RawCols::Narrow(cols) => hasher.update(bytemuck::cast_slice(cols)),
            RawCols::Wide(cols) => hasher.update(bytemuck::cast_slice(cols)),
        }
        hasher.update(bytemuck::cast_slice(&self.vals));
        if hasher.digest() != self.sum {
            return Err(SdgcError::invalid(
                path,
                format!(
                    "corrupt cache: the checksum of {} does not match",
                    self.what
                ),
            ));
        }
        let big_endian = cfg!(target_endian = "big");
        if big_endian {
            self.offsets.iter_mut().for_each(|v| *v = u32::from_le(*v));
            self.vals
                .iter_mut()
                .for_each(|v| *v = f32::from_bits(u32::from_le(v.to_bits())));
        }
        let cols = match self.cols {
            RawCols::Narrow(cols) => cols.iter().map(|&c| u32::from(u16::from_le(c))).collect(),
            RawCols::Wide(mut cols) => {
                if big_endian {
                    cols.iter_mut().for_each(|v| *v = u32::from_le(*v));
                }
                cols
            }
        };
        let vals = if self.vals.len() == self.nnz {
            self.vals
        } else {
            vec![self.vals[0]; self.nnz]
        };
        Csr::from_parts(self.nrows, self.ncols, self.offsets, cols, vals).map_err(|e| {
            SdgcError::Matrix {
                path: path.to_path_buf(),
                cause: e,
            }
        })
    }
}

/// The little-endian bytes of `words` (borrowed on little-endian machines).
fn le_bytes<T: bytemuck::Pod>(words: &[T]) -> std::borrow::Cow<'_, [u8]> {
    let bytes: &[u8] = bytemuck::cast_slice(words);
    if cfg!(target_endian = "little") {
        std::borrow::Cow::Borrowed(bytes)
    } else {
        let size = std::mem::size_of::<T>();
        std::borrow::Cow::Owned(
            bytes
                .chunks_exact(size)
                .flat_map(|w| w.iter().rev().copied())
                .collect(),
        )
    }
}

/// Reads little-endian integers out of a header.
struct HeaderCursor<'a> {
    bytes: &'a [u8],
}

impl HeaderCursor<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }

    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// Streams a network into a cache file layer by layer (a network larger than memory can
/// be cached as it is generated or parsed).
pub struct NetworkCacheWriter {
    inner: CacheWriter,
    neurons: usize,
    layers: usize,
    pushed: usize,
}

impl NetworkCacheWriter {
    /// Starts a cache of an `neurons`-neuron, `layers`-layer network at `path`.
    pub fn create(path: &Path, neurons: usize, layers: usize) -> Result<Self, SdgcError> {
        if neurons == 0 || neurons > u32::MAX as usize || layers == 0 {
            return Err(SdgcError::Parameter(format!(
                "cannot cache a network of N = {neurons} and {layers} layers"
            )));
        }
        let mut header = Vec::with_capacity(16);
        header.extend_from_slice(&(neurons as u64).to_le_bytes());
        header.extend_from_slice(&(layers as u64).to_le_bytes());
        let inner = CacheWriter::create(path, KIND_NETWORK, &header)?;
        Ok(Self {
            inner,
            neurons,
            layers,
            pushed: 0,
        })
    }

    /// Appends the next layer; errors when it is not `N × N` or all layers were pushed.
    pub fn push_layer(&mut self, layer: &Csr) -> Result<(), SdgcError> {
        if self.pushed == self.layers {
            return Err(SdgcError::invalid(
                &self.inner.path,
                format!("the cache was created for {} layers", self.layers),
            ));
        }
        if layer.nrows() != self.neurons || layer.ncols() != self.neurons {
            return Err(SdgcError::invalid(
                &self.inner.path,
                format!(
                    "layer {} is {}x{}, the cache holds {n}x{n} layers",
                    self.pushed + 1,
                    layer.nrows(),
                    layer.ncols(),
                    n = self.neurons
                ),
            ));
        }
        self.inner.push(layer)?;
        self.pushed += 1;
        Ok(())
    }

    /// Completes the file; errors when fewer layers than announced were pushed.
    pub fn finish(self) -> Result<(), SdgcError> {
        if self.pushed != self.layers {
            return Err(SdgcError::invalid(
                &self.inner.path,
                format!(
                    "only {} of the {} layers were written",
                    self.pushed, self.layers
                ),
            ));
        }
        self.inner.finish()
    }
}

/// Streams the layers out of a network cache, each verified before it is returned.
pub struct NetworkCacheReader {
    inner: CacheReader,
    neurons: usize,
    layers: usize,
    read: usize,
}

impl NetworkCacheReader {
    /// Opens a network cache, checking magic, version, kind and header.
    pub fn open(path: &Path) -> Result<Self, SdgcError> {
        let (inner, header) = CacheReader::open(path, KIND_NETWORK)?;
        Self::with_header(inner, header, path)
    }

    /// [`open`](Self::open) over the bytes of a cache file; `path` names it in errors.
    pub fn over_bytes(bytes: &[u8], path: &Path) -> Result<Self, SdgcError> {
        let (inner, header) = CacheReader::over_bytes(bytes, path, KIND_NETWORK)?;
        Self::with_header(inner, header, path)
    }

    fn with_header(inner: CacheReader, header: Vec<u8>, path: &Path) -> Result<Self, SdgcError> {
        let mut cursor = HeaderCursor { bytes: &header };
        let (neurons, layers) = match (cursor.u64(), cursor.u64(), cursor.bytes.is_empty()) {
            (Some(n), Some(l), true) if n >= 1 && n <= u64::from(u32::MAX) && l >= 1 => {
                (n as usize, l as usize)
            }
            _ => {
                return Err(SdgcError::invalid(
                    path,
                    "corrupt cache: bad network header",
                ));
            }
        };
        // Every record holds at least its count, encoding, N + 1 offsets and checksum.
        let smallest_record = 17 + 4 * (neurons as u64 + 1);
        if (layers as u64).saturating_mul(smallest_record) > inner.remaining {
            return Err(SdgcError::invalid(
                path,
                format!("truncated cache: {layers} layers of N = {neurons} cannot fit the file"),
            ));
        }
        Ok(Self {
            inner,
            neurons,
            layers,
            read: 0,
        })
    }

    /// N.
    pub fn neurons(&self) -> usize {
        self.neurons
    }

    /// The number of layers in the file.
    pub fn layers(&self) -> usize {
        self.layers
    }

    /// The next layer, or `None` after the last one (then the end of the file is checked).
    pub fn next_layer(&mut self) -> Result<Option<Csr>, SdgcError> {
        if self.read == self.layers {
            self.inner.expect_end()?;
            return Ok(None);
        }
        let what = format!("layer {}", self.read + 1);
        let record = self.inner.read_record(self.neurons, self.neurons, what)?;
        self.read += 1;
        record.verify(&self.inner.path).map(Some)
    }

    /// The next `count` layers (fewer at the end of the file): read in turn, then checked
    /// and built in parallel.
    pub(crate) fn next_layers(&mut self, count: usize) -> Result<Vec<Csr>, SdgcError> {
        let mut records = Vec::with_capacity(count);
        while records.len() < count && self.read < self.layers {
            let what = format!("layer {}", self.read + 1);
            records.push(self.inner.read_record(self.neurons, self.neurons, what)?);
            self.read += 1;
        }
        let path = &self.inner.path;
        records
            .into_par_iter()
            .map(|record| record.verify(path))
            .collect()
    }
}

/// Reads the first `layers` layers of the network cache opened as `reader`, a window of
/// a few per thread at a time checked in parallel, calling `progress(k)` after each.
pub(crate) fn read_layers(
    reader: &mut NetworkCacheReader,
    layers: usize,
    progress: &mut dyn FnMut(usize),
) -> Result<Network, SdgcError> {
    if layers == 0 || layers > reader.layers() {
        return Err(SdgcError::invalid(
            &reader.inner.path,
            format!(
                "the cache holds {} layers, {layers} were asked for",
                reader.layers()
            ),
        ));
    }
    let window = 2 * rayon::current_num_threads().max(1);
    let mut read = Vec::with_capacity(layers);
    while read.len() < layers {
        let batch = reader.next_layers(window.min(layers - read.len()))?;
        if batch.is_empty() {
            return Err(SdgcError::invalid(
                &reader.inner.path,
                "the cache ended early",
            ));
        }
        for layer in batch {
            read.push(layer);
            progress(read.len());
        }
    }
    Network::new(reader.neurons(), read)
}

/// Writes `network` as a cache file. A network with per-neuron biases is refused (the cache
/// holds the challenge's networks; `.safetensors` holds trained ones).
pub fn write_network(path: &Path, network: &Network) -> Result<(), SdgcError> {
    if network.biases().is_some() {
        return Err(SdgcError::invalid(
            path,
            "the cache does not hold per-neuron biases: write the network as .safetensors",
        ));
    }
    let mut writer = NetworkCacheWriter::create(path, network.neurons(), network.num_layers())?;
    for layer in network.layers() {
        writer.push_layer(layer)?;
    }
    writer.finish()
}

/// Reads a network cache: all its layers (`None`, checking that nothing follows), or the
/// first `layers` (an error when it holds fewer).
pub fn read_network(path: &Path, layers: Option<usize>) -> Result<Network, SdgcError> {
    read_network_from(NetworkCacheReader::open(path)?, path, layers)
}

/// [`read_network`] of the bytes of a cache file; `path` names it in errors.
pub fn parse_network(
    bytes: &[u8],
    path: &Path,
    layers: Option<usize>,
) -> Result<Network, SdgcError> {
    read_network_from(NetworkCacheReader::over_bytes(bytes, path)?, path, layers)
}

fn read_network_from(
    mut reader: NetworkCacheReader,
    path: &Path,
    layers: Option<usize>,
) -> Result<Network, SdgcError> {
    let wanted = layers.unwrap_or(reader.layers());
    let network = read_layers(&mut reader, wanted, &mut |_| {})?;
    if layers.is_none() && reader.next_layer()?.is_some() {
        return Err(SdgcError::invalid(
            path,
            "the cache holds more layers than announced",
        ));
    }
    Ok(network)
}

const ORIGIN_FILE: u8 = 0;
const ORIGIN_MNIST: u8 = 1;
const ORIGIN_SYNTHETIC: u8 = 2;

/// Writes `input` (its rows and its origin) as a cache file.
pub fn write_input(path: &Path, input: &Input) -> Result<(), SdgcError> {
    let features = &input.features;
    let mut header = Vec::new();
    header.extend_from_slice(&(features.nrows() as u64).to_le_bytes());
    header.extend_from_slice(&(features.ncols() as u64).to_le_bytes());
    match &input.origin {
        InputOrigin::File { path: origin } => {
            header.push(ORIGIN_FILE);
            header.extend_from_slice(&(origin.len() as u32).to_le_bytes());
            header.extend_from_slice(origin.as_bytes());
        }
        InputOrigin::Mnist => header.push(ORIGIN_MNIST),
        InputOrigin::Synthetic { seed } => {
            header.push(ORIGIN_SYNTHETIC);
            header.extend_from_slice(&seed.to_le_bytes());
        }
    }
    let mut writer = CacheWriter::create(path, KIND_INPUT, &header)?;
    writer.push(features)?;
    writer.finish()
}

/// Reads an input cache: its rows and where they came from.
pub fn read_input(path: &Path) -> Result<Input, SdgcError> {
    let (reader, header) = CacheReader::open(path, KIND_INPUT)?;
    read_input_from(reader, header, path)
}

/// [`read_input`] of the bytes of a cache file; `path` names it in errors.
pub fn parse_input(bytes: &[u8], path: &Path) -> Result<Input, SdgcError> {
    let (reader, header) = CacheReader::over_bytes(bytes, path, KIND_INPUT)?;
    read_input_from(reader, header, path)
}

fn read_input_from(
    mut reader: CacheReader,
    header: Vec<u8>,
    path: &Path,
) -> Result<Input, SdgcError> {
    let bad = || SdgcError::invalid(path, "corrupt cache: bad input header");
    let mut cursor = HeaderCursor { bytes: &header };
    let rows = cursor
        .u64()
        .filter(|&r| r <= u64::from(u32::MAX))
        .ok_or_else(bad)? as usize;
    let cols = cursor
        .u64()
        .filter(|&c| c <= u64::from(u32::MAX))
        .ok_or_else(bad)? as usize;
    let origin = match cursor.take(1).ok_or_else(bad)?[0] {
        ORIGIN_FILE => {
            let len = cursor.u32().ok_or_else(bad)? as usize;
            let bytes = cursor.take(len).ok_or_else(bad)?;
            let origin = String::from_utf8(bytes.to_vec()).map_err(|_| bad())?;
            InputOrigin::File { path: origin }
        }
        ORIGIN_MNIST => InputOrigin::Mnist,
        ORIGIN_SYNTHETIC => InputOrigin::Synthetic {
            seed: cursor.u64().ok_or_else(bad)?,
        },
        _ => return Err(bad()),
    };
    if !cursor.bytes.is_empty() {
        return Err(bad());
    }
    let features = reader
        .read_record(rows, cols, "the input".into())?
        .verify(path)?;
    reader.expect_end()?;
    Ok(Input { features, origin })
}
