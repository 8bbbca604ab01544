//! GPU runtime for spdnn, built on cudarc.
//!
//! - Presence checks that never panic: [`driver_present`], [`nvrtc_present`], [`probe`].
//! - NVRTC compilation of `kernels-cu/*.cu` without a GPU: [`compile_ptx`]; shared
//!   headers (`#include "common.cuh"`) are inlined textually, constants shared with Rust
//!   are passed as definitions (see [`KernelSource`], [`Define`]).
//! - Kernels declared once ([`KernelDecl`]: name, block, dynamic shared memory), loaded as
//!   [`Kernel`]s that give each launch its shape, and checked against their sources by
//!   [`kernel_table`].
//! - Modules per kernel, compiled ahead on worker threads to machine code (CUBIN) for the
//!   device, cached on disk ([`KernelCache`]), loaded once: [`modules`].
//! - One device: [`Gpu`] with a non-NULL main stream, a process-wide module registry,
//!   memory-accounted [`DeviceBuffer`]s, [`PinnedBuffer`]s, [`EventTimer`] and CUDA
//!   graph capture ([`Gpu::capture_graph`]).
//! - What a program lifting one kernel crate needs around it (the challenge's TSV files, a
//!   plain CPU check, a report): [`standalone`], used by every kernel crate's example.
//!
//! Kernel crates depend only on `spdnn-formats` and this crate; cudarc is re-exported
//! as [`cudarc`] together with the types launches need.

mod cache;
pub mod census;
mod chain;
mod compile;
mod device;
mod error;
mod graph;
mod kernel;
pub mod kernel_table;
pub mod memory;
pub mod method;
pub mod modules;
pub mod order;
pub mod rows;
pub mod slab_weights;
mod source;
pub mod standalone;
mod timing;

use std::path::PathBuf;

pub use cache::{CacheOutcome, KernelCache, cache_key};
pub use compile::{
    CompileTarget, ImageKind, ModuleImage, NVRTC_OPTIONS, compile_ptx,
    compile_ptx_with_include_dirs, compile_target, compile_text, compile_text_to, driver_present,
    nvrtc_options, nvrtc_present, nvrtc_supported_archs, nvrtc_version, ptx_forced, validate_arch,
};
pub use device::{
    Budget, DeviceBuffer, DeviceInfo, Gpu, MemoryInfo, PinnedBuffer, Refusal, device_count, probe,
};
pub use error::{CudaError, DriverResultExt};
pub use graph::CapturedGraph;
pub use kernel::{IntoGrid, Kernel, KernelDecl, SharedMemory};
pub use modules::{CompileStats, ModuleSpec, PreparationClock};
pub use order::{Fence, SlotCopies};
pub use source::{
    BUILTIN_HEADERS, COMMON_HEADER, Define, KernelSource, SELECT_KERNELS, SELFTEST,
    SELFTEST_ACTIVATION, SELFTEST_AXPY, selection_options,
};
pub use timing::{EventTimer, GraphSpan, Timeline};

pub use cudarc;
pub use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr,
    DevicePtrMut, DeviceRepr, DeviceSlice, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};

/// Every kernel this crate declares (`rows.cu`, `selftest.cu`), checked against the sources
/// by the kernel-table test.
pub const KERNELS: &[KernelDecl] = &[
    rows::SCATTER_ROWS,
    rows::ROW_NONZERO_FLAGS,
    rows::MARK_ROWS,
    rows::ALL_ROWS,
    rows::COMPACT_FLAGGED_ROWS,
    SELFTEST_AXPY,
    SELFTEST_ACTIVATION,
];

/// The workspace's `kernels-cu/` folder: `$SPDNN_KERNELS_CU` when set (for test
/// binaries run on another machine), else the path next to this crate at build time.
pub fn kernel_sources_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SPDNN_KERNELS_CU").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
        .join("kernels-cu")
}
