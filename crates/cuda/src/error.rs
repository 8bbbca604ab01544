//! The crate's error type.

use cudarc::driver::DriverError;

/// Everything that can go wrong in the GPU runtime. No function of this crate panics
/// on a missing driver, a missing NVRTC, a missing device or an allocation failure;
/// each comes back as one of these variants.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CudaError {
    /// The CUDA driver library (libcuda) cannot be loaded.
    #[error(
        "libcuda not found: no NVIDIA driver on this machine (or libcuda.so.1 is not on the \
         dynamic loader path; add its folder, e.g. /usr/local/nvidia/lib64 or /usr/lib/wsl/lib, \
         to LD_LIBRARY_PATH)"
    )]
    NoDriver,

    /// The NVRTC runtime compiler library (libnvrtc) cannot be loaded.
    #[error(
        "libnvrtc not found: NVRTC 13.0 is needed to compile the CUDA kernels. Install it with \
         `pip install --target .nvrtc nvidia-cuda-nvrtc==13.0.88` and run with \
         LD_LIBRARY_PATH=$PWD/.nvrtc/nvidia/cu13/lib (or run `cargo xtask setup`). Keep \
         NVRTC at 13.0: PTX from a newer NVRTC is refused by a CUDA 13.0 driver"
    )]
    NoNvrtc,

    /// No CUDA device with the requested ordinal is visible.
    #[error("no CUDA device with ordinal {requested}: {available} device(s) visible")]
    NoDevice {
        /// The ordinal that was asked for.
        requested: usize,
        /// How many devices the driver reports.
        available: usize,
    },

    /// NVRTC rejected a kernel source (or the arch / options given to it).
    #[error("NVRTC could not compile {file} for {arch}:\n{log}")]
    Compile {
        /// The kernel source's file name, e.g. `bf.cu`.
        file: String,
        /// The target architecture, e.g. `sm_90`.
        arch: String,
        /// NVRTC's program log (or a description of what was wrong).
        log: String,
    },

    /// A CUDA driver call failed.
    #[error("CUDA driver error while {context}: {source}")]
    Driver {
        /// What we were doing, e.g. `loading module bf.cu`.
        context: String,
        /// The driver's error code.
        #[source]
        source: DriverError,
    },

    /// A device allocation does not fit into the device's free memory.
    #[error(
        "out of GPU memory: requested {requested} bytes, {free} bytes free \
         (reduce the batch size or the number of resident layers)"
    )]
    OutOfMemory {
        /// Bytes asked for (saturated at `usize::MAX` when the size overflowed).
        requested: usize,
        /// Bytes the driver reported free.
        free: usize,
    },

    /// A caller passed arguments this crate cannot act on (mismatched lengths, …).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl CudaError {
    /// Wraps a driver error with a description of what was being done.
    pub fn driver(context: impl Into<String>, source: DriverError) -> Self {
        CudaError::Driver {
            context: context.into(),
            source,
        }
    }
}

/// Adds `.context("what")` to results of raw cudarc driver calls, turning them into
/// [`CudaError::Driver`].
pub trait DriverResultExt<T> {
    /// Converts a driver error into [`CudaError::Driver`] naming `context`.
    fn context(self, context: &str) -> Result<T, CudaError>;
}

impl<T> DriverResultExt<T> for Result<T, DriverError> {
    fn context(self, context: &str) -> Result<T, CudaError> {
        self.map_err(|e| CudaError::driver(context, e))
    }
}

impl From<DriverError> for CudaError {
    fn from(source: DriverError) -> Self {
        CudaError::driver("calling the CUDA driver", source)
    }
}
