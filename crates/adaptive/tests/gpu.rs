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

/// What `K`'s loads upload for batches of `problem`'s input (the planner's view).
fn uploads<'a, K: KernelMethod>(problem: &'a Problem) -> spdnn_adaptive::plan::Uploads<'a> {
    spdnn_adaptive::plan::Uploads {
        offsets: problem.input.row_offsets(),
        binary: problem.input.values().iter().all(|&v| v == 1.0),
        bytes: K::upload_bytes,
    }
}

/// A budget that holds the weights resident (or two buffers of the largest layer for a
/// streaming method) and about a quarter of the rows, by the planner's model.
fn tight_budget<K: KernelMethod>(problem: &Problem, model: &MemoryModel, streamed: bool) -> usize {
    let quarter = problem.input.nrows().div_ceil(4);
    let weights = if streamed {
        WeightPlacement::Streamed(Default::default())
    } else {
        WeightPlacement::Resident
    };
    model.bytes(quarter, &weights) + uploads::<K>(problem).densest(quarter, model)
}

/// Runs `K` unconstrained and under a tight budget: both match the reference, the tight
/// one in several batches, and (exact or bounding models) the measured peak is at most the
/// prediction. 999 rows (fewer at sanitize scale).
fn check_method<K: KernelMethod>(options: &K::Options, streamed: bool, neurons: usize) {
    let problem = challenge_problem_scaled(neurons, 24, 999, 3);
    let chain = LayerChain::new(&problem.layers, problem.bias, problem.upper);
    let model = K::memory_on(&gpu(), &chain, options).unwrap();
    for budget in [None, Some(tight_budget::<K>(&problem, &model, streamed))] {
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
        assert!(
            plan.measured_peak <= plan.plan.predicted_bytes,
            "{}: measured {} > predicted {}",
            K::NAME,
            plan.measured_peak,
            plan.plan.predicted_bytes
        );
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
fn snicit_streams_its_post_convergence_layers() {
    // Converted after layer 2: 22 post-convergence layers, which stream in the budget.
    let options = spdnn_snicit::SnicitOptions {
        threshold: 2,
        ..Default::default()
    };
    check_method::<spdnn_snicit::Snicit>(&options, true, 1024);
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
    // A budget a little under cuSPARSE's one-batch need (half its fixed bytes short; its
    // SpMM workspace is an allowance): the run fits in two batches, or, should cuSPARSE ask
    // for more, retries with smaller ones or says what did not fit.
    let problem = challenge_problem_scaled(1024, 12, 2000, 7);
    let rows = problem.input.nrows();
    let model = model_of::<spdnn_cusparse::Cusparse>(&problem, &Default::default());
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
        // cuSPARSE picks its SpMM algorithm by size, so a batch of other rows sums in another
        // order: over these 12 layers (each can double an error) values of ~10 moved by up to
        // 1.1e-5 of themselves on an H100 (2026-11-26). The categories must be equal.
        Ok(out) => compare(&problem, &out.result, Tolerance::Relative(1e-4)).unwrap(),
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

/// The plan's prediction against the measured peak: `K` on `problem` unconstrained (one
/// batch) and under a budget that holds about a third of the rows by the model built under
/// that budget (halved until it binds, never below one row's need under the halved budget);
/// each time the predicted bytes are at least the measured peak and at most 10 % above it,
/// plus `slack`: the bytes the model declares as a bound (sz's row stride rounding,
/// cusparse's SpMM workspace allowance), and the result matches the reference.
fn the_model_is_the_peak<K: KernelMethod>(problem: &Problem, options: &K::Options, slack: usize) {
    let device = gpu();
    let chain = LayerChain::new(&problem.layers, problem.bias, problem.upper);
    let model = K::memory_on(&device, &chain, options)
        .unwrap_or_else(|e| panic!("{}: the model: {e}", K::NAME));
    let third = problem.input.nrows().div_ceil(3);
    let need = |model: &MemoryModel, rows: usize| {
        model.bytes(rows, &WeightPlacement::Resident) + uploads::<K>(problem).densest(rows, model)
    };
    // A third of the rows by the model the run builds under the budget itself: for a method
    // whose launches shrink with the budget (blockdepend), the budget that holds a third by
    // the unconstrained model holds every row once they shrink (at sanitize scale, 64 rows,
    // 2026-11-27), so the budget is lowered to what a third needs under it until it holds.
    let mut tight = need(&model, third);
    for _ in 0..8 {
        match K::memory_on(&device.with_budget(tight), &chain, options) {
            Ok(under) if need(&under, third) < tight => tight = need(&under, third),
            _ => break,
        }
    }
    // What one row needs under `budget`, by the model the run builds under it (blockdepend's
    // launches and their scratch shrink with the budget, so the unconstrained model's need
    // is too high a floor: at sanitize scale, 64 rows, it stopped the halving in one batch
    // on 2026-11-27; with no floor, six halvings fell under the need on 2026-11-26).
    let one_row_fits = |budget: usize| {
        K::memory_on(&device.with_budget(budget), &chain, options)
            .is_ok_and(|under| need(&under, 1) <= budget)
    };
    for budget in [None, Some(tight)] {
        let mut budget = budget;
        let mut out = run::<K>(
            problem,
            options,
            &MemorySettings {
                gpu_memory: budget,
                gpus: Vec::new(),
            },
        );
        for _ in 0..12 {
            match budget {
                Some(b) if out.report.gpus[0].plan.batches == 1 && one_row_fits(b / 2) => {
                    budget = Some(b / 2);
                    out = run::<K>(
                        problem,
                        options,
                        &MemorySettings {
                            gpu_memory: budget,
                            gpus: Vec::new(),
                        },
                    );
                }
                _ => break,
            }
        }
        let plan = &out.report.gpus[0];
        eprintln!("{} {budget:?}: {}", K::NAME, out.report.lines().join("; "));
        compare(problem, &out.result, Tolerance::Relative(1e-5))
            .unwrap_or_else(|e| panic!("{} under {budget:?}: {e}", K::NAME));
        assert_eq!(plan.retries, 0, "{}: an allocation was refused", K::NAME);
        if budget.is_some() {
            assert!(plan.plan.batches > 1, "{}: {:?}", K::NAME, plan.plan);
        } else {
            assert_eq!(plan.plan.batches, 1, "{}: {:?}", K::NAME, plan.plan);
        }
        let (predicted, measured) = (plan.plan.predicted_bytes, plan.measured_peak);
        assert!(
            measured <= predicted,
            "{} under {budget:?}: measured {measured} > predicted {predicted}",
            K::NAME
        );
        assert!(
            predicted as f64 <= 1.10 * measured as f64 + slack as f64,
            "{} under {budget:?}: predicted {predicted} > 1.10 × measured {measured} + {slack}",
            K::NAME
        );
    }
}

/// [`the_model_is_the_peak`] on a generated challenge network over MNIST rows, and on its
/// compressed chain (`+compress`: widths that shrink) when `compressed`.
fn check_peak<K: KernelMethod>(options: &K::Options, compressed: bool) {
    check_peak_within::<K>(options, compressed, |_| 0);
}

/// [`check_peak`] with `slack(widest width)` bytes the model declares as a bound.
fn check_peak_within<K: KernelMethod>(
    options: &K::Options,
    compressed: bool,
    slack: impl Fn(usize) -> usize,
) {
    let widest = |p: &Problem| {
        p.layers
            .iter()
            .map(|w| w.nrows().max(w.ncols()))
            .max()
            .unwrap_or(0)
    };
    let problem = challenge_problem_scaled(1024, 24, 999, 3);
    the_model_is_the_peak::<K>(&problem, options, slack(widest(&problem)));
    if compressed {
        let (small, shrunk) = spdnn_gputest::compressed(&problem);
        assert!(shrunk > 0);
        the_model_is_the_peak::<K>(&small, options, slack(widest(&small)));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf_peak_is_its_model() {
    check_peak::<spdnn_bf::Bf>(&Default::default(), true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn snig_peak_is_its_model() {
    check_peak::<spdnn_snig::Snig>(&Default::default(), true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn xy_peak_is_its_model() {
    check_peak::<spdnn_xy::Xy>(&Default::default(), true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn snicit_peak_is_its_model() {
    check_peak::<spdnn_snicit::Snicit>(&Default::default(), true);
    let bf = spdnn_snicit::SnicitOptions {
        pre_convergence: spdnn_snicit::PreConvergence::Bf,
        ..Default::default()
    };
    check_peak::<spdnn_snicit::Snicit>(&bf, false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cusparse_peak_is_its_model() {
    // The model holds an allowance for SpMM's workspace (known only once the descriptors
    // exist; 519 bytes measured).
    check_peak_within::<spdnn_cusparse::Cusparse>(&Default::default(), true, |_| {
        spdnn_cusparse::SPMM_WORKSPACE_ALLOWANCE
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn hp_peak_is_its_model() {
    check_peak::<spdnn_hp::Hp>(&Default::default(), false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn blockdepend_peak_is_its_model() {
    check_peak::<spdnn_blockdepend::BlockDepend>(&Default::default(), false);
    let uncompressed = spdnn_blockdepend::BlockDependOptions {
        compress: false,
        ..Default::default()
    };
    check_peak::<spdnn_blockdepend::BlockDepend>(&uncompressed, false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sz_peak_is_its_model() {
    // sz's batch buffers are a multiple of 128 rows: its model holds the rounding of a stride
    // (two buffers of 127 rows of the widest width) as fixed bytes, a bound.
    check_peak_within::<spdnn_sz::Sz>(&Default::default(), false, |widest| 2 * 4 * 127 * widest);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tcchain_peak_is_its_model() {
    check_peak::<spdnn_tcchain::TcChain>(&Default::default(), false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dense_peak_is_its_model() {
    check_peak::<spdnn_dense::Dense>(&Default::default(), false);
}
