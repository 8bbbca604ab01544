//! Checks that a crate's kernel declarations and its CUDA sources agree, for the crate's
//! own tests: each kernel crate lists every [`KernelDecl`] it makes in one `KERNELS`
//! table and calls [`assert_kernel_table`] on it.
//!
//! For every source named in the table, and every architecture of [`ARCHS`]:
//!
//! - it compiles as the runtime compiles it (headers inlined, [`crate::compile_ptx`]) and
//!   as a user lifting the file would (`--include-path=kernels-cu`,
//!   [`crate::compile_ptx_with_include_dirs`]), both with its definitions, and the two give
//!   the same code (line information aside);
//! - every `.entry` of the PTX (every `extern "C" __global__` function) is declared exactly
//!   once, and every declaration names an entry;
//! - every definition is required: without it the source does not compile, and NVRTC's log
//!   says `NAME must come from Rust (-D)` (the file's `#ifndef NAME` / `#error` guard);
//! - the one `// Launch:` comment above each kernel in the `.cu` agrees with the
//!   declaration: its `block …` (numbers or definition names) is the declared block, and it
//!   says `dynamic shared` exactly when the kernel takes a dynamic shared array.
//!
//! And, for the last architecture of [`ARCHS`] (the one the project's GPUs run), the kernel
//! selection the runtime compiles with ([`crate::selection_options`], [`check_selection`]):
//! each declared kernel's comment block sits right below its `#if SPDNN_KEEP(name)`; with
//! selection on and no kernel kept the source has no entry; and each declared kernel
//! compiled alone is the one entry of its module, so a run that loads one kernel compiles
//! only it.
//!
//! The declarations themselves are checked without NVRTC ([`check_declarations`]): no
//! kernel declared twice, blocks of 1 to 1024 threads, one source text per file name.

use std::collections::BTreeMap;
use std::path::Path;

use crate::source::defines_kernel;
use crate::{
    Define, KernelDecl, KernelSource, SharedMemory, compile_ptx, compile_ptx_with_include_dirs,
    compile_text, kernel_sources_dir, nvrtc_options, nvrtc_present, selection_options,
};

/// The architectures every source is compiled for (as in CI).
pub const ARCHS: &[&str] = &["sm_75", "sm_80", "sm_90"];

/// The text of the guard a source gives for a missing definition `name`.
pub fn missing_definition_message(name: &str) -> String {
    format!("{name} must come from Rust (-D)")
}

/// The `.entry` names of a PTX module, in order.
pub fn ptx_entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once(".entry ")?;
            let end = rest
                .find(|c: char| c == '(' || c.is_whitespace())
                .unwrap_or(rest.len());
            Some(rest[..end].to_string())
        })
        .collect()
}

/// A PTX module without what depends on file names and line numbers (`.file` and `.loc`
/// directives, comments), so that two compiles of the same code compare equal.
pub fn ptx_code(ptx: &str) -> String {
    ptx.lines()
        .map(str::trim)
        .filter(|line| {
            !(line.starts_with(".file") || line.starts_with(".loc") || line.starts_with("//"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks of the declarations alone (no NVRTC): each (source, kernel) declared once, one
/// source per file name, sane blocks and shared element sizes. Returns the failures.
pub fn check_declarations(decls: &[KernelDecl]) -> Vec<String> {
    let mut failures = Vec::new();
    let mut seen: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut sources: BTreeMap<&str, &KernelSource> = BTreeMap::new();
    for decl in decls {
        let key = (decl.source.name, decl.name);
        *seen.entry(key).or_default() += 1;
        match sources.get(decl.source.name) {
            Some(source) if *source != decl.source => failures.push(format!(
                "{}: declarations name two different sources called {}",
                decl.name, decl.source.name
            )),
            Some(_) => {}
            None => {
                sources.insert(decl.source.name, decl.source);
            }
        }
        let (x, y, z) = decl.block;
        if x == 0 || y == 0 || z == 0 || u64::from(x) * u64::from(y) * u64::from(z) > 1024 || z > 64
        {
            failures.push(format!(
                "{} ({}): block {:?} is not a valid CUDA block (1 to 1024 threads, z at most 64)",
                decl.name, decl.source.name, decl.block
            ));
        }
        if decl.shared == (SharedMemory::Array { element_bytes: 0 }) {
            failures.push(format!(
                "{} ({}): a dynamic shared array of 0-byte elements",
                decl.name, decl.source.name
            ));
        }
        if let Err(e) = decl.source.define_options() {
            failures.push(e.to_string());
        }
    }
    for ((source, kernel), count) in seen {
        if count > 1 {
            failures.push(format!("{kernel} ({source}) is declared {count} times"));
        }
    }
    failures
}

/// Compiles every source named in `decls` for each of `archs` and checks it against the
/// declarations as the module docs describe; `include_dir` holds the headers (`kernels-cu/`).
/// Needs NVRTC. Returns the failures.
pub fn check_sources(decls: &[KernelDecl], include_dir: &Path, archs: &[&str]) -> Vec<String> {
    let mut failures = Vec::new();
    let mut by_source: BTreeMap<&str, (&KernelSource, Vec<&KernelDecl>)> = BTreeMap::new();
    for decl in decls {
        by_source
            .entry(decl.source.name)
            .or_insert_with(|| (decl.source, Vec::new()))
            .1
            .push(decl);
    }
    for (name, (source, kernels)) in &by_source {
        for arch in archs {
            let runtime = compile_ptx(source, arch);
            let plain = compile_ptx_with_include_dirs(source, arch, &[include_dir]);
            let (runtime, plain) = match (runtime, plain) {
                (Ok(r), Ok(p)) => (r, p),
                (r, p) => {
                    for e in [r.err(), p.err()].into_iter().flatten() {
                        failures.push(format!("{name} / {arch} does not compile: {e}"));
                    }
                    continue;
                }
            };
            let target = format!(".target {arch}");
            if !runtime.contains(&target) || !plain.contains(&target) {
                failures.push(format!("{name} / {arch}: the PTX lacks `{target}`"));
            }
            if ptx_code(&runtime) != ptx_code(&plain) {
                failures.push(format!(
                    "{name} / {arch}: the runtime's inlined headers and plain include paths give different code"
                ));
            }
            let mut entries: BTreeMap<String, usize> = BTreeMap::new();
            for entry in ptx_entries(&plain) {
                *entries.entry(entry).or_default() += 1;
            }
            for entry in entries.keys() {
                if !kernels.iter().any(|k| k.name == entry) {
                    failures.push(format!(
                        "{name} / {arch}: kernel {entry} is not declared (add a KernelDecl to the crate's KERNELS)"
                    ));
                }
            }
            for kernel in kernels {
                if !entries.contains_key(kernel.name) {
                    failures.push(format!(
                        "{name} / {arch}: declared kernel {} is not an extern \"C\" __global__ function of the source",
                        kernel.name
                    ));
                }
            }
        }
        if let Some(arch) = archs.first() {
            failures.extend(check_definitions(source, include_dir, arch));
        }
        failures.extend(check_launch_comments(source, kernels));
        if let Some(arch) = archs.last() {
            failures.extend(check_selection(source, kernels, arch));
        }
    }
    failures
}

/// Checks the kernel selection of `source` for `arch` (the module docs' last list): the
/// `#if SPDNN_KEEP(name)` guard above each declared kernel, no entry with none kept, and
/// each declared kernel alone in its module (the compiles run on a thread a core). Returns
/// the failures.
pub fn check_selection(source: &KernelSource, decls: &[&KernelDecl], arch: &str) -> Vec<String> {
    let mut failures = Vec::new();
    let lines: Vec<&str> = source.source.lines().collect();
    for decl in decls {
        let Some(at) = source.kernel_line(decl.name) else {
            failures.push(format!(
                "{}: kernel {} is not written out (`extern \"C\" __global__ … {}(`), so it \
                 cannot be compiled alone",
                source.name, decl.name, decl.name
            ));
            continue;
        };
        let mut start = at;
        while start > 0 && lines[start - 1].trim_start().starts_with("//") {
            start -= 1;
        }
        let guard = format!("#if SPDNN_KEEP({})", decl.name);
        if start == 0 || lines[start - 1].trim() != guard {
            failures.push(format!(
                "{}: kernel {} needs `{guard}` right above its comment block, and `#endif` \
                 after its body (common.cuh, kernel selection)",
                source.name, decl.name
            ));
        }
    }
    let text = match source.expand_builtin() {
        Ok(text) => text,
        Err(e) => return vec![e.to_string()],
    };
    let base = match source.nvrtc_options(arch) {
        Ok(options) => options,
        Err(e) => return vec![e.to_string()],
    };
    let entries_with = |kept: &[&str]| -> Result<Vec<String>, String> {
        let options = [base.clone(), selection_options(kept)].concat();
        compile_text(source.name, &text, arch, &options)
            .map(|ptx| ptx_entries(&ptx))
            .map_err(|e| e.to_string())
    };
    match entries_with(&[]) {
        Ok(entries) if entries.is_empty() => {}
        Ok(entries) => failures.push(format!(
            "{} / {arch}: with kernel selection on and no kernel kept, {entries:?} remain: \
             put each kernel inside `#if SPDNN_KEEP(name)` … `#endif`",
            source.name
        )),
        Err(e) => failures.push(format!(
            "{} / {arch} does not compile with kernel selection on and no kernel kept: {e}",
            source.name
        )),
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_thread = decls.len().div_ceil(cores).max(1);
    let alone: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = decls
            .chunks(per_thread)
            .map(|chunk| {
                let entries_with = &entries_with;
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|decl| match entries_with(&[decl.name]) {
                            Ok(entries) if entries == [decl.name] => None,
                            Ok(entries) => Some(format!(
                                "{} / {arch}: kernel {} compiled alone gives the entries \
                                 {entries:?} (its `#if SPDNN_KEEP({})` … `#endif` must hold \
                                 it and nothing else)",
                                source.name, decl.name, decl.name
                            )),
                            Err(e) => Some(format!(
                                "{} / {arch}: kernel {} does not compile alone: {e}",
                                source.name, decl.name
                            )),
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|_| vec!["a compile thread panicked".into()])
            })
            .collect()
    });
    failures.extend(alone);
    failures
}

/// Checks that `source` needs every one of its definitions: compiled (with plain include
/// paths from `include_dir`, for `arch`) without any one of them, it fails and NVRTC's log
/// carries [`missing_definition_message`]. Returns the failures.
pub fn check_definitions(source: &KernelSource, include_dir: &Path, arch: &str) -> Vec<String> {
    let mut failures = Vec::new();
    let include = format!("--include-path={}", include_dir.display());
    for left_out in source.all_defines() {
        let mut options = nvrtc_options(arch);
        options.extend(
            source
                .all_defines()
                .filter(|d| d.name != left_out.name)
                .map(|d| d.option()),
        );
        options.push(include.clone());
        let expected = missing_definition_message(left_out.name);
        match compile_text(source.name, source.source, arch, &options) {
            Ok(_) => failures.push(format!(
                "{}: compiles without definition {name} (add `#ifndef {name}` / `#error \"{expected}\"`, or drop the definition)",
                source.name,
                name = left_out.name
            )),
            Err(e) => {
                let log = e.to_string();
                if !log.contains(&expected) {
                    failures.push(format!(
                        "{}: without definition {} it fails, but not with `{expected}`: {log}",
                        source.name, left_out.name
                    ));
                }
            }
        }
    }
    failures
}

/// Checks the `// Launch:` comment above each declared kernel's definition in the source
/// text against its declaration (block shape, dynamic shared memory). Kernels whose
/// definition is not written out in the text (generated by a macro) are not checked.
/// Returns the failures.
pub fn check_launch_comments(source: &KernelSource, decls: &[&KernelDecl]) -> Vec<String> {
    let lines: Vec<&str> = source.source.lines().collect();
    let mut failures = Vec::new();
    for decl in decls {
        let Some(at) = lines.iter().position(|l| defines_kernel(l, decl.name)) else {
            continue;
        };
        let mut start = at;
        while start > 0 && lines[start - 1].trim_start().starts_with("//") {
            start -= 1;
        }
        let comment: Vec<&str> = lines[start..at]
            .iter()
            .map(|l| l.trim_start().trim_start_matches('/').trim())
            .collect();
        let launches: Vec<usize> = (0..comment.len())
            .filter(|&i| comment[i].starts_with("Launch:"))
            .collect();
        let [first] = launches[..] else {
            failures.push(format!(
                "{}: kernel {} needs exactly one `// Launch:` comment right above it, found {}",
                source.name,
                decl.name,
                launches.len()
            ));
            continue;
        };
        let launch = comment[first..].join(" ");
        match launch_block(&launch, source) {
            Ok(block) if block == decl.block => {}
            Ok(block) => failures.push(format!(
                "{}: the comment of {} says block {block:?}, the declaration {:?}",
                source.name, decl.name, decl.block
            )),
            Err(e) => failures.push(format!("{}: kernel {}: {e}", source.name, decl.name)),
        }
        let says_dynamic = launch.contains("dynamic shared");
        let has_dynamic = matches!(decl.shared, SharedMemory::Array { .. });
        if says_dynamic != has_dynamic {
            failures.push(format!(
                "{}: the comment of {} {} dynamic shared memory, the declaration {}",
                source.name,
                decl.name,
                if says_dynamic { "gives it" } else { "gives no" },
                if has_dynamic {
                    "has an array"
                } else {
                    "has none"
                }
            ));
        }
    }
    failures
}

/// The block of a `Launch:` comment: `block N`, `block NAME` or `block (X, Y[, Z])`, each a
/// number or one of the source's definitions.
fn launch_block(comment: &str, source: &KernelSource) -> Result<(u32, u32, u32), String> {
    let (_, rest) = comment
        .split_once(", block ")
        .ok_or_else(|| format!("no `, block …` in `{comment}`"))?;
    let items: Vec<&str> = match rest.strip_prefix('(') {
        Some(inner) => {
            let end = inner
                .find(')')
                .ok_or_else(|| format!("unclosed block in `{comment}`"))?;
            inner[..end].split(',').map(str::trim).collect()
        }
        None => {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            vec![&rest[..end]]
        }
    };
    let value = |item: &str| -> Result<u32, String> {
        if let Ok(v) = item.parse::<u32>() {
            return Ok(v);
        }
        source
            .define(item)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| {
                format!("`{item}` in the block of `{comment}` is neither a number nor a definition")
            })
    };
    match items[..] {
        [x] => Ok((value(x)?, 1, 1)),
        [x, y] => Ok((value(x)?, value(y)?, 1)),
        [x, y, z] => Ok((value(x)?, value(y)?, value(z)?)),
        _ => Err(format!("cannot read the block of `{comment}`")),
    }
}

/// Checks that header `name` (in `include_dir`) compiles included twice (its include
/// guard) with `defines`, for each of `archs`, both with plain include paths and with the
/// runtime's inlining, and that it needs each of its definitions. Returns the failures.
pub fn check_header(
    name: &str,
    defines: &'static [&'static [Define]],
    include_dir: &Path,
    archs: &[&str],
) -> Vec<String> {
    // A test helper: the few bytes of each checked header's program are leaked.
    let program: &'static str = Box::leak(format!("{name}.twice.cu").into_boxed_str());
    let text: &'static str =
        Box::leak(format!("#include \"{name}\"\n#include \"{name}\"\n").into_boxed_str());
    let source = KernelSource::new(program, text).with_defines(defines);
    let mut failures = Vec::new();
    for arch in archs {
        for (how, compiled) in [
            ("inlined", compile_ptx(&source, arch)),
            (
                "with an include path",
                compile_ptx_with_include_dirs(&source, arch, &[include_dir]),
            ),
        ] {
            if let Err(e) = compiled {
                failures.push(format!("{name} included twice, {how}, / {arch}: {e}"));
            }
        }
    }
    if let Some(arch) = archs.first() {
        failures.extend(check_definitions(&source, include_dir, arch));
    }
    failures
}

/// Whether NVRTC is there for the compile checks; without it, a note (and `false`), or a
/// panic when `CI` is set.
fn nvrtc_or_skip(what: &str) -> bool {
    if nvrtc_present() {
        return true;
    }
    let how = "install NVRTC 13.0 (`cargo xtask setup`) and put .nvrtc/nvidia/cu13/lib on \
               LD_LIBRARY_PATH";
    if std::env::var_os("CI").is_some() {
        panic!("{what} needs NVRTC and CI is set; {how}");
    }
    eprintln!("skipping {what}: libnvrtc not found; {how}");
    false
}

/// Panics listing `failures`, if any.
fn assert_none(what: &str, failures: Vec<String>) {
    assert!(failures.is_empty(), "{what}:\n{}", failures.join("\n\n"));
}

/// The test every kernel crate runs on its `KERNELS` table: [`check_declarations`], then
/// [`check_sources`] over [`crate::kernel_sources_dir`] for [`ARCHS`]. Without NVRTC the
/// compile checks are skipped with a note, unless `CI` is set (then it panics). Panics
/// listing every failure.
pub fn assert_kernel_table(decls: &[KernelDecl]) {
    let mut failures = check_declarations(decls);
    if nvrtc_or_skip("the kernel sources' compile checks") {
        failures.extend(check_sources(decls, &kernel_sources_dir(), ARCHS));
    }
    assert_none("the kernel table and its sources disagree", failures);
}

/// [`check_header`] over [`crate::kernel_sources_dir`] for [`ARCHS`], as a test (skipped
/// without NVRTC like [`assert_kernel_table`]).
pub fn assert_header(name: &str, defines: &'static [&'static [Define]]) {
    if nvrtc_or_skip(&format!("the compile checks of {name}")) {
        assert_none(
            &format!("{name} does not stand alone"),
            check_header(name, defines, &kernel_sources_dir(), ARCHS),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFINES: &[Define] = &[Define::new("T_TILE", 32), Define::new("T_ROWS", 8)];
    const SRC: KernelSource = KernelSource::new(
        "t.cu",
        "// A kernel.\n\
         // Launch: grid (n / T_TILE), block (T_TILE, T_ROWS), dynamic shared n floats.\n\
         extern \"C\" __global__ void t_tiled(float* y) {}\n\
         // Launch: grid n, block 256, no shared memory.\n\
         extern \"C\" __global__ void t_plain(float* y) {}\n\
         extern \"C\" __global__ void t_bare(float* y) {}\n",
    )
    .with_defines(&[DEFINES]);
    const TILED: KernelDecl = KernelDecl::new(&SRC, "t_tiled", 32)
        .with_block((32, 8, 1))
        .with_shared_array(4);
    const PLAIN: KernelDecl = KernelDecl::new(&SRC, "t_plain", 256);

    #[test]
    fn entries_are_read_from_ptx() {
        let ptx = ".visible .entry bf_layer(\n\t.param .u64 a\n)\n.visible .entry k2()\n{\n}\n";
        assert_eq!(ptx_entries(ptx), ["bf_layer", "k2"]);
        assert_eq!(
            ptx_code(".file 1 \"a.cu\"\n  .loc 1 2 3\n// c\nmov.u32 %r1, 1;\n"),
            "mov.u32 %r1, 1;"
        );
    }

    #[test]
    fn launch_comments_are_checked_against_declarations() {
        assert!(check_launch_comments(&SRC, &[&TILED, &PLAIN]).is_empty());
        let wrong_block = KernelDecl::new(&SRC, "t_plain", 128);
        let failures = check_launch_comments(&SRC, &[&wrong_block]);
        assert!(failures[0].contains("(256, 1, 1)"), "{failures:?}");
        let no_shared = KernelDecl::new(&SRC, "t_tiled", 32).with_block((32, 8, 1));
        let failures = check_launch_comments(&SRC, &[&no_shared]);
        assert!(failures[0].contains("dynamic shared"), "{failures:?}");
        let bare = KernelDecl::new(&SRC, "t_bare", 1);
        let failures = check_launch_comments(&SRC, &[&bare]);
        assert!(failures[0].contains("found 0"), "{failures:?}");
        // Not written out in the text (a macro's instance): not checked here.
        let generated = KernelDecl::new(&SRC, "t_generated", 1);
        assert!(check_launch_comments(&SRC, &[&generated]).is_empty());
    }

    #[test]
    fn kernel_definitions_are_found_by_whole_name() {
        assert!(defines_kernel(
            "extern \"C\" __global__ void k(int a) {",
            "k"
        ));
        assert!(defines_kernel(
            "extern \"C\" __global__ void __launch_bounds__(256) hp_k(int a) {",
            "hp_k"
        ));
        assert!(!defines_kernel(
            "extern \"C\" __global__ void xk(int a)",
            "k"
        ));
        assert!(!defines_kernel("__device__ void k(int a)", "k"));
    }

    #[test]
    fn declarations_are_checked() {
        assert!(check_declarations(&[TILED, PLAIN]).is_empty());
        let failures = check_declarations(&[TILED, PLAIN, PLAIN]);
        assert_eq!(failures.len(), 1);
        assert!(failures[0].contains("declared 2 times"), "{failures:?}");
        const OTHER: KernelSource = KernelSource::new("t.cu", "// another text");
        let failures = check_declarations(&[TILED, KernelDecl::new(&OTHER, "x", 32)]);
        assert!(
            failures[0].contains("two different sources"),
            "{failures:?}"
        );
        let huge = KernelDecl::new(&SRC, "h", 32).with_block((32, 64, 1));
        assert!(check_declarations(&[huge])[0].contains("not a valid CUDA block"));
        let empty = KernelDecl::new(&SRC, "e", 0);
        assert!(check_declarations(&[empty])[0].contains("not a valid CUDA block"));
        let zero = KernelDecl::new(&SRC, "z", 32).with_shared_array(0);
        assert!(check_declarations(&[zero])[0].contains("0-byte"));
    }
}
