//! Kernel sources, their compile-time definitions and the textual inclusion of shared
//! headers.
//!
//! A [`KernelSource`] is a `kernels-cu/*.cu` file embedded with `include_str!`, plus the
//! [`Define`]s it is compiled with: the constants it shares with Rust, passed to NVRTC as
//! `--define-macro=NAME=VALUE` (the file refuses to compile without them).
//!
//! At run time NVRTC has no file system view of `kernels-cu/`, so `#include "common.cuh"`
//! cannot be resolved by NVRTC itself: the build script embeds every `kernels-cu/*.cuh` as
//! [`BUILTIN_HEADERS`] (so a new header needs no code change), and before compiling, every
//! line of the form `#include "NAME"` whose NAME is one of the known headers
//! ([`BUILTIN_HEADERS`], or the list given to [`KernelSource::expand`]) is replaced by the
//! header's text, wrapped in `#line` directives so NVRTC's error messages still point at
//! the right file and line. A header is inserted at most once per program (`#pragma once`
//! semantics), which also stops include cycles. Any other `#include` is left for NVRTC
//! (system headers like `<cuda_fp16.h>` are not available with the NVRTC wheel alone, so
//! kernels should not use them). The headers also carry include guards, so the same files
//! compile with plain include paths (`--include-path=kernels-cu`, `nvcc -I kernels-cu`):
//! see [`crate::compile_ptx_with_include_dirs`].
//!
//! Why inline instead of handing NVRTC the headers (`nvrtcCreateProgram` takes
//! name/contents pairs)? cudarc's safe API does not expose them, the inlining is small and
//! tested, its `#line` directives keep every message's file and line, and the PTX cache key
//! is simply the one text NVRTC sees. The kernel-table tests compile every source both ways
//! and check that the code is the same.

use std::collections::HashSet;

use crate::{CudaError, KernelDecl};

/// A preprocessor definition passed to NVRTC as `--define-macro=NAME=VALUE`: a constant a
/// kernel shares with Rust (a block size, a tile, a record layout). The value is the Rust
/// constant itself, so Rust is the single source; the CUDA file refuses to compile without
/// it (`#ifndef NAME` / `#error "NAME must come from Rust (-D)"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Define {
    /// The macro name, a C identifier.
    pub name: &'static str,
    /// Its value, written in decimal.
    pub value: u64,
}

impl Define {
    /// `NAME=value`.
    pub const fn new(name: &'static str, value: u64) -> Self {
        Self { name, value }
    }

    /// The NVRTC option defining it: `--define-macro=NAME=VALUE`.
    pub fn option(&self) -> String {
        format!("--define-macro={}={}", self.name, self.value)
    }
}

/// One CUDA C source file of `kernels-cu/`, embedded into the binary, with the definitions
/// it is compiled with.
///
/// Kernel crates declare theirs as constants:
///
/// ```
/// use spdnn_cuda::{Define, KernelSource};
/// const TILE: u32 = 32;
/// pub const MINE: KernelSource = KernelSource::new("mine.cu", "// the CUDA text\n")
///     .with_defines(&[&[Define::new("MINE_TILE", TILE as u64)]]);
/// assert_eq!(MINE.define_options().unwrap(), ["--define-macro=MINE_TILE=32"]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelSource {
    /// File name, used in error messages, `#line` directives and the module registry.
    pub name: &'static str,
    /// The CUDA C text.
    pub source: &'static str,
    /// The definitions it is compiled with, in groups (a header's, e.g.
    /// `spdnn_glare::DEFINES` for `glare.cuh`, then the file's own). Part of the PTX cache
    /// key and of the module registry's key.
    pub defines: &'static [&'static [Define]],
}

/// `kernels-cu/common.cuh`: helpers shared by all kernel families.
pub const COMMON_HEADER: KernelSource =
    KernelSource::new("common.cuh", include_str!("../../../kernels-cu/common.cuh"));

/// `kernels-cu/selftest.cu`: a tiny axpy / activation family used by this crate's GPU tests.
pub const SELFTEST: KernelSource = KernelSource::new(
    "selftest.cu",
    include_str!("../../../kernels-cu/selftest.cu"),
);

/// `spdnn_selftest_axpy`: grid-stride over the elements, any grid.
pub const SELFTEST_AXPY: KernelDecl = KernelDecl::new(&SELFTEST, "spdnn_selftest_axpy", 256);

/// `spdnn_selftest_activation`: grid-stride over the elements, any grid.
pub const SELFTEST_ACTIVATION: KernelDecl =
    KernelDecl::new(&SELFTEST, "spdnn_selftest_activation", 1024);

/// The definition that turns kernel selection on (`common.cuh`'s `SPDNN_KEEP`): with it,
/// a program keeps only the kernels whose `SPDNN_KEEP_<name>` is defined to 1.
pub const SELECT_KERNELS: &str = "SPDNN_SELECT_KERNELS";

/// The NVRTC options that keep only `kernels` of a source (every kernel of a `kernels-cu`
/// source sits inside `#if SPDNN_KEEP(name)`): [`SELECT_KERNELS`], then
/// `SPDNN_KEEP_<name>=1` for each. An empty list keeps no kernel.
pub fn selection_options(kernels: &[&str]) -> Vec<String> {
    std::iter::once(format!("--define-macro={SELECT_KERNELS}=1"))
        .chain(
            kernels
                .iter()
                .map(|name| format!("--define-macro=SPDNN_KEEP_{name}=1")),
        )
        .collect()
}

// `BUILTIN_HEADERS`: every `kernels-cu/*.cuh`, generated by build.rs.
include!(concat!(env!("OUT_DIR"), "/builtin_headers.rs"));

impl KernelSource {
    /// The source `name` with text `source` and no definitions.
    pub const fn new(name: &'static str, source: &'static str) -> Self {
        Self {
            name,
            source,
            defines: &[],
        }
    }

    /// This source compiled with `defines` (replacing any given before).
    pub const fn with_defines(self, defines: &'static [&'static [Define]]) -> Self {
        Self {
            name: self.name,
            source: self.source,
            defines,
        }
    }

    /// Every definition, group by group.
    pub fn all_defines(&self) -> impl Iterator<Item = &'static Define> + use<> {
        let groups: &'static [&'static [Define]] = self.defines;
        groups.iter().flat_map(|group| group.iter())
    }

    /// The value of definition `name`, if this source has it.
    pub fn define(&self, name: &str) -> Option<u64> {
        self.all_defines().find(|d| d.name == name).map(|d| d.value)
    }

    /// The NVRTC options of the definitions, in order. Errors (naming the file) when a name
    /// is not a C identifier or is given twice.
    pub fn define_options(&self) -> Result<Vec<String>, CudaError> {
        let fail = |log: String| CudaError::Compile {
            file: self.name.to_string(),
            arch: "-".to_string(),
            log,
        };
        let mut seen = HashSet::new();
        let mut options = Vec::new();
        for define in self.all_defines() {
            if !is_identifier(define.name) {
                return Err(fail(format!(
                    "definition name {:?} is not a C identifier",
                    define.name
                )));
            }
            if !seen.insert(define.name) {
                return Err(fail(format!("definition {} is given twice", define.name)));
            }
            options.push(define.option());
        }
        Ok(options)
    }

    /// Returns the source with `#include "NAME"` lines replaced by the matching entry of
    /// `headers` (see the module docs). Errors when a header includes itself through a
    /// chain deeper than 32 levels or when the text holds a NUL byte.
    pub fn expand(&self, headers: &[KernelSource]) -> Result<String, CudaError> {
        let mut out = String::with_capacity(self.source.len() + 4096);
        let mut included = HashSet::new();
        expand_into(self, headers, &mut included, &mut out, 0)?;
        Ok(out)
    }

    /// [`expand`](Self::expand) with [`BUILTIN_HEADERS`].
    pub fn expand_builtin(&self) -> Result<String, CudaError> {
        self.expand(BUILTIN_HEADERS)
    }

    /// The 0-based line of the text that starts the definition of kernel `name` (`extern
    /// "C" __global__ … name(`), if the text writes one out.
    pub fn kernel_line(&self, name: &str) -> Option<usize> {
        self.source
            .lines()
            .position(|line| defines_kernel(line, name))
    }
}

/// Whether `line` starts the definition of kernel `name` (`extern "C" __global__ … name(`).
pub(crate) fn defines_kernel(line: &str, name: &str) -> bool {
    let Some((_, rest)) = line.split_once("extern \"C\" __global__") else {
        return false;
    };
    rest.match_indices(name).any(|(i, _)| {
        let before = rest[..i].chars().next_back();
        let after = rest[i + name.len()..].chars().next();
        after == Some('(') && !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn expand_into(
    source: &KernelSource,
    headers: &[KernelSource],
    included: &mut HashSet<&'static str>,
    out: &mut String,
    depth: usize,
) -> Result<(), CudaError> {
    if source.source.contains('\0') {
        return Err(CudaError::Compile {
            file: source.name.to_string(),
            arch: "-".to_string(),
            log: "the source text contains a NUL byte".to_string(),
        });
    }
    if depth > 32 {
        return Err(CudaError::Compile {
            file: source.name.to_string(),
            arch: "-".to_string(),
            log: "headers nested more than 32 levels deep".to_string(),
        });
    }
    for (index, line) in source.source.lines().enumerate() {
        let header = quoted_include(line).and_then(|name| headers.iter().find(|h| h.name == name));
        match header {
            Some(header) => {
                if included.insert(header.name) {
                    out.push_str(&format!("#line 1 \"{}\"\n", header.name));
                    expand_into(header, headers, included, out, depth + 1)?;
                }
                // Resume numbering at the line after the #include (1-based).
                out.push_str(&format!("#line {} \"{}\"\n", index + 2, source.name));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    Ok(())
}

/// Whether `name` is a C identifier (`[A-Za-z_][A-Za-z0-9_]*`).
fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The NAME of a line `#  include  "NAME"` (trailing `//` comments allowed), if it is one.
fn quoted_include(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("include")?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    let tail = rest[end + 1..].trim();
    if !(tail.is_empty() || tail.starts_with("//") || tail.starts_with("/*")) {
        return None;
    }
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER_A: KernelSource = KernelSource::new("a.cuh", "#include \"b.cuh\"\nint a;\n");
    const HEADER_B: KernelSource = KernelSource::new("b.cuh", "#include \"a.cuh\"\nint b;\n");

    #[test]
    fn include_lines_are_recognised() {
        assert_eq!(
            quoted_include("#include \"common.cuh\""),
            Some("common.cuh")
        );
        assert_eq!(
            quoted_include("  #  include   \"x.cuh\" // c"),
            Some("x.cuh")
        );
        assert_eq!(quoted_include("#include <cuda_fp16.h>"), None);
        assert_eq!(quoted_include("// #include \"x.cuh\""), None);
        assert_eq!(quoted_include("#include \"x.cuh\" junk"), None);
    }

    #[test]
    fn header_is_inlined_once_with_line_directives() {
        let src = KernelSource::new("k.cu", "#include \"a.cuh\"\n#include \"a.cuh\"\nint k;\n");
        let text = src.expand(&[HEADER_A, HEADER_B]).unwrap();
        assert_eq!(text.matches("int a;").count(), 1);
        assert_eq!(text.matches("int b;").count(), 1);
        assert!(text.contains("#line 1 \"a.cuh\"\n"));
        assert!(text.contains("#line 1 \"b.cuh\"\n"));
        assert!(text.contains("#line 3 \"k.cu\"\nint k;\n"));
        assert!(!text.contains("#include \"a.cuh\""));
    }

    #[test]
    fn unknown_quoted_include_is_left_for_nvrtc() {
        let src = KernelSource::new("k.cu", "#include \"missing.cuh\"\n");
        assert_eq!(src.expand_builtin().unwrap(), "#include \"missing.cuh\"\n");
    }

    #[test]
    fn nul_byte_is_an_error_naming_the_file() {
        let src = KernelSource::new("nul.cu", "int x;\0");
        let err = src.expand_builtin().unwrap_err();
        assert!(err.to_string().contains("nul.cu"), "{err}");
    }

    #[test]
    fn builtin_headers_contain_common() {
        assert!(BUILTIN_HEADERS.contains(&COMMON_HEADER));
        assert!(BUILTIN_HEADERS.windows(2).all(|w| w[0].name < w[1].name));
    }

    #[test]
    fn selftest_includes_common_header() {
        let text = SELFTEST.expand_builtin().unwrap();
        assert!(text.contains("spdnn_clamp_activation"));
        assert!(text.contains("#line 1 \"common.cuh\""));
    }

    #[test]
    fn selection_keeps_the_named_kernels() {
        assert_eq!(
            selection_options(&["k_a", "k_b"]),
            [
                "--define-macro=SPDNN_SELECT_KERNELS=1",
                "--define-macro=SPDNN_KEEP_k_a=1",
                "--define-macro=SPDNN_KEEP_k_b=1",
            ]
        );
        assert_eq!(
            selection_options(&[]),
            ["--define-macro=SPDNN_SELECT_KERNELS=1"]
        );
        let text = SELFTEST.source;
        let at = SELFTEST.kernel_line("spdnn_selftest_axpy").unwrap();
        assert!(
            text.lines()
                .nth(at)
                .unwrap()
                .contains("spdnn_selftest_axpy(")
        );
        assert_eq!(SELFTEST.kernel_line("spdnn_selftest"), None);
        assert_eq!(SELFTEST.kernel_line("spdnn_no_such_kernel"), None);
    }

    #[test]
    fn definitions_become_options_in_order() {
        const GROUP_A: &[Define] = &[Define::new("A_ONE", 1), Define::new("A_ZERO", 0)];
        const GROUP_B: &[Define] = &[Define::new("B_BIG", u64::MAX)];
        const SRC: KernelSource = KernelSource::new("k.cu", "").with_defines(&[GROUP_A, GROUP_B]);
        assert_eq!(
            SRC.define_options().unwrap(),
            [
                "--define-macro=A_ONE=1",
                "--define-macro=A_ZERO=0",
                "--define-macro=B_BIG=18446744073709551615",
            ]
        );
        assert_eq!(SRC.define("A_ZERO"), Some(0));
        assert_eq!(SRC.define("MISSING"), None);
        assert_eq!(SRC.all_defines().count(), 3);
        assert!(
            KernelSource::new("k.cu", "")
                .define_options()
                .unwrap()
                .is_empty()
        );
        // Definitions are part of a source's identity.
        assert_ne!(SRC, KernelSource::new("k.cu", ""));
    }

    #[test]
    fn bad_definitions_are_errors_naming_the_file() {
        const TWICE: &[Define] = &[Define::new("X", 1)];
        let err = KernelSource::new("twice.cu", "")
            .with_defines(&[TWICE, TWICE])
            .define_options()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("twice.cu") && err.contains("X is given twice"),
            "{err}"
        );
        for bad in ["", "1X", "A-B", "A B", "A=1"] {
            let defines: &'static [&'static [Define]] = Box::leak(Box::new([
                &*Box::leak(Box::new([Define::new(bad, 1)])) as &[Define],
            ]));
            let err = KernelSource::new("bad.cu", "")
                .with_defines(defines)
                .define_options()
                .unwrap_err()
                .to_string();
            assert!(err.contains("not a C identifier"), "{bad:?}: {err}");
        }
        assert!(is_identifier("_x9") && is_identifier("GLARE_READS"));
    }
}
