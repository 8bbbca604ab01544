//! SNICIT against the CPU reference. These need a CUDA GPU: run with `--include-ignored`
//! on the GPU machine (`cargo xtask device-pack`).

use spdnn_cuda::Gpu;
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_formats::SparseMatrix;
use spdnn_glare::{Glare, GlareKernel, model};
use spdnn_gputest::biased::{
    BiasedProblem, check_biased_random, check_trained_nets, check_trained_shaped,
};
use spdnn_gputest::{
    Problem, check_challenge, check_compressed, check_exact_random, check_general_random,
    check_glare, check_grouped_random, check_official_1024, check_rectangular_random,
};
use spdnn_snicit::{HELD_SHARE, PreConvergence, Snicit, SnicitOptions, infer};
use spdnn_xy::XyOptions;

/// One warm-up and two timed runs (one at sanitize scale), the output kept.
fn spec() -> RunSpec {
    spdnn_gputest::run_spec(1, 2)
}

fn options(threshold: usize) -> SnicitOptions {
    SnicitOptions {
        threshold,
        xy: XyOptions {
            cache_dir: None,
            ..XyOptions::default()
        },
        ..SnicitOptions::default()
    }
}

fn run_with(
    options: SnicitOptions,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| run_spec(gpu, p, &options, &spec())
}

/// SNICIT on problem `p` with `options` and `spec`.
fn run_spec(
    gpu: &Gpu,
    p: &Problem,
    options: &SnicitOptions,
    spec: &RunSpec,
) -> Result<GpuInference, spdnn_cuda::CudaError> {
    infer(gpu, &p.layers, &p.input, p.bias, p.upper, options, spec)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_converted_early() {
    check_exact_random(&run_with(options(1)));
    check_exact_random(&run_with(SnicitOptions {
        samples: 3,
        bins: 5,
        refresh_interval: 1,
        batch: Some(37),
        ..options(2)
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks_threshold_past_the_last_layer() {
    check_exact_random(&run_with(options(30)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn grouped_random_networks() {
    check_grouped_random(&run_with(options(1)));
    check_grouped_random(&run_with(SnicitOptions {
        refresh_interval: 1,
        batch: Some(50),
        ..options(2)
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf_before_convergence() {
    check_exact_random(&run_with(SnicitOptions {
        pre_convergence: PreConvergence::Bf,
        ..options(1)
    }));
    check_grouped_random(&run_with(SnicitOptions {
        pre_convergence: PreConvergence::Bf,
        refresh_interval: 2,
        ..options(2)
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rectangular_random_networks() {
    check_rectangular_random(&run_with(options(1)));
    check_rectangular_random(&run_with(SnicitOptions {
        samples: 3,
        bins: 5,
        refresh_interval: 1,
        batch: Some(37),
        ..options(2)
    }));
    // The threshold past the last layer: XY's stage through every layer.
    check_rectangular_random(&run_with(options(30)));
    check_rectangular_random(&run_with(SnicitOptions {
        pre_convergence: PreConvergence::Bf,
        ..options(1)
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn compressed_networks() {
    check_compressed(&run_with(options(30)));
    check_compressed(&run_with(SnicitOptions {
        batch: Some(700),
        refresh_interval: 3,
        ..options(2)
    }));
    check_compressed(&run_with(SnicitOptions {
        pre_convergence: PreConvergence::Bf,
        ..options(12)
    }));
}

/// `options` with the post-convergence layers streamed through two slots.
fn streamed(options: SnicitOptions) -> SnicitOptions {
    SnicitOptions {
        stream_post_layers: true,
        ..options
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn streamed_post_convergence_layers() {
    check_exact_random(&run_with(streamed(options(1))));
    // Several batches: each streams every layer again from the first.
    check_exact_random(&run_with(streamed(SnicitOptions {
        refresh_interval: 1,
        batch: Some(37),
        ..options(2)
    })));
    // Layers of different widths and sizes through the same slots.
    check_rectangular_random(&run_with(streamed(options(1))));
    check_compressed(&run_with(streamed(SnicitOptions {
        pre_convergence: PreConvergence::Bf,
        ..options(2)
    })));
    check_biased_random(&run_biased(streamed(options(1))), false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn general_random_networks() {
    check_general_random(&run_with(options(2)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generated_challenge_networks() {
    check_challenge(&run_with(options(30)), 1024, 120, 3000);
    check_challenge(
        &run_with(SnicitOptions {
            batch: Some(1000),
            refresh_interval: 7,
            ..options(10)
        }),
        1024,
        60,
        3000,
    );
    check_challenge(
        &run_with(SnicitOptions {
            pre_convergence: PreConvergence::Bf,
            ..options(12)
        }),
        1024,
        40,
        2000,
    );
    check_challenge(&run_with(options(8)), 4096, 24, 500);
    check_challenge(&run_with(options(4)), 16384, 12, 64);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn official_1024_network() {
    check_official_1024(&run_with(options(30)));
    check_official_1024(&run_with(SnicitOptions {
        batch: Some(500),
        ..options(20)
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn breakdown_has_four_stages_and_every_layer() {
    let gpu = spdnn_gputest::gpu();
    // The real network and images: rows survive to layer 30 and cluster.
    let (problem, truth) =
        spdnn_gputest::official_1024_subset().expect("the official N = 1024 files");
    let result = run_with(options(30))(&gpu, &problem).expect("snicit runs");
    assert_eq!(result.categories, truth);
    let names: Vec<&str> = result.stages.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "pre-convergence",
            "conversion",
            "post-convergence",
            "recovery"
        ]
    );
    assert!(
        result
            .stages
            .iter()
            .all(|(_, ms)| ms.is_finite() && *ms >= 0.0)
    );
    assert_eq!(result.layer_ms.len(), 120);
    let detail = |key: &str| detail(&result, key);
    let (rows, centroids, nonempty) = (
        detail("rows_at_threshold"),
        detail("centroids"),
        detail("nonempty_rows_after_conversion"),
    );
    assert!(
        rows >= truth.len() && centroids >= 1,
        "{rows} rows, {centroids} centroids"
    );
    assert!(nonempty >= centroids && nonempty <= rows);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_options_are_errors() {
    let gpu = spdnn_gputest::gpu();
    let problem = spdnn_gputest::challenge_problem(1024, 2, 10, 5);
    let spec = RunSpec::default();
    for bad in [
        SnicitOptions {
            threshold: 0,
            ..options(1)
        },
        SnicitOptions {
            samples: 0,
            ..options(1)
        },
        SnicitOptions {
            bins: 0,
            ..options(1)
        },
        SnicitOptions {
            epsilon: f32::NAN,
            ..options(1)
        },
        SnicitOptions {
            eta: -1.0,
            ..options(1)
        },
        SnicitOptions {
            refresh_interval: 0,
            ..options(1)
        },
        SnicitOptions {
            batch: Some(0),
            ..options(1)
        },
    ] {
        let result = infer(
            &gpu,
            &problem.layers,
            &problem.input,
            problem.bias,
            problem.upper,
            &bad,
            &spec,
        );
        assert!(result.is_err(), "{bad:?} was accepted");
    }
}

/// SNICIT with GLARE after threshold `t`: the segment is one of the lengths SNICIT
/// accepts for the widest layer (N in a square network), varied with the problem.
fn run_glare(t: usize) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| {
        let n = p
            .layers
            .iter()
            .map(|w| w.ncols())
            .fold(p.input.ncols(), usize::max);
        let shape = model::Shape {
            neurons: n,
            slab_width: 0,
            first_layer: t,
        };
        let candidates = Snicit::candidates(&shape);
        let segment = candidates[(n + p.input.nrows()) % candidates.len()];
        let options = SnicitOptions {
            glare: Some(Glare::new(segment)),
            refresh_interval: 2,
            ..options(t)
        };
        run_spec(gpu, p, &options, &spec())
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_random_networks() {
    check_glare(&run_glare(1));
    check_glare(&run_glare(2));
    check_grouped_random(&run_glare(1));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_rectangular_and_compressed_networks() {
    check_rectangular_random(&run_glare(1));
    check_rectangular_random(&run_glare(2));
    check_compressed(&run_glare(30));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn glare_challenge_networks() {
    let with = |segment: usize| SnicitOptions {
        glare: Some(Glare::new(segment)),
        ..options(30)
    };
    check_challenge(&run_with(with(1024)), 1024, 120, 3000);
    // Units of 256 positions: two row-major blocks per unit, vetoes between them.
    check_challenge(&run_with(with(256)), 1024, 120, 3000);
    check_challenge(
        &run_with(SnicitOptions {
            batch: Some(700),
            ..with(128)
        }),
        1024,
        60,
        3000,
    );
    check_challenge(&run_with(with(1024)), 4096, 40, 600);
    check_official_1024(&run_with(with(1024)));
    check_official_1024(&run_with(SnicitOptions {
        pre_convergence: PreConvergence::Bf,
        ..with(512)
    }));
}

/// SNICIT on a problem with a bias per output neuron (XY's `_neurons` kernels before and
/// after the threshold, or BF's per-neuron kernel before it).
fn run_biased(
    options: SnicitOptions,
) -> impl Fn(&Gpu, &BiasedProblem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    spdnn_gputest::biased::method_runner::<Snicit>(options, spec())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn per_neuron_biases() {
    check_biased_random(&run_biased(options(1)), false);
    check_biased_random(
        &run_biased(SnicitOptions {
            samples: 3,
            bins: 5,
            refresh_interval: 1,
            batch: Some(37),
            ..options(2)
        }),
        false,
    );
    check_biased_random(
        &run_biased(SnicitOptions {
            pre_convergence: PreConvergence::Bf,
            ..options(1)
        }),
        false,
    );
    // The threshold past the last layer: XY's stage through every layer.
    check_biased_random(&run_biased(options(30)), false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_shaped_chains() {
    // Converted after the dense first layer and in the middle of the sparse layers, with
    // XY's or BF's stage before; the dense last layer runs after the conversion.
    check_trained_shaped(&run_biased(options(1)), false);
    check_trained_shaped(
        &run_biased(SnicitOptions {
            refresh_interval: 2,
            batch: Some(700),
            ..options(3)
        }),
        false,
    );
    check_trained_shaped(
        &run_biased(SnicitOptions {
            pre_convergence: PreConvergence::Bf,
            ..options(3)
        }),
        false,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_networks_a_b_c() {
    check_trained_nets(&run_biased(options(4)));
    check_trained_nets(&run_biased(SnicitOptions {
        pre_convergence: PreConvergence::Bf,
        refresh_interval: 3,
        ..options(4)
    }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn positive_biases_and_glare_are_refused() {
    let gpu = spdnn_gputest::gpu();
    let p = spdnn_gputest::biased::trained_shaped_problem(32, 1, 4, true, 3);
    let error = run_biased(options(1))(&gpu, &p).unwrap_err().to_string();
    assert!(error.contains("only for biases ≤ 0"), "{error}");
    let p = spdnn_gputest::biased::trained_shaped_problem(32, 1, 4, false, 3);
    let glare = SnicitOptions {
        glare: Some(Glare::new(128)),
        ..options(1)
    };
    let error = run_biased(glare)(&gpu, &p).unwrap_err().to_string();
    assert!(error.contains("snicit+glare takes one bias"), "{error}");
}

/// A detail of a run's `details` as a number.
fn detail(result: &GpuInference, key: &str) -> usize {
    result
        .detail(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {:?}", result.details))
}

/// `prune = 0` (the default, given explicitly) is the exact run: the reference's
/// categories and values, bit for bit where the problems are exact.
#[test]
#[ignore = "needs a CUDA GPU"]
fn prune_zero_is_exact() {
    let exact = |options: SnicitOptions| SnicitOptions {
        prune: 0.0,
        ..options
    };
    check_exact_random(&run_with(exact(options(1))));
    check_grouped_random(&run_with(exact(SnicitOptions {
        refresh_interval: 1,
        ..options(2)
    })));
    check_challenge(&run_with(exact(options(30))), 1024, 120, 3000);
    let gpu = spdnn_gputest::gpu();
    let problem = spdnn_gputest::challenge_problem(1024, 2, 10, 5);
    let result = run_with(exact(options(1)))(&gpu, &problem).expect("snicit runs");
    assert_eq!(result.detail("prune"), Some("0"));
    assert!(result.details.iter().all(|(k, _)| k != "lossy"));
}

/// A small prune on the generated 1024-120 network: the run succeeds and says it is lossy,
/// the conversion is unchanged (pruning starts after it), no more rows stay non-empty at
/// the end than in the exact run, and the categories differ from the reference's in at
/// most 5 % of the rows. ε = 0.01 is under a sixth of one weight (1/16) and under a
/// thirtieth of the bias (−0.3), so a snapped element moves a next-layer sum by far less
/// than the bias it must cross for a row to die or live; rows that do change category
/// are those whose whole activity is within a few ε of the threshold, a small minority.
/// The bound is the acceptance bound of issue 16, not a measured figure.
#[test]
#[ignore = "needs a CUDA GPU"]
fn small_prune_on_a_challenge_network() {
    let gpu = spdnn_gputest::gpu();
    // MNIST-recipe rows: 138 of the 3000 are alive at layer 30 (the synthetic rows of
    // `challenge_problem` all die within 10 layers, which left this test nothing to prune);
    // 400 rows and 40 layers at sanitize scale (the threshold's 30 layers kept).
    let rows = spdnn_gputest::sized(3000, 400);
    let layers = spdnn_gputest::challenge_layers(120);
    let problem = spdnn_gputest::challenge_problem_mnist(1024, layers, rows, 7);
    let expected = spdnn_gputest::reference(&problem).categories;
    assert!(!expected.is_empty(), "the problem must keep rows alive");
    let exact = run_with(options(30))(&gpu, &problem).expect("the exact run");
    assert_eq!(exact.categories, expected);
    let pruned = run_with(SnicitOptions {
        prune: 0.01,
        ..options(30)
    })(&gpu, &problem)
    .expect("the pruned run");
    assert!(
        pruned.details.iter().any(|(k, _)| k == "lossy"),
        "{:?}",
        pruned.details
    );
    assert_eq!(
        detail(&pruned, "nonempty_rows_after_conversion"),
        detail(&exact, "nonempty_rows_after_conversion")
    );
    assert!(
        detail(&pruned, "nonempty_rows_at_end") <= detail(&exact, "nonempty_rows_at_end"),
        "pruned {:?}, exact {:?}",
        pruned.details,
        exact.details
    );
    let found: std::collections::BTreeSet<u32> = pruned.categories.iter().copied().collect();
    let truth: std::collections::BTreeSet<u32> = expected.iter().copied().collect();
    let differ = found.symmetric_difference(&truth).count();
    assert!(
        differ * 20 <= rows,
        "{differ} of {rows} rows changed category with prune 0.01"
    );
}

/// A prune larger than any activation snaps every non-centroid row onto its centroid at
/// the first post-convergence update: at the end at most the centroids are non-empty, and
/// every surviving row has the category of its centroid (so the run still completes).
#[test]
#[ignore = "needs a CUDA GPU"]
fn huge_prune_leaves_only_the_centroids() {
    let gpu = spdnn_gputest::gpu();
    // MNIST-recipe rows: 71 of the 2000 are alive at layer 10 (on 2026-11-23 this test ran
    // with synthetic rows, all dead by layer 10: no centroid, and it failed); 300 rows at
    // sanitize scale, over 40 layers.
    let (layers, rows) = (
        spdnn_gputest::challenge_layers(60),
        spdnn_gputest::sized(2000, 300),
    );
    let problem = spdnn_gputest::challenge_problem_mnist(1024, layers, rows, 7);
    let result = run_with(SnicitOptions {
        prune: 1e30,
        ..options(10)
    })(&gpu, &problem)
    .expect("the pruned run");
    let centroids = detail(&result, "centroids");
    assert!(centroids >= 1, "{:?}", result.details);
    // Every other row snaps onto its centroid; a centroid itself may still die later.
    assert!(
        detail(&result, "nonempty_rows_at_end") <= centroids,
        "{:?}",
        result.details
    );
    assert!(result.categories.len() <= detail(&result, "rows_at_threshold"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn prune_and_glare_are_refused() {
    let gpu = spdnn_gputest::gpu();
    let problem = spdnn_gputest::challenge_problem(1024, 2, 10, 5);
    let options = SnicitOptions {
        prune: 0.01,
        glare: Some(Glare::new(1024)),
        ..options(1)
    };
    let error = run_with(options)(&gpu, &problem).unwrap_err().to_string();
    assert!(
        error.contains("prune") && error.contains("GLARE"),
        "{error}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_profiled_only_run_is_the_timed_run() {
    // The sanitizers' one pass (RunSpec::profiled_only): the same categories and outputs as
    // a warm-up and a timed pass, one time, the stages and SNICIT's details (which only a
    // profiled pass collects) present. Several batches: the profiled pass collects each. The
    // threshold at layer 2, where rows of challenge networks still live (at 20 none did).
    let gpu = spdnn_gputest::gpu();
    let p = spdnn_gputest::challenge_problem(1024, 40, 300, 7);
    let batched = RunSpec {
        warmup: 1,
        repetitions: 1,
        keep_output: true,
        batch: Some(128),
        ..RunSpec::default()
    };
    let run = |spec: &RunSpec| run_spec(&gpu, &p, &options(2), spec).unwrap();
    let timed = run(&batched);
    let profiled = run(&RunSpec {
        profiled_only: true,
        ..batched
    });
    spdnn_gputest::compare(&p, &profiled, spdnn_gputest::Tolerance::Exact).unwrap();
    assert_eq!(profiled.categories, timed.categories);
    assert_eq!(profiled.output, timed.output);
    assert_eq!(profiled.infer_ms.len(), 1);
    assert!(profiled.infer_ms[0] > 0.0);
    assert_eq!(
        profiled.stages.iter().map(|s| &s.0).collect::<Vec<_>>(),
        timed.stages.iter().map(|s| &s.0).collect::<Vec<_>>()
    );
    // The details but the preparation's time.
    let facts = |r: &GpuInference| {
        r.details
            .iter()
            .filter(|(name, _)| name != "preprocessing_ms")
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(facts(&profiled), facts(&timed));
    assert!(
        profiled
            .detail("centroids")
            .is_some_and(|c| c.parse::<usize>().is_ok_and(|c| c > 0)),
        "{:?}",
        profiled.details
    );
}

/// The numbers of the `held_back` detail: batches held back, batches run alone, passes,
/// centroids equal to held ones.
fn held_counts(result: &GpuInference) -> [usize; 4] {
    let text = result
        .detail("held_back")
        .unwrap_or_else(|| panic!("no held_back in {:?}", result.details));
    let numbers: Vec<usize> = text
        .split_whitespace()
        .filter_map(|word| word.parse().ok())
        .collect();
    numbers
        .try_into()
        .unwrap_or_else(|_| panic!("four counts in {text:?}"))
}

/// Rows held back over several batches (the default) are the rows of batches run alone,
/// bit for bit, and the reference's, on MNIST-recipe rows of a generated challenge network
/// and on synthetic ones, in batches and held slots of several sizes: at threshold 30 the
/// rows of every batch converge to the same row (each batch's centroid takes the slot of
/// the first batch's); at thresholds 10 and 2 they have not, and the slots fill (passes
/// before the last batch) or a batch has more non-empty rows than slots (it runs alone).
/// A random network's batches run alone, between held ones, and stay exact.
#[test]
#[ignore = "needs a CUDA GPU"]
fn held_rows_are_the_rows_run_alone() {
    let gpu = spdnn_gputest::gpu();
    let rows = spdnn_gputest::sized(3000, 600);
    let mnist =
        spdnn_gputest::challenge_problem_mnist(1024, spdnn_gputest::challenge_layers(120), rows, 7);
    let synthetic = spdnn_gputest::challenge_problem(1024, 40, 300, 7);
    // (problem, threshold, batch, rows a held slot)
    let configs = [
        (&mnist, 30, 200, HELD_SHARE),
        (&mnist, 30, 20, HELD_SHARE),
        (&mnist, 10, 100, 1),
        (&mnist, 10, 100, HELD_SHARE),
        (&mnist, 2, 50, 4),
        (&synthetic, 2, 64, 2),
        (&synthetic, 2, 64, 8),
    ];
    let mut counts = Vec::new();
    for (problem, threshold, batch, share) in configs {
        let spec = RunSpec {
            warmup: 1,
            repetitions: 1,
            keep_output: true,
            batch: Some(batch),
            ..RunSpec::default()
        };
        let config = format!("threshold {threshold}, batch {batch}, share {share}");
        let held_options = SnicitOptions {
            held_share: share,
            ..options(threshold)
        };
        let held = run_spec(&gpu, problem, &held_options, &spec).expect("held back");
        let alone = run_spec(
            &gpu,
            problem,
            &SnicitOptions {
                hold_back: false,
                ..options(threshold)
            },
            &spec,
        )
        .expect("batches alone");
        spdnn_gputest::compare(problem, &held, spdnn_gputest::Tolerance::Exact)
            .unwrap_or_else(|e| panic!("{config}: {e}"));
        assert_eq!(held.categories, alone.categories, "{config}");
        assert_eq!(held.output, alone.output, "{config}");
        assert_eq!(alone.detail("held_back"), Some("off"));
        // The breakdown's layers are the chain's, whether the post-convergence layers ran
        // in a batch's step or in the finishing one.
        assert_eq!(held.layer_ms.len(), problem.layers.len(), "{config}");
        let [held_batches, alone_batches, passes, matches] = held_counts(&held);
        assert!(passes <= held_batches, "{config}: {:?}", held.details);
        counts.push((config, held_batches, alone_batches, passes, matches));
    }
    // Every path taken somewhere: batches held, slots passed over before the last batch,
    // batches run alone, centroids equal to held ones.
    let any = |f: fn(&(String, usize, usize, usize, usize)) -> bool| counts.iter().any(f);
    assert!(any(|c| c.1 > 0), "{counts:?}");
    assert!(any(|c| c.3 >= 2), "{counts:?}");
    assert!(any(|c| c.2 > 0 && c.1 > 0), "{counts:?}");
    assert!(any(|c| c.4 > 0), "{counts:?}");
    check_exact_random(&run_with(SnicitOptions {
        batch: Some(37),
        ..options(2)
    }));
    check_exact_random(&run_with(SnicitOptions {
        batch: Some(37),
        hold_back: false,
        ..options(2)
    }));
}
