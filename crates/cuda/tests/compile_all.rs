//! Every kernel source of `kernels-cu/` compiles with NVRTC (no GPU needed): with the
//! runtime's inlined headers and with plain include paths; sources needing definitions
//! refuse to compile without them and are compiled with them by their crate's
//! kernel-table test; every header has an include guard.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use spdnn_cuda::{
    BUILTIN_HEADERS, CudaError, Define, KernelSource, compile_ptx, compile_ptx_with_include_dirs,
    kernel_sources_dir,
};

const ARCHS: &[&str] = &["sm_75", "sm_80", "sm_90"];

/// Files in kernels-cu with the given extension, sorted, read now (so new kernels
/// are picked up without touching this test).
fn files_with_extension(ext: &str) -> Vec<(PathBuf, String)> {
    let dir = kernel_sources_dir();
    let entries =
        fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    let mut files: Vec<(PathBuf, String)> = entries
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .map(|p| {
            let text = fs::read_to_string(&p)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
            (p, text)
        })
        .collect();
    files.sort();
    files
}

fn leak_source(path: &Path, text: String) -> KernelSource {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    KernelSource::new(
        Box::leak(name.into_boxed_str()),
        Box::leak(text.into_boxed_str()),
    )
}

/// Whether `text` (a source or header) guards a definition that must come from Rust.
fn guards_a_definition(text: &str) -> bool {
    text.contains("must come from Rust (-D)")
}

/// Whether `source` needs definitions: it, or a header it includes, guards one.
fn needs_definitions(source: &KernelSource) -> bool {
    guards_a_definition(&source.expand_builtin().expect("the source expands"))
}

/// Sources whose crate has not declared its kernels yet (no `KERNELS` table and
/// kernel-table test): they must need no definitions, and are compiled here.
const PENDING_TABLES: &[&str] = &[];

#[test]
fn every_kernel_source_compiles_for_all_archs() {
    if !common::nvrtc_or_skip("every_kernel_source_compiles_for_all_archs") {
        return;
    }
    let files = files_with_extension("cu");
    assert!(
        files.iter().any(|(p, _)| p.ends_with("selftest.cu")),
        "kernels-cu/selftest.cu missing from {}",
        kernel_sources_dir().display()
    );
    let dir = kernel_sources_dir();
    let mut failures = Vec::new();
    for (path, text) in files {
        let source = leak_source(&path, text);
        if needs_definitions(&source) {
            // Its definitions are its crate's constants: its crate's kernel-table test
            // compiles it with them (both ways, every arch). Here: it refuses without.
            match compile_ptx_with_include_dirs(&source, "sm_80", &[&dir]) {
                Ok(_) => failures.push(format!(
                    "{} guards definitions but compiles without them",
                    source.name
                )),
                Err(e) if e.to_string().contains("must come from Rust (-D)") => {}
                Err(e) => failures.push(format!(
                    "{} fails without its definitions, but not by its guards: {e}",
                    source.name
                )),
            }
            continue;
        }
        for arch in ARCHS {
            let plain = compile_ptx_with_include_dirs(&source, arch, &[&dir]);
            for (how, compiled) in [("inlined", compile_ptx(&source, arch)), ("-I", plain)] {
                match compiled {
                    Ok(ptx) => {
                        let target = format!(".target {arch}");
                        assert!(
                            ptx.contains(&target),
                            "{} ({how}): PTX lacks `{target}`",
                            source.name
                        );
                        assert!(
                            ptx.contains(".entry"),
                            "{} ({how}): PTX has no kernel entry",
                            source.name
                        );
                    }
                    Err(e) => failures.push(format!("{} / {arch} ({how}): {e}", source.name)),
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "kernel sources failed to compile:\n{}",
        failures.join("\n\n")
    );
}

/// The workspace's `crates/` folder, when this test runs where the sources are.
fn crates_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    dir.join("cuda").join("src").is_dir().then_some(dir)
}

/// Every `.rs` file under `dir`, read.
fn rust_files(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs")
            && let Ok(text) = fs::read_to_string(&path)
        {
            out.push((path, text));
        }
    }
}

#[test]
fn every_kernel_source_has_one_crate_that_checks_its_table() {
    // Each crate checks its own table against its own sources; this test makes sure no
    // source is left without such a crate (or claimed by two).
    let Some(crates) = crates_dir() else {
        eprintln!("skipping: the workspace's crates/ are not next to this binary");
        return;
    };
    let mut failures = Vec::new();
    let crate_dirs: Vec<PathBuf> = fs::read_dir(&crates)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    for (path, _) in files_with_extension("cu") {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let embedding = format!("kernels-cu/{name}\")");
        let owners: Vec<&PathBuf> = crate_dirs
            .iter()
            .filter(|dir| {
                let mut files = Vec::new();
                rust_files(&dir.join("src"), &mut files);
                files.iter().any(|(_, text)| text.contains(&embedding))
            })
            .collect();
        let [owner] = owners[..] else {
            failures.push(format!(
                "{name} is embedded (include_str!) by {} crates: {owners:?}; it must be one",
                owners.len()
            ));
            continue;
        };
        let mut tests = Vec::new();
        rust_files(&owner.join("tests"), &mut tests);
        let checked = tests
            .iter()
            .any(|(_, text)| text.contains("kernel_table::assert_kernel_table("));
        let pending = PENDING_TABLES.contains(&name.as_str());
        match (checked, pending) {
            (true, true) => failures.push(format!(
                "{name}'s crate now checks its kernel table: remove it from PENDING_TABLES in {}",
                file!()
            )),
            (false, false) => failures.push(format!(
                "{name}'s crate ({}) has no test calling \
                 spdnn_cuda::kernel_table::assert_kernel_table on its KERNELS",
                owner.display()
            )),
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn pending_sources_need_no_definitions() {
    if !common::nvrtc_or_skip("pending_sources_need_no_definitions") {
        return;
    }
    for (path, text) in files_with_extension("cu") {
        let source = leak_source(&path, text);
        if PENDING_TABLES.contains(&source.name) {
            assert!(
                !needs_definitions(&source),
                "{} needs definitions: its crate must declare them (KernelSource::with_defines) \
                 and check its kernel table",
                source.name
            );
        }
    }
}

#[test]
fn every_header_has_an_include_guard() {
    for (path, text) in files_with_extension("cuh") {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let directives: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with('#'))
            .collect();
        let guard = format!("SPDNN_{}", name.replace('.', "_").to_ascii_uppercase());
        assert_eq!(
            directives.first().copied(),
            Some(format!("#ifndef {guard}").as_str()),
            "{name}: the first directive must open its include guard"
        );
        assert_eq!(
            directives.get(1).copied(),
            Some(format!("#define {guard}").as_str()),
            "{name}: the second directive must define its guard"
        );
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        assert!(
            last.starts_with("#endif"),
            "{name}: the last line must close its include guard, found {last:?}"
        );
        if !guards_a_definition(&text) {
            // Headers with definitions are checked by the crate owning them
            // (spdnn-glare for glare.cuh).
            spdnn_cuda::kernel_table::assert_header(&name, &[]);
        }
    }
}

#[test]
fn definitions_reach_nvrtc_and_their_guards_fire() {
    if !common::nvrtc_or_skip("definitions_reach_nvrtc_and_their_guards_fire") {
        return;
    }
    const TEXT: &str = "#ifndef K_WIDTH\n\
                        #error \"K_WIDTH must come from Rust (-D)\"\n\
                        #endif\n\
                        extern \"C\" __global__ void k(float* y) { y[K_WIDTH] = 1.0f; }\n";
    const WIDTH: &[Define] = &[Define::new("K_WIDTH", 12345)];
    let with = KernelSource::new("defined.cu", TEXT).with_defines(&[WIDTH]);
    let ptx = compile_ptx(&with, "sm_80").unwrap();
    // y[12345] is 49380 bytes past y.
    assert!(ptx.contains("+49380]"), "{ptx}");
    let err = compile_ptx(&KernelSource::new("defined.cu", TEXT), "sm_80")
        .unwrap_err()
        .to_string();
    assert!(err.contains("K_WIDTH must come from Rust (-D)"), "{err}");
    assert!(err.contains("defined.cu"), "{err}");
    // The definition check sees the guard fire.
    assert!(
        spdnn_cuda::kernel_table::check_definitions(&with, &kernel_sources_dir(), "sm_80")
            .is_empty()
    );
    const UNUSED: &[Define] = &[Define::new("K_WIDTH", 1), Define::new("K_UNUSED", 2)];
    let failures = spdnn_cuda::kernel_table::check_definitions(
        &KernelSource::new("defined.cu", TEXT).with_defines(&[UNUSED]),
        &kernel_sources_dir(),
        "sm_80",
    );
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].contains("without definition K_UNUSED"),
        "{failures:?}"
    );
}

#[test]
fn every_header_is_registered_as_a_builtin() {
    // NVRTC cannot open files: the runtime inlines BUILTIN_HEADERS, which the build
    // script fills with every kernels-cu/*.cuh. A header added without a rebuild of
    // spdnn-cuda, or an edited one, would be missing or stale.
    for (path, text) in files_with_extension("cuh") {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let builtin = BUILTIN_HEADERS.iter().find(|h| h.name == name);
        let builtin = builtin.unwrap_or_else(|| {
            panic!("kernels-cu/{name} is not in spdnn_cuda::BUILTIN_HEADERS; rebuild spdnn-cuda")
        });
        assert_eq!(
            builtin.source, text,
            "{name}: embedded copy is stale; rebuild"
        );
    }
}

#[test]
fn selftest_ptx_has_its_kernels() {
    if !common::nvrtc_or_skip("selftest_ptx_has_its_kernels") {
        return;
    }
    let ptx = compile_ptx(&spdnn_cuda::SELFTEST, "sm_90").unwrap();
    assert!(ptx.contains(".entry spdnn_selftest_axpy"));
    assert!(ptx.contains(".entry spdnn_selftest_activation"));
    // No fast math: the IEEE-rounded multiply survives as mul.rn.f32.
    assert!(ptx.contains("mul.rn.f32"), "expected mul.rn.f32 in the PTX");
}

#[test]
fn broken_source_reports_file_and_log() {
    if !common::nvrtc_or_skip("broken_source_reports_file_and_log") {
        return;
    }
    let broken = KernelSource::new(
        "broken_example.cu",
        "#include \"common.cuh\"\n\
         extern \"C\" __global__ void k(float* y) {\n\
         \x20   y[0] = undeclared_identifier;\n\
         }\n",
    );
    let err = compile_ptx(&broken, "sm_80").unwrap_err();
    let message = err.to_string();
    match &err {
        CudaError::Compile { file, arch, log } => {
            assert_eq!(file, "broken_example.cu");
            assert_eq!(arch, "sm_80");
            assert!(log.contains("undeclared_identifier"), "log: {log}");
        }
        other => panic!("expected CudaError::Compile, got {other:?}"),
    }
    assert!(message.contains("broken_example.cu"), "{message}");
    assert!(message.contains("undeclared_identifier"), "{message}");
    // The #line directives keep the user's line number (3) despite the inlined header.
    assert!(message.contains("broken_example.cu(3)"), "{message}");
}

#[test]
fn error_inside_header_points_at_the_header() {
    if !common::nvrtc_or_skip("error_inside_header_points_at_the_header") {
        return;
    }
    // A source that redefines a header function: the clash names both files with
    // their own line numbers.
    let clash = KernelSource::new(
        "clash.cu",
        "#include \"common.cuh\"\n\
         __device__ float spdnn_clamp_activation(float v, float upper) { return v; }\n",
    );
    let err = compile_ptx(&clash, "sm_75").unwrap_err().to_string();
    assert!(err.contains("clash.cu(2)"), "{err}");
    let definition_line = spdnn_cuda::COMMON_HEADER
        .source
        .lines()
        .position(|l| l.contains("float spdnn_clamp_activation("))
        .expect("common.cuh defines spdnn_clamp_activation")
        + 1;
    let expected = format!("line {definition_line} of common.cuh");
    assert!(err.contains(&expected), "expected `{expected}` in: {err}");
}

#[test]
fn missing_header_names_the_source_and_the_header_and_caches_nothing() {
    if !common::nvrtc_or_skip("missing_header_names_the_source_and_the_header_and_caches_nothing") {
        return;
    }
    // A kernel source whose header is missing: NVRTC's log names it, the error names the
    // source; both ways of compiling, and through the PTX cache, which stores nothing.
    let source = KernelSource::new(
        "lost_header.cu",
        "#include \"common.cuh\"\n\
         #include \"no_such_header.cuh\"\n\
         extern \"C\" __global__ void k(float* y) { y[0] = 1.0f; }\n",
    );
    let dir = kernel_sources_dir();
    for (how, result) in [
        ("inlined", compile_ptx(&source, "sm_80")),
        (
            "-I",
            compile_ptx_with_include_dirs(&source, "sm_80", &[&dir]),
        ),
    ] {
        let message = result.unwrap_err().to_string();
        assert!(
            message.contains("lost_header.cu") && message.contains("no_such_header.cuh"),
            "{how}: {message}"
        );
    }
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = spdnn_cuda::KernelCache::at(cache_dir.path());
    let message = cache.compile(&source, "sm_80").unwrap_err().to_string();
    assert!(message.contains("no_such_header.cuh"), "{message}");
    assert_eq!(fs::read_dir(cache_dir.path()).unwrap().count(), 0);
    // A source that is not there at all (an empty text): it compiles to a module without
    // the kernel, which the kernel table check names.
    let empty = KernelSource::new("empty.cu", "");
    const MISSING: spdnn_cuda::KernelDecl = spdnn_cuda::KernelDecl::new(
        &KernelSource::new("empty.cu", ""),
        "spdnn_missing_kernel",
        32,
    );
    assert!(compile_ptx(&empty, "sm_80").is_ok());
    let failures = spdnn_cuda::kernel_table::check_sources(&[MISSING], &dir, &["sm_80"]);
    assert!(
        failures
            .iter()
            .any(|f| f.contains("spdnn_missing_kernel") && f.contains("empty.cu")),
        "{failures:?}"
    );
}

#[test]
fn kernel_selection_is_checked() {
    if !common::nvrtc_or_skip("kernel_selection_is_checked") {
        return;
    }
    const SRC: KernelSource = KernelSource::new(
        "select.cu",
        "#include \"common.cuh\"\n\
         #if SPDNN_KEEP(sel_a)\n\
         // Launch: grid 1, block 32, no shared memory.\n\
         extern \"C\" __global__ void sel_a(float* y) { y[0] = 1.0f; }\n\
         #endif\n\
         #if SPDNN_KEEP(sel_a)\n\
         // Launch: grid 1, block 32, no shared memory.\n\
         extern \"C\" __global__ void sel_b(float* y) { y[1] = 1.0f; }\n\
         #endif\n\
         // Launch: grid 1, block 32, no shared memory.\n\
         extern \"C\" __global__ void sel_c(float* y) { y[2] = 1.0f; }\n",
    );
    const A: spdnn_cuda::KernelDecl = spdnn_cuda::KernelDecl::new(&SRC, "sel_a", 32);
    const B: spdnn_cuda::KernelDecl = spdnn_cuda::KernelDecl::new(&SRC, "sel_b", 32);
    const C: spdnn_cuda::KernelDecl = spdnn_cuda::KernelDecl::new(&SRC, "sel_c", 32);
    let failures = spdnn_cuda::kernel_table::check_selection(&SRC, &[&A, &B, &C], "sm_90");
    let has = |what: &[&str]| failures.iter().any(|f| what.iter().all(|w| f.contains(w)));
    // sel_b's guard names sel_a: its text is wrong, and alone it is not there at all (only
    // the unguarded sel_c is).
    assert!(
        has(&["sel_b needs `#if SPDNN_KEEP(sel_b)`"]),
        "{failures:#?}"
    );
    assert!(
        has(&["kernel sel_b compiled alone gives the entries [\"sel_c\"]"]),
        "{failures:#?}"
    );
    // sel_a alone brings sel_b along.
    assert!(
        has(&["kernel sel_a compiled alone", "sel_b"]),
        "{failures:#?}"
    );
    // sel_c is not guarded: it stays with nothing kept, and comes along with each.
    assert!(
        has(&["sel_c needs `#if SPDNN_KEEP(sel_c)`"]),
        "{failures:#?}"
    );
    assert!(has(&["no kernel kept", "sel_c"]), "{failures:#?}");
    // The project's own selftest.cu passes.
    let decls: Vec<&spdnn_cuda::KernelDecl> = spdnn_cuda::KERNELS
        .iter()
        .filter(|d| d.source.name == "selftest.cu")
        .collect();
    assert_eq!(decls.len(), 2);
    let failures =
        spdnn_cuda::kernel_table::check_selection(&spdnn_cuda::SELFTEST, &decls, "sm_90");
    assert!(failures.is_empty(), "{failures:#?}");
}
