//! The fused tensor-core chain against the CPU reference. These need a CUDA GPU (sm_80 or
//! later): run with `--include-ignored` on the GPU machine (`cargo xtask device-pack`).

use spdnn_cuda::Gpu;
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_formats::Csr;
use spdnn_gputest::biased::{
    BiasedProblem, check_biased_random, check_trained_nets, check_trained_shaped, method_runner,
    trained_shaped_problem,
};
use spdnn_gputest::{
    Problem, Tolerance, check_bad_problems, check_challenge, check_exact_random,
    check_general_random, check_official_1024, check_rectangular_random, compare,
};
use spdnn_tcchain::{TcChain, TcChainOptions, infer};

/// One warm-up and two timed runs (one at sanitize scale), the output kept.
fn spec() -> RunSpec {
    spdnn_gputest::run_spec(1, 2)
}

fn run_with(
    options: TcChainOptions,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| infer(gpu, &p.layers, &p.input, p.bias, p.upper, &options, &spec())
}

fn tiles(rows: usize) -> TcChainOptions {
    TcChainOptions {
        tile_rows: Some(rows),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks() {
    check_exact_random(&run_with(TcChainOptions::default()));
    check_exact_random(&run_with(tiles(80)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rectangular_random_networks() {
    check_rectangular_random(&run_with(TcChainOptions::default()));
    check_rectangular_random(&run_with(tiles(32)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn general_random_networks() {
    check_general_random(&run_with(TcChainOptions::default()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_problems_are_refused() {
    check_bad_problems(&run_with(TcChainOptions::default()));
}

// The challenge networks in three tests, each one process of bounded length under
// racecheck (together they did not finish in 402 s there, 2026-11-27).

#[test]
#[ignore = "needs a CUDA GPU"]
fn challenge_networks() {
    check_challenge(&run_with(TcChainOptions::default()), 1024, 120, 1000);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn challenge_networks_in_tiles_of_16_rows() {
    check_challenge(&run_with(tiles(16)), 1024, 24, 333);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn official_1024_network() {
    check_official_1024(&run_with(TcChainOptions::default()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn per_neuron_biases() {
    check_biased_random(
        &method_runner::<TcChain>(TcChainOptions::default(), spec()),
        false,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_shaped_chains_every_tile_height() {
    for rows in [16, 32, 48, 64, 80] {
        check_trained_shaped(&method_runner::<TcChain>(tiles(rows), spec()), false);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_networks_a_b_c() {
    check_trained_nets(&method_runner::<TcChain>(TcChainOptions::default(), spec()));
}

/// A dense-ish `n_in × n_out` layer of pseudo-random weights in ±`scale` (about half the
/// entries stored).
fn layer(n_in: usize, n_out: usize, scale: f32, seed: u32) -> Csr {
    let mut state = seed.wrapping_mul(2654435761).wrapping_add(1);
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let mut triplets = Vec::new();
    for j in 0..n_in as u32 {
        for k in 0..n_out as u32 {
            let r = next();
            if r % 2 == 0 {
                let unit = (r >> 8) as f32 / (1u32 << 24) as f32;
                triplets.push((j, k, scale * (2.0 * unit - 1.0)));
            }
        }
    }
    Csr::from_triplets(n_in, n_out, &triplets).unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wide_layers_take_several_passes_and_chunks() {
    // Widths 1500 → 256 → 1024 → 10: the buffers are 1024 wide, so the 1500-wide input is
    // staged in two chunks; the 1024 outputs are 128 tiles, four passes of the eight warps;
    // 1000 rows (100 at sanitize scale), the last tile partial.
    let rows = spdnn_gputest::sized(1000, 100);
    let widths = [1500, 256, 1024, 10];
    let layers: Vec<Csr> = widths
        .windows(2)
        .enumerate()
        .map(|(l, p)| layer(p[0], p[1], 2.0 / (p[0] as f32).sqrt(), l as u32 + 1))
        .collect();
    let biases = widths[1..].iter().map(|&n| vec![-0.01; n]).collect();
    let full = layer(rows, 1500, 1.0, 99);
    let input = Csr::from_triplets(
        rows,
        1500,
        &full
            .triplets()
            .map(|(r, c, v)| (r, c, v.abs()))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let problem = BiasedProblem {
        layers,
        input,
        biases,
        upper: 1.0,
    };
    let gpu = spdnn_gputest::gpu();
    for options in [TcChainOptions::default(), tiles(16)] {
        let result = method_runner::<TcChain>(options.clone(), spec())(&gpu, &problem)
            .expect("tcchain runs");
        spdnn_gputest::biased::compare(&problem, &result, Tolerance::Relative(1e-4), 1e-5)
            .unwrap_or_else(|e| panic!("{options:?}: {e}"));
    }
    // 80 rows of 1024 columns need 660 KB of shared memory: refused, saying why.
    let error = method_runner::<TcChain>(tiles(80), spec())(&gpu, &problem)
        .expect_err("80-row tiles of 1024 columns do not fit");
    assert!(error.to_string().contains("too wide"), "{error}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rows_in_several_batches_and_empty_layers() {
    let gpu = spdnn_gputest::gpu();
    // Batches of 77: 500 rows (160 at sanitize scale), the last batch partial.
    let rows = spdnn_gputest::sized(500, 160);
    let mut problem = spdnn_gputest::challenge_problem(1024, 12, rows, 4);
    let batched = SPEC_BATCHED;
    let result = infer(
        &gpu,
        &problem.layers,
        &problem.input,
        problem.bias,
        problem.upper,
        &TcChainOptions::default(),
        &batched,
    )
    .expect("tcchain runs");
    compare(&problem, &result, Tolerance::Relative(1e-5)).unwrap();
    // A layer with no weights kills every row.
    problem.layers.insert(3, Csr::zeros(1024, 1024).unwrap());
    let result = run_with(TcChainOptions::default())(&gpu, &problem).expect("tcchain runs");
    assert!(result.categories.is_empty());
    compare(&problem, &result, Tolerance::Exact).unwrap();
}

const SPEC_BATCHED: RunSpec = RunSpec {
    warmup: 1,
    repetitions: 1,
    keep_output: true,
    batch: Some(77),
    profiled_only: false,
};

#[test]
#[ignore = "needs a CUDA GPU"]
fn positive_biases_are_refused() {
    let gpu = spdnn_gputest::gpu();
    let mut problem = trained_shaped_problem(128, 1, 10, false, 3);
    problem.biases[1][5] = 0.25;
    let error = method_runner::<TcChain>(TcChainOptions::default(), spec())(&gpu, &problem)
        .expect_err("a positive bias is refused");
    assert!(error.to_string().contains("layer 2"), "{error}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn no_instance_spills() {
    let gpu = spdnn_gputest::gpu();
    let problem = spdnn_gputest::challenge_problem(256, 3, 100, 1);
    for rows in [16, 32, 48, 64, 80] {
        let result = run_with(tiles(rows))(&gpu, &problem).expect("tcchain runs");
        let detail = |name: &str| result.detail(name).unwrap_or_default().to_string();
        assert_eq!(
            detail("local_bytes"),
            "0",
            "{rows} rows: {:?}",
            result.details
        );
        eprintln!("{}: {} registers", detail("kernel"), detail("registers"));
    }
}
