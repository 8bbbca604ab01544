//! Property tests of the plan: whatever the model, rows, budget and timing, a plan never
//! exceeds the budget (its predicted bytes, and the bytes of the buffers a streaming run
//! allocates), runs every row, and cannot take a larger batch with the same weights.

use proptest::prelude::*;
use spdnn_adaptive::memory::{MemoryModel, WeightPlacement};
use spdnn_adaptive::plan::{Bound, Plan, Problem, Timing};

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

proptest! {
    #[test]
    fn plans_never_exceed_the_budget(
        model in model(),
        rows in 1usize..200_000,
        max_row_nnz in 0usize..500,
        budget in 1usize..(1usize << 34),
        max_batch in prop::option::of(1usize..100_000),
        timing in timing(),
    ) {
        let problem = Problem { model: &model, rows, max_row_nnz, budget, max_batch, timing };
        match Plan::choose(&problem) {
            Ok(plan) => {
                prop_assert!(plan.predicted_bytes <= budget, "{plan:?}");
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
                // Maximal: one more row does not fit with the same weights (unless every
                // row, or the batch asked for, is already in).
                let cap = max_batch.unwrap_or(rows).min(rows);
                if plan.batch < cap && matches!(plan.bound, Bound::MemoryResident | Bound::MemoryStreamed) {
                    prop_assert!(problem.bytes(plan.batch + 1, &plan.weights) > budget);
                }
                // Halving keeps within the budget.
                if let Some(half) = plan.halved(&problem) {
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
                prop_assert!(problem.bytes(1, &smallest) > budget);
            }
        }
    }
}
