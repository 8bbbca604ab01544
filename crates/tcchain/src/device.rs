//! The chain on the device: the packed layers uploaded once, the launch shape chosen from the
//! device, one launch a batch.

use spdnn_cuda::cudarc::driver::PushKernelArg;
use spdnn_cuda::cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use spdnn_cuda::method::{DeviceRun, LayerChain, Probe};
use spdnn_cuda::rows;
use spdnn_cuda::{CudaError, DeviceBuffer, DriverResultExt, Gpu, Kernel};
use spdnn_formats::{Csr, SparseMatrix};

use crate::layout::{
    DESC_WORDS, PackedLayer, activation_exponent, buffer_width, chain_warp_tiles, check_exponents,
    padded_biases, shared_bytes,
};
use crate::split::{max_abs, power_of_two, scale_exponent};
use crate::{MAX_M_TILES, TcChainOptions, chain_kernel};

/// The launch shape: rows a tile (16 · `m_tiles`), the instance, its shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// 16-row MMA tiles a block carries.
    pub m_tiles: usize,
    /// Dynamic shared bytes.
    pub shared: usize,
    /// Blocks an SM holds.
    pub blocks_per_sm: usize,
}

/// Picks the tile height: among the heights whose buffers fit the shared memory, the one
/// whose last wave ends first, `ceil(tiles / (SMs · blocks an SM)) · (m_tiles + 1)`: a
/// block's time grows with its rows, plus about one tile's worth for streaming every
/// layer's weights once; the taller on a tie (fewer passes over the weights).
pub fn choose_shape(rows: usize, sms: usize, candidates: &[Shape]) -> Option<Shape> {
    candidates
        .iter()
        .filter(|s| s.blocks_per_sm > 0)
        .min_by_key(|s| {
            let tiles = rows.max(1).div_ceil(16 * s.m_tiles);
            let waves = tiles.div_ceil(sms.max(1) * s.blocks_per_sm);
            (waves * (s.m_tiles + 1), usize::MAX - s.m_tiles)
        })
        .copied()
}

/// A prepared chain.
pub struct TcRun<'g> {
    gpu: &'g Gpu,
    kernel: Kernel,
    shape: Shape,
    /// The layers' fragments and padded biases (kept alive for the descriptors).
    _weights: Vec<DeviceBuffer<u32>>,
    _biases: Vec<DeviceBuffer<f32>>,
    descriptors: DeviceBuffer<u64>,
    layer_count: u32,
    input: DeviceBuffer<f32>,
    output: DeviceBuffer<f32>,
    row_flags: DeviceBuffer<u8>,
    /// `N_0` and `N_L`.
    n_in: usize,
    n_out: usize,
    capacity: usize,
    loaded: usize,
    buffer_width: usize,
    act_exponent: i32,
    first_weight_exponent: i32,
    input_scale: f32,
    bias: f32,
    upper: f32,
    host_input: Vec<f32>,
    two_term_layers: usize,
    /// Packing and uploading the layers, ms (compile waits left out).
    preprocess_ms: f64,
}

impl<'g> TcRun<'g> {
    pub fn prepare(
        gpu: &'g Gpu,
        chain: &LayerChain<'_>,
        capacity: usize,
        options: &TcChainOptions,
    ) -> Result<Self, CudaError> {
        let (major, minor) = gpu.compute_capability();
        if major < 8 {
            return Err(CudaError::InvalidArgument(format!(
                "tcchain needs fp16 tensor cores with fp32 accumulation (mma.m16n8k16, compute \
                 capability 8.0 or later); this GPU is {major}.{minor}"
            )));
        }
        let widths = rows::check_widths(chain.layers, chain.bias, chain.upper)?;
        let warp_tiles = chain_warp_tiles(&widths);
        let buffer_width = buffer_width(&widths, warp_tiles);
        // The tile heights whose buffers fit the shared memory, compiled ahead while the
        // weights are packed (each is queried for its occupancy below).
        let limit = gpu.attribute_count(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?;
        let heights: Vec<usize> = match options.tile_rows {
            Some(rows) => vec![rows / 16],
            None => (1..=MAX_M_TILES).collect(),
        };
        let heights: Vec<usize> = heights
            .into_iter()
            .filter(|&m| shared_bytes(buffer_width, m) <= limit)
            .collect();
        gpu.compile_ahead(heights.iter().map(|&m| chain_kernel(m, warp_tiles)));
        let started = gpu.preparation_clock();
        let packed = chain
            .layers
            .iter()
            .enumerate()
            .map(|(l, w)| {
                PackedLayer::pack(w, warp_tiles).map_err(|e| match e {
                    CudaError::InvalidArgument(m) => {
                        CudaError::InvalidArgument(format!("layer {}: {m}", l + 1))
                    }
                    other => other,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let act_exponent = activation_exponent(chain.upper);
        for (l, layer) in packed.iter().enumerate().skip(1) {
            check_exponents(l + 1, act_exponent, layer.weight_exponent)?;
        }

        // Upload the layers and their descriptors.
        let mut weights = Vec::with_capacity(packed.len());
        let mut biases = Vec::new();
        let mut descriptors = Vec::with_capacity(packed.len() * DESC_WORDS);
        for (l, layer) in packed.iter().enumerate() {
            let flat: Vec<u32> = layer.fragments.iter().flatten().copied().collect();
            let buffer = gpu.upload_nonempty(&flat)?;
            let bias_pointer = match chain.layer_biases(l) {
                Some(b) => {
                    let buffer = gpu.upload_nonempty(&padded_biases(b, layer.n_tiles))?;
                    let pointer = device_pointer(gpu, &buffer);
                    biases.push(buffer);
                    pointer
                }
                None => 0,
            };
            descriptors.extend([
                device_pointer(gpu, &buffer),
                bias_pointer,
                layer.k_steps as u64 | (layer.n_tiles as u64) << 32,
                layer.n_out as u64,
                u64::from(power_of_two(-layer.weight_exponent).to_bits())
                    | u64::from(layer.two_term_weights) << 32,
            ]);
            weights.push(buffer);
        }
        let descriptors = gpu.upload_nonempty(&descriptors)?;

        let preprocess_ms = started.elapsed_ms();
        // The launch shape.
        let sms = gpu
            .attribute_count(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
            .max(1);
        let mut candidates = Vec::new();
        for m_tiles in heights {
            let shared = shared_bytes(buffer_width, m_tiles);
            let kernel = gpu.kernel(chain_kernel(m_tiles, warp_tiles))?;
            kernel
                .set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared as i32,
                )
                .context("opting tcchain into its shared memory")?;
            let blocks_per_sm = kernel
                .occupancy_max_active_blocks_per_multiprocessor(
                    kernel.decl().threads(),
                    shared,
                    None,
                )
                .context("querying tcchain's occupancy")? as usize;
            candidates.push(Shape {
                m_tiles,
                shared,
                blocks_per_sm,
            });
        }
        let shape = choose_shape(capacity, sms, &candidates).ok_or_else(|| {
            CudaError::InvalidArgument(format!(
                "tcchain: a tile of {} rows of {buffer_width} activations needs {} bytes of \
                 shared memory, the device allows {limit} a block: the layers are too wide",
                16 * options.tile_rows.map_or(1, |r| r / 16),
                shared_bytes(buffer_width, options.tile_rows.map_or(1, |r| r / 16))
            ))
        })?;
        let kernel = gpu.kernel(chain_kernel(shape.m_tiles, warp_tiles))?;
        let (n_in, n_out) = (widths[0], *widths.last().unwrap_or(&0));
        Ok(Self {
            gpu,
            kernel,
            shape,
            _weights: weights,
            _biases: biases,
            descriptors,
            layer_count: packed.len() as u32,
            input: gpu.alloc_zeros(capacity.max(1) * n_in.max(1))?,
            output: gpu.alloc_zeros(capacity.max(1) * n_out.max(1))?,
            row_flags: gpu.alloc_zeros(capacity.max(1))?,
            n_in,
            n_out,
            capacity,
            loaded: 0,
            buffer_width,
            act_exponent,
            first_weight_exponent: packed.first().map_or(0, |l| l.weight_exponent),
            input_scale: 1.0,
            bias: chain.bias,
            upper: chain.upper,
            host_input: Vec::new(),
            two_term_layers: packed.iter().filter(|l| l.two_term_weights).count(),
            preprocess_ms,
        })
    }
}

/// The device address of `buffer`, for a descriptor.
fn device_pointer<T>(gpu: &Gpu, buffer: &DeviceBuffer<T>) -> u64 {
    use spdnn_cuda::cudarc::driver::DevicePtr;
    let (pointer, _sync) = (**buffer).device_ptr(gpu.stream());
    pointer
}

impl DeviceRun for TcRun<'_> {
    fn load(&mut self, input: &Csr) -> Result<(), CudaError> {
        if input.nrows() > self.capacity || input.ncols() != self.n_in {
            return Err(CudaError::InvalidArgument(format!(
                "{} rows of {} values do not fit a batch of {} rows of {}",
                input.nrows(),
                input.ncols(),
                self.capacity,
                self.n_in
            )));
        }
        if let Some(v) = input.values().iter().find(|v| !v.is_finite()) {
            return Err(CudaError::InvalidArgument(format!(
                "tcchain: input value {v} is not finite"
            )));
        }
        let exponent = scale_exponent(max_abs(input.values()));
        check_exponents(1, exponent, self.first_weight_exponent)?;
        self.input_scale = power_of_two(exponent);
        // The rows dense, as the kernel stages them.
        self.host_input.clear();
        self.host_input.resize(input.nrows() * self.n_in, 0.0);
        for row in 0..input.nrows() {
            let (cols, values) = input.row(row);
            for (&c, &v) in cols.iter().zip(values) {
                self.host_input[row * self.n_in + c as usize] = v;
            }
        }
        self.gpu.upload_into(&self.host_input, &mut self.input)?;
        self.loaded = input.nrows();
        Ok(())
    }

    fn run(&mut self, probe: &mut Probe) -> Result<(), CudaError> {
        if self.loaded > 0 {
            let tile_rows = 16 * self.shape.m_tiles;
            let grid = self.loaded.div_ceil(tile_rows) as u32;
            let config = self.kernel.config_shared(grid, self.shape.shared / 4)?;
            let (input_width, rows, buffer_width) = (
                self.n_in as u32,
                self.loaded as u32,
                self.buffer_width as u32,
            );
            let act_scale = power_of_two(self.act_exponent);
            let stream = self.gpu.stream().clone();
            let mut launch = stream.launch_builder(&self.kernel);
            launch
                .arg(&*self.descriptors)
                .arg(&self.layer_count)
                .arg(&*self.input)
                .arg(&input_width)
                .arg(&self.input_scale)
                .arg(&rows)
                .arg(&buffer_width)
                .arg(&act_scale)
                .arg(&self.bias)
                .arg(&self.upper)
                .arg(&mut *self.output)
                .arg(&mut *self.row_flags);
            // SAFETY: the arguments match tcchain.cu's TC_CHAIN_PARAMS; the descriptors point
            // at the uploaded layers, which this run keeps alive.
            unsafe { launch.launch(config) }.context("launching tcchain")?;
        }
        probe.step("chain")
    }

    fn row_flags(&mut self) -> Result<Vec<u8>, CudaError> {
        rows::download_row_flags(self.gpu, &self.row_flags, self.loaded)
    }

    fn output(&mut self) -> Result<Vec<f32>, CudaError> {
        let flags = self.row_flags()?;
        rows::final_output(self.gpu, &self.output, self.n_out, &flags)
    }

    fn details(&self) -> Vec<(String, String)> {
        vec![
            ("kernel".into(), self.kernel.decl().name.to_string()),
            (
                "registers".into(),
                self.kernel.num_regs().unwrap_or(-1).to_string(),
            ),
            (
                "local_bytes".into(),
                self.kernel.local_size_bytes().unwrap_or(-1).to_string(),
            ),
            ("tile_rows".into(), (16 * self.shape.m_tiles).to_string()),
            ("blocks_per_sm".into(), self.shape.blocks_per_sm.to_string()),
            ("shared_bytes".into(), self.shape.shared.to_string()),
            ("buffer_width".into(), self.buffer_width.to_string()),
            (
                "split".into(),
                "fp16 hi/lo of power-of-two-scaled operands, a_hi·w_hi + a_hi·w_lo + a_lo·w_hi"
                    .into(),
            ),
            (
                "two_term_layers".into(),
                format!("{} of {}", self.two_term_layers, self.layer_count),
            ),
            (
                "preprocessing_ms".into(),
                format!("{:.1}", self.preprocess_ms),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(m_tiles: usize, blocks_per_sm: usize) -> Shape {
        Shape {
            m_tiles,
            shared: 0,
            blocks_per_sm,
        }
    }

    #[test]
    fn the_shape_ends_the_last_wave_first() {
        let all: Vec<Shape> = (1..=5).map(|m| shape(m, 1)).collect();
        // 10000 rows on 132 SMs: 80-row tiles make 125 blocks, one wave.
        assert_eq!(choose_shape(10000, 132, &all).unwrap().m_tiles, 5);
        // 2000 rows: one wave holds the 125 tiles of 16 rows, the shortest.
        assert_eq!(choose_shape(2000, 132, &all).unwrap().m_tiles, 1);
        // 60000 rows, two blocks an SM for the short tiles: 80-row tiles make 750 blocks,
        // 6 waves (cost 36); 32-row ones 1875 blocks, 8 waves of 264 (cost 24).
        let mixed = [shape(2, 2), shape(5, 1)];
        assert_eq!(choose_shape(60000, 132, &mixed).unwrap().m_tiles, 2);
        // Nothing fits: none.
        assert_eq!(choose_shape(100, 132, &[shape(5, 0)]), None);
    }
}
