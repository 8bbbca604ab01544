//! XY-2021 (Xu et al., "Towards Fast GPU-based Sparse DNN Inference", the HPEC 2021
//! Graph Challenge champion).
//!
//! The network is preprocessed once (in parallel, cached on disk): the outputs of each
//! layer that share one input set are found from the data and stored as blocks (see
//! [`format`]). Inference then runs in three phases (`kernels-cu/xy.cu`):
//! 1. the first layer, row-major, from the scattered input rows;
//! 2. the *stride layers* that follow while each block reads at most two windows of
//!    neighbouring inputs, still row-major, on the list of non-empty rows;
//! 3. after a transpose, every other layer neuron-major (one thread per sample, the
//!    block's weights in shared memory, one accumulator per block output in registers),
//!    with the dead samples deleted once at a configurable layer (default 22).

pub mod format;

use std::path::PathBuf;

use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_cuda::{CudaError, Gpu};
use spdnn_formats::Csr;

pub use format::{GROUP, XyLayer, XyNetwork};

/// Tuning of an XY run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XyOptions {
    /// The layer (1-based count of layers done) after which dead samples are deleted from
    /// the neuron-major activations; `None` never deletes. Default 22, as XY-2021.
    pub delete_at: Option<usize>,
    /// Row-major layers before the transpose; `None` detects them from the data (the
    /// first layer and the stride layers that follow it).
    pub row_major_layers: Option<usize>,
    /// Where preprocessed networks are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
}

impl Default for XyOptions {
    fn default() -> Self {
        Self {
            delete_at: Some(22),
            row_major_layers: None,
            cache_dir: None,
        }
    }
}

/// Runs XY on `input` (rows × N) through `layers`.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &XyOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    let _ = (gpu, layers, input, bias, upper, options, spec);
    Err(CudaError::InvalidArgument("xy: not built yet".into()))
}
