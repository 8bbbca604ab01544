//! The dense cuBLAS chain against the CPU reference. These need a CUDA GPU (and libcublas):
//! run with `--include-ignored` on the GPU machine (`cargo xtask device-pack`, then
//! `SPDNN_TESTS=dense bash .device/run.sh tests`).

use spdnn_adaptive::MemorySettings;
use spdnn_cuda::Gpu;
use spdnn_cuda::method::{KernelMethod, LayerChain};
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_dense::{Dense, DenseOptions, infer};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_gputest::biased::{
    self, BiasedProblem, check_biased_random, check_trained_nets, check_trained_shaped,
    method_runner, trained_shaped_problem,
};
use spdnn_gputest::{
    Problem, Tolerance, check_bad_problems, check_challenge, check_compressed, check_exact_random,
    check_general_random, check_official_1024, check_rectangular_random,
};

/// One warm-up and two timed runs (one at sanitize scale), the output kept.
fn spec() -> RunSpec {
    spdnn_gputest::run_spec(1, 2)
}

/// Rows in batches of 37: every batch but the last is full, the last partial, so the
/// products run over fewer rows than the buffers hold.
fn batched() -> RunSpec {
    RunSpec {
        batch: Some(37),
        ..spec()
    }
}

fn run_with(
    options: DenseOptions,
    spec: RunSpec,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| infer(gpu, &p.layers, &p.input, p.bias, p.upper, &options, &spec)
}

fn run(gpu: &Gpu, p: &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    run_with(DenseOptions::default(), spec())(gpu, p)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks() {
    check_exact_random(&run);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_in_batches_of_rows() {
    check_exact_random(&run_with(DenseOptions::default(), batched()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn general_random_networks() {
    check_general_random(&run);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rectangular_random_networks() {
    check_rectangular_random(&run);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generated_challenge_networks() {
    check_challenge(&run, 1024, 120, 3000);
    check_challenge(&run, 4096, 24, 500);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn official_1024_network() {
    check_official_1024(&run);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn compressed_networks() {
    check_compressed(&run);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_problems_are_refused_and_chains_of_widths_run() {
    check_bad_problems(&run);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn per_neuron_biases() {
    check_biased_random(
        &method_runner::<Dense>(DenseOptions::default(), spec()),
        false,
    );
    check_biased_random(
        &method_runner::<Dense>(DenseOptions::default(), batched()),
        false,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_shaped_chains() {
    check_trained_shaped(
        &method_runner::<Dense>(DenseOptions::default(), spec()),
        false,
    );
    check_trained_shaped(
        &method_runner::<Dense>(DenseOptions::default(), batched()),
        false,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_networks_a_b_c() {
    check_trained_nets(&method_runner::<Dense>(DenseOptions::default(), spec()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn positive_biases_are_refused() {
    let gpu = spdnn_gputest::gpu();
    let p = BiasedProblem {
        layers: vec![Csr::from_triplets(2, 2, &[(0, 0, 1.0), (1, 1, 1.0)]).unwrap()],
        input: Csr::from_triplets(1, 2, &[(0, 0, 1.0)]).unwrap(),
        biases: vec![vec![-0.5, 0.25]],
        upper: 1.0,
    };
    let error = method_runner::<Dense>(DenseOptions::default(), spec())(&gpu, &p)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("dense computes clip(Z + b)")
            && error.contains("neuron 2 of layer 1 has bias 0.25"),
        "{error}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_default_is_fp32_and_tf32_is_reported_lossy() {
    let gpu = spdnn_gputest::gpu();
    let problem = trained_shaped_problem(128, 6, spdnn_gputest::sized(1000, 64), false, 3);
    let exact = method_runner::<Dense>(DenseOptions::default(), spec())(&gpu, &problem).unwrap();
    assert!(
        exact
            .detail("math")
            .is_some_and(|m| m.contains("CUBLAS_PEDANTIC_MATH")),
        "{:?}",
        exact.details
    );
    assert_eq!(exact.detail("lossy"), None, "{:?}", exact.details);
    biased::compare(&problem, &exact, Tolerance::Relative(1e-4), 1e-5).unwrap();

    let tf32 = method_runner::<Dense>(DenseOptions { tf32: true }, spec())(&gpu, &problem).unwrap();
    assert!(
        tf32.detail("math")
            .is_some_and(|m| m.contains("CUBLAS_TF32_TENSOR_OP_MATH")),
        "{:?}",
        tf32.details
    );
    assert!(tf32.detail("lossy").is_some(), "{:?}", tf32.details);
    // Lossy, not wrong: every value near the exact run's (a layout error would be far off).
    let (a, b) = (exact.output.unwrap(), tf32.output.unwrap());
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    eprintln!(
        "tf32: largest difference from fp32 {worst}, {} of {} categories",
        tf32.categories.len(),
        exact.categories.len()
    );
    assert!(worst < 0.1 * problem.upper, "tf32 is off by {worst}");
}

/// What the harness's allocations hold at their peak for batches of `batch` rows: the
/// model's resident bytes plus the largest upload of a batch's sparse rows
/// (`spdnn_cuda::rows::scatter_rows`: offsets, columns, values; nothing for an empty batch).
fn expected_peak(model: &spdnn_cuda::memory::MemoryModel, input: &Csr, batch: usize) -> usize {
    let upload = (0..input.nrows())
        .step_by(batch)
        .map(|start| {
            let part = input.rows_slice(start..(start + batch).min(input.nrows()));
            if part.nnz() == 0 {
                0
            } else {
                4 * (part.nrows() + 1) + 8 * part.nnz()
            }
        })
        .max()
        .unwrap_or(0);
    model.fixed + model.weight_bytes() + model.per_row * batch + upload
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_memory_model_is_what_the_run_allocates() {
    let gpu = spdnn_gputest::gpu();
    let rows = spdnn_gputest::sized(2000, 200);
    let problem = trained_shaped_problem(256, 4, rows, false, 4);
    let chain = LayerChain::with_biases(&problem.layers, &problem.biases, problem.upper);
    let options = DenseOptions::default();
    let model = Dense::memory(&chain, &options);
    let spec = RunSpec {
        warmup: 0,
        repetitions: 1,
        keep_output: true,
        ..RunSpec::default()
    };
    // Unconstrained (one batch), then a budget for about a quarter of the rows.
    let tight = model.fixed + model.weight_bytes() + (model.per_row + 4 + 8 * 784) * (rows / 4);
    for budget in [None, Some(tight)] {
        let settings = MemorySettings {
            gpu_memory: budget,
            gpus: Vec::new(),
        };
        let out =
            spdnn_adaptive::run::<Dense>(&gpu, &chain, &problem.input, &options, &spec, &settings)
                .unwrap_or_else(|e| panic!("budget {budget:?}: {e}"));
        let plan = &out.report.gpus[0];
        eprintln!("{budget:?}: {}", out.report.lines().join("; "));
        if budget.is_some() {
            assert!(plan.plan.batches > 1, "{:?}", plan.plan);
        }
        assert_eq!(
            plan.measured_peak,
            expected_peak(&model, &problem.input, plan.plan.batch),
            "budget {budget:?}, batch {}",
            plan.plan.batch
        );
        assert!(plan.measured_peak <= plan.plan.predicted_bytes);
        biased::compare(&problem, &out.result, Tolerance::Relative(1e-4), 1e-5)
            .unwrap_or_else(|e| panic!("budget {budget:?}: {e}"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_65536_wide_challenge_network_is_refused_by_the_planner() {
    // 120 layers of 65536 × 65536 floats: 2 TB dense. Refused before anything is
    // allocated or densified, with the bytes one row needs named.
    let gpu = spdnn_gputest::gpu();
    let n = 65536;
    let layers = vec![Csr::from_triplets(n, n, &[]).unwrap(); 120];
    let input = Csr::from_triplets(4, n, &[(0, 3, 1.0), (2, 9, 1.0)]).unwrap();
    let chain = LayerChain::new(&layers, -0.45, 32.0);
    let options = DenseOptions::default();
    let error = spdnn_adaptive::run::<Dense>(
        &gpu,
        &chain,
        &input,
        &options,
        &spec(),
        &MemorySettings::default(),
    )
    .unwrap_err()
    .to_string();
    // The planner's bound for one row: the model, the upload's extra offset, and one input
    // row of one entry (offset, column, value).
    let model = Dense::memory(&chain, &options);
    let needed = model.fixed + 4 + model.weight_bytes() + model.per_row + 4 + 8;
    assert!(
        error.contains("out of GPU memory") && error.contains(&format!("requested {needed}")),
        "{error}"
    );
}
