//! Dense row-major activations on the device, and what every method's run returns.

use cudarc::driver::PushKernelArg;
use spdnn_formats::{Csr, SparseMatrix};

use crate::{CudaError, DeviceBuffer, DriverResultExt, Gpu, Kernel, KernelDecl, KernelSource};

/// `kernels-cu/rows.cu`: scatter sparse rows, row flags, row lists.
pub const ROWS: KernelSource =
    KernelSource::new("rows.cu", include_str!("../../../kernels-cu/rows.cu"));

/// `spdnn_scatter_rows`: blocks stride over the rows ([`scatter_rows`]).
pub const SCATTER_ROWS: KernelDecl = KernelDecl::new(&ROWS, "spdnn_scatter_rows", 128);
/// `spdnn_row_nonzero_flags`: blocks stride over the rows ([`row_nonzero_flags`]).
pub const ROW_NONZERO_FLAGS: KernelDecl = KernelDecl::new(&ROWS, "spdnn_row_nonzero_flags", 256);
/// `spdnn_mark_rows`: one thread per list slot ([`KernelDecl::config_for`] the capacity).
pub const MARK_ROWS: KernelDecl = KernelDecl::new(&ROWS, "spdnn_mark_rows", 256);
/// `spdnn_all_rows`: one thread per row ([`KernelDecl::config_for`] the rows).
pub const ALL_ROWS: KernelDecl = KernelDecl::new(&ROWS, "spdnn_all_rows", 256);
/// `spdnn_compact_flagged_rows`: one thread per list slot ([`RowList::compact_into`]).
pub const COMPACT_FLAGGED_ROWS: KernelDecl =
    KernelDecl::new(&ROWS, "spdnn_compact_flagged_rows", 256);

/// How often a GPU method runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSpec {
    /// Untimed runs first.
    pub warmup: usize,
    /// Timed runs (at least one is made).
    pub repetitions: usize,
    /// Download the final activations (rows × `N_L`, the last layer's width) after the
    /// last run.
    pub keep_output: bool,
    /// Rows per batch (`None`: every row in one batch; a method's own options may ask for
    /// fewer, see `KernelMethod::batch`).
    pub batch: Option<usize>,
    /// One pass only, the profiled one, which then also collects the categories and the
    /// output and is the one time reported (`warmup` and `repetitions` unused): the
    /// sanitizers' way to launch each kernel once.
    pub profiled_only: bool,
}

impl Default for RunSpec {
    fn default() -> Self {
        Self {
            warmup: 1,
            repetitions: 1,
            keep_output: false,
            batch: None,
            profiled_only: false,
        }
    }
}

/// The result of a GPU method.
#[derive(Debug, Clone, Default)]
pub struct GpuInference {
    /// 1-based ascending rows with a nonzero sum after the last layer.
    pub categories: Vec<u32>,
    /// Final activations, rows × `N_L` row-major (the last layer's width), when asked for.
    pub output: Option<Vec<f32>>,
    /// Event time of each timed run: layer loop + category extraction, ms.
    pub infer_ms: Vec<f64>,
    /// Host wall time of the whole call: preparation, uploads, all runs, ms.
    pub total_ms: f64,
    /// Method-specific facts (name, value) for reports.
    pub details: Vec<(String, String)>,
    /// Time per stage of one profiled run (name, ms), in order; empty for one-stage
    /// methods.
    pub stages: Vec<(String, f64)>,
    /// Time per layer of one profiled run, ms; empty when not measured.
    pub layer_ms: Vec<f64>,
    /// Global-memory accesses per layer from a census run (GLARE); empty when not taken.
    pub accesses: Vec<crate::census::AccessCounts>,
    /// What compiling and loading kernel modules cost the run: its `waited_ms` is the
    /// run's `compile_ms` (in `total_ms`, and not in any preprocessing time a method
    /// reports).
    pub compile: crate::CompileStats,
}

impl GpuInference {
    /// The value of detail `key` in [`GpuInference::details`], if the method reported it.
    pub fn detail(&self, key: &str) -> Option<&str> {
        self.details
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Checks that the layers chain from the input's width (`layers[l]` is `N_{l-1} × N_l`
/// with `N_0` the input's width; the challenge's layers are all `N × N`) and that the
/// activation parameters are valid (bias < 0 makes `clip(Z + b)` equal the official
/// rule); returns the input width.
pub fn check_problem(
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper: f32,
) -> Result<usize, CudaError> {
    let n = input.ncols();
    if layers.is_empty() {
        return Err(CudaError::InvalidArgument(
            "the network has no layers".into(),
        ));
    }
    if n == 0 || input.nrows() == 0 {
        return Err(CudaError::InvalidArgument(
            "the input has no rows or no features".into(),
        ));
    }
    if input.nrows() > u32::MAX as usize || n > u32::MAX as usize / 2 {
        return Err(CudaError::InvalidArgument(format!(
            "{} rows × {n} features is too large",
            input.nrows()
        )));
    }
    if layers[0].nrows() != n {
        return Err(CudaError::InvalidArgument(format!(
            "layer 1 is {}x{}, the input has {n} features",
            layers[0].nrows(),
            layers[0].ncols()
        )));
    }
    check_widths(layers, bias, upper)?;
    Ok(n)
}

/// Checks that there is a layer, that every layer has as many rows as the previous one
/// has columns and at most `u32::MAX / 2` of either, and that the activation parameters
/// are valid; returns the widths `N_0, N_1, …, N_L`.
pub fn check_widths(layers: &[Csr], bias: f32, upper: f32) -> Result<Vec<usize>, CudaError> {
    let Some(first) = layers.first() else {
        return Err(CudaError::InvalidArgument(
            "the network has no layers".into(),
        ));
    };
    let mut widths = vec![first.nrows()];
    for (l, w) in layers.iter().enumerate() {
        let previous = widths[l];
        if w.nrows() != previous {
            return Err(CudaError::InvalidArgument(format!(
                "layer {} is {}x{}, the layer before gives {previous} values a row",
                l + 1,
                w.nrows(),
                w.ncols()
            )));
        }
        widths.push(w.ncols());
    }
    if widths.iter().any(|&w| w == 0 || w > u32::MAX as usize / 2) {
        return Err(CudaError::InvalidArgument(format!(
            "layers of widths {widths:?} are not supported (each from 1 to 2^31 - 1)"
        )));
    }
    if !(bias.is_finite() && bias < 0.0) {
        return Err(CudaError::InvalidArgument(format!(
            "the bias must be negative and finite, got {bias}"
        )));
    }
    if !(upper.is_finite() && upper > 0.0) {
        return Err(CudaError::InvalidArgument(format!(
            "the upper bound must be positive, got {upper}"
        )));
    }
    Ok(widths)
}

/// [`check_widths`], and every layer `N × N` (the methods written for the challenge's
/// square layers call this); returns N. A chain of other widths (a compressed network) is
/// an error saying so.
pub fn check_chain(layers: &[Csr], bias: f32, upper: f32) -> Result<usize, CudaError> {
    let widths = check_widths(layers, bias, upper)?;
    let n = widths[0];
    if widths.iter().any(|&w| w != n) {
        return Err(CudaError::InvalidArgument(format!(
            "this method takes square N × N layers only; these layers chain widths {}",
            describe_widths(&widths)
        )));
    }
    Ok(n)
}

/// `1024 → 64 → 64 → 32 …` (the first ones, then a count).
pub fn describe_widths(widths: &[usize]) -> String {
    let shown: Vec<String> = widths.iter().take(6).map(|w| w.to_string()).collect();
    let rest = widths.len().saturating_sub(6);
    if rest == 0 {
        shown.join(" → ")
    } else {
        format!("{} → … ({rest} more)", shown.join(" → "))
    }
}

/// Grid size for grid-stride loops over `items` (capped so launches stay cheap).
pub fn grid_for(items: usize, per_block: usize) -> u32 {
    items.div_ceil(per_block).clamp(1, 65535 * 16) as u32
}

/// Writes the sparse `input` rows into `y` (rows × N, which must be zeroed).
pub fn scatter_rows(gpu: &Gpu, input: &Csr, y: &mut DeviceBuffer<f32>) -> Result<(), CudaError> {
    let rows = input.nrows();
    if y.len() < rows * input.ncols() {
        return Err(CudaError::InvalidArgument(
            "the dense buffer is smaller than the input".into(),
        ));
    }
    if input.nnz() == 0 {
        return Ok(());
    }
    let offsets = gpu.upload(input.row_offsets())?;
    let cols = gpu.upload(input.col_indices())?;
    let vals = gpu.upload(input.values())?;
    let scatter = gpu.kernel(&SCATTER_ROWS)?;
    let (rows_u32, n_u32) = (rows as u32, input.ncols() as u32);
    let mut launch = gpu.stream().launch_builder(&scatter);
    launch
        .arg(&*offsets)
        .arg(&*cols)
        .arg(&*vals)
        .arg(&rows_u32)
        .arg(&n_u32)
        .arg(&mut **y);
    let config = scatter.config(grid_for(rows, 1))?;
    unsafe { launch.launch(config) }.context("launching spdnn_scatter_rows")?;
    Ok(())
}

/// A zeroed rows × N buffer holding the input rows.
pub fn upload_dense_rows(gpu: &Gpu, input: &Csr) -> Result<DeviceBuffer<f32>, CudaError> {
    let mut y = gpu.alloc_zeros::<f32>(input.nrows() * input.ncols())?;
    scatter_rows(gpu, input, &mut y)?;
    Ok(y)
}

/// Sets `flags[row]` to whether row `row` of `y` (rows × n) has a nonzero.
pub fn row_nonzero_flags(
    gpu: &Gpu,
    y: &DeviceBuffer<f32>,
    rows: usize,
    n: usize,
    flags: &mut DeviceBuffer<u8>,
) -> Result<(), CudaError> {
    let kernel = gpu.kernel(&ROW_NONZERO_FLAGS)?;
    let (rows_u32, n_u32) = (rows as u32, n as u32);
    let mut launch = gpu.stream().launch_builder(&kernel);
    launch
        .arg(&**y)
        .arg(&rows_u32)
        .arg(&n_u32)
        .arg(&mut **flags);
    let config = kernel.config(grid_for(rows, 1))?;
    unsafe { launch.launch(config) }.context("launching spdnn_row_nonzero_flags")?;
    Ok(())
}

/// Zeroes `flags` (one byte per row of the prepared capacity) before a kernel that sets
/// the flag of every row it finds non-empty after the last layer: the first half of the
/// end-of-run row flags of a method that flags rows as it writes them (a fused epilogue, a
/// list of live rows).
pub fn clear_row_flags(gpu: &Gpu, flags: &mut DeviceBuffer<u8>) -> Result<(), CudaError> {
    gpu.stream()
        .memset_zeros(&mut **flags)
        .context("clearing the row flags")
}

/// The 1-based rows whose flag is set.
pub fn categories_from_flags(flags: &[u8]) -> Vec<u32> {
    flags
        .iter()
        .enumerate()
        .filter(|&(_, &f)| f != 0)
        .map(|(row, _)| row as u32 + 1)
        .collect()
}

/// Per-neuron values (a layer's biases, `values[k]` for output neuron `k`) in the order a
/// kernel writes the layer's outputs: `values[order[p]]` at position `p`, where `order[p]`
/// is the neuron at position `p`. `None` unless there is one value per position.
pub fn in_position_order(values: &[f32], order: &[u32]) -> Option<Vec<f32>> {
    (values.len() == order.len()).then(|| order.iter().map(|&k| values[k as usize]).collect())
}

/// [`in_position_order`] of `values`, uploaded, when they are given; an error naming
/// `layer` (e.g. "an XY layer") when there is not one value per output.
pub fn upload_in_position_order(
    gpu: &Gpu,
    values: Option<&[f32]>,
    order: &[u32],
    layer: &str,
) -> Result<Option<DeviceBuffer<f32>>, CudaError> {
    let Some(values) = values else {
        return Ok(None);
    };
    let ordered = in_position_order(values, order).ok_or_else(|| {
        CudaError::InvalidArgument(format!(
            "{} biases for {layer} of {} outputs",
            values.len(),
            order.len()
        ))
    })?;
    gpu.upload_nonempty(&ordered).map(Some)
}

/// The flags of the `loaded` rows of a batch, from a buffer of one flag per row of the
/// prepared capacity (waits): what a method's
/// [`DeviceRun::row_flags`](crate::method::DeviceRun::row_flags) returns.
pub fn download_row_flags(
    gpu: &Gpu,
    row_flags: &DeviceBuffer<u8>,
    loaded: usize,
) -> Result<Vec<u8>, CudaError> {
    let mut flags = gpu.download(&**row_flags)?;
    flags.truncate(loaded);
    Ok(flags)
}

/// The result of a run: categories from the device's row flags, the final activations
/// when `spec.keep_output`, the timed runs, and the wall time since `started` (the
/// caller adds its details).
pub fn finish(
    gpu: &Gpu,
    row_flags: &DeviceBuffer<u8>,
    final_y: &DeviceBuffer<f32>,
    n: usize,
    spec: &RunSpec,
    infer_ms: Vec<f64>,
    started: std::time::Instant,
) -> Result<GpuInference, CudaError> {
    let flags = gpu.download(&**row_flags)?;
    let output = if spec.keep_output {
        Some(final_output(gpu, final_y, n, &flags)?)
    } else {
        None
    };
    Ok(GpuInference {
        categories: categories_from_flags(&flags),
        output,
        infer_ms,
        total_ms: started.elapsed().as_secs_f64() * 1e3,
        ..GpuInference::default()
    })
}

/// Downloads `y` and zeroes the rows that are not categories (their memory may hold
/// values of earlier layers in methods that skip dead rows).
pub fn final_output(
    gpu: &Gpu,
    y: &DeviceBuffer<f32>,
    n: usize,
    row_flags: &[u8],
) -> Result<Vec<f32>, CudaError> {
    let mut values = gpu.download(&**y)?;
    values.truncate(row_flags.len() * n);
    for (row, &flag) in row_flags.iter().enumerate() {
        if flag == 0 {
            values[row * n..(row + 1) * n].fill(0.0);
        }
    }
    Ok(values)
}

/// Two values used in turn: one is read (the current), the other written (the next).
#[derive(Debug)]
pub struct PingPong<T> {
    pair: [T; 2],
    current: usize,
}

impl<T> PingPong<T> {
    /// `first` is current.
    pub fn new(first: T, second: T) -> Self {
        Self {
            pair: [first, second],
            current: 0,
        }
    }

    /// The current value.
    pub fn current(&self) -> &T {
        &self.pair[self.current]
    }

    /// The current value, mutably.
    pub fn current_mut(&mut self) -> &mut T {
        &mut self.pair[self.current]
    }

    /// The current value to read and the next one to write.
    pub fn split(&mut self) -> (&T, &mut T) {
        let [first, second] = &mut self.pair;
        if self.current == 0 {
            (first, second)
        } else {
            (second, first)
        }
    }

    /// Makes the next value current.
    pub fn swap(&mut self) {
        self.current = 1 - self.current;
    }

    /// Makes the first value current again.
    pub fn reset(&mut self) {
        self.current = 0;
    }

    /// The current value and the next one, by value.
    pub fn into_parts(self) -> (T, T) {
        let [first, second] = self.pair;
        if self.current == 0 {
            (first, second)
        } else {
            (second, first)
        }
    }
}

/// A list of rows on the device and its length, also on the device (so kernels can
/// shrink it without the host waiting).
#[derive(Debug)]
pub struct RowList {
    /// The rows, `capacity` entries of which the first `*count` are used.
    pub rows: DeviceBuffer<u32>,
    /// How many rows are listed.
    pub count: DeviceBuffer<u32>,
}

impl RowList {
    /// Device bytes per listed row (for memory models).
    pub const BYTES_PER_ROW: usize = 4;
    /// Device bytes besides the rows: the count.
    pub const FIXED_BYTES: usize = 4;

    /// Device bytes of a list of up to `capacity` rows, as [`Self::new`] allocates it.
    pub fn bytes(capacity: usize) -> usize {
        Self::BYTES_PER_ROW * capacity.max(1) + Self::FIXED_BYTES
    }

    /// An empty list of up to `capacity` rows.
    pub fn new(gpu: &Gpu, capacity: usize) -> Result<Self, CudaError> {
        Ok(Self {
            rows: gpu.alloc_zeros(capacity.max(1))?,
            count: gpu.alloc_zeros(1)?,
        })
    }

    /// Zeroes `row_flags` and sets the flag of every listed row, with `mark` =
    /// [`MARK_ROWS`]; `capacity` bounds the list's length. The end of a timed run whose
    /// last layer leaves the non-empty rows in a list: the flags are then the categories.
    pub fn mark_flags(
        &self,
        gpu: &Gpu,
        mark: &Kernel,
        row_flags: &mut DeviceBuffer<u8>,
        capacity: usize,
    ) -> Result<(), CudaError> {
        clear_row_flags(gpu, row_flags)?;
        let mut launch = gpu.stream().launch_builder(mark);
        launch
            .arg(&*self.rows)
            .arg(&*self.count)
            .arg(&mut **row_flags);
        let config = mark.config_for(capacity)?;
        unsafe { launch.launch(config) }.context("launching spdnn_mark_rows")?;
        Ok(())
    }

    /// Writes into `to` the listed rows whose `row_flags[row]` is set (order not kept),
    /// with `compact` = [`COMPACT_FLAGGED_ROWS`]; `capacity` bounds the list's length.
    pub fn compact_into(
        &self,
        gpu: &Gpu,
        compact: &Kernel,
        row_flags: &DeviceBuffer<u8>,
        to: &mut RowList,
        capacity: usize,
    ) -> Result<(), CudaError> {
        let stream = gpu.stream();
        stream
            .memset_zeros(&mut *to.count)
            .context("clearing the row count")?;
        let mut launch = stream.launch_builder(compact);
        launch
            .arg(&*self.rows)
            .arg(&*self.count)
            .arg(&**row_flags)
            .arg(&mut *to.rows)
            .arg(&mut *to.count);
        let config = compact.config_for(capacity)?;
        unsafe { launch.launch(config) }.context("launching spdnn_compact_flagged_rows")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_follow_the_position_order() {
        let values = [-1.0f32, -2.0, -3.0];
        assert_eq!(
            in_position_order(&values, &[2, 0, 1]),
            Some(vec![-3.0, -1.0, -2.0])
        );
        assert_eq!(in_position_order(&values, &[0, 1]), None);
        assert_eq!(in_position_order(&values[..2], &[2, 0, 1]), None);
    }

    #[test]
    fn ping_pong_alternates() {
        let mut pair = PingPong::new('a', 'b');
        assert_eq!(pair.split(), (&'a', &mut 'b'));
        pair.swap();
        assert_eq!(*pair.current(), 'b');
        assert_eq!(pair.split(), (&'b', &mut 'a'));
        pair.reset();
        assert_eq!(*pair.current(), 'a');
        assert_eq!(pair.into_parts(), ('a', 'b'));
        let mut pair = PingPong::new('a', 'b');
        pair.swap();
        assert_eq!(pair.into_parts(), ('b', 'a'));
    }

    #[test]
    fn categories_are_one_based() {
        assert_eq!(categories_from_flags(&[0, 1, 0, 1, 1]), vec![2, 4, 5]);
        assert!(categories_from_flags(&[]).is_empty());
    }

    #[test]
    fn problems_are_checked() {
        let w = Csr::from_triplets(3, 3, &[(0, 1, 1.0)]).unwrap();
        let x = Csr::from_triplets(2, 3, &[(1, 2, 1.0)]).unwrap();
        assert_eq!(
            check_problem(std::slice::from_ref(&w), &x, -0.3, 32.0).unwrap(),
            3
        );
        assert!(check_problem(&[], &x, -0.3, 32.0).is_err());
        assert!(check_problem(std::slice::from_ref(&w), &x, 0.3, 32.0).is_err());
        assert!(check_problem(std::slice::from_ref(&w), &x, -0.3, f32::NAN).is_err());
        let wide = Csr::from_triplets(2, 4, &[]).unwrap();
        assert!(check_problem(&[w.clone(), wide], &x, -0.3, 32.0).is_err());
        // Chained widths 3 → 2 → 4 are a valid problem, but not a square chain.
        let narrow = Csr::from_triplets(3, 2, &[(0, 1, 1.0)]).unwrap();
        let widen = Csr::from_triplets(2, 4, &[(1, 3, 1.0)]).unwrap();
        let chain = [narrow, widen];
        assert_eq!(check_problem(&chain, &x, -0.3, 32.0).unwrap(), 3);
        assert_eq!(check_widths(&chain, -0.3, 32.0).unwrap(), vec![3, 2, 4]);
        let message = check_chain(&chain, -0.3, 32.0).unwrap_err().to_string();
        assert!(message.contains("3 → 2 → 4"), "{message}");
        assert!(check_chain(std::slice::from_ref(&w), -0.3, 32.0).is_ok());
    }
}
