//! Property tests of the plan: whatever the model, rows, budget and timing, a plan never
//! exceeds the budget (its predicted bytes, and the bytes of the buffers a streaming run
//! allocates), runs every row, and cannot take a larger batch with the same weights.

use proptest::prelude::*;
use spdnn_adaptive::memory::{MemoryModel, WeightPlacement};
use spdnn_adaptive::plan::{Bound, Plan, Problem, Timing, Uploads};

fn model() -> impl Strategy<Value = MemoryModel> {
    (
        1usize..20_000,
        prop::collection::vec(1usize..5_000_000, 1..40),
        0usize..10_000_000,
        any::<bool>(),
    )
        .prop_map(|(per_row, layers, fixed, streaming)| MemoryModel {
            per_row,
            layers,
            fixed,
            streaming,
            exact: true,
            binary_input: None,
        })
}

fn timing() -> impl Strategy<Value = Option<Timing>> {
    prop::option::of((1usize..5000, 0.0f64..50.0, 0.001f64..5.0).prop_map(
        |(probe_rows, layer_ms, transfer_ms_per_mib)| Timing {
            probe_rows,
            layer_ms,
            transfer_ms_per_mib,
        },
    ))
}

/// The offsets of `rows` rows, each with `nnz` nonzeros (`uniform`) or a pseudo-random
/// count of at most `nnz`.
fn offsets(rows: usize, nnz: usize, uniform: bool, seed: u64) -> Vec<u32> {
    let mut state = seed | 1;
    let mut total = 0u32;
    std::iter::once(0)
        .chain((0..rows).map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            total += if uniform || nnz == 0 {
                nnz as u32
            } else {
                (state % (nnz as u64 + 1)) as u32
            };
            total
        }))
        .collect()
}

proptest! {
    #[test]
    fn plans_never_exceed_the_budget(
        model in model(),
        rows in 1usize..200_000,
        max_row_nnz in 0usize..500,
        uniform in any::<bool>(),
        seed in any::<u64>(),
        budget in 1usize..(1usize << 34),
        max_batch in prop::option::of(1usize..100_000),
        timing in timing(),
    ) {
        let offsets = offsets(rows, max_row_nnz, uniform, seed);
        let uploads = Uploads {
            offsets: &offsets,
            binary: false,
            bytes: |rows, nnz, _| spdnn_adaptive::memory::scatter_upload_bytes(rows, nnz),
        };
        let problem = Problem { model: &model, uploads, budget, max_batch, timing };
        match Plan::choose(&problem) {
            Ok(plan) => {
                prop_assert!(plan.predicted_bytes <= budget, "{plan:?}");
                prop_assert_eq!(plan.predicted_bytes, problem.bytes(plan.batch, &plan.weights));
                prop_assert!(plan.batch >= 1 && plan.batch <= rows);
                prop_assert!(plan.batch <= max_batch.unwrap_or(rows).max(1));
                prop_assert_eq!(plan.batches, rows.div_ceil(plan.batch));
                // The buffers a streaming run allocates are what was predicted.
                if let WeightPlacement::Streamed(s) = plan.weights {
                    prop_assert!(model.streaming);
                    let capacity = s.capacity.unwrap();
                    prop_assert!(capacity >= model.window(s.layers));
                    prop_assert!(capacity <= s.layers * model.largest_layer());
                    prop_assert!(s.layers >= 1 && s.layers <= model.layers.len());
                }
                // Fewest batches: a batch that makes one batch fewer does not fit with the
                // same weights (unless every row, or the batch asked for, is already in).
                // Certain where the densest upload grows with the batch (uniform rows).
                let cap = max_batch.unwrap_or(rows).min(rows);
                if uniform
                    && plan.batches > 1
                    && plan.batch < cap
                    && matches!(plan.bound, Bound::MemoryResident | Bound::MemoryStreamed)
                {
                    let fewer = rows.div_ceil(plan.batches - 1);
                    prop_assert!(fewer > cap || problem.bytes(fewer, &plan.weights) > budget);
                }
                // Halving keeps within the budget.
                if let Some(half) = plan.halved(&problem) && uniform {
                    prop_assert!(half.predicted_bytes <= plan.predicted_bytes);
                }
            }
            Err(e) => {
                // Not one row fits even the smallest placement.
                prop_assert!(e.needed > budget);
                let smallest = if model.streaming && model.layers.len() > 1 {
                    WeightPlacement::Streamed(Default::default())
                } else {
                    WeightPlacement::Resident
                };
                prop_assert!(model.bytes(1, &smallest) + uploads.one_row(&model) > budget);
            }
        }
    }
}
