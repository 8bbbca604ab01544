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
//! Here `2·M_B = N_B · per_row` (a method's per-row bytes already count both activation
//! buffers, its lists and flags, and the upload of the batch's input rows), `M_O` the
//! method's fixed bytes, `M_L` its largest layer, `M_G` the budget.
//!
//! **Closed form.** Two variables; the objective grows with `N_B` only; (2a) bounds `N_B`
//! from above by a quantity that falls as `N_L` grows, and (2b) bounds `N_B` from below.
//! So the optimum takes the smallest `N_L`, 1, and `N_B = ⌊(M_G − M_O − 2·M_L) / per_row⌋`
//! (integral: the floor of the only binding bound is feasible and optimal). When that is
//! at least the rows to run, `N_B` is the rows and, as the paper says, `N_L` is the
//! largest value (2a) and (2b) both allow. When (2b) fails even at `N_L = 1` (a layer's
//! copy takes longer than its computation: the run is transfer-bound) the program is
//! infeasible as written; the weights must still stream, so (2b) is dropped and `N_L = 1`.
//! No solver is needed.
//!
//! Beside the paper's program, which always streams, the plan also considers keeping every
//! layer resident (no transfers at all) and takes the cheaper of the two by a small cost
//! estimate ([`Plan::choose`]); a method that cannot stream is planned resident only.

use spdnn_cuda::memory::{MemoryModel, Streaming, WeightPlacement};

/// Host-side overhead charged per layer and input batch when comparing plans, ms (launches
/// and the per-layer bookkeeping every method has; only used to rank plans).
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

/// The inputs of a plan.
#[derive(Debug, Clone)]
pub struct Problem<'a> {
    /// The method's memory model.
    pub model: &'a MemoryModel,
    /// Rows to run.
    pub rows: usize,
    /// The most nonzeros of an input row (bounds the transient upload of a batch).
    pub max_row_nnz: usize,
    /// `M_G`: bytes the run may hold.
    pub budget: usize,
    /// The largest batch asked for (a method's own option, `--batch`); `None`: all rows.
    pub max_batch: Option<usize>,
    /// The probe's measurements (needed only to stream with tuning).
    pub timing: Option<Timing>,
}

impl Problem<'_> {
    /// Bytes per row with the input upload bound: `per_row + 4 + 8 · max_row_nnz`.
    pub fn per_row(&self) -> usize {
        self.model
            .per_row
            .saturating_add(4)
            .saturating_add(self.max_row_nnz.saturating_mul(8))
    }

    /// `M_O`: fixed bytes plus the upload's one extra offset.
    pub fn fixed(&self) -> usize {
        self.model.fixed.saturating_add(4)
    }

    /// Bytes of a batch of `rows` with `weights` (the upload at its bound).
    pub fn bytes(&self, rows: usize, weights: &WeightPlacement) -> usize {
        let model = MemoryModel {
            per_row: self.per_row(),
            fixed: self.fixed(),
            ..self.model.clone()
        };
        model.bytes(rows, weights)
    }

    fn rows_cap(&self) -> usize {
        self.max_batch
            .unwrap_or(self.rows)
            .clamp(1, self.rows.max(1))
    }

    /// The largest batch (at most the rows) whose bytes with weights of `weight_bytes`
    /// fit the budget; 0 when not even one row fits.
    fn batch_for(&self, weight_bytes: usize) -> usize {
        let room = self
            .budget
            .saturating_sub(self.fixed())
            .saturating_sub(weight_bytes);
        (room / self.per_row().max(1)).min(self.rows_cap())
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
    /// stream), by `batches · L · (LAYER_OVERHEAD_MS + exposed copy time)`.
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
                resident,
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
                        .saturating_add(problem.per_row()),
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
                .saturating_sub(batch.saturating_mul(problem.per_row()));
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
        Plan {
            budget: problem.budget,
            rows: problem.rows,
            batch,
            batches: problem.rows.div_ceil(batch),
            predicted_bytes: problem.bytes(batch, &weights),
            weights,
            bound,
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
        format!(
            "batch {} of {} rows ({} batches), {weights}, predicted {} of {} budget ({:?})",
            self.batch,
            self.rows,
            self.batches,
            bytes_text(self.predicted_bytes),
            bytes_text(self.budget),
            self.bound
        )
    }
}

/// The ranking cost of a plan, ms.
fn cost(problem: &Problem<'_>, plan: &Plan) -> f64 {
    let layers = problem.model.layers.len() as f64;
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
    plan.batches as f64 * layers * (LAYER_OVERHEAD_MS + exposed)
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

    const MIB: usize = 1 << 20;

    fn model(layers: usize, layer_bytes: usize, streaming: bool) -> MemoryModel {
        MemoryModel {
            per_row: 1000,
            layers: vec![layer_bytes; layers],
            fixed: 100,
            streaming,
            exact: true,
        }
    }

    fn problem(model: &MemoryModel, rows: usize, budget: usize) -> Problem<'_> {
        Problem {
            model,
            rows,
            max_row_nnz: 0,
            budget,
            max_batch: None,
            timing: None,
        }
    }

    #[test]
    fn everything_fits_resident_in_one_batch() {
        let m = model(10, MIB, true);
        let p = problem(&m, 1000, 100 * MIB);
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
        let p = problem(&m, 1_000_000, 20 * MIB);
        let plan = Plan::choose(&p).unwrap();
        assert_eq!(plan.layers_per_batch(), 1);
        assert_eq!(plan.bound, Bound::MemoryStreamed);
        assert_eq!(plan.batch, (20 * MIB - 104 - 2 * MIB) / 1004);
        assert!(plan.predicted_bytes <= 20 * MIB);
        assert!(p.bytes(plan.batch + 1, &plan.weights) > 20 * MIB);
    }

    #[test]
    fn with_all_rows_fitting_n_l_is_the_largest_both_allow() {
        let m = model(100, MIB, true);
        let mut p = problem(&m, 1000, 30 * MIB);
        // No timing: the memory alone, (30 MiB − rows) / 2 MiB.
        let plan = Plan::choose(&p).unwrap();
        let room = 30 * MIB - 104 - 1004 * 1000;
        assert_eq!(plan.layers_per_batch(), room / (2 * MIB));
        assert_eq!(plan.bound, Bound::Transfer);
        // A layer of 1000 rows takes 5 ms, a layer's copy 1 ms: N_L = 5.
        p.timing = Some(Timing {
            probe_rows: 100,
            layer_ms: 0.5,
            transfer_ms_per_mib: 1.0,
        });
        let plan = Plan::choose(&p).unwrap();
        assert_eq!(plan.layers_per_batch(), 5);
        assert_eq!(plan.bound, Bound::Overlap);
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
    fn resident_only_methods_shrink_the_batch_or_say_what_they_need() {
        let m = model(10, MIB, false);
        let p = problem(&m, 100_000, 20 * MIB);
        let plan = Plan::choose(&p).unwrap();
        assert_eq!(plan.weights, WeightPlacement::Resident);
        assert_eq!(plan.bound, Bound::MemoryResident);
        assert_eq!(plan.batch, (20 * MIB - 104 - 10 * MIB) / 1004);
        let small = problem(&m, 100, 10 * MIB);
        let error = Plan::choose(&small).unwrap_err();
        assert_eq!(error.needed, 104 + 10 * MIB + 1004);
        assert!(
            error.to_string().contains("every layer resident"),
            "{error}"
        );
        // A streaming method needs only two buffers of its largest layer.
        let streams = model(10, MIB, true);
        let error = Plan::choose(&problem(&streams, 100, MIB)).unwrap_err();
        assert_eq!(error.needed, 104 + 2 * MIB + 1004);
    }

    #[test]
    fn halving_reaches_one_row() {
        let m = model(10, MIB, false);
        let p = problem(&m, 100, 100 * MIB);
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
