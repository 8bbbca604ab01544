//! What a method holds on the device, as the method itself accounts for it, and how its
//! weights may be placed: the vocabulary of the memory budget (`spdnn-adaptive` plans with
//! it; each kernel crate states its own [`MemoryModel`] beside its `prepare`).

use spdnn_formats::{Csr, SparseMatrix};

use crate::chain::LayerChain;

/// The device bytes of a run of a method, linear in the rows of a batch:
///
/// ```text
/// resident weights:   fixed + rows · per_row + Σ layers
/// streamed weights:   fixed + rows · per_row + 2 · (largest window of N_L layers)
/// ```
///
/// The upload of a batch's sparse input rows is the planner's to add: it knows the input,
/// and the method says what its `load` uploads
/// ([`crate::method::KernelMethod::upload_bytes`], or [`MemoryModel::binary_input`] for a
/// binary batch).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MemoryModel {
    /// Bytes per row of a batch: activation buffers, row lists, flags, recorders, and the
    /// largest transient a pass allocates per row.
    pub per_row: usize,
    /// Bytes of each layer's weights on the device, in order.
    pub layers: Vec<usize>,
    /// Bytes that depend on neither rows nor layers (counters, tables, workspaces).
    pub fixed: usize,
    /// Whether the weights can stream from host memory in batches of layers
    /// ([`WeightPlacement::Streamed`]); otherwise every layer stays resident.
    pub streaming: bool,
    /// Whether the model is the method's exact accounting of every buffer its `prepare`,
    /// `load` and `run` allocate (counts that depend on the data, such as the rows still
    /// alive at a layer, taken at their bound: the batch's rows), or an estimate (a planner
    /// then retries with a smaller batch when an allocation is refused).
    pub exact: bool,
    /// A fixed-width form `load` puts a binary batch (every value 1) in whenever it takes
    /// fewer bytes than the listed upload ([`crate::method::KernelMethod::upload_bytes`]),
    /// as prepared for this run (BlockDepend's bitmap); `None`: every batch as listed.
    pub binary_input: Option<RowBytes>,
}

/// Bytes linear in the rows: `fixed + rows · per_row`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RowBytes {
    /// Bytes a row.
    pub per_row: usize,
    /// Bytes whatever the rows.
    pub fixed: usize,
}

impl RowBytes {
    /// [`linear`]'s reading of `bytes`.
    pub fn of(bytes: impl Fn(usize) -> usize) -> Self {
        let (per_row, fixed) = linear(bytes);
        Self { per_row, fixed }
    }

    /// The bytes of `rows` rows (saturating).
    pub fn at(&self, rows: usize) -> usize {
        self.fixed.saturating_add(rows.saturating_mul(self.per_row))
    }
}

impl MemoryModel {
    /// A conservative model for a method that states none: four activation buffers of the
    /// widest rows plus 64 bytes a row, every layer twice its CSR bytes, 64 MiB fixed,
    /// resident, inexact.
    pub fn conservative(chain: &LayerChain<'_>) -> Self {
        let widest = widest(chain);
        Self {
            per_row: 4 * 4 * widest + 64,
            layers: chain.layers.iter().map(|w| 2 * csr_bytes(w)).collect(),
            fixed: 64 << 20,
            streaming: false,
            exact: false,
            binary_input: None,
        }
    }

    /// Σ of the layers' bytes.
    pub fn weight_bytes(&self) -> usize {
        self.layers.iter().fold(0usize, |a, &b| a.saturating_add(b))
    }

    /// The largest layer's bytes (`M_L` of the linear program).
    pub fn largest_layer(&self) -> usize {
        self.layers.iter().copied().max().unwrap_or(0)
    }

    /// The most bytes any `n` consecutive layers take (what one of the two streaming
    /// buffers must hold for batches of `n` layers).
    pub fn window(&self, n: usize) -> usize {
        let n = n.clamp(1, self.layers.len().max(1));
        if self.layers.is_empty() {
            return 0;
        }
        let mut sum: usize = self.layers[..n].iter().sum();
        let mut best = sum;
        for i in n..self.layers.len() {
            sum = sum + self.layers[i] - self.layers[i - n];
            best = best.max(sum);
        }
        best
    }

    /// Device bytes of batches of `rows` rows with the weights placed as `weights`
    /// (saturating).
    pub fn bytes(&self, rows: usize, weights: &WeightPlacement) -> usize {
        let weights = match weights {
            WeightPlacement::Resident => self.weight_bytes(),
            WeightPlacement::Streamed(s) => {
                2usize.saturating_mul(s.capacity.unwrap_or_else(|| self.window(s.layers)))
            }
        };
        self.fixed
            .saturating_add(rows.saturating_mul(self.per_row))
            .saturating_add(weights)
    }
}

/// The widest of the chain's widths `N_0, …, N_L`.
pub fn widest(chain: &LayerChain<'_>) -> usize {
    chain
        .layers
        .iter()
        .map(|w| w.nrows().max(w.ncols()))
        .max()
        .unwrap_or(0)
}

/// Bytes of a CSR matrix as 32-bit offsets, columns and values.
pub fn csr_bytes(w: &Csr) -> usize {
    4 * (w.nrows() + 1) + 8 * w.nnz()
}

/// The most bytes the upload of `batch` consecutive rows of `input` takes
/// ([`crate::rows::scatter_rows`]: offsets, columns and values, each 32-bit), over the
/// batches a run of batches of `batch` rows makes.
pub fn input_bytes(input: &Csr, batch: usize) -> usize {
    let batch = batch.clamp(1, input.nrows().max(1));
    let offsets = input.row_offsets();
    let rows = input.nrows();
    let most = (0..rows)
        .step_by(batch)
        .map(|start| {
            let end = (start + batch).min(rows);
            offsets[end] as usize - offsets[start] as usize
        })
        .max()
        .unwrap_or(0);
    4 * (batch + 1) + 8 * most
}

/// `(per_row, fixed)` of a size that is linear in the rows from one row on
/// (`bytes(rows) = fixed + rows · per_row` for `rows ≥ 1`), read off `bytes` at one and two
/// rows: a method's model then takes its numbers from the functions its allocations use.
pub fn linear(bytes: impl Fn(usize) -> usize) -> (usize, usize) {
    let (one, two) = (bytes(1), bytes(2));
    let per_row = two.saturating_sub(one);
    (per_row, one.saturating_sub(per_row))
}

/// Device bytes [`crate::rows::scatter_rows`] uploads for a batch of `rows` rows with `nnz`
/// nonzeros (32-bit offsets, columns and values; nothing when `nnz` is 0): the default of
/// [`crate::method::KernelMethod::upload_bytes`].
pub fn scatter_upload_bytes(rows: usize, nnz: usize) -> usize {
    if nnz == 0 {
        0
    } else {
        4 * (rows + 1) + 8 * nnz
    }
}

/// Device bytes of [`crate::Gpu::upload_nonempty`] of `len` elements of `T` (one element
/// when `len` is 0).
pub fn nonempty_bytes<T>(len: usize) -> usize {
    len.max(1) * std::mem::size_of::<T>()
}

/// Where a run keeps its weights.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightPlacement {
    /// Every layer on the device for the whole run.
    Resident,
    /// Two device buffers of batches of layers, the next batch copied from pinned host
    /// memory on a second stream while the current one runs.
    Streamed(Streaming),
}

/// How weights stream: batches of `layers` layers through two buffers of `capacity`
/// bytes each, the next batch's copy issued when the last layer of a buffer starts
/// (T4-adaptive, seed 001 §III-A), its size retuned then when `transfer_ms_per_mib` is
/// known.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Streaming {
    /// Layers per batch at the start, `N_L` (at least 1).
    pub layers: usize,
    /// Bytes of each buffer; `None`: the largest window of `layers` layers.
    pub capacity: Option<usize>,
    /// Measured time to copy one MiB of weights from pinned memory, ms (`T_L` per MiB);
    /// `None` keeps `layers` fixed (no online tuning).
    pub transfer_ms_per_mib: Option<f64>,
}

impl Default for Streaming {
    /// One layer a batch, no tuning: BF-2019's double buffering.
    fn default() -> Self {
        Self {
            layers: 1,
            capacity: None,
            transfer_ms_per_mib: None,
        }
    }
}

/// The online rule of the paper: the next batch takes the most layers (at least one) whose
/// copy, at `ms_per_mib`, fits in `expected_ms`, the estimated time of the layer now
/// starting (the last measured layer's time scaled by the ratio of live rows), and whose
/// bytes fit in `capacity`. `next` are the bytes of the layers that follow, in order.
pub fn tuned_batch(next: &[usize], expected_ms: f64, ms_per_mib: f64, capacity: usize) -> usize {
    let mut bytes = 0usize;
    let mut count = 0;
    for &layer in next {
        let total = bytes.saturating_add(layer);
        let ms = total as f64 / (1 << 20) as f64 * ms_per_mib;
        // NaN estimates hide nothing.
        let hidden = ms <= expected_ms;
        if count > 0 && (total > capacity || !hidden) {
            break;
        }
        bytes = total;
        count += 1;
    }
    count.max(1).min(next.len().max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(layers: Vec<usize>) -> MemoryModel {
        MemoryModel {
            per_row: 100,
            layers,
            fixed: 7,
            streaming: true,
            exact: true,
            binary_input: None,
        }
    }

    #[test]
    fn windows_are_the_largest_consecutive_sums() {
        let m = model(vec![5, 1, 9, 2, 2]);
        assert_eq!(m.window(1), 9);
        assert_eq!(m.window(2), 11);
        assert_eq!(m.window(3), 15);
        assert_eq!(m.window(5), 19);
        assert_eq!(m.window(9), 19);
        assert_eq!(m.window(0), 9);
        assert_eq!(model(vec![]).window(3), 0);
        assert_eq!(m.weight_bytes(), 19);
        assert_eq!(m.largest_layer(), 9);
    }

    #[test]
    fn bytes_follow_the_placement() {
        let m = model(vec![5, 1, 9, 2, 2]);
        assert_eq!(m.bytes(3, &WeightPlacement::Resident), 7 + 300 + 19);
        let two = Streaming {
            layers: 2,
            ..Streaming::default()
        };
        assert_eq!(m.bytes(3, &WeightPlacement::Streamed(two)), 7 + 300 + 22);
        let fixed = Streaming {
            capacity: Some(50),
            ..two
        };
        assert_eq!(m.bytes(0, &WeightPlacement::Streamed(fixed)), 7 + 100);
        assert_eq!(m.bytes(usize::MAX, &WeightPlacement::Resident), usize::MAX);
    }

    #[test]
    fn linear_sizes_are_read_off_one_and_two_rows() {
        assert_eq!(linear(|rows| 7 + 3 * rows), (3, 7));
        assert_eq!(linear(|rows| 5 * rows.max(1)), (5, 0));
        assert_eq!(scatter_upload_bytes(3, 0), 0);
        assert_eq!(scatter_upload_bytes(3, 2), 4 * 4 + 8 * 2);
        assert_eq!(nonempty_bytes::<u32>(0), 4);
        assert_eq!(nonempty_bytes::<u64>(3), 24);
    }

    #[test]
    fn input_bytes_take_the_densest_batch() {
        let x = Csr::from_triplets(
            5,
            4,
            &[
                (0, 0, 1.0),
                (1, 1, 1.0),
                (1, 2, 1.0),
                (1, 3, 1.0),
                (4, 0, 1.0),
            ],
        )
        .unwrap();
        assert_eq!(input_bytes(&x, 2), 4 * 3 + 8 * 4);
        assert_eq!(input_bytes(&x, 5), 4 * 6 + 8 * 5);
        assert_eq!(input_bytes(&x, 1), 4 * 2 + 8 * 3);
        assert_eq!(input_bytes(&x, 0), 4 * 2 + 8 * 3);
    }

    #[test]
    fn the_online_rule_takes_what_the_layer_hides() {
        let mib = 1 << 20;
        // 1 ms a MiB, a 3.5 ms layer: three 1 MiB layers.
        assert_eq!(tuned_batch(&[mib; 10], 3.5, 1.0, 100 * mib), 3);
        // The buffer holds two.
        assert_eq!(tuned_batch(&[mib; 10], 3.5, 1.0, 2 * mib), 2);
        // Transfer-bound: still one.
        assert_eq!(tuned_batch(&[mib; 10], 0.1, 1.0, 100 * mib), 1);
        // Fewer layers left than would fit.
        assert_eq!(tuned_batch(&[mib; 2], 100.0, 1.0, 100 * mib), 2);
        // NaN estimates take one.
        assert_eq!(tuned_batch(&[mib; 4], f64::NAN, 1.0, 100 * mib), 1);
        assert_eq!(tuned_batch(&[], 1.0, 1.0, 1), 1);
    }
}
