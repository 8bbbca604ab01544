//! Embeds every `kernels-cu/*.cuh` header so `#include "NAME.cuh"` in any kernel
//! source resolves at run time (NVRTC cannot read files itself). Generates
//! `$OUT_DIR/builtin_headers.rs`.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let dir = manifest.join("..").join("..").join("kernels-cu");
    println!("cargo:rerun-if-changed={}", dir.display());

    let mut headers: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "cuh"))
                .filter_map(|p| {
                    let name = p.file_name()?.to_str()?.to_string();
                    let abs = p.canonicalize().ok()?;
                    Some((name, abs))
                })
                .collect()
        })
        .unwrap_or_default();
    headers.sort();

    let mut code = String::from(
        "/// Every `kernels-cu/*.cuh` header, embedded at build time, sorted by name.\n\
         pub const BUILTIN_HEADERS: &[KernelSource] = &[\n",
    );
    for (name, path) in &headers {
        let path = path.to_str().expect("kernels-cu paths are UTF-8");
        writeln!(
            code,
            "    KernelSource::new({name:?}, include_str!({path:?})),"
        )
        .expect("writing to a String");
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out.join("builtin_headers.rs"), code).expect("OUT_DIR is writable");
}
