//! Every method under a budget through the partitioner, on the GPU machine: batched (and for
//! BF streamed, tuned) runs against the reference, the measured peak against the model, a
//! refused allocation turned into a smaller plan, a budget too small into a clear error, and
//! two handles on one GPU (`--gpus 0,0`).

use spdnn_adaptive::memory::{MemoryModel, WeightPlacement};
use spdnn_adaptive::{AdaptiveRun, MemorySettings};
use spdnn_cuda::method::{KernelMethod, LayerChain};
use spdnn_cuda::rows::RunSpec;
use spdnn_formats::SparseMatrix;
use spdnn_gputest::{Problem, Tolerance, challenge_problem_scaled, compare, gpu};

fn spec() -> RunSpec {
    spdnn_gputest::run_spec(1, 1)
}

fn model_of<K: KernelMethod>(problem: &Problem, options: &K::Options) -> MemoryModel {
    K::memory(
        &LayerChain::new(&problem.layers, problem.bias, problem.upper),
        options,
    )
}

fn run<K: KernelMethod>(
    problem: &Problem,
    options: &K::Options,
    settings: &MemorySettings,
) -> AdaptiveRun {
    let chain = LayerChain::new(&problem.layers, problem.bias, problem.upper);
    spdnn_adaptive::run::<K>(&gpu(), &chain, &problem.input, options, &spec(), settings)
        .unwrap_or_else(|e| panic!("{}: {e}", K::NAME))
}

/// A budget that holds the weights resident (or two buffers for a streaming method) and
/// about a quarter of the rows.
fn tight_budget(model: &MemoryModel, rows: usize, streamed: bool) -> usize {
    let weights = if streamed {
        2 * model.largest_layer()
    } else {
        model.weight_bytes()
    };
    // Slack per row for the models that are estimates: at most the model's own row, so
    // that a quarter of the rows plus slack stays below all the rows.
    let slack = model.per_row.min(8 * 2048);
    model.fixed + weights + (model.per_row + 4 + slack) * rows.div_ceil(4) + (1 << 16)
}

/// Runs `K` unconstrained and under a tight budget: both match the reference, the tight
/// one in several batches, and (exact or bounding models) the measured peak is at most the
/// prediction. 999 rows (fewer at sanitize scale).
fn check_method<K: KernelMethod>(options: &K::Options, streamed: bool, neurons: usize) {
    let problem = challenge_problem_scaled(neurons, 24, 999, 3);
    let rows = problem.input.nrows();
    let model = model_of::<K>(&problem, options);
    for budget in [None, Some(tight_budget(&model, rows, streamed))] {
        let settings = MemorySettings {
            gpu_memory: budget,
            gpus: Vec::new(),
        };
        let out = run::<K>(&problem, options, &settings);
        compare(&problem, &out.result, Tolerance::Relative(1e-5))
            .unwrap_or_else(|e| panic!("{} under {budget:?}: {e}", K::NAME));
        let plan = &out.report.gpus[0];
        eprintln!("{} {budget:?}: {}", K::NAME, out.report.lines().join("; "));
        if budget.is_some() {
            assert!(plan.plan.batches > 1, "{}: {:?}", K::NAME, plan.plan);
            if streamed {
                assert!(matches!(plan.plan.weights, WeightPlacement::Streamed(_)));
            }
        }
        if model.exact || K::NAME == "xy" || K::NAME == "snicit" {
            assert!(
                plan.measured_peak <= plan.plan.predicted_bytes,
                "{}: measured {} > predicted {}",
                K::NAME,
                plan.measured_peak,
                plan.plan.predicted_bytes
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf_batched_and_streamed_with_tuning_matches_the_reference() {
    check_method::<spdnn_bf::Bf>(&Default::default(), true, 1024);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn snig_batched_matches_the_reference() {
    check_method::<spdnn_snig::Snig>(&spdnn_snig::SnigOptions::default(), false, 1024);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn xy_batched_matches_the_reference() {
    let options = spdnn_xy::XyOptions::default();
    check_method::<spdnn_xy::Xy>(&options, false, 1024);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn snicit_batched_matches_the_reference() {
    check_method::<spdnn_snicit::Snicit>(&Default::default(), false, 1024);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cusparse_batched_matches_the_reference() {
    check_method::<spdnn_cusparse::Cusparse>(&Default::default(), false, 1024);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn hp_batched_matches_the_reference() {
    check_method::<spdnn_hp::Hp>(&Default::default(), false, 1024);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn blockdepend_batched_matches_the_reference() {
    check_method::<spdnn_blockdepend::BlockDepend>(&Default::default(), false, 1024);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf_streams_in_tuned_batches_of_layers() {
    // Weights far larger than the budget leaves: BF must stream, and the probe and the
    // online rule run.
    let problem = challenge_problem_scaled(4096, 120, 3000, 5);
    let rows = problem.input.nrows();
    let options = spdnn_bf::BfOptions::default();
    let model = model_of::<spdnn_bf::Bf>(&problem, &options);
    let budget = model.fixed + 8 * model.largest_layer() + model.per_row * rows + (8 << 20);
    assert!(
        budget < model.weight_bytes() + model.per_row * rows,
        "the problem must not fit the budget"
    );
    let out = run::<spdnn_bf::Bf>(
        &problem,
        &options,
        &MemorySettings {
            gpu_memory: Some(budget),
            gpus: Vec::new(),
        },
    );
    compare(&problem, &out.result, Tolerance::Relative(1e-5)).unwrap();
    let plan = &out.report.gpus[0];
    assert!(plan.timing.is_some(), "the probe ran");
    assert!(plan.measured_peak <= budget);
    let batches = out.result.detail("weight_batches");
    eprintln!("{}; {batches:?}", out.report.lines().join("; "));
    assert!(batches.is_some());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_refused_allocation_gives_a_smaller_plan_or_a_clear_error() {
    // hp's model underestimates nothing it cannot know; give it a budget its estimate
    // believes and the allocation refuses: the run retries with smaller batches.
    let problem = challenge_problem_scaled(1024, 12, 2000, 7);
    let rows = problem.input.nrows();
    let options = spdnn_cusparse::Cusparse;
    let _ = options;
    let model = model_of::<spdnn_cusparse::Cusparse>(&problem, &Default::default());
    // cuSPARSE's estimated 64 MiB workspace is far more than it takes: a budget just
    // under the model's one-batch need still runs, in more batches or after retries.
    let settings = MemorySettings {
        gpu_memory: Some(model.fixed / 2 + model.weight_bytes() + model.per_row * rows),
        gpus: Vec::new(),
    };
    let chain = LayerChain::new(&problem.layers, problem.bias, problem.upper);
    match spdnn_adaptive::run::<spdnn_cusparse::Cusparse>(
        &gpu(),
        &chain,
        &problem.input,
        &Default::default(),
        &spec(),
        &settings,
    ) {
        Ok(out) => compare(&problem, &out.result, Tolerance::Relative(1e-5)).unwrap(),
        Err(e) => assert!(e.to_string().contains("budget"), "{e}"),
    }
    // Far too small: a clear error naming the budget.
    let tiny = MemorySettings {
        gpu_memory: Some(4096),
        gpus: Vec::new(),
    };
    for error in [
        spdnn_adaptive::run::<spdnn_bf::Bf>(
            &gpu(),
            &chain,
            &problem.input,
            &Default::default(),
            &spec(),
            &tiny,
        )
        .err(),
        spdnn_adaptive::run::<spdnn_hp::Hp>(
            &gpu(),
            &chain,
            &problem.input,
            &Default::default(),
            &spec(),
            &tiny,
        )
        .err(),
    ] {
        let error = error.expect("4 KiB is too small").to_string();
        assert!(error.contains("budget"), "{error}");
    }
    // A budget above the free memory is an error.
    let huge = MemorySettings {
        gpu_memory: Some(usize::MAX / 4),
        gpus: Vec::new(),
    };
    let error = spdnn_adaptive::run::<spdnn_bf::Bf>(
        &gpu(),
        &chain,
        &problem.input,
        &Default::default(),
        &spec(),
        &huge,
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("free"), "{error}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_handles_on_one_gpu_split_the_rows() {
    let problem = challenge_problem_scaled(1024, 24, 1001, 9);
    // The second handle takes the rows after the first half, rounded up (501 of 1001).
    let second = problem.input.nrows().div_ceil(2);
    for method in ["bf", "xy"] {
        let settings = MemorySettings {
            gpu_memory: None,
            gpus: vec![0, 0],
        };
        let out = match method {
            "bf" => run::<spdnn_bf::Bf>(&problem, &Default::default(), &settings),
            _ => run::<spdnn_xy::Xy>(&problem, &Default::default(), &settings),
        };
        assert_eq!(out.report.gpus.len(), 2);
        assert_eq!(out.report.gpus[1].first_row, second);
        compare(&problem, &out.result, Tolerance::Relative(1e-5)).unwrap();
    }
}
