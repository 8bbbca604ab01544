//! One way to run any method: the method registry, data loading, the timed run,
//! verification against a truth, and reports.
//!
//! `spdnn infer`, `spdnn bench` and `cargo xtask bench` all go through [`run::execute`].
//!
//! Modules, each depending only on those before it: [`method`] (the vocabulary: problem,
//! run configuration, the [`Method`] trait, typed outputs) and [`options`] (the option
//! groups of a run); [`cpu`], [`gpu`] (every kernel crate through one adapter), [`glare`]
//! (the `+glare` modifier) and [`compress`] (the `+compress` modifier); [`auto`] (the method
//! that picks one of the others); [`registry`]; [`report`] and [`run`]; [`data`]; [`cached`]
//! (generated networks and truths kept on disk between runs).

pub mod auto;
pub mod cached;
pub mod compress;
pub mod cpu;
pub mod data;
pub mod glare;
pub mod gpu;
pub mod method;
pub mod options;
pub mod registry;
pub mod report;
pub mod run;

pub use glare::GlareSettings;
pub use method::{Method, MethodOutput, Precision, Problem, RunConfig, SharedWork, Timing};
pub use options::OptionSet;
pub use registry::Registry;
pub use report::RunReport;
pub use run::Truth;
/// The crates whose option types a run's [`OptionSet`] holds, and GLARE's model.
pub use {
    spdnn_adaptive, spdnn_blockdepend, spdnn_cuda, spdnn_dense, spdnn_glare, spdnn_hp,
    spdnn_snicit, spdnn_tcchain, spdnn_xy,
};

/// Frees what the runs of one network share in the process: its compression
/// ([`spdnn_compress::compress_shared`], the oracle's and BlockDepend's) and its XY form
/// ([`spdnn_xy::XyNetwork::load_or_prepare_shared`], XY's and SNICIT's). For a caller done
/// with a network, before the next one (each is also replaced by the next network's).
pub fn forget_shared_preparations() {
    spdnn_compress::forget_shared();
    spdnn_xy::forget_shared();
}

/// Whether a CUDA GPU can be used by this build on this machine (never panics).
pub fn gpu_available() -> bool {
    gpu_name().is_some()
}

/// Number of GPUs this process sees (0 without a driver).
pub fn gpu_count() -> usize {
    spdnn_cuda::device_count().unwrap_or(0)
}

/// The name of GPU 0, when there is one.
pub fn gpu_name() -> Option<String> {
    spdnn_cuda::probe().ok()?.into_iter().next().map(|d| d.name)
}
