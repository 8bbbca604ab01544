//! The on-disk cache of S&Z's preprocessing: the reorderings of a network (one file per
//! network and block fill) and T4's turning-point profiles (one file per device and
//! kernel shape). Like xy's cache: the file name carries a content hash of the layers,
//! files are written atomically (a temporary file in the folder, then a rename), and a
//! missing, unreadable, corrupt or mismatched file is a miss that prepares again and
//! rewrites it; a folder that cannot be written draws a one-line warning, never an error.
//!
//! Reorderings file layout (little-endian):
//!
//! ```text
//! magic        8 bytes  "SPDNNSZ1"
//! version      u32      FORMAT_VERSION
//! fill         u32      the bits of SzOptions::min_fill
//! layers       u64      L
//! fingerprint  u64      fingerprint(layers)
//! header_sum   u64      xxh3-64 of version ‖ fill ‖ layers ‖ fingerprint
//! L records, record i (0-based) being
//!   outputs_len u64, inputs_len u64, tile_blocks_len u64, chunks_len u64,
//!   outputs, inputs, tile_blocks, chunks (each len × u32),
//!   sum u64 = xxh3-64 with seed i of everything in the record before it
//! ```
//!
//! Every record is checked against its layer ([`Reordering::validate`]) after reading.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use spdnn_formats::{Csr, SparseMatrix};
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

use crate::reorder::{Reordering, reorder_network};
use crate::t4::Profile;

/// The first 8 bytes of a reorderings file.
pub const MAGIC: [u8; 8] = *b"SPDNNSZ1";

/// The layout version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// What the preparation did with the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheUse {
    /// No cache folder was given: everything was computed.
    Disabled,
    /// Read from the cache.
    Hit,
    /// Computed (no usable file), and written to the cache if the folder allowed it.
    Miss,
}

impl CacheUse {
    /// `disabled`, `hit` or `miss`, for reports.
    pub fn name(self) -> &'static str {
        match self {
            CacheUse::Disabled => "disabled",
            CacheUse::Hit => "hit",
            CacheUse::Miss => "miss",
        }
    }
}

/// A content hash of `layers` ([`Csr::chain_content_hash`]): the cache file's key.
pub fn fingerprint(layers: &[Csr]) -> u64 {
    Csr::chain_content_hash(layers)
}

/// The reorderings file of `layers` at block fill `min_fill` in `dir`:
/// `sz-n{N_0}-l{L}-f{fill bits:08x}-{fingerprint:016x}.szbin`.
pub fn reorder_path(dir: &Path, layers: &[Csr], min_fill: f32) -> PathBuf {
    let neurons = layers.first().map_or(0, SparseMatrix::nrows);
    dir.join(format!(
        "sz-n{neurons}-l{}-f{:08x}-{:016x}.szbin",
        layers.len(),
        min_fill.to_bits(),
        fingerprint(layers)
    ))
}

fn header(fill: f32, layers: u64, fingerprint: u64) -> [u8; 24] {
    let mut h = [0u8; 24];
    h[..4].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[4..8].copy_from_slice(&fill.to_bits().to_le_bytes());
    h[8..16].copy_from_slice(&layers.to_le_bytes());
    h[16..].copy_from_slice(&fingerprint.to_le_bytes());
    h
}

/// The reorderings as the bytes of a file for layers of fingerprint `print`.
pub fn encode(reorderings: &[Reordering], min_fill: f32, print: u64) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    let h = header(min_fill, reorderings.len() as u64, print);
    out.extend_from_slice(&h);
    out.extend_from_slice(&xxh3_64(&h).to_le_bytes());
    for (i, r) in reorderings.iter().enumerate() {
        let start = out.len();
        let arrays = [&r.outputs, &r.inputs, &r.tile_blocks, &r.chunks];
        for a in arrays {
            out.extend_from_slice(&(a.len() as u64).to_le_bytes());
        }
        for a in arrays {
            for v in a.iter() {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        let sum = xxh3_64_with_seed(&out[start..], i as u64);
        out.extend_from_slice(&sum.to_le_bytes());
    }
    out
}

/// A cursor over a file's bytes that fails instead of reading past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| format!("the file ends inside {what}"))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    fn u32s(&mut self, n: u64, what: &str) -> Result<Vec<u32>, String> {
        let n = usize::try_from(n).map_err(|_| format!("{what}: {n} entries"))?;
        let bytes = self.take(n.checked_mul(4).ok_or("overflow")?, what)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect())
    }
}

/// Reads the reorderings of a file written by [`encode`] for `layers` at `min_fill`:
/// checks the magic, the version, the fill, the fingerprint, every checksum, that nothing
/// follows, and every reordering against its layer. Errors (never panics) on a mismatch.
pub fn decode(
    bytes: &[u8],
    layers: &[Csr],
    min_fill: f32,
    print: u64,
) -> Result<Vec<Reordering>, String> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(8, "the magic")? != MAGIC {
        return Err("not an sz reorderings file (wrong magic)".into());
    }
    let h: [u8; 24] = r.take(24, "the header")?.try_into().expect("24 bytes");
    let sum = r.u64("the header checksum")?;
    if sum != xxh3_64(&h) {
        return Err("header checksum mismatch".into());
    }
    let expected = header(min_fill, layers.len() as u64, print);
    if h[..4] != expected[..4] {
        return Err(format!(
            "layout version {}, this build reads version {FORMAT_VERSION}",
            u32::from_le_bytes(h[..4].try_into().expect("4 bytes"))
        ));
    }
    if h != expected {
        return Err("written for other layers or another block fill".into());
    }
    let mut out = Vec::with_capacity(layers.len());
    for (i, w) in layers.iter().enumerate() {
        let layer = i + 1;
        let start = r.at;
        let what = format!("layer {layer}");
        let lens = [r.u64(&what)?, r.u64(&what)?, r.u64(&what)?, r.u64(&what)?];
        let outputs = r.u32s(lens[0], &what)?;
        let inputs = r.u32s(lens[1], &what)?;
        let tile_blocks = r.u32s(lens[2], &what)?;
        let chunks = r.u32s(lens[3], &what)?;
        let sum = xxh3_64_with_seed(&bytes[start..r.at], i as u64);
        if r.u64(&what)? != sum {
            return Err(format!("layer {layer}: checksum mismatch"));
        }
        let reordering = Reordering {
            outputs,
            inputs,
            tile_blocks,
            chunks,
        };
        reordering
            .validate(w.nrows(), w.ncols())
            .map_err(|e| format!("layer {layer}: {e}"))?;
        out.push(reordering);
    }
    if r.at != bytes.len() {
        return Err("bytes follow the last layer".into());
    }
    Ok(out)
}

/// Writes `bytes` to `path` through a temporary file in the same folder.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map_or_else(|| "sz".into(), |n| n.to_string_lossy().into_owned());
    let temp = dir.join(format!(
        ".{name}.{}-{}.partial",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let written = fs::write(&temp, bytes).and_then(|()| fs::rename(&temp, path));
    if written.is_err() {
        // The temporary file may not exist; its removal failing changes nothing.
        let _ = fs::remove_file(&temp);
    }
    written
}

/// The reorderings of `layers` at `min_fill` ([`reorder_network`]) through a cache in
/// `cache_dir` (`None`: no cache), as the module docs describe.
pub fn load_or_reorder(
    layers: &[Csr],
    min_fill: f32,
    cache_dir: Option<&Path>,
) -> (Vec<Reordering>, CacheUse) {
    let Some(dir) = cache_dir else {
        return (reorder_network(layers, min_fill), CacheUse::Disabled);
    };
    let print = fingerprint(layers);
    let path = reorder_path(dir, layers, min_fill);
    match fs::read(&path) {
        Ok(bytes) => match decode(&bytes, layers, min_fill, print) {
            Ok(r) => return (r, CacheUse::Hit),
            Err(e) => eprintln!(
                "spdnn-sz: warning: ignoring the cache file {}: {e}",
                path.display()
            ),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => eprintln!(
            "spdnn-sz: warning: ignoring the cache file {}: {e}",
            path.display()
        ),
    }
    let reorderings = reorder_network(layers, min_fill);
    if let Err(e) = write_atomically(&path, &encode(&reorderings, min_fill, print)) {
        eprintln!(
            "spdnn-sz: warning: could not write the cache file {}: {e}",
            path.display()
        );
    }
    (reorderings, CacheUse::Miss)
}

/// `name` with every character but ASCII letters, digits, `-` and `_` as `_`.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The profile file of `kernel` on `device` in `dir`: `sz-t4-{device}-{kernel}.json`.
pub fn profile_path(dir: &Path, device: &str, kernel: &str) -> PathBuf {
    dir.join(format!(
        "sz-t4-{}-{}.json",
        file_safe(device),
        file_safe(kernel)
    ))
}

/// The cached profile of `kernel` on `device`, when a readable one for them is there.
pub fn load_profile(dir: &Path, device: &str, kernel: &str) -> Option<Profile> {
    let path = profile_path(dir, device, kernel);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            eprintln!(
                "spdnn-sz: warning: ignoring the profile {}: {e}",
                path.display()
            );
            return None;
        }
    };
    match serde_json::from_str::<Profile>(&text) {
        Ok(p)
            if p.device == device
                && p.kernel == kernel
                && p.ratio.is_finite()
                && p.ratio >= 0.0 =>
        {
            Some(p)
        }
        Ok(_) => {
            eprintln!(
                "spdnn-sz: warning: {} does not match the device or kernel; profiling again",
                path.display()
            );
            None
        }
        Err(e) => {
            eprintln!(
                "spdnn-sz: warning: ignoring the profile {}: {e}",
                path.display()
            );
            None
        }
    }
}

/// Writes `profile` to the cache in `dir` (a warning when it cannot).
pub fn store_profile(dir: &Path, profile: &Profile) {
    let path = profile_path(dir, &profile.device, &profile.kernel);
    let written = serde_json::to_vec_pretty(profile)
        .map_err(io::Error::other)
        .and_then(|bytes| write_atomically(&path, &bytes));
    if let Err(e) = written {
        eprintln!(
            "spdnn-sz: warning: could not write the profile {}: {e}",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::t4::{ProfilePoint, TwoStage};

    fn net() -> Vec<Csr> {
        spdnn_sdgc::generator::network(256, 3, 5)
            .unwrap()
            .layers()
            .to_vec()
    }

    #[test]
    fn reorderings_round_trip_and_corruption_is_an_error() {
        let layers = net();
        let r = reorder_network(&layers, 0.25);
        let print = fingerprint(&layers);
        let bytes = encode(&r, 0.25, print);
        assert_eq!(decode(&bytes, &layers, 0.25, print).unwrap(), r);
        assert!(decode(&bytes, &layers, 0.5, print).is_err(), "other fill");
        assert!(decode(&bytes, &layers[..2], 0.25, print).is_err());
        assert!(decode(&bytes[..bytes.len() - 1], &layers, 0.25, print).is_err());
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(decode(&extra, &layers, 0.25, print).is_err());
        for at in [0, 9, 40, 100, bytes.len() / 2, bytes.len() - 3] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            assert!(decode(&bad, &layers, 0.25, print).is_err(), "byte {at}");
        }
    }

    #[test]
    fn the_cache_misses_then_hits_and_replaces_corrupt_files() {
        let layers = net();
        let dir = tempfile::tempdir().unwrap();
        let (first, used) = load_or_reorder(&layers, 0.25, Some(dir.path()));
        assert_eq!(used, CacheUse::Miss);
        let (second, used) = load_or_reorder(&layers, 0.25, Some(dir.path()));
        assert_eq!((used, &second), (CacheUse::Hit, &first));
        let path = reorder_path(dir.path(), &layers, 0.25);
        fs::write(&path, b"garbage").unwrap();
        assert_eq!(
            load_or_reorder(&layers, 0.25, Some(dir.path())).1,
            CacheUse::Miss
        );
        assert_eq!(
            load_or_reorder(&layers, 0.25, Some(dir.path())).1,
            CacheUse::Hit
        );
        assert_eq!(load_or_reorder(&layers, 0.25, None).1, CacheUse::Disabled);
        let files = fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, 1, "no temporary file is left");
        // A file where the folder should be: a miss with a warning, not an error.
        let blocked = dir.path().join("file");
        fs::write(&blocked, b"x").unwrap();
        let (r, used) = load_or_reorder(&layers, 0.25, Some(&blocked.join("sub")));
        assert_eq!((used, r), (CacheUse::Miss, first));
    }

    #[test]
    fn profiles_round_trip_per_device_and_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile {
            device: "NVIDIA H200 / test".into(),
            kernel: "sz_layer_r64_t4_c4".into(),
            tc_ms: 0.5,
            points: vec![ProfilePoint {
                cc_tiles: 0,
                task_ratio: 0.0,
                load_ratio: 0.0,
                normalized: 1.0,
            }],
            model: TwoStage {
                turning: 1.0,
                co_slope: 0.1,
                co_intercept: 1.0,
                solo_slope: 1.0,
                solo_intercept: 0.1,
            },
            ratio: 0.75,
        };
        assert!(load_profile(dir.path(), &profile.device, &profile.kernel).is_none());
        store_profile(dir.path(), &profile);
        let path = profile_path(dir.path(), &profile.device, &profile.kernel);
        assert!(
            path.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("sz-t4-NVIDIA_H200___test-")
        );
        assert_eq!(
            load_profile(dir.path(), &profile.device, &profile.kernel),
            Some(profile.clone())
        );
        assert!(load_profile(dir.path(), "other", &profile.kernel).is_none());
        fs::write(&path, "{").unwrap();
        assert!(load_profile(dir.path(), &profile.device, &profile.kernel).is_none());
    }
}
