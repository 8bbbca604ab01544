//! The recorders and the census counters on the device.

use spdnn_cuda::census::{AccessCounts, CENSUS_WORDS};
use spdnn_cuda::rows::{PingPong, RowList};
use spdnn_cuda::{
    CudaError, CudaViewMut, DeviceBuffer, DriverResultExt, Gpu, KernelDecl, KernelSource,
    PushKernelArg,
};

/// `kernels-cu/glare.cu`.
pub const GLARE: KernelSource =
    KernelSource::new("glare.cu", include_str!("../../../kernels-cu/glare.cu"));

/// `glare_fill_listed_rows`: one block per list slot (grid = the list's capacity; blocks
/// past its count exit).
pub const FILL_LISTED_ROWS: KernelDecl = KernelDecl::new(&GLARE, "glare_fill_listed_rows", 256);

/// Two recorders (the current one, read by the next layer, and the next one, written by
/// it) with the bookkeeping of units that span several blocks.
pub struct Recorder {
    /// One flag per unit: 1 when every value of the unit is at the upper bound.
    pub flags: PingPong<DeviceBuffer<u8>>,
    /// One word per unit for units spanning several blocks: parts arrived (low 32 bits)
    /// and parts not at the bound (high 32 bits); the last part to arrive zeroes it.
    pub arrivals: DeviceBuffer<u64>,
    /// One byte per block part: 1 when the block skipped writing that part.
    pub skipped: DeviceBuffer<u8>,
    units: usize,
}

impl Recorder {
    /// Recorders of `units` flags, and bookkeeping for `parts` block parts (0 when no
    /// unit spans several blocks).
    pub fn new(gpu: &Gpu, units: usize, parts: usize) -> Result<Self, CudaError> {
        let units = units.max(1);
        Ok(Self {
            flags: PingPong::new(gpu.alloc_zeros(units)?, gpu.alloc_zeros(units)?),
            arrivals: gpu.alloc_zeros(if parts == 0 { 1 } else { units })?,
            skipped: gpu.alloc_zeros(parts.max(1))?,
            units,
        })
    }

    /// Device bytes of [`Self::new`]`(gpu, units, parts)` (for memory models).
    pub fn bytes(units: usize, parts: usize) -> usize {
        let units = units.max(1);
        2 * units + 8 * if parts == 0 { 1 } else { units } + parts.max(1)
    }

    /// Flags per recorder.
    pub fn units(&self) -> usize {
        self.units
    }

    /// Clears both recorders (no unit known to be at the bound, the paper's `R_0`) and
    /// the bookkeeping words; the first recorder becomes current.
    pub fn clear(&mut self, gpu: &Gpu) -> Result<(), CudaError> {
        let stream = gpu.stream();
        self.flags.reset();
        for _ in 0..2 {
            stream
                .memset_zeros(&mut **self.flags.current_mut())
                .context("clearing a GLARE recorder")?;
            self.flags.swap();
        }
        stream
            .memset_zeros(&mut *self.arrivals)
            .context("clearing the GLARE unit words")?;
        Ok(())
    }
}

impl Recorder {
    /// Writes the bound into every unit the current recorder flags in the rows listed in
    /// `list` of a row-major `rows × n` block (`units` units of `2^shift` neurons a row),
    /// so the activations can be read back without the recorder. `capacity` bounds the
    /// list's length (it sizes the grid).
    #[allow(clippy::too_many_arguments)]
    pub fn fill_listed_rows(
        &self,
        gpu: &Gpu,
        y: &mut DeviceBuffer<f32>,
        list: &RowList,
        capacity: usize,
        n: usize,
        (shift, units): (u32, usize),
        upper: f32,
    ) -> Result<(), CudaError> {
        let kernel = gpu.kernel(&FILL_LISTED_ROWS)?;
        let (n_u32, units_u32) = (n as u32, units as u32);
        let mut launch = gpu.stream().launch_builder(&kernel);
        launch
            .arg(&mut **y)
            .arg(&*list.rows)
            .arg(&*list.count)
            .arg(&**self.flags.current())
            .arg(&n_u32)
            .arg(&shift)
            .arg(&units_u32)
            .arg(&upper);
        let config = kernel.config(capacity.max(1) as u32)?;
        unsafe { launch.launch(config) }.context("launching glare_fill_listed_rows")?;
        Ok(())
    }
}

/// Per-layer access counters filled by the census kernels.
pub struct Census {
    words: DeviceBuffer<u64>,
    layers: usize,
}

impl Census {
    /// Device bytes of [`Self::new`]`(gpu, layers)` (for memory models).
    pub fn bytes(layers: usize) -> usize {
        8 * layers.max(1) * CENSUS_WORDS
    }

    /// Zeroed counters for `layers` layers.
    pub fn new(gpu: &Gpu, layers: usize) -> Result<Self, CudaError> {
        Ok(Self {
            words: gpu.alloc_zeros(layers.max(1) * CENSUS_WORDS)?,
            layers,
        })
    }

    /// Zeroes every counter.
    pub fn clear(&mut self, gpu: &Gpu) -> Result<(), CudaError> {
        gpu.stream()
            .memset_zeros(&mut *self.words)
            .context("clearing the GLARE census")
    }

    /// The counters of `layer` (0-based; past the last layer, the last one's).
    pub fn layer(&mut self, layer: usize) -> CudaViewMut<'_, u64> {
        let layer = layer.min(self.layers.max(1) - 1);
        self.words
            .slice_mut(layer * CENSUS_WORDS..(layer + 1) * CENSUS_WORDS)
    }

    /// Downloads the counts, one record per layer.
    pub fn read(&self, gpu: &Gpu) -> Result<Vec<AccessCounts>, CudaError> {
        let words = gpu.download(&*self.words)?;
        Ok(words
            .chunks_exact(CENSUS_WORDS)
            .take(self.layers)
            .filter_map(AccessCounts::from_words)
            .collect())
    }
}
