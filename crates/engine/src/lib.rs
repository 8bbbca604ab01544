//! One way to run any method: the method registry, data loading, the timed run,
//! verification against a truth, and reports.
//!
//! `spdnn infer`, `spdnn bench` and `cargo xtask bench` all go through [`run::execute`].

pub mod data;
pub mod glare;
mod gpu_methods;
pub mod method;
pub mod report;
pub mod run;

pub use glare::GlareSettings;
pub use method::{Method, MethodOutput, Problem, Registry, Timing};
pub use report::RunReport;
pub use run::{MethodOptions, RunConfig, Truth};
/// The crates whose option types [`MethodOptions`] holds, and GLARE's model.
pub use {spdnn_glare, spdnn_snicit, spdnn_xy};

/// Whether a CUDA GPU can be used by this build on this machine (never panics).
pub fn gpu_available() -> bool {
    gpu_name().is_some()
}

/// The name of GPU 0, when there is one.
pub fn gpu_name() -> Option<String> {
    spdnn_cuda::probe().ok()?.into_iter().next().map(|d| d.name)
}
