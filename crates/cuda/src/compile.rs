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
/// involved; see [`crate::PtxCache`] for the cached path.
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

/// Compiles `text` with exactly `options` (which should start with [`nvrtc_options`]`(arch)`);
/// `name` is used in messages and as the NVRTC program name, `arch` is checked and named
/// in errors.
pub fn compile_text(
    name: &str,
    text: &str,
    arch: &str,
    options: &[String],
) -> Result<String, CudaError> {
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
    // SAFETY: program is live and compiled.
    let ptx = unsafe { nvrtc::get_ptx(program.0) }
        .map_err(|e| fail(format!("nvrtcGetPTX failed: {:?}", e.0)))?;
    Ok(c_chars_to_string(&ptx))
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
    fn c_chars_conversion_stops_at_nul() {
        let raw: Vec<c_char> = b"abc\0def".iter().map(|&b| b as c_char).collect();
        assert_eq!(c_chars_to_string(&raw), "abc");
        let raw: Vec<c_char> = b"xyz".iter().map(|&b| b as c_char).collect();
        assert_eq!(c_chars_to_string(&raw), "xyz");
    }
}
