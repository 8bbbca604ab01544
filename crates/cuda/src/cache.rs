//! On-disk PTX cache.
//!
//! An entry is keyed by the SHA-256 of (source text after header expansion, arch,
//! NVRTC options including the source's `--define-macro` definitions, NVRTC version). The file `<key>.ptx` starts with three comment
//! lines: a format tag, the key, and the SHA-256 of the PTX body. On a read the key
//! and the body hash are checked; an entry that fails either check (truncated,
//! edited, renamed) is recompiled and overwritten, never trusted. Writes go to a
//! temporary file renamed into place, so a crash cannot leave half an entry behind.
//! Any I/O failure simply means "no cache": compilation still succeeds.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::compile::{compile_text, nvrtc_version, validate_arch};
use crate::{CudaError, KernelSource};

const FORMAT_TAG: &str = "// spdnn-ptx-cache v1";

/// Where a PTX came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Read from a valid cache entry.
    Hit,
    /// Compiled; no entry existed (a new one was written if the folder is writable).
    Compiled,
    /// An entry existed but failed validation; compiled and overwritten.
    Recompiled,
    /// The cache is disabled; compiled.
    Uncached,
}

/// A folder of cached PTX files (or a disabled cache).
#[derive(Debug, Clone)]
pub struct PtxCache {
    dir: Option<PathBuf>,
}

impl PtxCache {
    /// The default folder: `$SPDNN_PTX_CACHE` if set (empty or `off` disables the
    /// cache), else `$XDG_CACHE_HOME/spdnn/ptx`, else `~/.cache/spdnn/ptx`.
    pub fn default_location() -> Option<PathBuf> {
        if let Some(value) = std::env::var_os("SPDNN_PTX_CACHE") {
            if value.is_empty() || value == "off" {
                return None;
            }
            return Some(PathBuf::from(value));
        }
        if let Some(xdg) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(xdg).join("spdnn").join("ptx"));
        }
        std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .map(|home| PathBuf::from(home).join(".cache").join("spdnn").join("ptx"))
    }

    /// The cache at [`default_location`](Self::default_location), disabled when there
    /// is none or it cannot be created.
    pub fn open_default() -> PtxCache {
        match Self::default_location() {
            Some(dir) => Self::at(dir),
            None => Self::disabled(),
        }
    }

    /// A cache in `dir` (created if missing); disabled if it cannot be created.
    pub fn at(dir: impl Into<PathBuf>) -> PtxCache {
        let dir = dir.into();
        let usable = fs::create_dir_all(&dir).is_ok() && dir.is_dir();
        PtxCache {
            dir: usable.then_some(dir),
        }
    }

    /// A cache that never reads or writes anything.
    pub fn disabled() -> PtxCache {
        PtxCache { dir: None }
    }

    /// The cache folder, or `None` when disabled.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The file an entry with `key` lives in (`None` when disabled).
    pub fn entry_path(&self, key: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(format!("{key}.ptx")))
    }

    /// PTX for `source` on `arch`, from the cache when a valid entry exists.
    pub fn compile(&self, source: &KernelSource, arch: &str) -> Result<String, CudaError> {
        self.compile_with_outcome(source, arch).map(|(ptx, _)| ptx)
    }

    /// Like [`compile`](Self::compile), also saying where the PTX came from.
    pub fn compile_with_outcome(
        &self,
        source: &KernelSource,
        arch: &str,
    ) -> Result<(String, CacheOutcome), CudaError> {
        let text = source.expand_builtin()?;
        let options = source.nvrtc_options(arch)?;
        if !validate_arch(arch) {
            // Let the compiler produce the uniform error message.
            return compile_text(source.name, &text, arch, &options)
                .map(|p| (p, CacheOutcome::Uncached));
        }
        let version = nvrtc_version()?;
        let key = cache_key(&text, arch, &options, version);
        let Some(path) = self.entry_path(&key) else {
            let ptx = compile_text(source.name, &text, arch, &options)?;
            return Ok((ptx, CacheOutcome::Uncached));
        };
        let existed = match fs::read(&path) {
            Ok(bytes) => {
                if let Some(ptx) = parse_entry(&bytes, &key) {
                    return Ok((ptx, CacheOutcome::Hit));
                }
                true
            }
            Err(_) => false,
        };
        let ptx = compile_text(source.name, &text, arch, &options)?;
        // A failed write only means the next run compiles again.
        let _ = write_entry(&path, &key, &ptx);
        let outcome = if existed {
            CacheOutcome::Recompiled
        } else {
            CacheOutcome::Compiled
        };
        Ok((ptx, outcome))
    }
}

/// The cache key: hex SHA-256 over the length-prefixed fields (expanded source, arch,
/// each option, NVRTC version), so no two different field lists can collide by
/// concatenation.
pub fn cache_key(
    expanded_source: &str,
    arch: &str,
    options: &[String],
    nvrtc_version: (i32, i32),
) -> String {
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    field(FORMAT_TAG.as_bytes());
    field(expanded_source.as_bytes());
    field(arch.as_bytes());
    field(&(options.len() as u64).to_le_bytes());
    for option in options {
        field(option.as_bytes());
    }
    field(format!("nvrtc {}.{}", nvrtc_version.0, nvrtc_version.1).as_bytes());
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn body_hash(body: &str) -> String {
    hex(&Sha256::digest(body.as_bytes()))
}

/// The PTX body if `bytes` is a valid entry for `key`.
fn parse_entry(bytes: &[u8], key: &str) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut parts = text.splitn(4, '\n');
    if parts.next()? != FORMAT_TAG {
        return None;
    }
    if parts.next()?.strip_prefix("// key ")? != key {
        return None;
    }
    let expected_hash = parts.next()?.strip_prefix("// body-sha256 ")?;
    let body = parts.next()?;
    if body_hash(body) != expected_hash || body.contains('\0') || !body.contains(".target") {
        return None;
    }
    Some(body.to_string())
}

fn write_entry(path: &Path, key: &str, ptx: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let tmp = dir.join(format!(".{key}.{}.{nanos}.tmp", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        write!(
            file,
            "{FORMAT_TAG}\n// key {key}\n// body-sha256 {}\n{ptx}",
            body_hash(ptx)
        )?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::nvrtc_options;

    fn opts() -> Vec<String> {
        nvrtc_options("sm_90")
    }

    #[test]
    fn key_is_stable_across_runs() {
        // A golden value: if this changes, every user's cache is invalidated, which
        // must be a deliberate decision (bump FORMAT_TAG then).
        let key = cache_key("__global__ void k() {}\n", "sm_90", &opts(), (13, 0));
        assert_eq!(key.len(), 64);
        assert_eq!(
            key,
            cache_key("__global__ void k() {}\n", "sm_90", &opts(), (13, 0))
        );
        assert_eq!(key, GOLDEN_KEY, "cache key format changed");
    }

    /// Computed independently with Python's hashlib over the documented layout.
    const GOLDEN_KEY: &str = "e49622adbfd8aa5ebc176136fb249075a8abc4845edf3218bfe153fb0a3ed84f";

    #[test]
    fn key_depends_on_every_field() {
        let base = cache_key("src", "sm_90", &opts(), (13, 0));
        assert_ne!(base, cache_key("src ", "sm_90", &opts(), (13, 0)));
        assert_ne!(base, cache_key("src", "sm_80", &opts(), (13, 0)));
        assert_ne!(base, cache_key("src", "sm_90", &opts()[..1], (13, 0)));
        assert_ne!(base, cache_key("src", "sm_90", &opts(), (13, 1)));
        // Moving bytes between fields changes the key (length prefixes).
        assert_ne!(
            cache_key("ab", "sm_90", &["c".into()], (13, 0)),
            cache_key("a", "sm_90", &["bc".into()], (13, 0))
        );
    }

    #[test]
    fn entry_round_trip_and_rejection() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.ptx");
        let ptx = ".version 9.0\n.target sm_90\n.address_size 64\n";
        write_entry(&path, "k", ptx).unwrap();
        let bytes = fs::read(&path).unwrap();
        assert_eq!(parse_entry(&bytes, "k").as_deref(), Some(ptx));
        // Wrong key (a renamed file) is rejected.
        assert_eq!(parse_entry(&bytes, "other"), None);
        // Truncation is rejected.
        assert_eq!(parse_entry(&bytes[..bytes.len() - 5], "k"), None);
        // A flipped byte in the body is rejected.
        let mut flipped = bytes.clone();
        let last = flipped.len() - 2;
        flipped[last] ^= 0x01;
        assert_eq!(parse_entry(&flipped, "k"), None);
        // Garbage is rejected.
        assert_eq!(parse_entry(b"\xff\xfe garbage", "k"), None);
        assert_eq!(parse_entry(b"", "k"), None);
        // No temporary files are left behind.
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn unusable_folder_disables_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        fs::write(&file, b"x").unwrap();
        let cache = PtxCache::at(file.join("sub"));
        assert!(cache.dir().is_none());
        assert!(cache.entry_path("k").is_none());
        assert!(PtxCache::disabled().dir().is_none());
        let ok = PtxCache::at(dir.path().join("ptx"));
        assert_eq!(ok.dir(), Some(dir.path().join("ptx").as_path()));
    }
}
