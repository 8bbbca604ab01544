//! SNIG-2020 (Lin & Huang, "A Novel Inference Algorithm for Large Sparse Neural Network
//! using Task Graph Parallelism", HPEC 2020), champion of the 2020 challenge.
//!
//! The outputs of a layer are cut into sections (the column slabs of the weights); a
//! flag per (row, section) says whether the section holds a nonzero. `snig_layer`
//! (`kernels-cu/snig.cu`) runs one block per (row, output section), skips the input
//! sections whose flag is clear, and for a row with no nonzero input only clears the
//! output section when it was nonzero before (incremental resetting). The whole chain
//! of layers is captured once as a CUDA graph and replayed; the weights stay resident.

use std::time::Instant;

use spdnn_cuda::rows::{self, GpuInference, RunSpec};
use spdnn_cuda::slab_weights::{DeviceSlabWeights, Residency, SlabProblem};
use spdnn_cuda::{
    CudaError, DeviceBuffer, DriverResultExt, Gpu, KernelSource, LaunchConfig, PushKernelArg,
};
use spdnn_formats::Csr;
use spdnn_glare::{Census, Glare};

/// `kernels-cu/snig.cu`.
pub const SNIG: KernelSource = KernelSource {
    name: "snig.cu",
    source: include_str!("../../../kernels-cu/snig.cu"),
};

/// Threads per block of `snig_layer`.
const LAYER_THREADS: u32 = 256;

/// Tuning of a SNIG run.
#[derive(Debug, Clone, Copy)]
pub struct SnigOptions {
    /// Columns per section (default: all N when they fit in 48 KiB of shared memory).
    pub section_width: Option<usize>,
    /// Replay the layer chain as a CUDA graph (default) or launch layer by layer.
    pub graph: bool,
    /// Run the GLARE variant of the layer kernel; its unit is the section, so
    /// `segment` sets the section width (it must agree with `section_width` if both are given).
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

/// Runs SNIG on `input` (rows × N) through `layers`.
pub fn infer(
    gpu: &Gpu,
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
    options: &SnigOptions,
    spec: &RunSpec,
) -> Result<GpuInference, CudaError> {
    let wall = Instant::now();
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
        neurons: n,
        rows: rows_count,
        slab_width: width,
        slabs: sections,
        mut weights,
    } = SlabProblem::prepare(
        gpu,
        layers,
        input,
        bias,
        upper,
        section_width,
        Residency::Resident,
    )?;

    let glare = options.glare.is_some();
    let layer_kernel = gpu.function(
        &SNIG,
        if glare {
            "snig_layer_glare"
        } else {
            "snig_layer"
        },
    )?;
    let census_kernel = gpu.function(&SNIG, "snig_layer_glare_census")?;
    let fill_kernel = gpu.function(&SNIG, "snig_glare_fill")?;
    let mut census = Census::new(gpu, layers.len())?;
    let flags_kernel = gpu.function(&SNIG, "snig_section_flags")?;
    let categories_kernel = gpu.function(&SNIG, "snig_row_categories")?;

    let mut y_a = gpu.alloc_zeros::<f32>(rows_count * n)?;
    let mut y_b = gpu.alloc_zeros::<f32>(rows_count * n)?;
    let mut flags_a = gpu.alloc_zeros::<u8>(rows_count * sections)?;
    let mut flags_b = gpu.alloc_zeros::<u8>(rows_count * sections)?;
    let mut row_flags = gpu.alloc_zeros::<u8>(rows_count)?;
    let stream = gpu.stream().clone();
    let (n_u32, width_u32, sections_u32, rows_u32) =
        (n as u32, width as u32, sections as u32, rows_count as u32);
    // Launch: grid (rows, sections), block 256, shared `width` floats.
    let layer_config = LaunchConfig {
        grid_dim: (rows_u32, sections_u32, 1),
        block_dim: (LAYER_THREADS, 1, 1),
        shared_mem_bytes: (width * 4) as u32,
    };

    let mut chain = Chain {
        kernel: &layer_kernel,
        glare,
        config: layer_config,
        n: n_u32,
        width: width_u32,
        sections: sections_u32,
        bias,
        upper,
    };
    let graph = if options.graph {
        Some(gpu.capture_graph(&stream, |s| {
            chain.enqueue(
                s,
                &mut weights,
                (&mut y_a, &mut y_b),
                (&mut flags_a, &mut flags_b),
                &mut census,
            )
        })?)
    } else {
        None
    };
    if let Some(graph) = &graph {
        graph.upload()?;
    }

    let mut timer = gpu.timer()?;
    let mut infer_ms = Vec::new();
    let census_run = options.glare.is_some_and(|g| g.census);
    let runs = spec.warmup + spec.repetitions.max(1);
    for run in 0..runs + usize::from(census_run) {
        let counting = run == runs;
        // Untimed: the input into A with its section flags; B's flags cleared.
        stream
            .memset_zeros(&mut *y_a)
            .context("clearing the activations")?;
        rows::scatter_rows(gpu, input, &mut y_a)?;
        stream
            .memset_zeros(&mut *flags_b)
            .context("clearing the flags")?;
        let mut flags = stream.launch_builder(&flags_kernel);
        flags
            .arg(&*y_a)
            .arg(&mut *flags_a)
            .arg(&n_u32)
            .arg(&width_u32)
            .arg(&sections_u32);
        // Launch: grid (rows, sections), block 256, no shared memory.
        let config = LaunchConfig {
            grid_dim: (rows_u32, sections_u32, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { flags.launch(config) }.context("launching snig_section_flags")?;

        if counting {
            // The census run: layer by layer with the counting kernel.
            census.clear(gpu)?;
            chain.kernel = &census_kernel;
            chain.enqueue(
                &stream,
                &mut weights,
                (&mut y_a, &mut y_b),
                (&mut flags_a, &mut flags_b),
                &mut census,
            )?;
            break;
        }
        timer.start(&stream)?;
        match &graph {
            Some(graph) => graph.launch()?,
            None => chain.enqueue(
                &stream,
                &mut weights,
                (&mut y_a, &mut y_b),
                (&mut flags_a, &mut flags_b),
                &mut census,
            )?,
        }
        let final_flags = if layers.len().is_multiple_of(2) {
            &flags_a
        } else {
            &flags_b
        };
        let mut categories = stream.launch_builder(&categories_kernel);
        categories
            .arg(&**final_flags)
            .arg(&rows_u32)
            .arg(&sections_u32)
            .arg(&mut *row_flags);
        // Launch: grid ceil(rows / 256), block 256, no shared memory.
        let config = LaunchConfig {
            grid_dim: (rows_u32.div_ceil(256), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { categories.launch(config) }.context("launching snig_row_categories")?;
        let ms = timer.stop(&stream)?;
        if run >= spec.warmup {
            infer_ms.push(ms);
        }
    }
    drop(graph);

    let (final_y, final_flags) = if layers.len().is_multiple_of(2) {
        (&mut y_a, &flags_a)
    } else {
        (&mut y_b, &flags_b)
    };
    let mut details = vec![
        ("section_width".into(), width.to_string()),
        ("sections".into(), sections.to_string()),
        ("graph".into(), options.graph.to_string()),
    ];
    let mut accesses = Vec::new();
    if glare {
        details.push(("glare_segment".into(), width.to_string()));
        if census_run {
            accesses = census.read(gpu)?;
        }
        // Sections recorded at the bound were not written: write them for the read-back.
        let mut fill = stream.launch_builder(&fill_kernel);
        fill.arg(&mut **final_y)
            .arg(&**final_flags)
            .arg(&n_u32)
            .arg(&width_u32)
            .arg(&sections_u32)
            .arg(&upper);
        // Launch: grid (rows, sections), block 256, no shared memory.
        let config = LaunchConfig {
            grid_dim: (rows_u32, sections_u32, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { fill.launch(config) }.context("launching snig_glare_fill")?;
    }
    Ok(GpuInference {
        details,
        accesses,
        ..rows::finish(gpu, &row_flags, final_y, n, spec, infer_ms, wall)?
    })
}

/// The launches of one pass through every layer.
struct Chain<'a> {
    kernel: &'a spdnn_cuda::CudaFunction,
    /// Whether the kernel is a GLARE variant (it takes the layer's census counters).
    glare: bool,
    config: LaunchConfig,
    n: u32,
    width: u32,
    sections: u32,
    bias: f32,
    upper: f32,
}

impl Chain<'_> {
    /// Enqueues every layer on `stream`: layer l reads buffer A (even l) or B.
    fn enqueue(
        &self,
        stream: &std::sync::Arc<spdnn_cuda::CudaStream>,
        weights: &mut DeviceSlabWeights,
        (y_a, y_b): (&mut DeviceBuffer<f32>, &mut DeviceBuffer<f32>),
        (flags_a, flags_b): (&mut DeviceBuffer<u8>, &mut DeviceBuffer<u8>),
        census: &mut Census,
    ) -> Result<(), CudaError> {
        for layer in 0..weights.layers() {
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
            let mut launch = stream.launch_builder(self.kernel);
            launch
                .arg(&**y_in)
                .arg(&mut **y_out)
                .arg(&**f_in)
                .arg(&mut **f_out)
                .arg(&views.offsets)
                .arg(&views.cols)
                .arg(&views.values)
                .arg(&self.n)
                .arg(&self.width)
                .arg(&self.sections)
                .arg(&self.bias)
                .arg(&self.upper);
            let mut counters = census.layer(layer);
            if self.glare {
                launch.arg(&mut counters);
            }
            unsafe { launch.launch(self.config) }.context("launching snig_layer")?;
        }
        Ok(())
    }
}
