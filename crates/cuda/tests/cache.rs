//! The on-disk module cache (PTX and CUBIN) with a real NVRTC (no GPU needed).

mod common;

use std::fs;

use spdnn_cuda::{
    CacheOutcome, Define, ImageKind, KernelCache, KernelSource, ModuleImage, SELFTEST, cache_key,
    compile_ptx, nvrtc_options, nvrtc_version,
};

#[test]
fn miss_then_hit_then_corrupt_entry_is_recompiled() {
    if !common::nvrtc_or_skip("miss_then_hit_then_corrupt_entry_is_recompiled") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = KernelCache::at(dir.path());
    let arch = "sm_80";

    let (first, outcome) = cache.compile_with_outcome(&SELFTEST, arch).unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    assert_eq!(first, compile_ptx(&SELFTEST, arch).unwrap());

    let (second, outcome) = cache.compile_with_outcome(&SELFTEST, arch).unwrap();
    assert_eq!(outcome, CacheOutcome::Hit);
    assert_eq!(second, first);

    // The entry sits where the key says, and the key is stored inside it.
    let key = cache_key(
        &SELFTEST.expand_builtin().unwrap(),
        arch,
        &nvrtc_options(arch),
        nvrtc_version().unwrap(),
        ImageKind::Ptx,
    );
    let path = cache.entry_path(&key, ImageKind::Ptx).unwrap();
    let stored = fs::read_to_string(&path).unwrap();
    assert!(stored.contains(&key));

    // Truncated entry: recompiled, never trusted.
    fs::write(&path, &stored[..stored.len() / 2]).unwrap();
    let (third, outcome) = cache.compile_with_outcome(&SELFTEST, arch).unwrap();
    assert_eq!(outcome, CacheOutcome::Recompiled);
    assert_eq!(third, first);
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        stored,
        "entry rewritten"
    );

    // Tampered PTX with a stale body hash: recompiled.
    fs::write(&path, stored.replace(".target sm_80", ".target sm_70")).unwrap();
    let (fourth, outcome) = cache.compile_with_outcome(&SELFTEST, arch).unwrap();
    assert_eq!(outcome, CacheOutcome::Recompiled);
    assert!(fourth.contains(".target sm_80"));

    // Binary garbage: recompiled.
    fs::write(&path, [0xffu8, 0x00, 0x13, 0x37]).unwrap();
    let (_, outcome) = cache.compile_with_outcome(&SELFTEST, arch).unwrap();
    assert_eq!(outcome, CacheOutcome::Recompiled);
    assert_eq!(
        cache.compile_with_outcome(&SELFTEST, arch).unwrap().1,
        CacheOutcome::Hit
    );

    // Another arch is another entry.
    let (other, outcome) = cache.compile_with_outcome(&SELFTEST, "sm_90").unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    assert!(other.contains(".target sm_90"));
}

#[test]
fn entry_of_another_key_is_not_trusted() {
    if !common::nvrtc_or_skip("entry_of_another_key_is_not_trusted") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = KernelCache::at(dir.path());
    let version = nvrtc_version().unwrap();
    let key_for = |arch: &str| {
        cache_key(
            &SELFTEST.expand_builtin().unwrap(),
            arch,
            &nvrtc_options(arch),
            version,
            ImageKind::Ptx,
        )
    };
    cache.compile(&SELFTEST, "sm_75").unwrap();
    // Put the valid sm_75 entry under the sm_90 name: the key inside does not match.
    fs::copy(
        cache.entry_path(&key_for("sm_75"), ImageKind::Ptx).unwrap(),
        cache.entry_path(&key_for("sm_90"), ImageKind::Ptx).unwrap(),
    )
    .unwrap();
    let (ptx, outcome) = cache.compile_with_outcome(&SELFTEST, "sm_90").unwrap();
    assert_eq!(outcome, CacheOutcome::Recompiled);
    assert!(ptx.contains(".target sm_90") && !ptx.contains(".target sm_75"));
}

#[test]
fn disabled_and_unwritable_caches_still_compile() {
    if !common::nvrtc_or_skip("disabled_and_unwritable_caches_still_compile") {
        return;
    }
    let (ptx, outcome) = KernelCache::disabled()
        .compile_with_outcome(&SELFTEST, "sm_75")
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Uncached);
    assert!(ptx.contains(".target sm_75"));

    // A folder that exists but cannot be written to (a read-only dir; root ignores
    // permissions, so also a path under a regular file, which create_dir_all refuses).
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    fs::write(&file, b"x").unwrap();
    let cache = KernelCache::at(file.join("ptx"));
    let (_, outcome) = cache.compile_with_outcome(&SELFTEST, "sm_75").unwrap();
    assert_eq!(outcome, CacheOutcome::Uncached);
}

#[test]
fn source_change_changes_the_entry() {
    if !common::nvrtc_or_skip("source_change_changes_the_entry") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = KernelCache::at(dir.path());
    let a = KernelSource::new(
        "a.cu",
        "extern \"C\" __global__ void k(float* y) { y[0] = 1.0f; }\n",
    );
    let b = KernelSource::new(
        "a.cu",
        "extern \"C\" __global__ void k(float* y) { y[0] = 2.0f; }\n",
    );
    let (ptx_a, outcome) = cache.compile_with_outcome(&a, "sm_80").unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    let (ptx_b, outcome) = cache.compile_with_outcome(&b, "sm_80").unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled, "b must not hit a's entry");
    assert_ne!(ptx_a, ptx_b);
    // 2.0f is stored as its bit pattern 0x40000000 = 1073741824 (or a 0f literal).
    assert!(
        ptx_b.contains("1073741824") || ptx_b.contains("0f40000000"),
        "{ptx_b}"
    );
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn definitions_change_the_entry() {
    if !common::nvrtc_or_skip("definitions_change_the_entry") {
        return;
    }
    const TEXT: &str = "extern \"C\" __global__ void k(float* y) { y[K_AT] = 1.0f; }\n";
    const AT_3: &[Define] = &[Define::new("K_AT", 3)];
    const AT_5: &[Define] = &[Define::new("K_AT", 5)];
    let dir = tempfile::tempdir().unwrap();
    let cache = KernelCache::at(dir.path());
    let three = KernelSource::new("d.cu", TEXT).with_defines(&[AT_3]);
    let five = KernelSource::new("d.cu", TEXT).with_defines(&[AT_5]);
    let (ptx_3, outcome) = cache.compile_with_outcome(&three, "sm_80").unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    let (ptx_5, outcome) = cache.compile_with_outcome(&five, "sm_80").unwrap();
    assert_eq!(
        outcome,
        CacheOutcome::Compiled,
        "other definitions, another entry"
    );
    assert_ne!(ptx_3, ptx_5);
    let (again, outcome) = cache.compile_with_outcome(&three, "sm_80").unwrap();
    assert_eq!((outcome, &again), (CacheOutcome::Hit, &ptx_3));
    // y[3] and y[5]: stores 12 and 20 bytes past y.
    assert!(ptx_3.contains("+12]"), "{ptx_3}");
    assert!(ptx_5.contains("+20]"), "{ptx_5}");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn cubins_and_single_kernel_modules_are_entries_of_their_own() {
    if !common::nvrtc_or_skip("cubins_and_single_kernel_modules_are_entries_of_their_own") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = KernelCache::at(dir.path());
    let axpy = Some("spdnn_selftest_axpy");
    let (cubin, outcome) = cache
        .compile_module(&SELFTEST, axpy, "sm_90", ImageKind::Cubin)
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    let ModuleImage::Cubin(bytes) = &cubin else {
        panic!("a CUBIN was asked for, got {:?}", cubin.kind());
    };
    assert!(bytes.starts_with(b"\x7fELF"));
    // The machine code names the kept kernel and not the other one.
    let names = String::from_utf8_lossy(bytes);
    assert!(names.contains("spdnn_selftest_axpy"));
    assert!(!names.contains("spdnn_selftest_activation"));
    let (again, outcome) = cache
        .compile_module(&SELFTEST, axpy, "sm_90", ImageKind::Cubin)
        .unwrap();
    assert_eq!((outcome, &again), (CacheOutcome::Hit, &cubin));

    // PTX of the same kernel, the other kernel, the whole file: three more entries.
    let (ptx, outcome) = cache
        .compile_module(&SELFTEST, axpy, "sm_90", ImageKind::Ptx)
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    let ModuleImage::Ptx(ptx) = ptx else {
        panic!("PTX was asked for");
    };
    assert_eq!(
        spdnn_cuda::kernel_table::ptx_entries(&ptx),
        ["spdnn_selftest_axpy"]
    );
    let (_, outcome) = cache
        .compile_module(
            &SELFTEST,
            Some("spdnn_selftest_activation"),
            "sm_90",
            ImageKind::Cubin,
        )
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    let (whole, outcome) = cache.compile_with_outcome(&SELFTEST, "sm_90").unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    assert_eq!(spdnn_cuda::kernel_table::ptx_entries(&whole).len(), 2);
    let mut files: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), 4, "{files:?}");
    assert_eq!(files.iter().filter(|f| f.ends_with(".cubin")).count(), 2);

    // A damaged CUBIN entry is recompiled, never loaded.
    let key = cache_key(
        &SELFTEST.expand_builtin().unwrap(),
        "sm_90",
        &[
            nvrtc_options("sm_90"),
            spdnn_cuda::selection_options(&["spdnn_selftest_axpy"]),
        ]
        .concat(),
        nvrtc_version().unwrap(),
        ImageKind::Cubin,
    );
    let path = cache.entry_path(&key, ImageKind::Cubin).unwrap();
    let mut stored = fs::read(&path).unwrap();
    let last = stored.len() - 1;
    stored[last] ^= 0x40;
    fs::write(&path, &stored).unwrap();
    let (repaired, outcome) = cache
        .compile_module(&SELFTEST, axpy, "sm_90", ImageKind::Cubin)
        .unwrap();
    assert_eq!((outcome, &repaired), (CacheOutcome::Recompiled, &cubin));
}
