//! SNIG-2020 (Lin & Huang, "A Novel Inference Algorithm for Large Sparse Neural Network
//! using Task Graph Parallelism", HPEC 2020), champion of the 2020 challenge.
//!
//! The outputs of a layer are cut into sections (the column slabs of the weights); a
//! flag per (row, section) says whether the section holds a nonzero. `snig_layer`
//! (`kernels-cu/snig.cu`) runs one block per (row, output section), skips the input
//! sections whose flag is clear, and for a row with no nonzero input only clears the
//! output section when it was nonzero before (incremental resetting). The whole chain
//! of layers is captured once as a CUDA graph and replayed; the weights stay resident.
//!
//! Any chain of widths runs (`N_{l-1} × N_l` layers, as compression makes them): every
//! width is cut into sections of one width, each layer's grid covers its own output
//! sections, and its rows and flags are laid out for its widths. The flags stay exact
//! across a change of width (a row without input leaves each output flag zero or clears
//! it); only values under zero flags, which nothing reads, may be stale.

use spdnn_cuda::memory::MemoryModel;
use spdnn_cuda::method::{self, DeviceRun, KernelMethod, LayerChain, MethodOptions, Probe};
use spdnn_cuda::rows::{self, GpuInference, RunSpec};
use spdnn_cuda::slab_weights::{
    DEFAULT_SHARED_BYTES, DeviceSlabWeights, Residency, SlabLayout, SlabProblem, chosen_slab_width,
    packed_layer_bytes, slab_width_for,
};
use spdnn_cuda::{
    CapturedGraph, CudaError, DeviceBuffer, DriverResultExt, Gpu, Kernel, KernelDecl, KernelSource,
    PushKernelArg,
};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_glare::{AccessCounts, Census, Glare, GlareKernel, model};

/// `kernels-cu/snig.cu`, compiled with glare.cuh's definitions.
pub const SNIG: KernelSource =
    KernelSource::new("snig.cu", include_str!("../../../kernels-cu/snig.cu"))
        .with_defines(&[spdnn_glare::DEFINES]);

/// Threads per block of the layer kernels.
const LAYER_THREADS: u32 = 256;
/// Threads per block of the section and row kernels.
const THREADS: u32 = 256;

/// `snig_layer`: one block per (row, output section), grid (rows, the layer's output
/// sections); dynamic shared: one float per column of the layer's widest section
/// (`min(section width, N_out)`).
pub const LAYER: KernelDecl =
    KernelDecl::new(&SNIG, "snig_layer", LAYER_THREADS).with_shared_array(4);
/// `snig_layer_neurons`: [`LAYER`] with a bias per output neuron.
pub const LAYER_NEURONS: KernelDecl =
    KernelDecl::new(&SNIG, "snig_layer_neurons", LAYER_THREADS).with_shared_array(4);
/// `snig_layer_glare`: [`LAYER`] with sections at the bound recorded (GLARE).
pub const LAYER_GLARE: KernelDecl =
    KernelDecl::new(&SNIG, "snig_layer_glare", LAYER_THREADS).with_shared_array(4);
/// `snig_layer_glare_census`: [`LAYER_GLARE`] counting its accesses.
pub const LAYER_GLARE_CENSUS: KernelDecl =
    KernelDecl::new(&SNIG, "snig_layer_glare_census", LAYER_THREADS).with_shared_array(4);
/// `snig_glare_fill`: one block per (row, section), grid (rows, sections).
pub const GLARE_FILL: KernelDecl = KernelDecl::new(&SNIG, "snig_glare_fill", THREADS);
/// `snig_section_flags`: one block per (row, section), grid (rows, sections).
pub const SECTION_FLAGS: KernelDecl = KernelDecl::new(&SNIG, "snig_section_flags", THREADS);
/// `snig_row_categories`: one thread per row, grid ceil(rows / block).
pub const ROW_CATEGORIES: KernelDecl = KernelDecl::new(&SNIG, "snig_row_categories", THREADS);

/// The kernels a run compiles ahead (every one it loads), the layer kernels first.
pub const SNIG_KERNELS: [&KernelDecl; 7] = [
    &LAYER_GLARE_CENSUS,
    &LAYER_GLARE,
    &LAYER_NEURONS,
    &LAYER,
    &GLARE_FILL,
    &SECTION_FLAGS,
    &ROW_CATEGORIES,
];

/// Every kernel this crate declares (`snig.cu`), checked against the source by the
/// kernel-table test.
pub const KERNELS: &[KernelDecl] = &[
    LAYER,
    LAYER_NEURONS,
    LAYER_GLARE,
    LAYER_GLARE_CENSUS,
    GLARE_FILL,
    SECTION_FLAGS,
    ROW_CATEGORIES,
];

/// Tuning of a SNIG run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SnigOptions {
    /// Columns per section (default: all of the widest layer's width when they fit in
    /// 48 KiB of shared memory).
    pub section_width: Option<usize>,
    /// Replay the layer chain as a CUDA graph (default) or launch layer by layer.
    pub graph: bool,
    /// Run the GLARE variant of the layer kernel; its unit is the section, so
    /// `segment` sets the section width (it must agree with `section_width` if both are given).
    #[serde(skip)]
    pub glare: Option<Glare>,
}

impl Default for SnigOptions {
    fn default() -> Self {
        Self {
            section_width: None,
            graph: true,
            glare: None,
        }
    }
}

/// SNIG-2020 as a method of the registry.
pub struct Snig;

impl MethodOptions for SnigOptions {
    fn validate(&self) -> Result<(), String> {
        if self.section_width == Some(0) {
            return Err("the section width must be at least 1 column".into());
        }
        Ok(())
    }
}

impl KernelMethod for Snig {
    const NAME: &'static str = "snig";
    const DESCRIPTION: &'static str =
        "SNIG-2020: sections with nonzero flags, incremental resetting, CUDA graph";
    type Options = SnigOptions;
    const ACCEPTS_PER_NEURON_BIAS: bool = true;

    /// Per row: two activation buffers of the widest rows, two arrays of section flags and
    /// the category flag; per layer: the packed sections; fixed: the census counters.
    /// Resident only: the layer chain is one CUDA graph over resident weights.
    fn memory(chain: &LayerChain<'_>, options: &SnigOptions) -> MemoryModel {
        let widest = spdnn_cuda::memory::widest(chain);
        let width = chosen_slab_width(
            chain.layers,
            options.glare.map(|g| g.segment).or(options.section_width),
        );
        MemoryModel {
            per_row: 2 * 4 * widest + 2 * widest.div_ceil(width.max(1)) + 1,
            layers: chain.with_bias_bytes(packed_layer_bytes(chain.layers, width)),
            fixed: Census::bytes(chain.layers.len()),
            streaming: false,
            exact: true,
            binary_input: None,
        }
    }

    fn prepare<'g>(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        rows: usize,
        options: &SnigOptions,
    ) -> Result<Box<dyn DeviceRun + 'g>, CudaError> {
        // The kernels compile on worker threads while the weights are laid out.
        gpu.compile_ahead(SNIG_KERNELS);
        let section_width = match (&options.glare, options.section_width) {
            (Some(g), Some(width)) if g.segment != width => {
                return Err(CudaError::InvalidArgument(format!(
                    "SNIG's GLARE unit is its section: a segment of {} neurons disagrees with sections of {width}",
                    g.segment
                )));
            }
            (Some(g), _) => Some(g.segment),
            (None, width) => width,
        };
        let SlabProblem {
            layout,
            rows: rows_count,
            weights,
        } = SlabProblem::prepare(gpu, chain, rows, section_width, Residency::Resident)?;
        let (widest, sections) = (layout.max_width(), layout.max_slabs());

        let glare = options.glare.is_some();
        if glare && chain.biases.is_some() {
            return Err(CudaError::InvalidArgument(
                "snig+glare takes one bias for all neurons, and this network has a bias per \
                 neuron: run snig without GLARE"
                    .into(),
            ));
        }
        let biases = match chain.biases {
            Some(all) => Some(
                all.iter()
                    .map(|b| gpu.upload(b))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            None => None,
        };
        let layer_kernel = gpu.kernel(match (glare, biases.is_some()) {
            (true, _) => &LAYER_GLARE,
            (false, true) => &LAYER_NEURONS,
            (false, false) => &LAYER,
        })?;
        let mut run = SnigRun {
            graph: None,
            gpu,
            chain: Chain {
                kernel: layer_kernel,
                census_kernel: gpu.kernel(&LAYER_GLARE_CENSUS)?,
                glare,
                rows: rows_count as u32,
                layout,
                bias: chain.bias,
                upper: chain.upper,
                biases,
            },
            fill_kernel: gpu.kernel(&GLARE_FILL)?,
            flags_kernel: gpu.kernel(&SECTION_FLAGS)?,
            categories_kernel: gpu.kernel(&ROW_CATEGORIES)?,
            census: Census::new(gpu, chain.layers.len())?,
            weights,
            y: (
                gpu.alloc_zeros::<f32>(rows_count * widest)?,
                gpu.alloc_zeros::<f32>(rows_count * widest)?,
            ),
            flags: (
                gpu.alloc_zeros::<u8>(rows_count * sections)?,
                gpu.alloc_zeros::<u8>(rows_count * sections)?,
            ),
            row_flags: gpu.alloc_zeros::<u8>(rows_count)?,
            rows: rows_count,
            loaded: 0,
            glare: options.glare,
            graph_requested: options.graph,
            counting: false,
        };
        if options.graph {
            let stream = gpu.stream().clone();
            let SnigRun {
                chain,
                weights,
                y,
                flags,
                census,
                ..
            } = &mut run;
            let graph = gpu.capture_graph(&stream, |s| {
                chain.enqueue(
                    s,
                    weights,
                    (&mut y.0, &mut y.1),
                    (&mut flags.0, &mut flags.1),
                    census,
                    false,
                    &mut Probe::off(),
                )
            })?;
            graph.upload()?;
            run.graph = Some(graph);
        }
        Ok(Box::new(run))
    }
}

/// GLARE on SNIG: the unit is the block's section of a row (paper §III-C2), so the one
/// segment length is the section width, whatever it is. On a chain of several widths the
/// flags of each layer's input and output sections are the recorder: nothing more to keep.
impl GlareKernel for Snig {
    const UNIT: &'static str = "a section all at the bound is neither read nor written";

    const ANY_LENGTH: bool = true;

    fn candidates(shape: &model::Shape) -> Vec<usize> {
        vec![shape.slab_width.min(shape.neurons).max(1)]
    }

    /// `n/m + 1 + n(1 − p_I^m) + m(1 − p_O^m)`.
    fn expected_accesses(
        shape: &model::Shape,
        m: usize,
        input: &model::LayerProfile,
        output: &model::LayerProfile,
    ) -> f64 {
        let n = shape.neurons as f64;
        let units = shape.neurons.div_ceil(m.max(1)) as f64;
        units
            + 1.0
            + n * model::not_at_bound(input.value_at_bound, m as f64)
            + m as f64 * model::not_at_bound(output.value_at_bound, m as f64)
    }

    fn shape(options: &SnigOptions, neurons: usize) -> model::Shape {
        model::Shape {
            neurons,
            slab_width: options
                .section_width
                .unwrap_or_else(|| slab_width_for(neurons, DEFAULT_SHARED_BYTES)),
            first_layer: 0,
        }
    }

    fn with_recorder(options: &SnigOptions, glare: Glare) -> SnigOptions {
        SnigOptions {
            glare: Some(glare),
            ..*options
        }
    }
}

/// Runs SNIG on `input` (rows × `N_0`) through `layers` (`N_{l-1} × N_l`).
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &SnigOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    method::run::<Snig>(
        gpu,
        &LayerChain::new(layers, bias, upper),
        input,
        options,
        spec,
    )
}

/// Everything one SNIG run keeps on the device.
struct SnigRun<'g> {
    /// The layer chain as a CUDA graph (declared first: dropped before the buffers it uses).
    graph: Option<CapturedGraph>,
    gpu: &'g Gpu,
    chain: Chain,
    fill_kernel: Kernel,
    flags_kernel: Kernel,
    categories_kernel: Kernel,
    census: Census,
    weights: DeviceSlabWeights,
    /// Activations A and B (rows of the widest width): layer l reads A (even l) or B.
    y: (DeviceBuffer<f32>, DeviceBuffer<f32>),
    /// Section flags of A and B (rows × the most sections a width has).
    flags: (DeviceBuffer<u8>, DeviceBuffer<u8>),
    row_flags: DeviceBuffer<u8>,
    /// Rows per batch.
    rows: usize,
    /// Rows of the loaded batch.
    loaded: usize,
    glare: Option<Glare>,
    graph_requested: bool,
    counting: bool,
}

impl SnigRun<'_> {
    /// Whether the last layer wrote buffer A (an even number of layers) rather than B.
    fn ends_in_a(&self) -> bool {
        self.weights.layers().is_multiple_of(2)
    }

    /// The grid of the kernels over (rows, sections of a row of `width` values).
    fn sections_grid(&self, width: usize) -> (u32, u32) {
        (self.rows as u32, self.chain.layout.slabs_of(width) as u32)
    }

    /// The last layer's output width and its sections.
    fn output_shape(&self) -> (u32, u32) {
        let n = self.chain.layout.output_width();
        (n as u32, self.chain.layout.slabs_of(n) as u32)
    }
}

impl DeviceRun for SnigRun<'_> {
    /// The input into A with its section flags; B's flags cleared.
    fn load(&mut self, input: &Csr) -> Result<(), CudaError> {
        let gpu = self.gpu;
        let stream = gpu.stream();
        let n = self.chain.layout.input_width();
        if input.nrows() > self.rows || input.ncols() != n {
            return Err(CudaError::InvalidArgument(format!(
                "{} rows of {} values do not fit a batch of {} rows of {n}",
                input.nrows(),
                input.ncols(),
                self.rows
            )));
        }
        self.loaded = input.nrows();
        stream
            .memset_zeros(&mut *self.y.0)
            .context("clearing the activations")?;
        rows::scatter_rows(gpu, input, &mut self.y.0)?;
        stream
            .memset_zeros(&mut *self.flags.1)
            .context("clearing the flags")?;
        let grid = self.sections_grid(n);
        let config = self.flags_kernel.config(grid)?;
        let (n_u32, width) = (n as u32, self.chain.layout.slab_width() as u32);
        let mut flags = stream.launch_builder(&self.flags_kernel);
        flags
            .arg(&*self.y.0)
            .arg(&mut *self.flags.0)
            .arg(&n_u32)
            .arg(&width)
            .arg(&grid.1);
        unsafe { flags.launch(config) }.context("launching snig_section_flags")?;
        Ok(())
    }

    /// The graph (or, when profiled, counting or asked to, the layers one by one), then
    /// the category flags.
    fn run(&mut self, probe: &mut Probe) -> Result<(), CudaError> {
        let stream = self.gpu.stream().clone();
        match &self.graph {
            Some(graph) if !probe.is_recording() && !self.counting => graph.launch()?,
            _ => self.chain.enqueue(
                &stream,
                &mut self.weights,
                (&mut self.y.0, &mut self.y.1),
                (&mut self.flags.0, &mut self.flags.1),
                &mut self.census,
                self.counting,
                probe,
            )?,
        }
        let rows_u32 = self.rows as u32;
        let (_, sections) = self.output_shape();
        let final_flags = if self.ends_in_a() {
            &self.flags.0
        } else {
            &self.flags.1
        };
        let mut categories = stream.launch_builder(&self.categories_kernel);
        categories
            .arg(&**final_flags)
            .arg(&rows_u32)
            .arg(&sections)
            .arg(&mut *self.row_flags);
        let config = self
            .categories_kernel
            .config(rows_u32.div_ceil(self.categories_kernel.decl().threads()))?;
        unsafe { categories.launch(config) }.context("launching snig_row_categories")?;
        Ok(())
    }

    fn row_flags(&mut self) -> Result<Vec<u8>, CudaError> {
        rows::download_row_flags(self.gpu, &self.row_flags, self.loaded)
    }

    fn output(&mut self) -> Result<Vec<f32>, CudaError> {
        if self.glare.is_some() {
            // Sections recorded at the bound were not written: write them for the read-back.
            let (n, sections) = self.output_shape();
            let config = self.fill_kernel.config((self.rows as u32, sections))?;
            let (width, upper) = (self.chain.layout.slab_width() as u32, self.chain.upper);
            let stream = self.gpu.stream().clone();
            let (final_y, final_flags) = if self.ends_in_a() {
                (&mut self.y.0, &self.flags.0)
            } else {
                (&mut self.y.1, &self.flags.1)
            };
            let mut fill = stream.launch_builder(&self.fill_kernel);
            fill.arg(&mut **final_y)
                .arg(&**final_flags)
                .arg(&n)
                .arg(&width)
                .arg(&sections)
                .arg(&upper);
            unsafe { fill.launch(config) }.context("launching snig_glare_fill")?;
        }
        let flags = self.row_flags()?;
        let n = self.chain.layout.output_width();
        let final_y = if self.ends_in_a() {
            &self.y.0
        } else {
            &self.y.1
        };
        rows::final_output(self.gpu, final_y, n, &flags)
    }

    fn start_census(&mut self) -> Result<bool, CudaError> {
        if !self.glare.is_some_and(|g| g.census) {
            return Ok(false);
        }
        self.census.clear(self.gpu)?;
        self.counting = true;
        Ok(true)
    }

    fn finish_census(&mut self) -> Result<Vec<AccessCounts>, CudaError> {
        self.counting = false;
        self.census.read(self.gpu)
    }

    fn details(&self) -> Vec<(String, String)> {
        let width = self.chain.layout.slab_width().to_string();
        let mut details = vec![
            ("section_width".into(), width.clone()),
            ("sections".into(), self.chain.layout.max_slabs().to_string()),
            ("graph".into(), self.graph_requested.to_string()),
        ];
        if self.glare.is_some() {
            details.push(("glare_segment".into(), width));
        }
        details
    }
}

/// The launches of one pass through every layer.
struct Chain {
    kernel: Kernel,
    /// The counting GLARE kernel (census passes).
    census_kernel: Kernel,
    /// Whether the kernel is a GLARE variant (it takes the layer's census counters).
    glare: bool,
    /// Rows per batch (the grid is rows × the layer's output sections).
    rows: u32,
    /// The widths and their sections.
    layout: SlabLayout,
    bias: f32,
    upper: f32,
    /// Per-neuron biases of every layer (trained networks; the kernel is `snig_layer_neurons`).
    biases: Option<Vec<DeviceBuffer<f32>>>,
}

/// The arguments of one layer's launch that depend on its widths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LayerLaunch {
    n_in: u32,
    n_out: u32,
    in_sections: u32,
    out_sections: u32,
    /// Floats of dynamic shared memory.
    shared: usize,
}

impl LayerLaunch {
    fn new(layout: &SlabLayout, layer: usize) -> Result<Self, CudaError> {
        let shape = layout.checked_layer(layer)?;
        Ok(Self {
            n_in: shape.n_in as u32,
            n_out: shape.n_out as u32,
            in_sections: shape.slabs_in as u32,
            out_sections: shape.slabs_out as u32,
            shared: shape.shared,
        })
    }
}

impl Chain {
    /// Enqueues every layer on `stream` (the counting kernel when `counting`), marking
    /// each on `probe`: layer l reads buffer A (even l) or B.
    #[allow(clippy::too_many_arguments)]
    fn enqueue(
        &self,
        stream: &std::sync::Arc<spdnn_cuda::CudaStream>,
        weights: &mut DeviceSlabWeights,
        (y_a, y_b): (&mut DeviceBuffer<f32>, &mut DeviceBuffer<f32>),
        (flags_a, flags_b): (&mut DeviceBuffer<u8>, &mut DeviceBuffer<u8>),
        census: &mut Census,
        counting: bool,
        probe: &mut Probe,
    ) -> Result<(), CudaError> {
        let kernel = if counting {
            &self.census_kernel
        } else {
            &self.kernel
        };
        let slab_width = self.layout.slab_width() as u32;
        for layer in 0..weights.layers() {
            let shape = LayerLaunch::new(&self.layout, layer)?;
            let config = kernel.config_shared((self.rows, shape.out_sections), shape.shared)?;
            let even = layer.is_multiple_of(2);
            let (y_in, y_out) = if even {
                (&*y_a, &mut *y_b)
            } else {
                (&*y_b, &mut *y_a)
            };
            let (f_in, f_out) = if even {
                (&*flags_a, &mut *flags_b)
            } else {
                (&*flags_b, &mut *flags_a)
            };
            let views = weights.layer(layer)?;
            let mut launch = stream.launch_builder(kernel);
            launch
                .arg(&**y_in)
                .arg(&mut **y_out)
                .arg(&**f_in)
                .arg(&mut **f_out)
                .arg(&views.offsets)
                .arg(&views.cols)
                .arg(&views.values)
                .arg(&shape.n_in)
                .arg(&shape.n_out)
                .arg(&slab_width)
                .arg(&shape.in_sections)
                .arg(&shape.out_sections)
                .arg(&self.bias)
                .arg(&self.upper);
            if let Some(biases) = &self.biases {
                launch.arg(&*biases[layer]);
            }
            let mut counters = census.layer(layer);
            if self.glare {
                launch.arg(&mut counters);
            }
            unsafe { launch.launch(config) }.context("launching snig_layer")?;
            probe.layer("layers")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
