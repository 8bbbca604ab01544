//! The whole chain of a dense-ish network (a trained network's 55 %-dense layers and dense
//! ends) fused in one launch on the tensor cores, each product fp32-accurate.
//!
//! A block carries a tile of up to 80 rows through every layer, its activations in shared
//! memory from the first layer to the last; the weights stream from L2 in the MMA's register
//! layout. Every operand is scaled by a power of two into fp16's range and split into two
//! fp16 terms (`hi`, `lo = x − hi`); a product is `a_hi·w_hi + a_hi·w_lo + a_lo·w_hi` on
//! the tensor cores (`mma.m16n8k16` .f16, fp32 accumulators), each k-step's three products
//! summed into a zero fragment and added in fp32 on the CUDA cores. What that misses is at
//! most `2^-22` of a product (or `2^-25` of the scale), below fp32's own rounding over a
//! dot product of a hundred terms (docs/tcchain.md, "Exactness"). A layer whose weights
//! all fit one fp16 term (the challenge's 1/16) is proved so on the host and skips the
//! `a_hi·w_lo` product.
//!
//! Every layer runs dense, whatever its density: the method is for networks whose layers are
//! ≥ ~20 % dense (`--method auto` picks it there). sm_80 or later.
//!
//! ```no_run
//! use spdnn_cuda::{Gpu, rows::RunSpec};
//! use spdnn_formats::Csr;
//! let gpu = Gpu::new(0)?;
//! let layers = vec![Csr::from_triplets(4, 4, &[(0, 1, 0.5), (2, 3, 1.0)])?];
//! let input = Csr::from_triplets(2, 4, &[(0, 0, 1.0), (1, 2, 2.0)])?;
//! let result = spdnn_tcchain::infer(&gpu, &layers, &input, -0.3, 32.0, &Default::default(),
//!     &RunSpec::default())?;
//! println!("{:?}", result.categories);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod device;
pub mod emulate;
pub mod layout;
pub mod split;

use spdnn_cuda::memory::MemoryModel;
use spdnn_cuda::method::{self, DeviceRun, KernelMethod, LayerChain, MethodOptions};
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_cuda::{CudaError, Define, Gpu, KernelDecl, KernelSource};
use spdnn_formats::{Csr, SparseMatrix};

/// Warps of a block.
pub const WARPS: usize = 8;
/// The output tiles (of 8 columns) a warp may compute in one pass over a layer's inputs,
/// one choice for a whole chain (each an instance of the kernel).
pub const WARP_TILE_CHOICES: [usize; 3] = [1, 2, 4];
/// 32-bit words after each buffer row (bank-conflict-free fragment loads).
pub const ROW_PAD_WORDS: usize = 4;
/// Most 16-row MMA tiles a block carries (the rows of a tile: 16 × this at most).
pub const MAX_M_TILES: usize = 5;

/// The definitions `tcchain.cu` takes from Rust.
pub const DEFINES: &[Define] = &[
    Define::new("TC_WARPS", WARPS as u64),
    Define::new("TC_ROW_PAD_WORDS", ROW_PAD_WORDS as u64),
    Define::new("TC_DESC_WORDS", layout::DESC_WORDS as u64),
    Define::new("TC_MAX_M_TILES", MAX_M_TILES as u64),
];

/// `kernels-cu/tcchain.cu`.
pub const SOURCE: KernelSource =
    KernelSource::new("tcchain.cu", include_str!("../../../kernels-cu/tcchain.cu"))
        .with_defines(&[DEFINES]);

const fn chain(name: &'static str) -> KernelDecl {
    KernelDecl::new(&SOURCE, name, (WARPS * 32) as u32).with_shared_array(4)
}

/// `tcchain_m{M}_n{T}`: the chain for tiles of 16·M rows (M = 1..5) whose warps take T
/// output tiles a pass (T in [`WARP_TILE_CHOICES`]), `CHAINS[index of T][M − 1]`; grid one
/// block per tile, dynamic shared [`layout::shared_bytes`] (in 4-byte words).
pub const CHAINS: [[KernelDecl; MAX_M_TILES]; 3] = [
    [
        chain("tcchain_m1_n1"),
        chain("tcchain_m2_n1"),
        chain("tcchain_m3_n1"),
        chain("tcchain_m4_n1"),
        chain("tcchain_m5_n1"),
    ],
    [
        chain("tcchain_m1_n2"),
        chain("tcchain_m2_n2"),
        chain("tcchain_m3_n2"),
        chain("tcchain_m4_n2"),
        chain("tcchain_m5_n2"),
    ],
    [
        chain("tcchain_m1_n4"),
        chain("tcchain_m2_n4"),
        chain("tcchain_m3_n4"),
        chain("tcchain_m4_n4"),
        chain("tcchain_m5_n4"),
    ],
];

/// The instance for tiles of 16·`m_tiles` rows and `warp_tiles` tiles a warp.
pub fn chain_kernel(m_tiles: usize, warp_tiles: usize) -> &'static KernelDecl {
    let index = WARP_TILE_CHOICES
        .iter()
        .position(|&t| t == warp_tiles)
        .unwrap_or(WARP_TILE_CHOICES.len() - 1);
    &CHAINS[index][m_tiles.clamp(1, MAX_M_TILES) - 1]
}

/// Every kernel this crate declares, checked against the source by the kernel-table test.
pub const KERNELS: &[KernelDecl] = &[
    CHAINS[0][0],
    CHAINS[0][1],
    CHAINS[0][2],
    CHAINS[0][3],
    CHAINS[0][4],
    CHAINS[1][0],
    CHAINS[1][1],
    CHAINS[1][2],
    CHAINS[1][3],
    CHAINS[1][4],
    CHAINS[2][0],
    CHAINS[2][1],
    CHAINS[2][2],
    CHAINS[2][3],
    CHAINS[2][4],
];

/// The method's options.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TcChainOptions {
    /// Rows a block carries (16, 32, 48, 64 or 80); `None`: chosen from the device, the rows
    /// and the shared memory the widths need.
    pub tile_rows: Option<usize>,
}

impl MethodOptions for TcChainOptions {
    fn validate(&self) -> Result<(), String> {
        match self.tile_rows {
            Some(r) if r == 0 || r % 16 != 0 || r > 16 * MAX_M_TILES => {
                Err(format!("tile rows must be 16, 32, 48, 64 or 80, got {r}"))
            }
            _ => Ok(()),
        }
    }
}

/// The fused tensor-core chain as a method of the registry.
pub struct TcChain;

impl KernelMethod for TcChain {
    const NAME: &'static str = "tcchain";
    const DESCRIPTION: &'static str = "the whole chain fused on the tensor cores, every layer dense, fp32-accurate (fp16 hi/lo split); for dense-ish (trained) networks";
    type Options = TcChainOptions;
    const ACCEPTS_PER_NEURON_BIAS: bool = true;

    /// Per row: the dense input row (`N_0` floats), the output row (`N_L` floats) and its
    /// flag; per layer: the fragments (16 bytes per lane of every 16 × 8 weight tile) and the
    /// padded per-neuron biases; fixed: the descriptors. These are the only allocations.
    fn memory(chain: &LayerChain<'_>, _options: &TcChainOptions) -> MemoryModel {
        let n0 = chain.neurons();
        let n_last = chain.layers.last().map_or(0, |w| w.ncols());
        let mut widths = vec![n0];
        widths.extend(chain.layers.iter().map(|w| w.ncols()));
        let warp_tiles = layout::chain_warp_tiles(&widths);
        MemoryModel {
            per_row: 4 * n0 + 4 * n_last + 1,
            layers: chain
                .layers
                .iter()
                .enumerate()
                .map(|(l, w)| {
                    let (k_steps, n_tiles) = (
                        w.nrows().div_ceil(layout::K_STEP),
                        layout::padded_tiles(w.ncols(), warp_tiles),
                    );
                    layout::fragment_bytes(k_steps, n_tiles).max(16)
                        + if chain.layer_biases(l).is_some() {
                            4 * n_tiles * layout::N_TILE
                        } else {
                            0
                        }
                })
                .collect(),
            fixed: 8 * layout::DESC_WORDS * chain.layers.len().max(1),
            streaming: false,
            exact: true,
            binary_input: None,
        }
    }

    /// `load` copies the rows into the batch's input buffer ([`Self::memory`]'s per-row
    /// bytes) and allocates nothing.
    fn upload_bytes(_rows: usize, _nnz: usize, _binary: bool) -> usize {
        0
    }

    fn prepare<'g>(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &TcChainOptions,
    ) -> Result<Box<dyn DeviceRun + 'g>, CudaError> {
        Ok(Box::new(device::TcRun::prepare(gpu, chain, rows, options)?))
    }
}

/// Runs the chain on `input` (rows × `N_0`) through `layers` with one `bias` and the bound
/// `upper`.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &TcChainOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<TcChain>(
        gpu,
        &LayerChain::new(layers, bias, upper),
        input,
        options,
        spec,
    )
}

/// As [`infer`], with a bias per output neuron of every layer (`biases[l][k]`, all ≤ 0).
pub fn infer_with_biases(
    gpu: &Gpu,
    layers: &[Csr],
    biases: &[Vec<f32>],
    input: &Csr,
    upper: f32,
    options: &TcChainOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<TcChain>(
        gpu,
        &LayerChain::with_biases(layers, biases, upper),
        input,
        options,
        spec,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_take_whole_mma_tiles_only() {
        assert!(TcChainOptions::default().validate().is_ok());
        for good in [16, 32, 48, 64, 80] {
            assert!(
                TcChainOptions {
                    tile_rows: Some(good)
                }
                .validate()
                .is_ok()
            );
        }
        for bad in [0, 8, 24, 96] {
            assert!(
                TcChainOptions {
                    tile_rows: Some(bad)
                }
                .validate()
                .is_err()
            );
        }
    }

    #[test]
    fn the_memory_model_counts_every_allocation() {
        let layers = vec![
            Csr::from_triplets(784, 256, &[(0, 0, 1.0)]).unwrap(),
            Csr::from_triplets(256, 10, &[(0, 0, 1.0)]).unwrap(),
        ];
        let biases = vec![vec![-0.1; 256], vec![0.0; 10]];
        let model = TcChain::memory(
            &LayerChain::with_biases(&layers, &biases, 1.0),
            &TcChainOptions::default(),
        );
        assert_eq!(model.per_row, 4 * 784 + 4 * 10 + 1);
        // Four tiles a warp (256 outputs): layer 2's 10 outputs padded to 32 tiles.
        assert_eq!(
            model.layers,
            vec![50 * 32 * 512 + 1024, 17 * 32 * 512 + 1024]
        );
        assert!(model.exact);
    }
}
