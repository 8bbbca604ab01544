//! NVRTC compilation (works without a GPU or a driver) and library presence checks.

use std::ffi::{CStr, CString, c_char, c_int};
use std::path::Path;
use std::sync::OnceLock;

use cudarc::nvrtc::{result as nvrtc, sys as nvrtc_sys};

use crate::{CudaError, KernelSource};

/// Options passed to NVRTC after `--gpu-architecture=…`. `--use_fast_math` is
/// deliberately absent: kernels must give IEEE fp32 results (approximate division,
/// square root and flush-to-zero would break agreement with the CPU reference).
pub const NVRTC_OPTIONS: &[&str] = &["-std=c++17", "-lineinfo"];

/// Whether the NVRTC library can be loaded. Never panics; the answer is cached.
pub fn nvrtc_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: is_culib_present only tries to dlopen candidate names and drops them.
    *PRESENT.get_or_init(|| unsafe { nvrtc_sys::is_culib_present() })
}

/// Whether the CUDA driver library (libcuda) can be loaded. Never panics; cached.
pub fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: is_culib_present only tries to dlopen candidate names and drops them.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

/// The loaded NVRTC's version as `(major, minor)`, e.g. `(13, 0)`.
pub fn nvrtc_version() -> Result<(i32, i32), CudaError> {
    static VERSION: OnceLock<(i32, i32)> = OnceLock::new();
    if let Some(v) = VERSION.get() {
        return Ok(*v);
    }
    if !nvrtc_present() {
        return Err(CudaError::NoNvrtc);
    }
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: the library is present; both pointers are valid for writes.
    let status = unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) };
    if status != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(CudaError::Compile {
            file: "-".into(),
            arch: "-".into(),
            log: format!("nvrtcVersion failed: {status:?}"),
        });
    }
    Ok(*VERSION.get_or_init(|| (major, minor)))
}

/// The real architectures the loaded NVRTC can compile for, as numbers (`90` for `sm_90`),
/// ascending. Cached.
pub fn nvrtc_supported_archs() -> Result<Vec<i32>, CudaError> {
    static ARCHS: OnceLock<Vec<i32>> = OnceLock::new();
    if let Some(archs) = ARCHS.get() {
        return Ok(archs.clone());
    }
    if !nvrtc_present() {
        return Err(CudaError::NoNvrtc);
    }
    let fail = |what: &str, status: nvrtc_sys::nvrtcResult| CudaError::Compile {
        file: "-".into(),
        arch: "-".into(),
        log: format!("{what} failed: {status:?}"),
    };
    let mut count: c_int = 0;
    // SAFETY: the library is present; count is valid for writes.
    let status = unsafe { nvrtc_sys::nvrtcGetNumSupportedArchs(&mut count) };
    if status != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(fail("nvrtcGetNumSupportedArchs", status));
    }
    let mut archs: Vec<c_int> = vec![0; count.max(0) as usize];
    // SAFETY: archs holds the `count` ints NVRTC writes.
    let status = unsafe { nvrtc_sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) };
    if status != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(fail("nvrtcGetSupportedArchs", status));
    }
    archs.sort_unstable();
    Ok(ARCHS.get_or_init(|| archs).clone())
}

/// What a device's modules are compiled to: an architecture name and the kind of image.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CompileTarget {
    /// The NVRTC architecture, `sm_90` or `compute_90`.
    pub arch: String,
    /// CUBIN for a real architecture NVRTC targets, else PTX.
    pub kind: ImageKind,
}

/// The target for a device of compute capability `(major, minor)` when NVRTC supports the
/// real architectures `supported` (ascending numbers, [`nvrtc_supported_archs`]):
///
/// - a CUBIN for `sm_XY` when NVRTC targets `XY`: machine code the driver loads as it is;
/// - else PTX for `compute_ZZ`, the newest `ZZ` below `XY` that NVRTC targets (a device
///   newer than this NVRTC): the driver compiles it to the device's code when it loads it;
/// - else (a device older than every architecture NVRTC targets) a CUBIN for `sm_XY`, which
///   NVRTC refuses with a message naming the architecture.
///
/// `force_ptx` asks for PTX for `sm_XY` (the driver compiles it at load time), as spdnn did
/// before CUBINs (`SPDNN_KERNEL_IMAGE=ptx`).
pub fn compile_target(
    (major, minor): (i32, i32),
    supported: &[i32],
    force_ptx: bool,
) -> CompileTarget {
    let number = major * 10 + minor;
    if force_ptx {
        return CompileTarget {
            arch: format!("sm_{number}"),
            kind: ImageKind::Ptx,
        };
    }
    if supported.contains(&number) {
        return CompileTarget {
            arch: format!("sm_{number}"),
            kind: ImageKind::Cubin,
        };
    }
    match supported.iter().copied().filter(|&a| a < number).max() {
        Some(older) => CompileTarget {
            arch: format!("compute_{older}"),
            kind: ImageKind::Ptx,
        },
        None => CompileTarget {
            arch: format!("sm_{number}"),
            kind: ImageKind::Cubin,
        },
    }
}

/// Whether `SPDNN_KERNEL_IMAGE=ptx` asks for PTX images (the driver compiles them when it
/// loads them) instead of CUBINs; any other value, or none, means CUBINs where possible.
pub fn ptx_forced() -> bool {
    std::env::var_os("SPDNN_KERNEL_IMAGE").is_some_and(|v| v == "ptx")
}

/// Checks that `arch` looks like `sm_90`, `sm_90a`, `compute_80`, …
pub fn validate_arch(arch: &str) -> bool {
    let digits = arch
        .strip_prefix("sm_")
        .or_else(|| arch.strip_prefix("compute_"));
    let Some(rest) = digits else { return false };
    let rest = rest
        .strip_suffix('a')
        .or_else(|| rest.strip_suffix('f'))
        .unwrap_or(rest);
    (2..=3).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_digit())
}

/// The full NVRTC option list for `arch`, without a source's definitions (see
/// [`KernelSource::nvrtc_options`]).
pub fn nvrtc_options(arch: &str) -> Vec<String> {
    let mut options = vec![format!("--gpu-architecture={arch}")];
    options.extend(NVRTC_OPTIONS.iter().map(|s| s.to_string()));
    options
}

impl KernelSource {
    /// The NVRTC options this source is compiled with for `arch`: [`nvrtc_options`], then
    /// its definitions. Errors when a definition is malformed or given twice.
    pub fn nvrtc_options(&self, arch: &str) -> Result<Vec<String>, CudaError> {
        let mut options = nvrtc_options(arch);
        options.extend(self.define_options()?);
        Ok(options)
    }
}

/// Compiles `source` (with [`crate::BUILTIN_HEADERS`] inlined, and its definitions) to PTX
/// for `arch` (e.g. `"sm_90"`). Needs only NVRTC, no GPU and no driver. No cache is
/// involved; see [`crate::KernelCache`] for the cached path.
pub fn compile_ptx(source: &KernelSource, arch: &str) -> Result<String, CudaError> {
    let text = source.expand_builtin()?;
    let options = source.nvrtc_options(arch)?;
    compile_text(source.name, &text, arch, &options)
}

/// Compiles `source` as a user lifting it would: its text as it is, NVRTC resolving its
/// `#include "…"` lines from `include_dirs` (`--include-path=DIR`), with its definitions.
/// No textual inlining, no cache.
pub fn compile_ptx_with_include_dirs(
    source: &KernelSource,
    arch: &str,
    include_dirs: &[&Path],
) -> Result<String, CudaError> {
    let mut options = source.nvrtc_options(arch)?;
    options.extend(
        include_dirs
            .iter()
            .map(|dir| format!("--include-path={}", dir.display())),
    );
    compile_text(source.name, source.source, arch, &options)
}

/// What NVRTC is asked to hand back for a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// PTX: virtual code that the driver compiles to machine code when it loads the module
    /// (every process, uncached); any architecture, `sm_XX` or `compute_XX`.
    Ptx,
    /// A CUBIN: machine code (SASS) for one real architecture (`sm_XX`), loaded as it is.
    Cubin,
}

impl ImageKind {
    /// `"ptx"` or `"cubin"` (cache file extension and key field).
    pub fn name(self) -> &'static str {
        match self {
            ImageKind::Ptx => "ptx",
            ImageKind::Cubin => "cubin",
        }
    }
}

/// A compiled module, ready for the driver to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleImage {
    /// PTX text.
    Ptx(String),
    /// A CUBIN (an ELF file).
    Cubin(Vec<u8>),
}

impl ModuleImage {
    /// Its kind.
    pub fn kind(&self) -> ImageKind {
        match self {
            ModuleImage::Ptx(_) => ImageKind::Ptx,
            ModuleImage::Cubin(_) => ImageKind::Cubin,
        }
    }

    /// Its bytes (the PTX text's, or the CUBIN's).
    pub fn bytes(&self) -> &[u8] {
        match self {
            ModuleImage::Ptx(ptx) => ptx.as_bytes(),
            ModuleImage::Cubin(cubin) => cubin,
        }
    }
}

/// The first bytes of an ELF file, which a CUBIN is.
pub(crate) const ELF_MAGIC: &[u8] = b"\x7fELF";

/// Compiles `text` with exactly `options` (which should start with [`nvrtc_options`]`(arch)`);
/// `name` is used in messages and as the NVRTC program name, `arch` is checked and named
/// in errors. Returns the PTX.
pub fn compile_text(
    name: &str,
    text: &str,
    arch: &str,
    options: &[String],
) -> Result<String, CudaError> {
    match compile_text_to(name, text, arch, options, ImageKind::Ptx)? {
        ModuleImage::Ptx(ptx) => Ok(ptx),
        ModuleImage::Cubin(_) => Err(CudaError::Compile {
            file: name.to_string(),
            arch: arch.to_string(),
            log: "NVRTC handed back a CUBIN where PTX was asked for".into(),
        }),
    }
}

/// [`compile_text`], handing back `kind`: PTX, or a CUBIN, which needs a real
/// architecture (`sm_XX`; `compute_XX` is an error naming it).
pub fn compile_text_to(
    name: &str,
    text: &str,
    arch: &str,
    options: &[String],
    kind: ImageKind,
) -> Result<ModuleImage, CudaError> {
    let fail = |log: String| CudaError::Compile {
        file: name.to_string(),
        arch: arch.to_string(),
        log,
    };
    if !validate_arch(arch) {
        return Err(fail(format!(
            "invalid GPU architecture {arch:?}: expected something like \"sm_90\""
        )));
    }
    if kind == ImageKind::Cubin && !arch.starts_with("sm_") {
        return Err(fail(format!(
            "a CUBIN is machine code for a real architecture (sm_XX), not {arch:?}"
        )));
    }
    if !nvrtc_present() {
        return Err(CudaError::NoNvrtc);
    }
    let c_text = CString::new(text).map_err(|_| fail("the source contains a NUL byte".into()))?;
    let c_name =
        CString::new(name).map_err(|_| fail("the file name contains a NUL byte".into()))?;
    if options.iter().any(|o| o.contains('\0')) {
        return Err(fail("an option contains a NUL byte".into()));
    }

    let program = nvrtc::create_program(&c_text, Some(&c_name))
        .map_err(|e| fail(format!("nvrtcCreateProgram failed: {:?}", e.0)))?;
    let program = ProgramGuard(program);
    // SAFETY: program is a live NVRTC program; options hold no NUL bytes.
    let compiled = unsafe { nvrtc::compile_program(program.0, options) };
    if let Err(e) = compiled {
        // SAFETY: program is live.
        let log = unsafe { nvrtc::get_program_log(program.0) }
            .map(|raw| c_chars_to_string(&raw))
            .unwrap_or_else(|e| format!("(the NVRTC log could not be read: {:?})", e.0));
        let hint = if e.0 == nvrtc_sys::nvrtcResult::NVRTC_ERROR_BUILTIN_OPERATION_FAILURE {
            "\nhint: NVRTC could not open libnvrtc-builtins.so; put the folder holding it \
             (the same as libnvrtc.so.13) on LD_LIBRARY_PATH"
        } else {
            ""
        };
        return Err(fail(format!(
            "{:?} with options {:?}\n{}{hint}",
            e.0,
            options,
            log.trim_end()
        )));
    }
    match kind {
        ImageKind::Ptx => {
            // SAFETY: program is live and compiled.
            let ptx = unsafe { nvrtc::get_ptx(program.0) }
                .map_err(|e| fail(format!("nvrtcGetPTX failed: {:?}", e.0)))?;
            Ok(ModuleImage::Ptx(c_chars_to_string(&ptx)))
        }
        ImageKind::Cubin => {
            // SAFETY: program is live and compiled for a real architecture.
            let cubin = unsafe { get_cubin(program.0) }
                .map_err(|e| fail(format!("nvrtcGetCUBIN failed: {e:?}")))?;
            if !cubin.starts_with(ELF_MAGIC) {
                return Err(fail("NVRTC's CUBIN is not an ELF file".into()));
            }
            Ok(ModuleImage::Cubin(cubin))
        }
    }
}

/// The CUBIN of a compiled program (cudarc's `result` module has no wrapper for it).
///
/// # Safety
/// `program` must be a live NVRTC program, compiled.
unsafe fn get_cubin(program: nvrtc_sys::nvrtcProgram) -> Result<Vec<u8>, nvrtc_sys::nvrtcResult> {
    let mut size = 0usize;
    // SAFETY: program is live (the caller's promise); size is valid for writes.
    let status = unsafe { nvrtc_sys::nvrtcGetCUBINSize(program, &mut size) };
    if status != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(status);
    }
    let mut cubin = vec![0u8; size];
    // SAFETY: cubin holds the `size` bytes NVRTC said it writes.
    let status = unsafe { nvrtc_sys::nvrtcGetCUBIN(program, cubin.as_mut_ptr().cast()) };
    if status != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(status);
    }
    Ok(cubin)
}

/// Destroys the NVRTC program on every exit path.
struct ProgramGuard(nvrtc_sys::nvrtcProgram);

impl Drop for ProgramGuard {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed exactly once. A failure
        // here only leaks the program, so it is ignored.
        let _ = unsafe { nvrtc::destroy_program(self.0) };
    }
}

/// NUL-terminated (or not) C chars to a String, replacing invalid UTF-8.
fn c_chars_to_string(raw: &[c_char]) -> String {
    // c_char is i8 or u8 depending on the platform; reinterpret the bytes.
    let bytes: Vec<u8> = raw.iter().map(|&c| c as u8).collect();
    match CStr::from_bytes_until_nul(&bytes) {
        Ok(c) => c.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_validation() {
        for ok in [
            "sm_75",
            "sm_80",
            "sm_90",
            "sm_90a",
            "compute_90",
            "sm_100",
            "sm_120f",
        ] {
            assert!(validate_arch(ok), "{ok}");
        }
        for bad in [
            "", "sm_", "sm_9", "90", "sm_90b", "sm_9x", "gfx90a", "sm_1000", "sm90",
        ] {
            assert!(!validate_arch(bad), "{bad}");
        }
    }

    #[test]
    fn options_have_arch_and_no_fast_math() {
        let o = nvrtc_options("sm_80");
        assert_eq!(o[0], "--gpu-architecture=sm_80");
        assert!(o.iter().any(|s| s == "-std=c++17"));
        assert!(
            !o.iter()
                .any(|s| s.contains("fast_math") || s.contains("fast-math"))
        );
    }

    #[test]
    fn bad_arch_is_a_compile_error_even_without_nvrtc() {
        let err = compile_ptx(&crate::SELFTEST, "sm90").unwrap_err();
        match &err {
            CudaError::Compile { file, arch, log } => {
                assert_eq!(file, "selftest.cu");
                assert_eq!(arch, "sm90");
                assert!(log.contains("invalid GPU architecture"));
            }
            other => panic!("expected Compile, got {other:?}"),
        }
    }

    #[test]
    fn the_target_is_a_cubin_where_nvrtc_targets_the_device() {
        let supported = [75, 80, 86, 89, 90, 100, 120];
        let cubin = |arch: &str| CompileTarget {
            arch: arch.into(),
            kind: ImageKind::Cubin,
        };
        let ptx = |arch: &str| CompileTarget {
            arch: arch.into(),
            kind: ImageKind::Ptx,
        };
        assert_eq!(compile_target((9, 0), &supported, false), cubin("sm_90"));
        assert_eq!(compile_target((8, 6), &supported, false), cubin("sm_86"));
        // A device newer than NVRTC: PTX of the newest older architecture, JIT-compiled.
        assert_eq!(
            compile_target((12, 1), &supported, false),
            ptx("compute_120")
        );
        assert_eq!(compile_target((9, 5), &supported, false), ptx("compute_90"));
        // Older than all: NVRTC's own error names sm_70.
        assert_eq!(compile_target((7, 0), &supported, false), cubin("sm_70"));
        // Asked for PTX.
        assert_eq!(compile_target((9, 0), &supported, true), ptx("sm_90"));
    }

    #[test]
    fn a_cubin_needs_a_real_architecture() {
        let err = compile_text_to(
            "k.cu",
            "",
            "compute_90",
            &nvrtc_options("compute_90"),
            ImageKind::Cubin,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("real architecture") && err.contains("compute_90"),
            "{err}"
        );
    }

    #[test]
    fn c_chars_conversion_stops_at_nul() {
        let raw: Vec<c_char> = b"abc\0def".iter().map(|&b| b as c_char).collect();
        assert_eq!(c_chars_to_string(&raw), "abc");
        let raw: Vec<c_char> = b"xyz".iter().map(|&b| b as c_char).collect();
        assert_eq!(c_chars_to_string(&raw), "xyz");
    }
}
