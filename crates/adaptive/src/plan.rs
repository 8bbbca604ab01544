//! The plan of a run under a memory budget: the linear program (2) of T4-adaptive (seed 001
//! §III-A), solved in closed form.
//!
//! ```text
//! maximise   M_B
//! subject to 2·M_B + 2·N_L·M_L + M_O ≤ M_G          (2a)  memory
//!            N_L·T_L ≤ T_0·N_B / N_0               (2b)  a batch's copy hides behind a layer
//!            N_L ≥ 1                               (2c)
//! ```
//!
//! Here `2·M_B = N_B · per_row + U(N_B)` (a method's per-row bytes count both activation
//! buffers, its lists and flags; `U(N_B)` is the upload of the densest batch of `N_B` input
//! rows, as the method's `load` uploads it), `M_O` the method's fixed bytes, `M_L` its
//! largest layer, `M_G` the budget.
//!
//! **Closed form.** Two variables; the objective grows with `N_B` only; (2a) bounds `N_B`
//! from above by a quantity that falls as `N_L` grows, and (2b) bounds `N_B` from below.
//! So the optimum takes the smallest `N_L`, 1, and the largest `N_B` with
//! `N_B · per_row + U(N_B) ≤ M_G − M_O − 2·M_L`, found by bisection since `U` is the
//! input's, not linear. When that is at least the rows to run, `N_B` is the rows and, as the
//! paper says, `N_L` is the largest value (2a) and (2b) both allow. When (2b) fails even at
//! `N_L = 1` (a layer's copy takes longer than its computation: the run is transfer-bound)
//! the program is infeasible as written; the weights must still stream, so (2b) is dropped
//! and `N_L = 1`. No solver is needed. A batch bound by the budget is then evened out: the
//! same number of batches, `⌈rows / batches⌉` rows each, when that fits too.
//!
//! Beside the paper's program, which always streams, the plan also considers keeping every
//! layer resident (no transfers at all) and takes the cheaper of the two by a small cost
//! estimate ([`Plan::choose`]); a method that cannot stream is planned resident only.

use spdnn_cuda::memory::{MemoryModel, Streaming, WeightPlacement};

/// Host-side overhead charged per layer and input batch when comparing plans, ms (launches
/// and the per-layer bookkeeping every method has; only used to rank plans). With a probe,
/// its layer time `T_0` is charged beside it ([`Plan::choose`]).
pub const LAYER_OVERHEAD_MS: f64 = 0.01;

/// What the probe measured on the device at the start of a run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Timing {
    /// `N_0`: rows of the probe batch.
    pub probe_rows: usize,
    /// `T_0`: time of one layer over the probe batch, ms.
    pub layer_ms: f64,
    /// Time to copy one MiB of weights from pinned host memory, ms (`T_L` = this × `M_L`).
    pub transfer_ms_per_mib: f64,
}

impl Timing {
    /// `T_0 · N_B / N_0`: a layer's time at a batch of `rows`, ms.
    pub fn layer_ms_at(&self, rows: usize) -> f64 {
        self.layer_ms * rows as f64 / self.probe_rows.max(1) as f64
    }

    /// The copy time of `bytes`, ms.
    pub fn transfer_ms(&self, bytes: usize) -> f64 {
        bytes as f64 / (1u64 << 20) as f64 * self.transfer_ms_per_mib
    }
}

/// The input rows of a run, as the device bytes their uploads take.
#[derive(Debug, Clone, Copy)]
pub struct Uploads<'a> {
    /// The input's row offsets (rows + 1 of them).
    pub offsets: &'a [u32],
    /// Whether every input value is 1.
    pub binary: bool,
    /// What the method's `load` uploads for a batch of (rows, nonzeros, binary)
    /// (`KernelMethod::upload_bytes`).
    pub bytes: fn(usize, usize, bool) -> usize,
}

impl Uploads<'_> {
    /// Rows of the input.
    pub fn rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The most bytes one upload takes in a run of batches of `batch` rows under `model`
    /// (the densest batch; 0 without rows).
    pub fn densest(&self, batch: usize, model: &MemoryModel) -> usize {
        let rows = self.rows();
        let batch = batch.clamp(1, rows.max(1));
        (0..rows)
            .step_by(batch)
            .map(|start| {
                let end = (start + batch).min(rows);
                let nnz = (self.offsets[end] - self.offsets[start]) as usize;
                self.batch(end - start, nnz, model)
            })
            .max()
            .unwrap_or(0)
    }

    /// The most bytes the upload of one row takes under `model`.
    pub fn one_row(&self, model: &MemoryModel) -> usize {
        self.offsets
            .windows(2)
            .map(|w| self.batch(1, (w[1] - w[0]) as usize, model))
            .max()
            .unwrap_or(0)
    }

    /// The bytes `load` takes for a batch of `rows` rows and `nnz` nonzeros: as the method
    /// lists them, or a binary batch's fixed-width form where `model` has one
    /// ([`MemoryModel::binary_input`]) and it is smaller.
    fn batch(&self, rows: usize, nnz: usize, model: &MemoryModel) -> usize {
        let listed = (self.bytes)(rows, nnz, self.binary);
        match model.binary_input {
            Some(form) if self.binary => listed.min(form.at(rows)),
            _ => listed,
        }
    }
}

/// The inputs of a plan.
#[derive(Debug, Clone)]
pub struct Problem<'a> {
    /// The method's memory model.
    pub model: &'a MemoryModel,
    /// The rows to run and what their uploads take.
    pub uploads: Uploads<'a>,
    /// `M_G`: bytes the run may hold.
    pub budget: usize,
    /// The largest batch asked for (a method's own option, `--batch`); `None`: all rows.
    pub max_batch: Option<usize>,
    /// The probe's measurements (needed only to stream with tuning).
    pub timing: Option<Timing>,
}

impl Problem<'_> {
    /// Rows to run.
    pub fn rows(&self) -> usize {
        self.uploads.rows()
    }

    /// `M_O`: the model's fixed bytes.
    pub fn fixed(&self) -> usize {
        self.model.fixed
    }

    /// Bytes of batches of `rows` with `weights`: the model and the densest batch's upload.
    pub fn bytes(&self, rows: usize, weights: &WeightPlacement) -> usize {
        self.model
            .bytes(rows, weights)
            .saturating_add(self.uploads.densest(rows, self.model))
    }

    /// Whether batches of `rows` fit the budget beside `weight_bytes` of weights.
    fn fits(&self, rows: usize, weight_bytes: usize) -> bool {
        self.fixed()
            .saturating_add(weight_bytes)
            .saturating_add(rows.saturating_mul(self.model.per_row))
            .saturating_add(self.uploads.densest(rows, self.model))
            <= self.budget
    }

    fn rows_cap(&self) -> usize {
        self.max_batch
            .unwrap_or(self.rows())
            .clamp(1, self.rows().max(1))
    }

    /// A batch (at most the rows, or the batch asked for) whose bytes with weights of
    /// `weight_bytes` fit the budget, found by bisection (a batch's upload is that of the
    /// densest batch of its partition, which need not grow with the batch, so the result
    /// fits and the next batch up does not, but a larger one might); 0 when not even one row
    /// fits.
    fn batch_for(&self, weight_bytes: usize) -> usize {
        let cap = self.rows_cap();
        if self.fits(cap, weight_bytes) {
            return cap;
        }
        let (mut fits, mut fails) = (0, cap);
        while fails - fits > 1 {
            let mid = fits + (fails - fits) / 2;
            if self.fits(mid, weight_bytes) {
                fits = mid;
            } else {
                fails = mid;
            }
        }
        fits
    }

    /// The same number of batches as batches of `batch` rows make, each as even as it can
    /// be (`⌈rows / batches⌉` rows), when that fits as well: the last batch is not left
    /// short, and the peak is lower.
    fn evened(&self, batch: usize, weight_bytes: usize) -> usize {
        let rows = self.rows().max(1);
        let even = rows.div_ceil(rows.div_ceil(batch.max(1)));
        if even < batch && self.fits(even, weight_bytes) {
            even
        } else {
            batch
        }
    }
}

/// Which constraint set the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// Every row in one batch (or the batch asked for) with every layer resident.
    AllFits,
    /// The budget bounds the batch, weights resident.
    MemoryResident,
    /// The budget bounds the batch, weights streamed `N_L = 1` (2a).
    MemoryStreamed,
    /// Every row fits; `N_L` is the largest (2a) and (2b) allow.
    Overlap,
    /// Every row fits; `N_L` is the largest (2a) allows (no timing, or (2b) infeasible).
    Transfer,
}

/// The plan of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Plan {
    /// `M_G`, bytes.
    pub budget: usize,
    /// Rows to run.
    pub rows: usize,
    /// `N_B`: rows per batch.
    pub batch: usize,
    /// Batches of rows.
    pub batches: usize,
    /// Resident or streamed in batches of `N_L` layers.
    pub weights: WeightPlacement,
    /// Predicted bytes held at the peak (the upload at its bound).
    pub predicted_bytes: usize,
    /// What bound the plan.
    pub bound: Bound,
    /// Streamed weights with a measured copy rate: the least time a pass can take, ms, every
    /// batch of rows copying every layer once at that rate (`batches · Σ M_l · T_L/MiB`).
    pub transfer_floor_ms: Option<f64>,
}

/// Why no plan fits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "one row needs {needed} bytes of device memory ({weights}), more than the budget of \
     {budget} bytes"
)]
pub struct DoesNotFit {
    /// Bytes one row needs with the weights placed as small as this method can.
    pub needed: usize,
    /// The budget.
    pub budget: usize,
    /// How the weights would be placed.
    pub weights: String,
}

impl Plan {
    /// The plan for `problem`: resident when everything fits; otherwise the cheaper of
    /// resident weights with a smaller batch and streamed weights (when the method can
    /// stream), by `batches · L · (LAYER_OVERHEAD_MS + T_0 + exposed copy time)`: every
    /// further batch pays each layer's launches and its longest block at least once, which
    /// the probe's layer over a small batch (`T_0`, at most 1024 rows) stands for.
    pub fn choose(problem: &Problem<'_>) -> Result<Plan, DoesNotFit> {
        let model = problem.model;
        let resident = problem.batch_for(model.weight_bytes());
        let cap = problem.rows_cap();
        if resident >= cap {
            return Ok(Self::make(
                problem,
                cap,
                WeightPlacement::Resident,
                Bound::AllFits,
            ));
        }
        let streamed = if model.streaming && model.layers.len() > 1 {
            Self::streamed(problem)
        } else {
            None
        };
        let resident_plan = (resident > 0).then(|| {
            Self::make(
                problem,
                problem.evened(resident, model.weight_bytes()),
                WeightPlacement::Resident,
                Bound::MemoryResident,
            )
        });
        match (resident_plan, streamed) {
            (Some(r), Some(s)) => Ok(if cost(problem, &s) < cost(problem, &r) {
                s
            } else {
                r
            }),
            (Some(r), None) => Ok(r),
            (None, Some(s)) => Ok(s),
            (None, None) => {
                let (weights, placement) = if model.streaming && model.layers.len() > 1 {
                    (
                        2 * model.largest_layer(),
                        "two buffers of its largest layer",
                    )
                } else {
                    (model.weight_bytes(), "every layer resident")
                };
                Err(DoesNotFit {
                    needed: problem
                        .fixed()
                        .saturating_add(weights)
                        .saturating_add(model.per_row)
                        .saturating_add(problem.uploads.one_row(problem.model)),
                    budget: problem.budget,
                    weights: format!("{placement}: {weights} bytes"),
                })
            }
        }
    }

    /// The closed form of (2) for a streaming method (see the module docs); `None` when
    /// not one row fits beside two buffers of the largest layer.
    fn streamed(problem: &Problem<'_>) -> Option<Plan> {
        let model = problem.model;
        let m_l = model.largest_layer();
        let batch = problem.batch_for(2 * m_l);
        if batch == 0 {
            return None;
        }
        let layers = model.layers.len();
        let rate = problem.timing.map(|t| t.transfer_ms_per_mib);
        let (n_l, bound) = if batch >= problem.rows_cap() {
            // (2a): the room left by the rows, in pairs of buffers of N_L layers.
            let room = problem
                .budget
                .saturating_sub(problem.fixed())
                .saturating_sub(batch.saturating_mul(model.per_row))
                .saturating_sub(problem.uploads.densest(batch, problem.model));
            let memory = (1..=layers)
                .take_while(|&n| 2 * model.window(n) <= room)
                .last()
                .unwrap_or(1);
            // (2b): the largest N_L whose copy fits in a layer's time.
            match problem.timing {
                Some(t) if t.transfer_ms(m_l) > 0.0 => {
                    let overlap = (t.layer_ms_at(batch) / t.transfer_ms(m_l)).floor();
                    if overlap >= 1.0 {
                        (memory.min(overlap as usize), Bound::Overlap)
                    } else {
                        (1, Bound::Transfer)
                    }
                }
                _ => (memory, Bound::Transfer),
            }
        } else {
            (1, Bound::MemoryStreamed)
        };
        let batch = match bound {
            Bound::MemoryStreamed => problem.evened(batch, 2 * m_l),
            _ => batch,
        };
        let capacity = model.window(n_l);
        Some(Self::make(
            problem,
            batch,
            WeightPlacement::Streamed(Streaming {
                layers: n_l,
                capacity: Some(capacity),
                transfer_ms_per_mib: rate,
            }),
            bound,
        ))
    }

    fn make(problem: &Problem<'_>, batch: usize, weights: WeightPlacement, bound: Bound) -> Plan {
        let batch = batch.max(1);
        let batches = problem.rows().div_ceil(batch);
        let transfer_floor_ms = match (&weights, problem.timing) {
            (WeightPlacement::Streamed(_), Some(t)) => {
                Some(batches as f64 * t.transfer_ms(problem.model.weight_bytes()))
            }
            _ => None,
        };
        Plan {
            budget: problem.budget,
            rows: problem.rows(),
            batch,
            batches,
            predicted_bytes: problem.bytes(batch, &weights),
            weights,
            bound,
            transfer_floor_ms,
        }
    }

    /// The plan with half the batch (at least one row), weights as they were: the next try
    /// after an allocation was refused. `None` at one row.
    pub fn halved(&self, problem: &Problem<'_>) -> Option<Plan> {
        (self.batch > 1).then(|| Self::make(problem, self.batch / 2, self.weights, self.bound))
    }

    /// `N_L` (0 when resident).
    pub fn layers_per_batch(&self) -> usize {
        match self.weights {
            WeightPlacement::Resident => 0,
            WeightPlacement::Streamed(s) => s.layers,
        }
    }

    /// One line: batch, weights, predicted bytes.
    pub fn describe(&self) -> String {
        let weights = match &self.weights {
            WeightPlacement::Resident => "weights resident".to_string(),
            WeightPlacement::Streamed(s) => format!(
                "weights streamed, N_L = {}{}",
                s.layers,
                if s.transfer_ms_per_mib.is_some() {
                    " (tuned online)"
                } else {
                    ""
                }
            ),
        };
        let floor = self
            .transfer_floor_ms
            .map(|ms| format!(", transfer floor {ms:.1} ms a pass"))
            .unwrap_or_default();
        format!(
            "batch {} of {} rows ({} batches), {weights}{floor}, predicted {} of {} budget ({:?})",
            self.batch,
            self.rows,
            self.batches,
            bytes_text(self.predicted_bytes),
            bytes_text(self.budget),
            self.bound
        )
    }
}

/// The ranking cost of a plan, ms: what its batches pay a layer beyond the work of the
/// rows, which every plan does once ([`Plan::choose`]).
fn cost(problem: &Problem<'_>, plan: &Plan) -> f64 {
    let layers = problem.model.layers.len() as f64;
    let latency = problem.timing.map_or(0.0, |t| t.layer_ms);
    let exposed = match (&plan.weights, problem.timing) {
        (WeightPlacement::Resident, _) => 0.0,
        (WeightPlacement::Streamed(_), Some(t)) => {
            let copy = t.transfer_ms(problem.model.largest_layer());
            (copy - t.layer_ms_at(plan.batch)).max(0.0)
        }
        // Unmeasured: assume the copies are not hidden.
        (WeightPlacement::Streamed(_), None) => {
            problem.model.largest_layer() as f64 / (1u64 << 20) as f64 * 0.1
        }
    };
    plan.batches as f64 * layers * (LAYER_OVERHEAD_MS + latency + exposed)
}

/// Bytes in GiB or MiB, for messages.
pub fn bytes_text(bytes: usize) -> String {
    let b = bytes as f64;
    if bytes >= 1 << 30 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    }
}

/// Parses a size: a number with an optional unit `B`, `K[i]B`, `M[i]B`, `G[i]B`, `T[i]B`
/// (binary multiples either way: `16GiB` = `16GB` = 16·2^30 bytes), e.g. `16GiB`, `512MiB`,
/// `1.5G`, `1000000`.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 16GiB, 512MiB, 1000000)"))?;
    let unit = unit.trim().to_ascii_lowercase();
    let scale: u64 = match unit.trim_end_matches('b').trim_end_matches('i') {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => {
            return Err(format!(
                "'{text}': unknown unit '{unit}' (B, KiB, MiB, GiB, TiB)"
            ));
        }
    };
    let bytes = value * scale as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > usize::MAX as f64 {
        return Err(format!("'{text}' is not a size of at least one byte"));
    }
    Ok(bytes as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spdnn_cuda::memory::RowBytes;

    const MIB: usize = 1 << 20;

    fn model(layers: usize, layer_bytes: usize, streaming: bool) -> MemoryModel {
        MemoryModel {
            per_row: 1000,
            layers: vec![layer_bytes; layers],
            fixed: 100,
            streaming,
            exact: true,
            binary_input: None,
        }
    }

    /// Uploads of 4 bytes a row and 4 more a batch whatever the nonzeros (the rows here have
    /// none): with the model's, 1004 bytes a row and 104 fixed.
    fn four_a_row(rows: usize, _nnz: usize, _binary: bool) -> usize {
        4 * (rows + 1)
    }

    /// The offsets of `rows` rows without nonzeros.
    fn empty_rows(rows: usize) -> Vec<u32> {
        vec![0; rows + 1]
    }

    fn problem<'a>(model: &'a MemoryModel, offsets: &'a [u32], budget: usize) -> Problem<'a> {
        Problem {
            model,
            uploads: Uploads {
                offsets,
                binary: false,
                bytes: four_a_row,
            },
            budget,
            max_batch: None,
            timing: None,
        }
    }

    #[test]
    fn everything_fits_resident_in_one_batch() {
        let m = model(10, MIB, true);
        let rows = empty_rows(1000);
        let p = problem(&m, &rows, 100 * MIB);
        let plan = Plan::choose(&p).unwrap();
        assert_eq!((plan.batch, plan.batches), (1000, 1));
        assert_eq!(plan.weights, WeightPlacement::Resident);
        assert_eq!(plan.bound, Bound::AllFits);
        assert_eq!(plan.predicted_bytes, 104 + 1004 * 1000 + 10 * MIB);
        // A batch asked for caps it.
        let capped = Problem {
            max_batch: Some(300),
            ..p.clone()
        };
        let plan = Plan::choose(&capped).unwrap();
        assert_eq!((plan.batch, plan.batches), (300, 4));
    }

    #[test]
    fn the_budget_bounds_the_batch_with_n_l_one() {
        // Weights 100 MiB never fit 20 MiB: stream with N_L = 1, the batch from (2a).
        let m = model(100, MIB, true);
        let rows = empty_rows(1_000_000);
        let p = problem(&m, &rows, 20 * MIB);
        let plan = Plan::choose(&p).unwrap();
        assert_eq!(plan.layers_per_batch(), 1);
        assert_eq!(plan.bound, Bound::MemoryStreamed);
        // The largest batch, then the same number of batches evened out.
        let largest = (20 * MIB - 104 - 2 * MIB) / 1004;
        let batches = 1_000_000usize.div_ceil(largest);
        assert_eq!(plan.batches, batches);
        assert_eq!(plan.batch, 1_000_000usize.div_ceil(batches));
        assert!(plan.batch < largest);
        assert!(plan.predicted_bytes <= 20 * MIB);
        assert!(p.bytes(largest + 1, &plan.weights) > 20 * MIB);
        assert!(p.bytes(largest, &plan.weights) <= 20 * MIB);
        // Every batch copies every layer: the floor at 0.5 ms a MiB.
        let timed = Problem {
            timing: Some(Timing {
                probe_rows: 100,
                layer_ms: 0.5,
                transfer_ms_per_mib: 0.5,
            }),
            ..p
        };
        let plan = Plan::choose(&timed).unwrap();
        assert_eq!(plan.bound, Bound::MemoryStreamed);
        assert_eq!(plan.transfer_floor_ms, Some(batches as f64 * 50.0));
    }

    #[test]
    fn with_all_rows_fitting_n_l_is_the_largest_both_allow() {
        let m = model(100, MIB, true);
        let rows = empty_rows(1000);
        let mut p = problem(&m, &rows, 30 * MIB);
        // No timing: the memory alone, (30 MiB − rows) / 2 MiB.
        let plan = Plan::choose(&p).unwrap();
        let room = 30 * MIB - 104 - 1004 * 1000;
        assert_eq!(plan.layers_per_batch(), room / (2 * MIB));
        assert_eq!(plan.bound, Bound::Transfer);
        assert_eq!(plan.transfer_floor_ms, None, "no rate measured");
        // A layer of 1000 rows takes 5 ms, a layer's copy 1 ms: N_L = 5.
        p.timing = Some(Timing {
            probe_rows: 100,
            layer_ms: 0.5,
            transfer_ms_per_mib: 1.0,
        });
        let plan = Plan::choose(&p).unwrap();
        assert_eq!(plan.layers_per_batch(), 5);
        assert_eq!(plan.bound, Bound::Overlap);
        // One batch copies the 100 layers of 1 MiB at 1 ms a MiB.
        assert_eq!((plan.batches, plan.transfer_floor_ms), (1, Some(100.0)));
        assert!(
            plan.describe().contains("transfer floor 100.0 ms a pass"),
            "{}",
            plan.describe()
        );
        match plan.weights {
            WeightPlacement::Streamed(s) => {
                assert_eq!(s.capacity, Some(5 * MIB));
                assert_eq!(s.transfer_ms_per_mib, Some(1.0));
            }
            WeightPlacement::Resident => panic!("resident"),
        }
        // Transfer-bound: (2b) infeasible even at 1, relaxed.
        p.timing = Some(Timing {
            probe_rows: 100,
            layer_ms: 0.01,
            transfer_ms_per_mib: 1.0,
        });
        let plan = Plan::choose(&p).unwrap();
        assert_eq!((plan.layers_per_batch(), plan.bound), (1, Bound::Transfer));
    }

    #[test]
    fn a_layer_that_costs_a_batch_time_favours_fewer_batches() {
        // 10 layers of 10 MiB, 200 000 rows of 1004 bytes, 150 MiB: resident weights leave
        // room for 4 batches, streamed ones for 2 (of 100 000 rows). A layer's copy (1 ms)
        // is not hidden behind a layer scaled to a batch (1 ms over the probe's 1 000 000
        // rows: 0.1 ms), 0.9 ms exposed; but each layer of each batch costs at least the
        // probe's 1 ms, so 2 streamed batches (2 · 10 · 1.91 ms) cost less than 4 resident
        // ones (4 · 10 · 1.01 ms).
        let m = model(10, 10 * MIB, true);
        let rows = empty_rows(200_000);
        let mut p = problem(&m, &rows, 150 * MIB);
        p.timing = Some(Timing {
            probe_rows: 1_000_000,
            layer_ms: 1.0,
            transfer_ms_per_mib: 0.1,
        });
        let plan = Plan::choose(&p).unwrap();
        assert!(
            matches!(plan.weights, WeightPlacement::Streamed(_)),
            "{}",
            plan.describe()
        );
        assert_eq!(plan.batches, 2);
        // A layer as fast as the overhead alone: the exposed copies decide, resident.
        p.timing = Some(Timing {
            probe_rows: 1_000_000,
            layer_ms: 0.0,
            transfer_ms_per_mib: 0.1,
        });
        let plan = Plan::choose(&p).unwrap();
        assert_eq!(
            plan.weights,
            WeightPlacement::Resident,
            "{}",
            plan.describe()
        );
        assert_eq!(plan.batches, 4);
    }

    #[test]
    fn resident_only_methods_shrink_the_batch_or_say_what_they_need() {
        let m = model(10, MIB, false);
        let rows = empty_rows(100_000);
        let p = problem(&m, &rows, 20 * MIB);
        let plan = Plan::choose(&p).unwrap();
        assert_eq!(plan.weights, WeightPlacement::Resident);
        assert_eq!(plan.bound, Bound::MemoryResident);
        let largest = (20 * MIB - 104 - 10 * MIB) / 1004;
        assert_eq!(plan.batches, 100_000usize.div_ceil(largest));
        assert_eq!(plan.batch, 100_000usize.div_ceil(plan.batches));
        let hundred = empty_rows(100);
        let small = problem(&m, &hundred, 10 * MIB);
        let error = Plan::choose(&small).unwrap_err();
        assert_eq!(error.needed, 104 + 10 * MIB + 1004);
        assert!(
            error.to_string().contains("every layer resident"),
            "{error}"
        );
        // A streaming method needs only two buffers of its largest layer.
        let streams = model(10, MIB, true);
        let error = Plan::choose(&problem(&streams, &hundred, MIB)).unwrap_err();
        assert_eq!(error.needed, 104 + 2 * MIB + 1004);
    }

    #[test]
    fn halving_reaches_one_row() {
        let m = model(10, MIB, false);
        let rows = empty_rows(100);
        let p = problem(&m, &rows, 100 * MIB);
        let mut plan = Plan::choose(&p).unwrap();
        let mut steps = 0;
        while let Some(next) = plan.halved(&p) {
            assert!(next.batch < plan.batch && next.predicted_bytes <= plan.predicted_bytes);
            plan = next;
            steps += 1;
        }
        assert_eq!((plan.batch, steps), (1, 6));
    }

    #[test]
    fn uploads_are_the_densest_batch_as_the_method_uploads_it() {
        // Rows of 0, 3, 1, 0, 5 nonzeros; the scatter upload (nothing for an empty batch).
        let offsets = [0u32, 0, 3, 4, 4, 9];
        let uploads = Uploads {
            offsets: &offsets,
            binary: true,
            bytes: |rows, nnz, _| spdnn_cuda::memory::scatter_upload_bytes(rows, nnz),
        };
        let m = model(1, 0, false);
        assert_eq!(uploads.rows(), 5);
        // Batches of 2: [0, 3], [1, 0], [5] → the last, shorter but densest: 4·2 + 8·5.
        assert_eq!(uploads.densest(2, &m), 4 * 2 + 8 * 5);
        // Batches of 3: [0, 3, 1], [0, 5] → 4·4 + 8·4 against 4·3 + 8·5.
        assert_eq!(uploads.densest(3, &m), 4 * 3 + 8 * 5);
        assert_eq!(uploads.densest(5, &m), 4 * 6 + 8 * 9);
        assert_eq!(uploads.densest(1, &m), 4 * 2 + 8 * 5);
        assert_eq!(uploads.one_row(&m), 4 * 2 + 8 * 5);
        // A method whose binary uploads hold no values.
        let binary = Uploads {
            bytes: |rows, nnz, binary| 4 * (rows + 1) + 4 * nnz + if binary { 4 } else { 4 * nnz },
            ..uploads
        };
        assert_eq!(binary.densest(5, &m), 4 * 6 + 4 * 9 + 4);
        // A model whose binary batches take a fixed-width form of 10 bytes a row and 2 fixed
        // where smaller: one row of 5 nonzeros lists 8 + 20 + 4 = 32 against 12; batches of 5
        // list 64 against 52; a batch of 2 empty rows lists 16 against 22.
        let bitmap = MemoryModel {
            binary_input: Some(RowBytes {
                per_row: 10,
                fixed: 2,
            }),
            ..m.clone()
        };
        assert_eq!(binary.one_row(&bitmap), 12);
        assert_eq!(binary.densest(5, &bitmap), 52);
        let empty = [0u32; 3];
        let empty_rows = Uploads {
            offsets: &empty,
            ..binary
        };
        assert_eq!(empty_rows.densest(2, &bitmap), 4 * 3 + 4);
        // Not binary: as listed.
        let values = Uploads {
            binary: false,
            ..binary
        };
        assert_eq!(values.densest(5, &bitmap), 4 * 6 + 8 * 9);
        let none = Uploads {
            offsets: &[0],
            ..uploads
        };
        assert_eq!(
            (none.rows(), none.densest(3, &m), none.one_row(&m)),
            (0, 0, 0)
        );
    }

    #[test]
    fn a_batch_bound_by_the_budget_is_the_largest_that_fits_its_densest_upload() {
        // 1000 bytes a row of model; rows alternate 0 and 100 nonzeros.
        let m = model(1, 1000, false);
        let offsets: Vec<u32> = (0..=1000u32).map(|r| r / 2 * 100).collect();
        let p = Problem {
            uploads: Uploads {
                offsets: &offsets,
                binary: false,
                bytes: |rows, nnz, _| spdnn_cuda::memory::scatter_upload_bytes(rows, nnz),
            },
            ..problem(&m, &offsets, 300_000)
        };
        let plan = Plan::choose(&p).unwrap();
        assert_eq!(plan.bound, Bound::MemoryResident);
        assert!(plan.predicted_bytes <= 300_000, "{plan:?}");
        assert_eq!(
            plan.predicted_bytes,
            100 + 1000 + 1000 * plan.batch + p.uploads.densest(plan.batch, &m)
        );
        // Fewest batches: a batch that makes one batch fewer does not fit.
        let fewer = 1000usize.div_ceil(plan.batches - 1);
        assert!(p.bytes(fewer, &WeightPlacement::Resident) > 300_000);
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("16GiB").unwrap(), 16 << 30);
        assert_eq!(parse_size("16GB").unwrap(), 16 << 30);
        assert_eq!(parse_size("512 MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert_eq!(parse_size("2K").unwrap(), 2048);
        for bad in ["", "GiB", "-1GiB", "16 parsecs", "0", "1e99TB", "NaN"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(bytes_text(3 << 29), "1.50 GiB");
        assert_eq!(bytes_text(3 << 19), "1.5 MiB");
    }
}
