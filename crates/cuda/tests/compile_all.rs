//! Every kernel source of `kernels-cu/` compiles with NVRTC (no GPU needed).

mod common;

use std::fs;
use std::path::PathBuf;

use spdnn_cuda::{BUILTIN_HEADERS, CudaError, KernelSource, compile_ptx, kernel_sources_dir};

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

fn leak_source(path: &std::path::Path, text: String) -> KernelSource {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    KernelSource {
        name: Box::leak(name.into_boxed_str()),
        source: Box::leak(text.into_boxed_str()),
    }
}

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
    let mut failures = Vec::new();
    for (path, text) in files {
        let source = leak_source(&path, text);
        for arch in ARCHS {
            match compile_ptx(&source, arch) {
                Ok(ptx) => {
                    let target = format!(".target {arch}");
                    assert!(
                        ptx.contains(&target),
                        "{}: PTX lacks `{target}`",
                        source.name
                    );
                    assert!(
                        ptx.contains(".entry"),
                        "{}: PTX has no kernel entry",
                        source.name
                    );
                }
                Err(e) => failures.push(format!("{} / {arch}: {e}", source.name)),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "kernel sources failed to compile:\n{}",
        failures.join("\n\n")
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
    let broken = KernelSource {
        name: "broken_example.cu",
        source: "#include \"common.cuh\"\n\
                 extern \"C\" __global__ void k(float* y) {\n\
                 \x20   y[0] = undeclared_identifier;\n\
                 }\n",
    };
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
    let clash = KernelSource {
        name: "clash.cu",
        source: "#include \"common.cuh\"\n\
                 __device__ float spdnn_clamp_activation(float v, float upper) { return v; }\n",
    };
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
