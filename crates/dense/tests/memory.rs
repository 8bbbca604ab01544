//! The memory model against the planner, without a GPU: a dense chain as wide as the
//! challenge's largest does not fit any GPU, and the plan says so instead of trying.

use spdnn_adaptive::memory::WeightPlacement;
use spdnn_adaptive::plan::{Plan, Problem, Uploads};
use spdnn_cuda::method::{KernelMethod, LayerChain};
use spdnn_dense::{Dense, DenseOptions, WORKSPACE_BYTES};
use spdnn_formats::Csr;

const H100: usize = 80 << 30;

#[test]
fn a_65536_wide_chain_is_refused_and_a_1024_wide_one_fits() {
    let wide = vec![Csr::from_triplets(65536, 65536, &[]).unwrap(); 120];
    let model = Dense::memory(
        &LayerChain::new(&wide, -0.45, 32.0),
        &DenseOptions::default(),
    );
    // 17 GB a layer.
    assert_eq!(model.largest_layer(), 4 * 65536 * 65536);
    assert!(!model.streaming);
    // 60000 rows of 500 nonzeros each.
    let offsets: Vec<u32> = (0..=60000u32).map(|r| 500 * r).collect();
    let problem = Problem {
        model: &model,
        uploads: Uploads {
            offsets: &offsets,
            binary: false,
            bytes: Dense::upload_bytes,
        },
        budget: H100,
        max_batch: None,
        timing: None,
    };
    let refused = Plan::choose(&problem).unwrap_err();
    assert_eq!(
        refused.weights,
        format!(
            "every layer resident: {} bytes",
            120 * 4 * 65536 * 65536usize
        )
    );
    assert!(refused.needed > H100);
    assert!(
        refused.to_string().contains("more than the budget"),
        "{refused}"
    );

    let narrow = vec![Csr::from_triplets(1024, 1024, &[]).unwrap(); 120];
    let model = Dense::memory(
        &LayerChain::new(&narrow, -0.3, 32.0),
        &DenseOptions::default(),
    );
    let plan = Plan::choose(&Problem {
        model: &model,
        ..problem
    })
    .unwrap();
    assert_eq!(
        (plan.batch, plan.weights),
        (60000, WeightPlacement::Resident)
    );
    // 480 MiB of weights, 60000 rows of two 4 KiB buffers and a flag, the workspace.
    assert_eq!(
        model.bytes(60000, &WeightPlacement::Resident),
        120 * (4 << 20) + 60000 * (8 * 1024 + 1) + WORKSPACE_BYTES
    );
}
