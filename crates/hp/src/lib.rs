//! H&P-2020 (Hidayetoglu, Pearson et al., "At-Scale Sparse Deep Neural Network Inference
//! With Efficient GPU Implementation", HPEC 2020; published code
//! `merthidayetoglu/SpDNN_Challenge2020`, facts in `shared/research/sdgc-facts.md` §5).
//!
//! Outputs in blocks of 256, one thread per output; for each block the footprint of its
//! inputs is cut into shared-memory buffers, and per (buffer, warp) the weights are a
//! sliced-ELL slice as wide as the warp's longest row, with 16-bit offsets into the buffer
//! (buffers never exceed 65536 inputs, so offsets always fit). Each block updates a
//! minibatch of rows held in registers (one accumulator per row and thread).
//!
//! Per layer two kernels run (`kernels-cu/hp.cu`): `hp_layer_mb{MB}` over the listed rows,
//! and `hp_compact_rows`, which lists the rows that stayed non-empty. The row count stays
//! on the device: no host round trip between layers. The layout is built in Rust
//! ([`mod@format`]); weights stay resident on the device (a network whose weights do not fit
//! beside the activations is refused with an error saying so; weights are not streamed).
//!
//! Our layout differs from the paper's in two exact ways ([`Layout::Grouped`], the
//! default; [`Layout::Paper`] keeps the published one): outputs reading the same input set
//! are placed next to each other, which shrinks each block's footprint (for the challenge
//! networks to at most 512 inputs, one buffer, no padding), and footprints larger than a
//! buffer are cut so that each lane's entries spread evenly over the buffers.
//!
//! Any chain of layers whose widths match runs (`N_{l-1} × N_l`, e.g. a compressed
//! network: 1024 × 64, then 64 × 64 and 64 × 32 layers): each layer's blocks cover its
//! outputs, its footprints its inputs, and its activations are rows × `N_l`.
//!
//! Trained networks, with a bias per output neuron of every layer
//! ([`LayerChain::biases`]), run with the `hp_layer_neurons_mb{MB}` instances
//! ([`LAYERS_NEURONS`]): each layer's biases are uploaded in its position order
//! ([`HpLayer::position_biases`]) and read where the one-bias kernels add `bias` (those
//! are unchanged: they pass a null pointer the compiler folds away). Biases must be ≤ 0
//! ([`KernelMethod::ACCEPTS_POSITIVE_BIAS`] is false): the kernels compute `clip(Z + b)`,
//! the structural rule only then, the layout drops stored zeros, and a row that died stays
//! dead only then.

mod device;
pub mod format;

use spdnn_cuda::memory::MemoryModel;
use spdnn_cuda::method::{self, DeviceRun, KernelMethod, LayerChain, MethodOptions};
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_cuda::{CudaError, Define, Gpu, KernelDecl, KernelSource};
use spdnn_formats::{Csr, SparseMatrix};

pub use format::{
    BLOCK, HpError, HpLayer, HpNetwork, Layout, LayoutStats, MAX_BUFFER, Params, WARP, WARPS,
};

/// hp.cu's definitions: its block ([`BLOCK`]), the warps of a block ([`WARPS`]) and the
/// blocks per SM of the layer kernels' `__launch_bounds__` ([`MIN_BLOCKS_PER_SM`]).
pub const HP_DEFINES: &[Define] = &[
    Define::new("HP_BLOCK", BLOCK as u64),
    Define::new("HP_WARPS", WARPS as u64),
    Define::new("HP_MIN_BLOCKS", MIN_BLOCKS_PER_SM as u64),
];

/// `kernels-cu/hp.cu`, compiled with [`HP_DEFINES`].
pub const HP: KernelSource = KernelSource::new("hp.cu", include_str!("../../../kernels-cu/hp.cu"))
    .with_defines(&[HP_DEFINES]);

/// The minibatches (rows per block, held in registers) `hp.cu` is instantiated for: one
/// layer kernel each, [`LAYERS`].
pub const MINIBATCHES: &[usize] = &[1, 2, 4, 8, 12, 16, 24, 32];

/// A layer kernel: block [`BLOCK`]; grid the resident set of blocks striding over the
/// work items; dynamic shared: the layer's longest buffer × [`feature_stride`] floats.
const fn layer(name: &'static str) -> KernelDecl {
    KernelDecl::new(&HP, name, BLOCK as u32).with_shared_array(4)
}

/// `hp_layer_mb{MB}`, one per minibatch of [`MINIBATCHES`], in its order ([`layer_kernel`]).
pub const LAYERS: [KernelDecl; MINIBATCHES.len()] = [
    layer("hp_layer_mb1"),
    layer("hp_layer_mb2"),
    layer("hp_layer_mb4"),
    layer("hp_layer_mb8"),
    layer("hp_layer_mb12"),
    layer("hp_layer_mb16"),
    layer("hp_layer_mb24"),
    layer("hp_layer_mb32"),
];
/// `hp_layer_neurons_mb{MB}`: [`LAYERS`] with a bias per output position, one per
/// minibatch of [`MINIBATCHES`], in its order ([`neurons_layer_kernel`]).
pub const LAYERS_NEURONS: [KernelDecl; MINIBATCHES.len()] = [
    layer("hp_layer_neurons_mb1"),
    layer("hp_layer_neurons_mb2"),
    layer("hp_layer_neurons_mb4"),
    layer("hp_layer_neurons_mb8"),
    layer("hp_layer_neurons_mb12"),
    layer("hp_layer_neurons_mb16"),
    layer("hp_layer_neurons_mb24"),
    layer("hp_layer_neurons_mb32"),
];
/// `hp_compact_rows`: one thread per list slot ([`KernelDecl::config_for`] the capacity).
pub const COMPACT_ROWS: KernelDecl = KernelDecl::new(&HP, "hp_compact_rows", 256);
/// `hp_scatter_rows`: blocks stride over the input rows (grid min(rows, 65535·16)).
pub const SCATTER_ROWS: KernelDecl = KernelDecl::new(&HP, "hp_scatter_rows", 128);

/// Every kernel this crate declares (`hp.cu`), checked against the source by the
/// kernel-table test.
pub const KERNELS: &[KernelDecl] = &[
    LAYERS[0],
    LAYERS[1],
    LAYERS[2],
    LAYERS[3],
    LAYERS[4],
    LAYERS[5],
    LAYERS[6],
    LAYERS[7],
    LAYERS_NEURONS[0],
    LAYERS_NEURONS[1],
    LAYERS_NEURONS[2],
    LAYERS_NEURONS[3],
    LAYERS_NEURONS[4],
    LAYERS_NEURONS[5],
    LAYERS_NEURONS[6],
    LAYERS_NEURONS[7],
    COMPACT_ROWS,
    SCATTER_ROWS,
];

/// The layer kernel of `minibatch` (`None` when it is not one of [`MINIBATCHES`]).
pub fn layer_kernel(minibatch: usize) -> Option<&'static KernelDecl> {
    let i = MINIBATCHES.iter().position(|&mb| mb == minibatch)?;
    Some(&LAYERS[i])
}

/// The kernels a run with `options` compiles ahead (on a network with a bias per neuron
/// when `per_neuron_biases`): its minibatch's layer kernel (the `_neurons` one for a
/// trained network; none for a minibatch that is not one of [`MINIBATCHES`]) and the row
/// kernels.
pub fn plan_kernels(options: &HpOptions, per_neuron_biases: bool) -> Vec<&'static KernelDecl> {
    let layer = if per_neuron_biases {
        neurons_layer_kernel(options.minibatch())
    } else {
        layer_kernel(options.minibatch())
    };
    layer
        .into_iter()
        .chain([
            &COMPACT_ROWS,
            &spdnn_cuda::rows::ALL_ROWS,
            &spdnn_cuda::rows::MARK_ROWS,
            &SCATTER_ROWS,
        ])
        .collect()
}

/// The layer kernel of `minibatch` with a bias per output position (`None` when it is not
/// one of [`MINIBATCHES`]).
pub fn neurons_layer_kernel(minibatch: usize) -> Option<&'static KernelDecl> {
    let i = MINIBATCHES.iter().position(|&mb| mb == minibatch)?;
    Some(&LAYERS_NEURONS[i])
}

/// The default minibatch. The inner loop does one shared-memory load per multiply-add
/// whatever the minibatch, so on Hopper (one 32-lane shared load per clock per SM) the
/// minibatch only amortises the per-slot work (the 2-byte offset and 4-byte weight loads,
/// the address arithmetic): about 9 % at 16 rows against 12.5 % at the paper's 12, with
/// 16 accumulators still far under the 64 registers that keep 4 blocks of 256 threads on
/// an SM. Larger minibatches give fewer work items when few rows survive (1812 rows and
/// N = 1024: 456 items at 16 for 132 SMs). See `docs/hp.md`.
pub const DEFAULT_MINIBATCH: usize = 16;

/// Shared memory the default buffer size fits in: 48 KiB, the most a block gets without
/// opting in.
pub const DEFAULT_SHARED_BYTES: usize = 48 * 1024;

/// Blocks per SM the register budget of `hp_layer_mb*` allows at least (`HP_MIN_BLOCKS`
/// in `kernels-cu/hp.cu`, their `__launch_bounds__`).
pub const MIN_BLOCKS_PER_SM: u32 = 4;

/// Floats per staged buffer entry for `minibatch` rows: the minibatch rounded up to an
/// odd count, so that lanes reading entries that differ mod 32 use different banks
/// (`STRIDE` in `kernels-cu/hp.cu`).
pub fn feature_stride(minibatch: usize) -> usize {
    minibatch | 1
}

/// Static shared memory of `hp_layer_mb{minibatch}`: the minibatch's row ids.
pub fn static_shared_bytes(minibatch: usize) -> usize {
    4 * minibatch
}

/// Floats of dynamic shared memory (the staged features) of a layer whose longest buffer
/// holds `max_buffer` inputs: the length a launch of its layer kernel gives.
pub fn dynamic_shared_floats(max_buffer: usize, minibatch: usize) -> usize {
    max_buffer * feature_stride(minibatch)
}

/// Dynamic shared memory of a layer whose longest buffer holds `max_buffer` inputs, in
/// bytes.
pub fn dynamic_shared_bytes(max_buffer: usize, minibatch: usize) -> usize {
    4 * dynamic_shared_floats(max_buffer, minibatch)
}

/// The default buffer size for `minibatch`: as many inputs as fit [`DEFAULT_SHARED_BYTES`]
/// beside the static shared memory (721 for the default minibatch of 16).
pub fn default_buffer(minibatch: usize) -> usize {
    let room = DEFAULT_SHARED_BYTES.saturating_sub(static_shared_bytes(minibatch));
    (room / (4 * feature_stride(minibatch))).clamp(1, MAX_BUFFER)
}

/// Tuning of an H&P run.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct HpOptions {
    /// Rows per minibatch, held in registers (one of [`MINIBATCHES`]; default
    /// [`DEFAULT_MINIBATCH`]).
    pub minibatch: Option<usize>,
    /// Most inputs per shared-memory buffer, `1..=65536` (default [`default_buffer`] of
    /// the minibatch). More than fits 48 KiB opts the kernel into more shared memory, up
    /// to the device's limit.
    pub buffer: Option<usize>,
    /// Output order and buffer cuts (default [`Layout::Grouped`]).
    pub layout: Layout,
    /// Rows per batch (default: every row in one batch).
    pub batch: Option<usize>,
}

impl HpOptions {
    /// The minibatch these options run with.
    pub fn minibatch(&self) -> usize {
        self.minibatch.unwrap_or(DEFAULT_MINIBATCH)
    }

    /// The buffer size these options run with.
    pub fn buffer(&self) -> usize {
        self.buffer
            .unwrap_or_else(|| default_buffer(self.minibatch()))
    }
}

impl MethodOptions for HpOptions {
    fn validate(&self) -> Result<(), String> {
        let minibatch = self.minibatch();
        if !MINIBATCHES.contains(&minibatch) {
            return Err(format!(
                "the minibatch must be one of {MINIBATCHES:?} rows, got {minibatch}"
            ));
        }
        let buffer = self.buffer();
        if buffer == 0 || buffer > MAX_BUFFER {
            return Err(format!(
                "the buffer must hold 1 to {MAX_BUFFER} inputs (16-bit offsets), got {buffer}"
            ));
        }
        if self.batch == Some(0) {
            return Err("the batch must be at least 1 row".into());
        }
        Ok(())
    }
}

impl From<HpError> for CudaError {
    fn from(e: HpError) -> Self {
        CudaError::InvalidArgument(format!("hp: {e}"))
    }
}

/// H&P-2020 as a method of the registry.
pub struct Hp;

impl KernelMethod for Hp {
    const NAME: &'static str = "hp";
    const DESCRIPTION: &'static str =
        "H&P-2020: sliced-ELL slices per warp, shared-memory input buffers, register minibatches";
    type Options = HpOptions;
    const ACCEPTS_PER_NEURON_BIAS: bool = true;

    /// Without building the layout, an estimate: per row two activation buffers of the
    /// widest rows, two row lists, the `alive` and category flags; per layer 8 bytes a
    /// nonzero (its 16-bit index and value, with padding and maps) plus an offset an output,
    /// and the per-neuron biases; fixed the input's positions. The planner uses
    /// [`Self::memory_on`], exact.
    fn memory(chain: &LayerChain<'_>, _options: &HpOptions) -> MemoryModel {
        let widest = spdnn_cuda::memory::widest(chain);
        MemoryModel {
            per_row: 2 * 4 * widest + 2 * 4 + 2,
            layers: chain.with_bias_bytes(
                chain
                    .layers
                    .iter()
                    .map(|w| 8 * w.nnz() + 4 * (w.ncols() + 1))
                    .collect(),
            ),
            fixed: 4 * chain.neurons() + 8,
            streaming: false,
            exact: false,
            binary_input: None,
        }
    }

    /// Exact: per row `device::batch_bytes` (two activation buffers of the widest rows,
    /// two row lists, the `alive` and category flags); per layer the layout's arrays as
    /// built by the same construction `prepare` runs ([`format::HpLayer::device_bytes`];
    /// its time is spent again in `prepare`) and the per-neuron biases; fixed the input's
    /// positions when the layout reorders them. The device is not needed.
    fn memory_on(
        _gpu: &Gpu,
        chain: &LayerChain<'_>,
        options: &HpOptions,
    ) -> Result<MemoryModel, CudaError> {
        exact_model(chain, options)
    }

    fn prepare<'g>(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &HpOptions,
    ) -> Result<Box<dyn DeviceRun + 'g>, CudaError> {
        Ok(Box::new(device::HpRun::prepare(gpu, chain, rows, options)?))
    }

    fn batch(options: &HpOptions) -> Option<usize> {
        options.batch
    }
}

/// [`Hp`]'s exact memory model ([`KernelMethod::memory_on`]), which needs no device.
pub fn exact_model(chain: &LayerChain<'_>, options: &HpOptions) -> Result<MemoryModel, CudaError> {
    options
        .validate()
        .map_err(|e| CudaError::InvalidArgument(format!("hp: {e}")))?;
    let widths = spdnn_cuda::rows::check_widths(chain.layers, chain.bias, chain.upper)?;
    let widest = widths.iter().copied().max().unwrap_or(0);
    let params = format::Params {
        buffer: options.buffer(),
        layout: options.layout,
    };
    let mut layers = Vec::with_capacity(chain.layers.len());
    let input_order = format::build_layers::<CudaError>(chain.layers, &params, |_, layer| {
        layers.push(layer.device_bytes());
        Ok(())
    })?;
    let (per_row, fixed) = spdnn_cuda::memory::linear(|rows| device::batch_bytes(rows, widest));
    let positions = input_order.map_or(0, |order| 4 * order.len());
    Ok(MemoryModel {
        per_row,
        layers: chain.with_bias_bytes(layers),
        fixed: fixed + positions,
        streaming: false,
        exact: true,
        binary_input: None,
    })
}

/// Runs H&P on `input` (rows × `N_0`) through `layers` (`N_{l-1} × N_l`, chained):
/// `spec.warmup` untimed and `spec.repetitions` timed runs, then one profiled run for the
/// per-layer times. The output, when kept, is rows × `N_L`.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &HpOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<Hp>(
        gpu,
        &LayerChain::new(layers, bias, upper),
        input,
        options,
        spec,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use spdnn_cuda::memory::WeightPlacement;

    #[test]
    fn the_exact_model_is_the_layout_built_and_the_batch() {
        let generated = spdnn_sdgc::generator::network(1024, 12, 3).unwrap();
        let chain = LayerChain::new(generated.layers(), -0.3, 32.0);
        for layout in [format::Layout::Grouped, format::Layout::Paper] {
            let options = HpOptions {
                layout,
                ..HpOptions::default()
            };
            let model = exact_model(&chain, &options).unwrap();
            assert!(model.exact && !model.streaming);
            let params = format::Params {
                buffer: options.buffer(),
                layout,
            };
            let mut built = Vec::new();
            let order = format::build_layers::<HpError>(chain.layers, &params, |_, layer| {
                built.push(layer);
                Ok(())
            })
            .unwrap();
            // The grouped layout reorders the input (its positions are uploaded); the
            // paper's does not.
            assert_eq!(order.is_some(), layout == format::Layout::Grouped);
            let weights: usize = built.iter().map(format::HpLayer::device_bytes).sum();
            let positions = order.map_or(0, |o| 4 * o.len());
            for rows in [1, 2, 999] {
                assert_eq!(
                    model.bytes(rows, &WeightPlacement::Resident),
                    weights + positions + device::batch_bytes(rows, 1024),
                    "{layout:?}, {rows} rows"
                );
            }
            // Smaller than the estimate's 8 bytes a nonzero: the grouped layout's 16-bit
            // indices and 32-bit values.
            assert!(model.weight_bytes() < Hp::memory(&chain, &options).weight_bytes());
        }
        assert!(
            exact_model(
                &chain,
                &HpOptions {
                    buffer: Some(0),
                    ..HpOptions::default()
                }
            )
            .is_err()
        );
    }

    #[test]
    fn defaults_validate_and_fit_48_kib() {
        let options = HpOptions::default();
        assert_eq!(options.validate(), Ok(()));
        assert_eq!(options.minibatch(), 16);
        assert_eq!(options.buffer(), 721);
        for &mb in MINIBATCHES {
            let b = default_buffer(mb);
            assert!(dynamic_shared_bytes(b, mb) + static_shared_bytes(mb) <= DEFAULT_SHARED_BYTES);
            assert!(
                dynamic_shared_bytes(b + 1, mb) + static_shared_bytes(mb) > DEFAULT_SHARED_BYTES
            );
        }
        assert_eq!(default_buffer(1), 12287);
    }

    #[test]
    fn bad_options_are_errors_naming_the_parameter() {
        let bad = |o: HpOptions| o.validate().unwrap_err();
        let e = bad(HpOptions {
            minibatch: Some(3),
            ..HpOptions::default()
        });
        assert!(e.contains("minibatch"), "{e}");
        let e = bad(HpOptions {
            minibatch: Some(0),
            ..HpOptions::default()
        });
        assert!(e.contains("minibatch"), "{e}");
        let e = bad(HpOptions {
            buffer: Some(0),
            ..HpOptions::default()
        });
        assert!(e.contains("buffer"), "{e}");
        let e = bad(HpOptions {
            buffer: Some(MAX_BUFFER + 1),
            ..HpOptions::default()
        });
        assert!(e.contains("buffer"), "{e}");
        let e = bad(HpOptions {
            batch: Some(0),
            ..HpOptions::default()
        });
        assert!(e.contains("batch"), "{e}");
        let ok = HpOptions {
            minibatch: Some(1),
            buffer: Some(MAX_BUFFER),
            layout: Layout::Paper,
            batch: Some(1),
        };
        assert_eq!(ok.validate(), Ok(()));
    }

    #[test]
    fn the_kernels_match_the_rust_constants() {
        // hp.cu takes its block, warps and launch bounds from HP_DEFINES (it does not
        // compile without them; tests/kernels.rs checks that and the kernel table).
        let define = |name| HP.define(name).unwrap();
        assert_eq!(define("HP_BLOCK"), BLOCK as u64);
        assert_eq!(define("HP_WARPS"), WARPS as u64);
        assert_eq!(define("HP_MIN_BLOCKS"), MIN_BLOCKS_PER_SM as u64);
        // hp.cu asserts HP_WARPS * SPDNN_WARP_SIZE == HP_BLOCK: WARP is the device's warp.
        assert_eq!(WARPS * WARP, BLOCK);
        // One layer kernel per minibatch, named after it, with the layer's launch shape;
        // the same with a bias per neuron.
        for ((&mb, decl), neurons) in MINIBATCHES.iter().zip(&LAYERS).zip(&LAYERS_NEURONS) {
            assert_eq!(decl.name, format!("hp_layer_mb{mb}"));
            assert_eq!(layer_kernel(mb), Some(decl));
            assert_eq!(neurons.name, format!("hp_layer_neurons_mb{mb}"));
            assert_eq!(neurons_layer_kernel(mb), Some(neurons));
            assert_eq!(neurons.threads(), decl.threads());
            let config = decl
                .config_shared(3, dynamic_shared_floats(721, mb))
                .unwrap();
            assert_eq!(config.block_dim, (BLOCK as u32, 1, 1));
            assert_eq!(
                config.shared_mem_bytes as usize,
                dynamic_shared_bytes(721, mb)
            );
        }
        assert_eq!(layer_kernel(3), None);
        assert_eq!(neurons_layer_kernel(3), None);
        // The feature stride and the static shared memory are the kernel's.
        let src = HP.source;
        assert!(src.contains("constexpr unsigned int STRIDE = MB | 1;"));
        assert!(src.contains("__shared__ unsigned int hp_rows[MB];"));
    }

    #[test]
    fn options_serialise_as_report_parameters() {
        let options = HpOptions {
            minibatch: Some(12),
            buffer: None,
            layout: Layout::Paper,
            batch: None,
        };
        let json = serde_json::to_string(&options).unwrap();
        assert_eq!(
            json,
            r#"{"minibatch":12,"buffer":null,"layout":"paper","batch":null}"#
        );
    }
}
