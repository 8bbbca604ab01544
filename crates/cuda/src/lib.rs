//! GPU runtime for spdnn, built on cudarc.
//!
//! - Presence checks that never panic: [`driver_present`], [`nvrtc_present`], [`probe`].
//! - NVRTC compilation of `kernels-cu/*.cu` without a GPU: [`compile_ptx`]; shared
//!   headers (`#include "common.cuh"`) are inlined textually (see [`KernelSource`]).
//! - An on-disk PTX cache: [`PtxCache`].
//! - One device: [`Gpu`] with a non-NULL main stream, a process-wide module registry,
//!   memory-accounted [`DeviceBuffer`]s, [`PinnedBuffer`]s, [`EventTimer`] and CUDA
//!   graph capture ([`Gpu::capture_graph`]).
//!
//! Kernel crates depend only on `spdnn-formats` and this crate; cudarc is re-exported
//! as [`cudarc`] together with the types launches need.

mod cache;
pub mod census;
mod compile;
mod device;
mod error;
mod graph;
pub mod rows;
pub mod slab_weights;
mod source;
mod timing;

use std::path::PathBuf;

pub use cache::{CacheOutcome, PtxCache, cache_key};
pub use compile::{
    NVRTC_OPTIONS, compile_ptx, driver_present, nvrtc_options, nvrtc_present, nvrtc_version,
    validate_arch,
};
pub use device::{DeviceBuffer, DeviceInfo, Gpu, MemoryInfo, PinnedBuffer, probe};
pub use error::{CudaError, DriverResultExt};
pub use graph::CapturedGraph;
pub use source::{BUILTIN_HEADERS, COMMON_HEADER, KernelSource, SELFTEST};
pub use timing::{EventTimer, Timeline};

pub use cudarc;
pub use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr,
    DevicePtrMut, DeviceRepr, DeviceSlice, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};

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
