//! H&P against the CPU reference. These need a CUDA GPU: run with `--include-ignored`
//! on the GPU machine (`cargo xtask device-pack`).

use proptest::test_runner::{TestCaseError, TestRunner};
use spdnn_cuda::Gpu;
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_gputest::biased::{
    BiasedProblem, biased_problem, check_biased_random, check_trained_nets, check_trained_shaped,
};
use spdnn_gputest::scale::proptest_config;
use spdnn_gputest::{
    Problem, Tolerance, check_bad_problems, check_challenge, check_compressed, check_exact_random,
    check_general_random, check_official_1024, check_rectangular_random, compare,
};
use spdnn_hp::{Hp, HpOptions, Layout, MINIBATCHES, infer};

/// One warm-up and two timed runs (one at sanitize scale), the output kept.
fn spec() -> RunSpec {
    spdnn_gputest::run_spec(1, 2)
}

fn options(minibatch: usize, buffer: Option<usize>, layout: Layout) -> HpOptions {
    HpOptions {
        minibatch: Some(minibatch),
        buffer,
        layout,
        batch: None,
    }
}

fn run_with(
    options: HpOptions,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| infer(gpu, &p.layers, &p.input, p.bias, p.upper, &options, &spec())
}

/// Runs `options` on `problem` and compares with the reference.
fn check(
    gpu: &Gpu,
    options: &HpOptions,
    problem: &Problem,
    tolerance: Tolerance,
) -> Result<(), String> {
    let result = run_with(options.clone())(gpu, problem).map_err(|e| format!("hp failed: {e}"))?;
    if result.output.is_none() || result.infer_ms.is_empty() {
        return Err("no output or no timed run".into());
    }
    compare(problem, &result, tolerance)
}

/// `cases` exact random problems (at most 2 at sanitize scale) of N up to `max_n` (so
/// several output blocks and a partial last one) through `options`.
fn check_exact_wide(options: &HpOptions, max_n: usize, cases: u32) {
    let gpu = spdnn_gputest::gpu();
    let mut runner = TestRunner::new(proptest_config(Some(cases)));
    let outcome = runner.run(&spdnn_gputest::exact_problem(max_n, 64), |p| {
        check(&gpu, options, &p, Tolerance::Exact).map_err(TestCaseError::fail)
    });
    if let Err(e) = outcome {
        panic!("{options:?}: {e}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_default() {
    check_exact_random(&run_with(HpOptions::default()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_paper_layout_tiny_buffers() {
    // Buffers of 7 inputs: footprints cut into many buffers, consecutive cuts.
    check_exact_random(&run_with(options(1, Some(7), Layout::Paper)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_grouped_small_buffers_large_minibatch() {
    // Buffers of 5 inputs, balanced cuts, 32 rows per minibatch (most minibatches partial).
    check_exact_random(&run_with(options(32, Some(5), Layout::Grouped)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_wider_than_a_block() {
    // N up to 700: up to three output blocks, the last one partial.
    check_exact_wide(&HpOptions::default(), 700, 32);
    check_exact_wide(&options(12, Some(33), Layout::Paper), 700, 32);
    check_exact_wide(&options(4, Some(100), Layout::Grouped), 700, 32);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_minibatch_is_exact_and_does_not_spill() {
    let gpu = spdnn_gputest::gpu();
    let mut runner = TestRunner::new(proptest_config(Some(6)));
    let strategy = spdnn_gputest::exact_problem(300, 100);
    for &mb in MINIBATCHES {
        for layout in [Layout::Grouped, Layout::Paper] {
            let o = options(mb, Some(24), layout);
            let outcome = runner.run(&strategy, |p| {
                check(&gpu, &o, &p, Tolerance::Exact).map_err(TestCaseError::fail)
            });
            if let Err(e) = outcome {
                panic!("minibatch {mb}, {layout:?}: {e}");
            }
        }
        let p = spdnn_gputest::challenge_problem(1024, 2, 40, 1);
        let result = run_with(options(mb, None, Layout::Grouped))(&gpu, &p).expect("hp runs");
        let detail = |name: &str| result.detail(name).unwrap_or_default();
        assert_eq!(
            detail("local_bytes"),
            "0",
            "hp_layer_mb{mb} spills: {:?}",
            result.details
        );
        eprintln!("hp_layer_mb{mb}: {} registers", detail("registers"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn general_random_networks() {
    check_general_random(&run_with(HpOptions::default()));
    check_general_random(&run_with(options(12, Some(16), Layout::Paper)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn batches_of_rows() {
    let o = HpOptions {
        batch: Some(37),
        ..HpOptions::default()
    };
    check_exact_random(&run_with(o.clone()));
    check_challenge(&run_with(o), 1024, 30, 500);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn empty_slices_and_empty_layers() {
    let gpu = spdnn_gputest::gpu();
    // N = 300: outputs 32..64 (warp 1 of block 0) and 256..288 (warp 0 of block 1) read
    // nothing; the others read three inputs each; then a layer with no weights at all.
    let n = 300u32;
    let empty = |o: u32| (32..64).contains(&o) || (256..288).contains(&o);
    let mut t = Vec::new();
    for o in (0..n).filter(|&o| !empty(o)) {
        for k in 0..3u32 {
            t.push(((o * 7 + k * 101) % n, o, 0.25 * (k + 1) as f32));
        }
    }
    let w = Csr::from_triplets(n as usize, n as usize, &t).unwrap();
    let input: Vec<(u32, u32, f32)> = (0..50u32)
        .flat_map(|r| {
            (0..n)
                .filter(move |c| (c + r) % 3 == 0)
                .map(move |c| (r, c, 1.0))
        })
        .collect();
    let input = Csr::from_triplets(50, n as usize, &input).unwrap();
    let mut problem = Problem {
        layers: vec![w.clone(), w.clone()],
        input,
        bias: -0.25,
        upper: 32.0,
    };
    for o in [
        HpOptions::default(),
        options(1, Some(3), Layout::Paper),
        options(32, Some(9), Layout::Grouped),
    ] {
        check(&gpu, &o, &problem, Tolerance::Exact).unwrap_or_else(|e| panic!("{o:?}: {e}"));
    }
    // A layer with no weights kills every row: no categories, all zeros.
    problem
        .layers
        .push(Csr::zeros(n as usize, n as usize).unwrap());
    problem.layers.push(w);
    let result = run_with(HpOptions::default())(&gpu, &problem).expect("hp runs");
    assert!(result.categories.is_empty());
    compare(&problem, &result, Tolerance::Exact).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn footprints_over_many_buffers() {
    let gpu = spdnn_gputest::gpu();
    // Dense layers: every block reads all 600 inputs (20 rows, 4 at sanitize scale).
    let problem = spdnn_gputest::all_saturating_problem(600, 3, spdnn_gputest::sized(20, 4));
    for o in [
        options(16, Some(64), Layout::Grouped),
        options(8, Some(64), Layout::Paper),
        options(1, Some(600), Layout::Paper),
        options(32, Some(1), Layout::Grouped),
    ] {
        check(&gpu, &o, &problem, Tolerance::Exact).unwrap_or_else(|e| panic!("{o:?}: {e}"));
    }
    // The generated 4096 network in the paper's order: every block reads all 4096 inputs.
    let problem = spdnn_gputest::challenge_problem(4096, 3, spdnn_gputest::sized(50, 8), 2);
    for o in [
        options(16, None, Layout::Paper),
        options(12, Some(1000), Layout::Paper),
    ] {
        check(&gpu, &o, &problem, Tolerance::Relative(1e-5))
            .unwrap_or_else(|e| panic!("{o:?}: {e}"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generated_challenge_networks() {
    check_challenge(&run_with(HpOptions::default()), 1024, 120, 3000);
    check_challenge(
        &run_with(options(12, Some(512), Layout::Paper)),
        1024,
        120,
        3000,
    );
    check_challenge(&run_with(HpOptions::default()), 4096, 24, 500);
    check_challenge(&run_with(HpOptions::default()), 16384, 12, 64);
    check_challenge(&run_with(HpOptions::default()), 65536, 13, 24);
    // More shared memory than 48 KiB: buffers of 2048 with 12 rows (106 KiB, opt-in).
    check_challenge(
        &run_with(options(12, Some(2048), Layout::Paper)),
        4096,
        12,
        100,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rectangular_random_chains() {
    check_rectangular_random(&run_with(HpOptions::default()));
    check_rectangular_random(&run_with(options(1, Some(7), Layout::Paper)));
    check_rectangular_random(&run_with(options(32, Some(5), Layout::Grouped)));
    check_rectangular_random(&run_with(HpOptions {
        batch: Some(37),
        ..HpOptions::default()
    }));
}

/// A `rows × cols` layer of dyadic weights of both signs, each input feeding about one
/// output in `spread`.
fn patterned_layer(rows: u32, cols: u32, spread: u32, salt: u32) -> Csr {
    let t: Vec<_> = (0..rows)
        .flat_map(|r| {
            (0..cols)
                .filter(move |c| (r * 7 + c * 3 + salt).is_multiple_of(spread))
                .map(move |c| (r, c, [0.25, -0.5, 0.75, 0.5][((r + c + salt) % 4) as usize]))
        })
        .collect();
    Csr::from_triplets(rows as usize, cols as usize, &t).unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wide_and_narrow_layers_across_blocks() {
    let gpu = spdnn_gputest::gpu();
    // 700 → 40 → 600 → 3 → 300: output blocks 1, 3, 1, 2; activations narrower and wider
    // than the input in the same two buffers; the output 300 wide.
    let layers = vec![
        patterned_layer(700, 40, 5, 0),
        patterned_layer(40, 600, 3, 1),
        patterned_layer(600, 3, 2, 2),
        patterned_layer(3, 300, 2, 3),
    ];
    let input: Vec<(u32, u32, f32)> = (0..90u32)
        .flat_map(|r| {
            (0..700u32)
                .filter(move |c| r % 10 != 0 && (c * 5 + r) % 4 != 0)
                .map(move |c| (r, c, 0.5 * (1 + (r + c) % 4) as f32))
        })
        .collect();
    let problem = Problem {
        layers,
        input: Csr::from_triplets(90, 700, &input).unwrap(),
        bias: -0.25,
        upper: 32.0,
    };
    // Every tenth row is empty and stays so; the others survive.
    let expected = spdnn_gputest::reference(&problem);
    assert_eq!(expected.categories.len(), 81);
    for o in [
        HpOptions::default(),
        options(1, Some(7), Layout::Paper),
        options(12, Some(64), Layout::Grouped),
        options(32, Some(1), Layout::Paper),
        HpOptions {
            batch: Some(37),
            ..options(8, Some(100), Layout::Grouped)
        },
    ] {
        check(&gpu, &o, &problem, Tolerance::Exact).unwrap_or_else(|e| panic!("{o:?}: {e}"));
        let output = run_with(o.clone())(&gpu, &problem)
            .expect("hp runs")
            .output
            .expect("the output is kept");
        assert_eq!(output.len(), 90 * 300, "{o:?}: rows × N_L");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn compressed_networks() {
    check_compressed(&run_with(HpOptions::default()));
    check_compressed(&run_with(options(12, Some(512), Layout::Paper)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn official_1024_network() {
    check_official_1024(&run_with(HpOptions::default()));
    check_official_1024(&run_with(options(12, Some(512), Layout::Paper)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_problems_and_options_are_errors() {
    check_bad_problems(&run_with(HpOptions::default()));
    let gpu = spdnn_gputest::gpu();
    let w = Csr::from_triplets(4, 4, &[(0, 1, 1.0)]).unwrap();
    let x = Csr::from_triplets(2, 4, &[(0, 1, 1.0)]).unwrap();
    let spec = RunSpec::default();
    let run = |layers: &[Csr], x: &Csr, bias: f32, o: &HpOptions| {
        infer(&gpu, layers, x, bias, 32.0, o, &spec)
    };
    for bad in [
        options(3, None, Layout::Grouped),
        options(0, None, Layout::Grouped),
        options(16, Some(0), Layout::Grouped),
        options(16, Some(70000), Layout::Paper),
        HpOptions {
            batch: Some(0),
            ..HpOptions::default()
        },
    ] {
        let e = run(std::slice::from_ref(&w), &x, -0.3, &bad).unwrap_err();
        assert!(e.to_string().contains("hp"), "{e}");
    }
    // One buffer of 4096 inputs × 33 floats is more shared memory than any GPU has.
    let p = spdnn_gputest::challenge_problem(4096, 1, 4, 1);
    let e = run(
        &p.layers,
        &p.input,
        p.bias,
        &options(32, Some(65536), Layout::Paper),
    )
    .unwrap_err();
    assert!(e.to_string().contains("shared memory"), "{e}");
    assert_eq!(p.input.ncols(), 4096);
}

/// H&P on a problem with a bias per output neuron (`hp_layer_neurons_mb*`).
fn run_biased(
    options: HpOptions,
) -> impl Fn(&Gpu, &BiasedProblem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    spdnn_gputest::biased::method_runner::<Hp>(options, spec())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn per_neuron_biases() {
    check_biased_random(&run_biased(HpOptions::default()), false);
    // The published layout (positions in neuron order), footprints in many buffers.
    check_biased_random(&run_biased(options(4, Some(7), Layout::Paper)), false);
    // Layers wider than a block (several output blocks, a partial last one): the bias of
    // every position of every block.
    let gpu = spdnn_gputest::gpu();
    for options in [HpOptions::default(), options(12, Some(40), Layout::Grouped)] {
        let run = run_biased(options.clone());
        let mut runner = TestRunner::new(proptest_config(Some(24)));
        let outcome = runner.run(&biased_problem(700, 64, false), |p| {
            let result =
                run(&gpu, &p).map_err(|e| TestCaseError::fail(format!("hp failed: {e}")))?;
            spdnn_gputest::biased::compare(&p, &result, Tolerance::Exact, 0.0)
                .map(|_| ())
                .map_err(TestCaseError::fail)
        });
        if let Err(e) = outcome {
            panic!("{options:?}: {e}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_shaped_chains() {
    check_trained_shaped(&run_biased(HpOptions::default()), false);
    check_trained_shaped(&run_biased(options(32, Some(100), Layout::Paper)), false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_networks_a_b_c() {
    check_trained_nets(&run_biased(HpOptions::default()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn positive_biases_are_refused() {
    let gpu = spdnn_gputest::gpu();
    let p = spdnn_gputest::biased::trained_shaped_problem(32, 1, 4, true, 3);
    let error = run_biased(HpOptions::default())(&gpu, &p)
        .unwrap_err()
        .to_string();
    assert!(error.contains("only for biases ≤ 0"), "{error}");
}
