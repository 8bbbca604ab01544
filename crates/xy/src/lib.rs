//! XY-2021, the HPEC 2021 Sparse DNN Graph Challenge champion (published code:
//! CGCL-codes/Graphchallenge21; facts in `shared/research/sdgc-facts.md` §1a, §3).
//!
//! The network is preprocessed once (in parallel, cached on disk): the outputs of each
//! layer that share one input set are found from the data and stored as blocks (see
//! [`mod@format`]). Inference then runs in three phases (`kernels-cu/xy.cu`):
//! 1. the first layer, row-major, from the scattered input rows;
//! 2. the *stride layers* that follow while each block reads at most two windows of
//!    neighbouring inputs, still row-major, on the list of non-empty rows;
//! 3. after a transpose that keeps only the rows still listed, every other layer
//!    neuron-major (one thread per sample, the block's weights in shared memory, one
//!    accumulator per block output in registers), with the dead samples deleted once
//!    more at a configurable layer (default 22).
//!
//! Layers may be rectangular (`N_{l-1} × N_l`, as compression makes them): each layer's
//! grouping is found from its own columns (a compressed layer, whose outputs are distinct
//! classes, is mostly general), the activations are `rows × N_l` (or `N_l × columns`
//! neuron-major) in buffers of the widest layer, and the output is `rows × N_L`.
//!
//! Trained networks, with a bias per output neuron of every layer
//! ([`LayerChain::biases`]), run too: each layer's biases are uploaded in its position order
//! and the layer runs the `_neurons` instances of its kernel (the one-bias instances are
//! unchanged). Biases must be ≤ 0 ([`KernelMethod::ACCEPTS_POSITIVE_BIAS`] is false): the
//! kernels compute `clip(Z + b)`, the structural rule only then, and the deletion of dead
//! rows relies on it too (an all-zero row gives `clip(0 + b) = 0` for every `b ≤ 0`, so it
//! stays zero). The grouping needs no change: it reads the weights' pattern only (a dense
//! `784 × N` layer is one class, grouped; a 55 %-dense random layer or one of 10 outputs is
//! general). Not with GLARE.

pub mod cache;
pub mod error;
pub mod format;
pub mod gpu;
pub mod stream;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use spdnn_cuda::memory::MemoryModel;
use spdnn_cuda::method::{self, DeviceRun, KernelMethod, LayerChain, MethodOptions, Probe};
use spdnn_cuda::rows::{self, GpuInference, RunSpec};
use spdnn_cuda::{CudaError, Gpu, KernelDecl};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_glare::{AccessCounts, Census, Glare, GlareKernel, Recorder, model};

use gpu::{DeviceXyNetwork, XyRun};

pub use cache::{CacheUse, SharedXyNetworks, cache_path, fingerprint, forget_shared};
pub use error::XyError;
pub use format::{GROUP, XyLayer, XyNetwork};
pub use gpu::{KERNELS, XyKernels, XyVariants};

/// Tuning of an XY run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct XyOptions {
    /// The layer (1-based count of layers done) after which dead samples are deleted from
    /// the neuron-major activations; `None` never deletes. Default 22, as XY-2021.
    #[serde(serialize_with = "never_when_none")]
    pub delete_at: Option<usize>,
    /// Row-major layers before the transpose; `None` detects them from the data (the
    /// first layer and the stride layers that follow it).
    #[serde(serialize_with = "detect_when_none")]
    pub row_major_layers: Option<usize>,
    /// Where preprocessed networks are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Run the GLARE variant of the neuron-major kernel on the layers after the deletion
    /// (all neuron-major layers when `delete_at` is `None`). Reported apart from the
    /// parameters (the engine's GLARE outcome).
    #[serde(skip)]
    pub glare: Option<Glare>,
}

impl Default for XyOptions {
    fn default() -> Self {
        Self {
            delete_at: Some(22),
            row_major_layers: None,
            cache_dir: None,
            glare: None,
        }
    }
}

impl XyOptions {
    /// The kernel variants a run with these options launches on a network with
    /// (`per_neuron_biases`) or without a bias per neuron.
    pub fn variants(&self, per_neuron_biases: bool) -> XyVariants {
        XyVariants {
            neurons: per_neuron_biases,
            glare: self.glare.is_some(),
            census: self.glare.is_some_and(|g| g.census),
        }
    }
}

/// The kernels a run with `options` compiles ahead (on a network with a bias per neuron
/// when `per_neuron_biases`): [`XyKernels::decls`] of its [`XyOptions::variants`].
pub fn plan_kernels(options: &XyOptions, per_neuron_biases: bool) -> Vec<&'static KernelDecl> {
    XyKernels::decls(options.variants(per_neuron_biases))
}

/// `delete_at` for reports: the layer, or `"never"`.
fn never_when_none<S: serde::Serializer>(value: &Option<usize>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(layer) => s.serialize_u64(*layer as u64),
        None => s.serialize_str("never"),
    }
}

/// `row_major_layers` for reports: the count, or `"detect"`.
fn detect_when_none<S: serde::Serializer>(value: &Option<usize>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(layers) => s.serialize_u64(*layers as u64),
        None => s.serialize_str("detect"),
    }
}

/// XY-2021 as a method of the registry.
pub struct Xy;

impl MethodOptions for XyOptions {
    fn validate(&self) -> Result<(), String> {
        if self.delete_at == Some(0) {
            return Err("XY delete-at must be a layer ≥ 1 (or never), not 0".into());
        }
        Ok(())
    }

    /// Preprocessed networks are cached under `data_dir/cache/xy`.
    fn default_in(data_dir: &Path) -> Self {
        Self {
            cache_dir: Some(data_dir.join("cache").join("xy")),
            ..Self::default()
        }
    }
}

impl KernelMethod for Xy {
    const NAME: &'static str = "xy";
    const DESCRIPTION: &'static str = "XY-2021: outputs grouped by shared input sets, row-major \
                                       first/stride layers, neuron-major generic kernel, dead \
                                       rows deleted once";
    type Options = XyOptions;
    const ACCEPTS_PER_NEURON_BIAS: bool = true;

    /// Per row: [`XyRun::bytes`] (two activation buffers of the widest rows, two row lists,
    /// the column flags, the row ids), the category flag, and the larger of what a pass
    /// allocates for a while: the deletion's list of live columns, or `output`'s export
    /// ([`XyRun::export_bytes`], into the spare activation buffer); GLARE: its recorders over
    /// tiles of 256 columns (a tile's bytes a row, rounded up, and one tile's fixed: a
    /// bound). Per layer: [`format::layer_device_bytes`], the layout preprocessing gives it
    /// (grouped or general, found by the same first pass), and its per-neuron biases. Exact
    /// but for GLARE's tiles.
    fn memory(chain: &LayerChain<'_>, options: &XyOptions) -> MemoryModel {
        let widest = spdnn_cuda::memory::widest(chain);
        let (glare_row, glare_fixed) = options.glare.map_or((0, 0), |g| {
            let units = widest.div_ceil(g.segment.max(1));
            // Recorder::new(tiles · units, tiles · widest), tiles = ⌈rows / 256⌉.
            let per_tile = Recorder::bytes(units, widest);
            (
                per_tile.div_ceil(gpu::COLUMN_THREADS as usize),
                per_tile + Census::bytes(chain.layers.len()),
            )
        });
        let (per_row, fixed) = spdnn_cuda::memory::linear(|rows| {
            let transient = (4 * rows).max(XyRun::export_bytes(rows, widest));
            XyRun::bytes(rows, widest) + rows + transient
        });
        let layers = chain
            .layers
            .par_iter()
            .map(format::layer_device_bytes)
            .collect();
        MemoryModel {
            per_row: per_row + glare_row,
            layers: chain.with_bias_bytes(layers),
            fixed: fixed + glare_fixed,
            streaming: false,
            exact: options.glare.is_none(),
            binary_input: None,
        }
    }

    /// Preprocessing (or the cache) and the upload.
    fn prepare<'g>(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &XyOptions,
    ) -> Result<Box<dyn DeviceRun + 'g>, CudaError> {
        let layers = chain.layers;
        let widths = rows::check_widths(layers, chain.bias, chain.upper)?;
        if options.glare.is_some() && chain.biases.is_some() {
            return Err(CudaError::InvalidArgument(
                "xy+glare takes one bias for all neurons, and this network has a bias per \
                 neuron: run xy without GLARE"
                    .into(),
            ));
        }
        // The kernels compile on worker threads during the preprocessing; the clock leaves
        // out any wait for them (the run's compile_ms).
        let variants = options.variants(chain.biases.is_some());
        gpu.compile_ahead(XyKernels::decls(variants));
        let prepare = gpu.preparation_clock();
        // Shared with every other run of this network in the process (each GPU, each count).
        let (network, cache_use) =
            XyNetwork::load_or_prepare_shared(layers, options.cache_dir.as_deref())
                .map_err(|e| CudaError::InvalidArgument(format!("XY preprocessing: {e}")))?;
        let prepare_ms = prepare.elapsed_ms();
        let row_major = options
            .row_major_layers
            .unwrap_or_else(|| gpu::detect_row_major_layers(&network))
            .min(layers.len());
        let device =
            DeviceXyNetwork::upload_with_biases(gpu, &network, 0..layers.len(), chain.biases)?;
        let kernels = XyKernels::load(gpu, variants)?;
        let mut run = XyRun::new(
            gpu,
            &kernels,
            &widths,
            rows,
            row_major,
            options.delete_at,
            (chain.bias, chain.upper),
        )?;
        if let Some(glare) = &options.glare {
            run = run.with_glare(glare, layers.len())?;
        }
        let grouped = network.layers.iter().filter(|l| l.is_grouped()).count();
        // The options themselves are the caller's; these are what the run found or used.
        let mut details = vec![
            ("row_major_layers".into(), row_major.to_string()),
            (
                "grouped_layers".into(),
                format!("{grouped} of {}", layers.len()),
            ),
            ("preprocessing_ms".into(), format!("{prepare_ms:.1}")),
            ("cache".into(), format!("{cache_use:?}").to_lowercase()),
        ];
        if let Some(glare) = &options.glare {
            details.push(("glare_segment".into(), glare.segment.to_string()));
        }
        Ok(Box::new(XyDeviceRun {
            row_flags: gpu.alloc_zeros::<u8>(rows)?,
            gpu,
            network,
            device,
            run,
            census: options.glare.is_some_and(|g| g.census),
            loaded: 0,
            details,
        }))
    }
}

/// Runs XY on `input` (rows × `N_0`) through `layers` (`N_{l-1} × N_l`): preprocessing (or
/// the cache), the
/// upload, `spec.warmup` untimed and `spec.repetitions` timed runs, then one profiled run
/// for the per-layer and per-stage times.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &XyOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<Xy>(
        gpu,
        &LayerChain::new(layers, bias, upper),
        input,
        options,
        spec,
    )
}

/// Everything one XY run keeps.
struct XyDeviceRun<'g> {
    gpu: &'g Gpu,
    /// The preprocessed network (its neuron order maps values back), shared with the other
    /// runs of the same network in the process.
    network: std::sync::Arc<XyNetwork>,
    device: DeviceXyNetwork,
    run: XyRun<'g>,
    row_flags: spdnn_cuda::DeviceBuffer<u8>,
    /// Whether GLARE's census may run.
    census: bool,
    /// Rows of the loaded batch.
    loaded: usize,
    details: Vec<(String, String)>,
}

impl DeviceRun for XyDeviceRun<'_> {
    fn load(&mut self, input: &Csr) -> Result<(), CudaError> {
        self.loaded = input.nrows();
        self.run.load_input(input)
    }

    fn run(&mut self, probe: &mut Probe) -> Result<(), CudaError> {
        for layer in &self.device.layers {
            self.run.layer(layer, probe)?;
        }
        self.run.mark_categories(&mut self.row_flags)?;
        probe.step(gpu::STAGES[4])
    }

    fn row_flags(&mut self) -> Result<Vec<u8>, CudaError> {
        rows::download_row_flags(self.gpu, &self.row_flags, self.loaded)
    }

    /// `rows × N_L`, the last layer's neurons in their original order.
    fn output(&mut self) -> Result<Vec<f32>, CudaError> {
        let n = self.network.output_width();
        let (width, ids) = self.run.export_rows(0)?;
        if width != n {
            return Err(CudaError::InvalidArgument(format!(
                "XY exported rows of {width} values, the last layer has {n}"
            )));
        }
        let values = if ids.is_empty() {
            Vec::new()
        } else {
            self.gpu
                .download(&self.run.spare().slice(..ids.len() * n))?
        };
        let mut dense = vec![0.0f32; self.loaded * n];
        for (j, &row) in ids.iter().enumerate() {
            let original = self.network.to_original(&values[j * n..(j + 1) * n]);
            dense[row as usize * n..(row as usize + 1) * n].copy_from_slice(&original);
        }
        Ok(dense)
    }

    fn stages(&self) -> &'static [&'static str] {
        &gpu::STAGES
    }

    fn start_census(&mut self) -> Result<bool, CudaError> {
        if !(self.census && self.run.has_census()) {
            return Ok(false);
        }
        self.run.set_counting(true)?;
        Ok(true)
    }

    fn finish_census(&mut self) -> Result<Vec<AccessCounts>, CudaError> {
        let accesses = self.run.accesses()?;
        self.run.set_counting(false)?;
        Ok(accesses)
    }

    fn details(&self) -> Vec<(String, String)> {
        self.details.clone()
    }
}

/// GLARE on XY's neuron-major kernel: the unit is `m` positions × a tile of
/// [`gpu::COLUMN_THREADS`] sample columns, `m` a power of two from one block's outputs
/// ([`GROUP`]) up; the recorder serves the layers after the deletion.
impl GlareKernel for Xy {
    const UNIT: &'static str =
        "neuron-major tiles all at the bound skipped after the deletion (m from the access model)";

    fn candidates(shape: &model::Shape) -> Vec<usize> {
        model::powers_of_two(GROUP, shape.neurons)
    }

    /// `n/m + n s (1 − q_I^s) + (1 − q_O^s)(m s + 1)` with `s` the tile's samples.
    fn expected_accesses(
        shape: &model::Shape,
        m: usize,
        input: &model::LayerProfile,
        output: &model::LayerProfile,
    ) -> f64 {
        let n = shape.neurons as f64;
        let units = shape.neurons.div_ceil(m.max(1)) as f64;
        let s = gpu::COLUMN_THREADS as f64;
        units
            + n * s * model::not_at_bound(input.row_at_bound, s)
            + model::not_at_bound(output.row_at_bound, s) * (m as f64 * s + 1.0)
    }

    fn shape(options: &XyOptions, neurons: usize) -> model::Shape {
        model::Shape {
            neurons,
            slab_width: 0,
            first_layer: options.delete_at.unwrap_or(0),
        }
    }

    fn with_recorder(options: &XyOptions, glare: Glare) -> XyOptions {
        XyOptions {
            glare: Some(glare),
            ..options.clone()
        }
    }
}
