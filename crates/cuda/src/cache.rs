//! On-disk cache of compiled modules: PTX, or CUBINs (machine code for one architecture).
//!
//! An entry is keyed by the SHA-256 of (format tag, source text after header expansion,
//! arch, NVRTC options including the source's `--define-macro` definitions and its kernel
//! selection, NVRTC version, image kind). The file `<key>.ptx` or `<key>.cubin` starts with
//! three text lines: a format tag, the key, and the SHA-256 of the body; the body follows
//! (the PTX text, or the CUBIN's bytes). On a read the key and the body hash are checked,
//! and the body must look like its kind (PTX naming a `.target`, a CUBIN an ELF file); an
//! entry that fails a check (truncated, edited, renamed) is recompiled and overwritten,
//! never trusted. Writes go to a temporary file renamed into place, so a crash cannot leave
//! half an entry behind. Any I/O failure simply means "no cache": compilation still
//! succeeds.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::compile::{ELF_MAGIC, compile_text_to, nvrtc_version, validate_arch};
use crate::{CudaError, ImageKind, KernelSource, ModuleImage, selection_options};

const FORMAT_TAG: &str = "// spdnn-kernel-cache v2";

/// Where a module's image came from.
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

impl CacheOutcome {
    /// Whether NVRTC compiled it (anything but a hit).
    pub fn compiled(self) -> bool {
        self != CacheOutcome::Hit
    }
}

/// A folder of cached module images (or a disabled cache).
#[derive(Debug, Clone)]
pub struct KernelCache {
    dir: Option<PathBuf>,
}

impl KernelCache {
    /// The default folder: `$SPDNN_PTX_CACHE` if set (empty or `off` disables the
    /// cache), else `$XDG_CACHE_HOME/spdnn/ptx`, else `~/.cache/spdnn/ptx` (the names are
    /// older than the CUBINs the folder now holds too).
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
    pub fn open_default() -> KernelCache {
        match Self::default_location() {
            Some(dir) => Self::at(dir),
            None => Self::disabled(),
        }
    }

    /// A cache in `dir` (created if missing); disabled if it cannot be created.
    pub fn at(dir: impl Into<PathBuf>) -> KernelCache {
        let dir = dir.into();
        let usable = fs::create_dir_all(&dir).is_ok() && dir.is_dir();
        KernelCache {
            dir: usable.then_some(dir),
        }
    }

    /// A cache that never reads or writes anything.
    pub fn disabled() -> KernelCache {
        KernelCache { dir: None }
    }

    /// The cache folder, or `None` when disabled.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The file an entry of `kind` with `key` lives in (`None` when disabled).
    pub fn entry_path(&self, key: &str, kind: ImageKind) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(format!("{key}.{}", kind.name())))
    }

    /// The PTX of the whole of `source` (every kernel) for `arch`, from the cache when a
    /// valid entry exists.
    pub fn compile(&self, source: &KernelSource, arch: &str) -> Result<String, CudaError> {
        self.compile_with_outcome(source, arch).map(|(ptx, _)| ptx)
    }

    /// Like [`compile`](Self::compile), also saying where the PTX came from.
    pub fn compile_with_outcome(
        &self,
        source: &KernelSource,
        arch: &str,
    ) -> Result<(String, CacheOutcome), CudaError> {
        match self.compile_module(source, None, arch, ImageKind::Ptx)? {
            (ModuleImage::Ptx(ptx), outcome) => Ok((ptx, outcome)),
            (ModuleImage::Cubin(_), _) => Err(CudaError::Compile {
                file: source.name.to_string(),
                arch: arch.to_string(),
                log: "a CUBIN came back where PTX was asked for".into(),
            }),
        }
    }

    /// The image of `kind` of `source` for `arch`, holding only `kernel` (compiled with
    /// [`selection_options`]) or, with `None`, every kernel; from the cache when a valid
    /// entry exists.
    pub fn compile_module(
        &self,
        source: &KernelSource,
        kernel: Option<&str>,
        arch: &str,
        kind: ImageKind,
    ) -> Result<(ModuleImage, CacheOutcome), CudaError> {
        let text = source.expand_builtin()?;
        let mut options = source.nvrtc_options(arch)?;
        if let Some(kernel) = kernel {
            options.extend(selection_options(&[kernel]));
        }
        let compile = || compile_text_to(source.name, &text, arch, &options, kind);
        if !validate_arch(arch) {
            // Let the compiler produce the uniform error message.
            return compile().map(|image| (image, CacheOutcome::Uncached));
        }
        let version = nvrtc_version()?;
        let key = cache_key(&text, arch, &options, version, kind);
        let Some(path) = self.entry_path(&key, kind) else {
            return compile().map(|image| (image, CacheOutcome::Uncached));
        };
        let existed = match fs::read(&path) {
            Ok(bytes) => {
                if let Some(image) = parse_entry(&bytes, &key, kind) {
                    return Ok((image, CacheOutcome::Hit));
                }
                true
            }
            Err(_) => false,
        };
        let image = compile()?;
        // A failed write only means the next run compiles again.
        let _ = write_entry(&path, &key, image.bytes());
        let outcome = if existed {
            CacheOutcome::Recompiled
        } else {
            CacheOutcome::Compiled
        };
        Ok((image, outcome))
    }
}

/// The cache key: hex SHA-256 over the length-prefixed fields (format tag, expanded
/// source, arch, each option, NVRTC version, image kind), so no two different field lists
/// can collide by concatenation.
pub fn cache_key(
    expanded_source: &str,
    arch: &str,
    options: &[String],
    nvrtc_version: (i32, i32),
    kind: ImageKind,
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
    field(kind.name().as_bytes());
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn body_hash(body: &[u8]) -> String {
    hex(&Sha256::digest(body))
}

/// The first line of `bytes` (without its newline) and the rest, if it has a newline.
fn split_line(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let end = bytes.iter().position(|&b| b == b'\n')?;
    Some((std::str::from_utf8(&bytes[..end]).ok()?, &bytes[end + 1..]))
}

/// The image if `bytes` is a valid entry of `kind` for `key`.
fn parse_entry(bytes: &[u8], key: &str, kind: ImageKind) -> Option<ModuleImage> {
    let (tag, rest) = split_line(bytes)?;
    if tag != FORMAT_TAG {
        return None;
    }
    let (key_line, rest) = split_line(rest)?;
    if key_line.strip_prefix("// key ")? != key {
        return None;
    }
    let (hash_line, body) = split_line(rest)?;
    if body_hash(body) != hash_line.strip_prefix("// body-sha256 ")? {
        return None;
    }
    match kind {
        ImageKind::Ptx => {
            let ptx = std::str::from_utf8(body).ok()?;
            (!ptx.contains('\0') && ptx.contains(".target")).then(|| ModuleImage::Ptx(ptx.into()))
        }
        ImageKind::Cubin => body
            .starts_with(ELF_MAGIC)
            .then(|| ModuleImage::Cubin(body.to_vec())),
    }
}

fn write_entry(path: &Path, key: &str, body: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // Threads of one process may write the same entry at once: the thread is in the name.
    let thread = format!("{:?}", std::thread::current().id())
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>();
    let tmp = dir.join(format!(
        ".{key}.{}.{thread}.{nanos}.tmp",
        std::process::id()
    ));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        write!(
            file,
            "{FORMAT_TAG}\n// key {key}\n// body-sha256 {}\n",
            body_hash(body)
        )?;
        file.write_all(body)?;
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
        let key = |kind| cache_key("__global__ void k() {}\n", "sm_90", &opts(), (13, 0), kind);
        assert_eq!(key(ImageKind::Ptx).len(), 64);
        assert_eq!(key(ImageKind::Ptx), key(ImageKind::Ptx));
        assert_eq!(
            key(ImageKind::Ptx),
            GOLDEN_PTX_KEY,
            "cache key format changed"
        );
        assert_eq!(
            key(ImageKind::Cubin),
            GOLDEN_CUBIN_KEY,
            "cache key format changed"
        );
    }

    /// Computed independently with Python's hashlib over the documented layout.
    const GOLDEN_PTX_KEY: &str = "cc2941929acef1b3e8687da7eb843a0efd29ddb903d774b6589499e495db2a7b";
    const GOLDEN_CUBIN_KEY: &str =
        "7027fa41dbfde865967c63be19107da343bc951075f0b953e546a5c68049b8da";

    #[test]
    fn key_depends_on_every_field() {
        let ptx = ImageKind::Ptx;
        let base = cache_key("src", "sm_90", &opts(), (13, 0), ptx);
        assert_ne!(base, cache_key("src ", "sm_90", &opts(), (13, 0), ptx));
        assert_ne!(base, cache_key("src", "sm_80", &opts(), (13, 0), ptx));
        assert_ne!(base, cache_key("src", "sm_90", &opts()[..1], (13, 0), ptx));
        assert_ne!(base, cache_key("src", "sm_90", &opts(), (13, 1), ptx));
        assert_ne!(
            base,
            cache_key("src", "sm_90", &opts(), (13, 0), ImageKind::Cubin)
        );
        // Moving bytes between fields changes the key (length prefixes).
        assert_ne!(
            cache_key("ab", "sm_90", &["c".into()], (13, 0), ptx),
            cache_key("a", "sm_90", &["bc".into()], (13, 0), ptx)
        );
    }

    #[test]
    fn entry_round_trip_and_rejection() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.ptx");
        let ptx = ".version 9.0\n.target sm_90\n.address_size 64\n";
        write_entry(&path, "k", ptx.as_bytes()).unwrap();
        let bytes = fs::read(&path).unwrap();
        let kind = ImageKind::Ptx;
        assert_eq!(
            parse_entry(&bytes, "k", kind),
            Some(ModuleImage::Ptx(ptx.into()))
        );
        // Wrong key (a renamed file) is rejected.
        assert_eq!(parse_entry(&bytes, "other", kind), None);
        // Another kind is rejected (PTX is no ELF file).
        assert_eq!(parse_entry(&bytes, "k", ImageKind::Cubin), None);
        // Truncation is rejected.
        assert_eq!(parse_entry(&bytes[..bytes.len() - 5], "k", kind), None);
        // A flipped byte in the body is rejected.
        let mut flipped = bytes.clone();
        let last = flipped.len() - 2;
        flipped[last] ^= 0x01;
        assert_eq!(parse_entry(&flipped, "k", kind), None);
        // Garbage is rejected.
        assert_eq!(parse_entry(b"\xff\xfe garbage", "k", kind), None);
        assert_eq!(parse_entry(b"", "k", kind), None);

        // A binary body (any bytes, newlines and NULs included) round-trips.
        let cubin_path = dir.path().join("k.cubin");
        let cubin = b"\x7fELF\x02\x01\x01\0\n\n\xff\0".to_vec();
        write_entry(&cubin_path, "k", &cubin).unwrap();
        let bytes = fs::read(&cubin_path).unwrap();
        assert_eq!(
            parse_entry(&bytes, "k", ImageKind::Cubin),
            Some(ModuleImage::Cubin(cubin.clone()))
        );
        assert_eq!(
            parse_entry(&bytes[..bytes.len() - 1], "k", ImageKind::Cubin),
            None
        );
        // A body that is not an ELF file is no CUBIN, whatever its hash.
        write_entry(&cubin_path, "k", b"ELF but not quite").unwrap();
        assert_eq!(
            parse_entry(&fs::read(&cubin_path).unwrap(), "k", ImageKind::Cubin),
            None
        );
        // No temporary files are left behind.
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn unusable_folder_disables_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        fs::write(&file, b"x").unwrap();
        let cache = KernelCache::at(file.join("sub"));
        assert!(cache.dir().is_none());
        assert!(cache.entry_path("k", ImageKind::Cubin).is_none());
        assert!(KernelCache::disabled().dir().is_none());
        let ok = KernelCache::at(dir.path().join("ptx"));
        assert_eq!(ok.dir(), Some(dir.path().join("ptx").as_path()));
    }
}
