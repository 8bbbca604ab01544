//! SNICIT (Jiang, Huang, Yu and Ho, ICPP 2023): sparse inference by compressing the
//! activations at inference time.

use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_cuda::{CudaError, Gpu};
use spdnn_formats::Csr;
use spdnn_xy::XyOptions;

/// The spMM of the layers before the threshold layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PreConvergence {
    /// XY-2021's kernels (the paper's choice).
    #[default]
    Xy,
    /// BF-2019's kernel.
    Bf,
}

/// SNICIT's parameters (paper §4.1 defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct SnicitOptions {
    /// Threshold layer t: layers `1..=t` run before the conversion.
    pub threshold: usize,
    /// Sampled rows s.
    pub samples: usize,
    /// Bins n of the sum downsampling.
    pub bins: usize,
    /// ε: a bin of a sample counts as different when it differs by more than this.
    pub epsilon: f32,
    /// η: a sample is pruned when fewer than `η·n` of its bins differ from a base.
    pub eta: f32,
    /// Layers between refreshes of the non-empty row index.
    pub refresh_interval: usize,
    /// Rows per batch (`None`: all rows in one batch).
    pub batch: Option<usize>,
    /// The pre-convergence spMM.
    pub pre_convergence: PreConvergence,
    /// XY's options when XY runs the pre-convergence layers.
    pub xy: XyOptions,
}

impl Default for SnicitOptions {
    fn default() -> Self {
        Self {
            threshold: 30,
            samples: 32,
            bins: 16,
            epsilon: 0.03,
            eta: 0.03,
            refresh_interval: 200,
            batch: None,
            pre_convergence: PreConvergence::Xy,
            xy: XyOptions::default(),
        }
    }
}

/// Runs SNICIT on `input` (rows × N) through `layers`.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &SnicitOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    let _ = (gpu, layers, input, bias, upper, options, spec);
    Err(CudaError::InvalidArgument("snicit: not built yet".into()))
}
