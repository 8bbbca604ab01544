//! Kernels declared once: each `extern "C" __global__` function of a source is a
//! [`KernelDecl`] in the Rust crate that owns the source, stating its block shape and how
//! much dynamic shared memory it takes. A launch site supplies only the grid (and the
//! length of the dynamic shared array, for kernels that have one) and gets its
//! [`LaunchConfig`] from the declaration, so the block and shared sizes live in one place.
//!
//! ```
//! use spdnn_cuda::{KernelDecl, KernelSource};
//! const SRC: KernelSource = KernelSource::new("mine.cu", "");
//! /// One block per row; dynamic shared: one float per column.
//! const MY_LAYER: KernelDecl = KernelDecl::new(&SRC, "my_layer", 256).with_shared_array(4);
//! let config = MY_LAYER.config_shared(1000, 512).unwrap();
//! assert_eq!(config.grid_dim, (1000, 1, 1));
//! assert_eq!(config.block_dim, (256, 1, 1));
//! assert_eq!(config.shared_mem_bytes, 2048);
//! // Forgetting the shared length is an error, not a launch with too little memory.
//! assert!(MY_LAYER.config(1000).is_err());
//! ```

use std::ops::Deref;

use cudarc::driver::{CudaFunction, LaunchConfig};

use crate::{CudaError, KernelSource, rows::grid_for};

/// How a kernel uses dynamic shared memory (its static `__shared__` arrays are its own
/// business and need nothing at launch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SharedMemory {
    /// No dynamic shared memory.
    None,
    /// One `extern __shared__` array of `element_bytes`-byte elements, whose length each
    /// launch gives ([`KernelDecl::config_shared`]).
    Array {
        /// Bytes per element (4 for `float`).
        element_bytes: u32,
    },
}

/// A grid: `n`, `(x, y)` or `(x, y, z)` blocks.
pub trait IntoGrid {
    /// The grid as `(x, y, z)`.
    fn into_grid(self) -> (u32, u32, u32);
}

impl IntoGrid for u32 {
    fn into_grid(self) -> (u32, u32, u32) {
        (self, 1, 1)
    }
}

impl IntoGrid for (u32, u32) {
    fn into_grid(self) -> (u32, u32, u32) {
        (self.0, self.1, 1)
    }
}

impl IntoGrid for (u32, u32, u32) {
    fn into_grid(self) -> (u32, u32, u32) {
        self
    }
}

/// One kernel of a [`KernelSource`]: its `extern "C"` name, block shape and dynamic shared
/// memory. Declared once, as a constant beside the code that launches it, and listed in its
/// crate's `KERNELS` table, which a test checks against the compiled source
/// ([`crate::kernel_table`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelDecl {
    /// The source defining it.
    pub source: &'static KernelSource,
    /// The `extern "C" __global__` function's name.
    pub name: &'static str,
    /// Threads per block, `(x, y, z)`.
    pub block: (u32, u32, u32),
    /// Its dynamic shared memory.
    pub shared: SharedMemory,
}

impl KernelDecl {
    /// Kernel `name` of `source` with one-dimensional blocks of `threads` threads and no
    /// dynamic shared memory.
    pub const fn new(source: &'static KernelSource, name: &'static str, threads: u32) -> Self {
        Self {
            source,
            name,
            block: (threads, 1, 1),
            shared: SharedMemory::None,
        }
    }

    /// The same kernel with blocks of `block` threads.
    pub const fn with_block(self, block: (u32, u32, u32)) -> Self {
        Self { block, ..self }
    }

    /// The same kernel with a dynamic shared array of `element_bytes`-byte elements.
    pub const fn with_shared_array(self, element_bytes: u32) -> Self {
        Self {
            shared: SharedMemory::Array { element_bytes },
            ..self
        }
    }

    /// Threads per block.
    pub const fn threads(&self) -> u32 {
        self.block.0 * self.block.1 * self.block.2
    }

    /// The launch on `grid` of a kernel without dynamic shared memory.
    pub fn config(&self, grid: impl IntoGrid) -> Result<LaunchConfig, CudaError> {
        match self.shared {
            SharedMemory::None => Ok(self.launch(grid.into_grid(), 0)),
            SharedMemory::Array { .. } => Err(CudaError::InvalidArgument(format!(
                "kernel {} takes a dynamic shared array: launch it with config_shared",
                self.name
            ))),
        }
    }

    /// The launch on `grid` of a kernel with a dynamic shared array of `len` elements.
    pub fn config_shared(
        &self,
        grid: impl IntoGrid,
        len: usize,
    ) -> Result<LaunchConfig, CudaError> {
        let SharedMemory::Array { element_bytes } = self.shared else {
            return Err(CudaError::InvalidArgument(format!(
                "kernel {} takes no dynamic shared memory: launch it with config",
                self.name
            )));
        };
        let bytes = u32::try_from(len)
            .ok()
            .and_then(|len| len.checked_mul(element_bytes))
            .ok_or_else(|| {
                CudaError::InvalidArgument(format!(
                    "kernel {}: {len} shared elements of {element_bytes} bytes overflow",
                    self.name
                ))
            })?;
        Ok(self.launch(grid.into_grid(), bytes))
    }

    /// The launch of one thread per item over `items` items: a one-dimensional grid of
    /// `ceil(items / threads)` blocks, at least 1 and at most 65535·16 ([`grid_for`]), for a
    /// kernel without dynamic shared memory.
    pub fn config_for(&self, items: usize) -> Result<LaunchConfig, CudaError> {
        self.config(grid_for(items, self.threads() as usize))
    }

    fn launch(&self, grid_dim: (u32, u32, u32), shared_mem_bytes: u32) -> LaunchConfig {
        LaunchConfig {
            grid_dim,
            block_dim: self.block,
            shared_mem_bytes,
        }
    }
}

/// A loaded kernel with its declaration ([`crate::Gpu::kernel`]). Dereferences to the
/// [`CudaFunction`], so `stream.launch_builder(&kernel)` works; take the launch shape from
/// [`Kernel::config`], [`Kernel::config_shared`] or [`Kernel::config_for`], which use the
/// declaration of the very function launched.
#[derive(Debug, Clone)]
pub struct Kernel {
    decl: KernelDecl,
    function: CudaFunction,
}

impl Kernel {
    /// `function`, loaded for `decl`.
    pub fn new(decl: KernelDecl, function: CudaFunction) -> Self {
        Self { decl, function }
    }

    /// Its declaration.
    pub fn decl(&self) -> &KernelDecl {
        &self.decl
    }

    /// The CUDA function.
    pub fn function(&self) -> &CudaFunction {
        &self.function
    }

    /// [`KernelDecl::config`].
    pub fn config(&self, grid: impl IntoGrid) -> Result<LaunchConfig, CudaError> {
        self.decl.config(grid)
    }

    /// [`KernelDecl::config_shared`].
    pub fn config_shared(
        &self,
        grid: impl IntoGrid,
        len: usize,
    ) -> Result<LaunchConfig, CudaError> {
        self.decl.config_shared(grid, len)
    }

    /// [`KernelDecl::config_for`].
    pub fn config_for(&self, items: usize) -> Result<LaunchConfig, CudaError> {
        self.decl.config_for(items)
    }
}

impl Deref for Kernel {
    type Target = CudaFunction;

    fn deref(&self) -> &CudaFunction {
        &self.function
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: KernelSource = KernelSource::new("t.cu", "");
    const PLAIN: KernelDecl = KernelDecl::new(&SRC, "plain", 256);
    const TILED: KernelDecl = KernelDecl::new(&SRC, "tiled", 32).with_block((32, 8, 1));
    const SHARED: KernelDecl = KernelDecl::new(&SRC, "shared", 128).with_shared_array(4);

    #[test]
    fn configs_take_block_and_shared_from_the_declaration() {
        let c = PLAIN.config(7).unwrap();
        assert_eq!(
            (c.grid_dim, c.block_dim, c.shared_mem_bytes),
            ((7, 1, 1), (256, 1, 1), 0)
        );
        let c = TILED.config((3, 4)).unwrap();
        assert_eq!((c.grid_dim, c.block_dim), ((3, 4, 1), (32, 8, 1)));
        assert_eq!(TILED.threads(), 256);
        let c = SHARED.config_shared((2, 3, 4), 100).unwrap();
        assert_eq!(
            (c.grid_dim, c.block_dim, c.shared_mem_bytes),
            ((2, 3, 4), (128, 1, 1), 400)
        );
    }

    #[test]
    fn shared_memory_mismatches_are_errors() {
        let err = SHARED.config(1).unwrap_err().to_string();
        assert!(
            err.contains("shared") && err.contains("config_shared"),
            "{err}"
        );
        let err = PLAIN.config_shared(1, 10).unwrap_err().to_string();
        assert!(err.contains("plain"), "{err}");
        let err = SHARED.config_shared(1, usize::MAX).unwrap_err().to_string();
        assert!(err.contains("overflow"), "{err}");
        assert!(
            SHARED
                .config_shared(1, (u32::MAX / 4) as usize + 1)
                .is_err()
        );
        assert!(SHARED.config_for(10).is_err());
    }

    #[test]
    fn one_thread_per_item() {
        assert_eq!(PLAIN.config_for(0).unwrap().grid_dim, (1, 1, 1));
        assert_eq!(PLAIN.config_for(256).unwrap().grid_dim, (1, 1, 1));
        assert_eq!(PLAIN.config_for(257).unwrap().grid_dim, (2, 1, 1));
        assert_eq!(
            PLAIN.config_for(usize::MAX).unwrap().grid_dim,
            (65535 * 16, 1, 1)
        );
        assert_eq!(TILED.config_for(513).unwrap().grid_dim, (3, 1, 1));
    }
}
