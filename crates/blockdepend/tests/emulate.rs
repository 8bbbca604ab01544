//! The kernel's algorithm, emulated on the CPU (`spdnn_blockdepend::emulate`), against the
//! CPU reference: random exact, grouped and general networks, saturating ones (retired
//! rows), generated challenge networks and the official N = 1024 network, under every
//! option (compression, retirement, formats, placements, tiles, cuts) and device shape
//! (shared memory, blocks). No GPU needed.

use proptest::prelude::*;
use spdnn_blockdepend::emulate::{EmulatedRun, run};
use spdnn_blockdepend::{
    BlockDependOptions, Format, FormatChoice, Placement, PlacementChoice, STATE_BOUND,
};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_gputest::{Problem, exact_problem, general_problem, grouped_problem, reference};

mod common;

use common::{BIG, Knobs, NONE, default_knobs};

fn with_knobs(problem: impl Strategy<Value = Problem>) -> impl Strategy<Value = (Problem, Knobs)> {
    common::with_knobs_of(problem, |p| p.layers.len())
}

fn emulate<'p>(p: &'p Problem, k: &Knobs) -> Result<EmulatedRun<'p>, String> {
    run(
        &p.layers, &p.input, p.bias, p.upper, &k.options, &k.limits, k.blocks,
    )
}

/// Categories equal; values bit for bit (`None`) or within `relative·max(|v|, 1)`.
fn check(p: &Problem, k: &Knobs, relative: Option<f32>) -> Result<(), String> {
    let result = emulate(p, k)?;
    common::compare_emulated(&result, &reference(p), p.upper, p.input.nrows(), relative)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    /// Exact problems (dyadic or integer values): bit for bit, compressed or not.
    #[test]
    fn exact_random_networks((p, k) in with_knobs(exact_problem(70, 120))) {
        check(&p, &k, None).map_err(TestCaseError::fail)?;
    }

    /// Grouped layers (classes of 16 outputs): compression merges them, bit for bit.
    #[test]
    fn grouped_random_networks((p, k) in with_knobs(grouped_problem(4, 100))) {
        check(&p, &k, None).map_err(TestCaseError::fail)?;
    }

    /// Arbitrary positive weights: within the GPU tests' tolerance.
    #[test]
    fn general_random_networks((p, k) in with_knobs(general_problem(70, 100))) {
        check(&p, &k, Some(1e-5)).map_err(TestCaseError::fail)?;
    }

    /// Saturating networks (GLARE's case): rows retire at the bound, bit for bit, and
    /// retiring changes nothing.
    #[test]
    fn saturating_networks_retire(
        (p, k) in with_knobs(spdnn_gputest::saturating_problem(1, 60, 8, 100))
    ) {
        check(&p, &k, None).map_err(TestCaseError::fail)?;
        let on = emulate(&p, &Knobs { options: BlockDependOptions { retire: true, ..k.options.clone() }, ..k.clone() })
            .map_err(TestCaseError::fail)?;
        let off = emulate(&p, &Knobs { options: BlockDependOptions { retire: false, ..k.options.clone() }, ..k.clone() })
            .map_err(TestCaseError::fail)?;
        prop_assert_eq!(on.categories(), off.categories());
        prop_assert_eq!(on.values(p.upper).unwrap(), off.values(p.upper).unwrap());
        prop_assert!(off.emulation.states.iter().all(|&s| s != STATE_BOUND));
        let on_work: usize = on.emulation.computed.iter().sum();
        let off_work: usize = off.emulation.computed.iter().sum();
        prop_assert!(on_work <= off_work);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Layers of multiples of one value (one value included), stored scaled: bit for bit
    /// the reference and the same chain stored as pairs, under random options and devices.
    #[test]
    fn scaled_layers_match_the_reference_and_the_pairs((p, k) in with_knobs(scaled_problem())) {
        check_scaled_against_pairs(&p, &k, None).map_err(TestCaseError::fail)?;
        check(&p, &k, None).map_err(TestCaseError::fail)?;
    }
}

/// `p` with each layer's weights replaced by multiples `m·b` (`m` in `1..=most`, cycling
/// over the entries; `most = 1`: one value) of a base `b` of 0.5 or 1: the structure of the
/// compressed challenge layers, on random shapes; exact (few bits, as the problem's own).
fn scaled(mut p: Problem, scales: &[(bool, u32)]) -> Problem {
    for (w, &(half, most)) in p.layers.iter_mut().zip(scales) {
        let base = if half { 0.5 } else { 1.0 };
        let t: Vec<(u32, u32, f32)> = w
            .triplets()
            .enumerate()
            .map(|(i, (r, c, _))| (r, c, base * (1 + i as u32 * 7 % most) as f32))
            .collect();
        *w = Csr::from_triplets(w.nrows(), w.ncols(), &t).unwrap();
    }
    p
}

fn scaled_problem() -> impl Strategy<Value = Problem> {
    exact_problem(70, 120)
        .prop_flat_map(|p| {
            let depth = p.layers.len();
            (
                Just(p),
                proptest::collection::vec((proptest::bool::ANY, 1u32..=3), depth),
            )
        })
        .prop_map(|(p, scales)| scaled(p, &scales))
}

/// The run with `format` instead of the knobs' own.
fn with_format(k: &Knobs, format: FormatChoice) -> Knobs {
    Knobs {
        options: BlockDependOptions {
            format,
            ..k.options.clone()
        },
        ..k.clone()
    }
}

/// Scaled ELL (`FormatChoice::Ell`) against the same chain stored as pairs: the same
/// layout but for the entries, so the same states and final values, bit for bit.
/// The scaled and pair layouts of `p` emulated: the same results bit for bit, and the
/// scaled run against the reference, bit for bit (`relative` `None`: exact problems) or
/// within `relative·max(|v|, 1)`. Returns the scaled layers.
fn check_scaled_against_pairs(
    p: &Problem,
    k: &Knobs,
    relative: Option<f32>,
) -> Result<usize, String> {
    let scaled = emulate(p, &with_format(k, FormatChoice::Ell))?;
    let pairs = emulate(p, &with_format(k, FormatChoice::EllPairs))?;
    if pairs.layout.scaled_count() != 0 {
        return Err("pairs forced, yet a layer is scaled".into());
    }
    if scaled.emulation.states != pairs.emulation.states
        || scaled
            .emulation
            .output
            .iter()
            .zip(&pairs.emulation.output)
            .any(|(a, b)| a.to_bits() != b.to_bits())
        // The same rows between launches; within a launch the scaled layout's tiles may skip
        // the checks before circulant layers (which the pairs layout has none of), and then
        // compute more rows there (Segment::check_deferred).
        || scaled.emulation.carried != pairs.emulation.carried
        || scaled
            .emulation
            .computed
            .iter()
            .zip(&pairs.emulation.computed)
            .any(|(a, b)| a < b)
    {
        return Err("scaled and pair entries give different results".into());
    }
    common::compare_emulated(&scaled, &reference(p), p.upper, p.input.nrows(), relative)?;
    Ok(scaled.layout.scaled_count())
}

fn problem(layers: Vec<Csr>, input: Csr, bias: f32, upper: f32) -> Problem {
    Problem {
        layers,
        input,
        bias,
        upper,
    }
}

#[test]
fn all_saturating_rows_retire_after_the_first_layer() {
    // Tiles retire them after layer 1; a row a lane computes them through its launch and
    // checks them after its last layer (Segment::check_deferred). No later layer computes one.
    let p = spdnn_gputest::all_saturating_problem(64, 12, 50);
    let result = emulate(&p, &default_knobs()).unwrap();
    assert!(result.emulation.states.iter().all(|&s| s == STATE_BOUND));
    let first = &result.segments[0];
    let through = match first.placement {
        Placement::Lanes => first.end,
        _ => 1,
    };
    let computed = &result.emulation.computed;
    assert!(computed[..through].iter().all(|&c| c == 50), "{computed:?}");
    assert!(computed[through..].iter().all(|&c| c == 0), "{computed:?}");
    let tiles = Knobs {
        options: BlockDependOptions {
            placement: PlacementChoice::Shared,
            ..default_knobs().options
        },
        ..default_knobs()
    };
    let result = emulate(&p, &tiles).unwrap();
    assert_eq!(result.emulation.computed[0], 50);
    assert!(result.emulation.computed[1..].iter().all(|&c| c == 0));
    check(&p, &default_knobs(), None).unwrap();
}

#[test]
fn edge_shapes_match_the_reference() {
    let w = |n: usize, t: &[(u32, u32, f32)]| Csr::from_triplets(n, n, t).unwrap();
    // One neuron, one row, one layer.
    let p = problem(
        vec![w(1, &[(0, 0, 2.0)])],
        Csr::from_triplets(1, 1, &[(0, 0, 1.0)]).unwrap(),
        -0.5,
        32.0,
    );
    check(&p, &default_knobs(), None).unwrap();
    // Rows of zeros, rows that die in layer 2, an input row with no entries.
    let layers = vec![
        w(3, &[(0, 0, 1.0), (1, 1, 1.0), (2, 2, 1.0)]),
        w(3, &[(0, 0, 0.25), (1, 1, 4.0), (2, 2, 1.0)]),
        w(3, &[(0, 1, 1.0), (1, 2, 1.0), (2, 0, 1.0)]),
    ];
    let input = Csr::from_triplets(
        5,
        3,
        &[
            (0, 0, 1.0),
            (1, 1, 1.0),
            (2, 2, 1.0),
            (4, 0, 1.0),
            (4, 2, 1.0),
        ],
    )
    .unwrap();
    let p = problem(layers, input, -0.5, 2.0);
    for blocks in [1, 2, 7] {
        for tile_rows in [None, Some(1), Some(2), Some(4)] {
            for cuts in [None, Some(vec![1]), Some(vec![2]), Some(vec![1, 2])] {
                let k = Knobs {
                    options: BlockDependOptions {
                        tile_rows,
                        cuts: cuts.clone(),
                        ..BlockDependOptions::default()
                    },
                    limits: BIG,
                    blocks,
                };
                check(&p, &k, None).unwrap();
            }
        }
    }
}

#[test]
fn wide_layers_run_in_global_memory_and_agree() {
    // 60000 wide: not one row fits 227 KiB; two sparse layers.
    let n = 60_000usize;
    let t1: Vec<(u32, u32, f32)> = (0..n as u32)
        .map(|i| (i, (i * 7) % n as u32, 1.5))
        .collect();
    let t2: Vec<(u32, u32, f32)> = (0..n as u32)
        .map(|i| (i, (i + 1) % n as u32, 1.0))
        .collect();
    let layers = vec![
        Csr::from_triplets(n, n, &t1).unwrap(),
        Csr::from_triplets(n, n, &{
            let mut t = t2;
            t.sort_by_key(|&(i, j, _)| (i, j));
            t
        })
        .unwrap(),
    ];
    let input = Csr::from_triplets(3, n, &[(0, 5, 1.0), (1, 59_999, 1.0), (2, 17, 0.5)]).unwrap();
    let p = problem(layers, input, -0.25, 32.0);
    let k = default_knobs();
    let result = emulate(&p, &k).unwrap();
    assert!(
        result
            .segments
            .iter()
            .all(|s| s.placement == Placement::Global)
    );
    check(&p, &k, None).unwrap();
}

#[test]
fn random_wide_networks_split_their_tiles_and_agree() {
    // The general-network benchmark's kind of network (random inputs and weights, nothing
    // to compress), 2048 wide: a split tile holds 28 rows where two buffers hold 14.
    let n = 2048;
    let network = spdnn_sdgc::generator::random_network(n, 4, 32, 3).unwrap();
    let input = spdnn_sdgc::images::synthetic(150, n, 3).unwrap().features;
    let p = problem(network.layers().to_vec(), input, -0.35, 32.0);
    let k = default_knobs();
    let result = emulate(&p, &k).unwrap();
    for s in &result.segments {
        assert_eq!((s.placement, s.tile), (Placement::Split, 28), "{s:?}");
        let model = s.model;
        assert!(model.split_bytes < model.shared_bytes, "{model:?}");
    }
    // Rows live through every layer (the weights keep them alive), all computed.
    assert!(result.emulation.computed.iter().all(|&rows| rows > 100));
    // The slots' order is not the inputs' order: sums differ from the reference's in the
    // last bits, and four random layers let that grow a little.
    check(&p, &k, Some(1e-4)).unwrap();
    for placement in [PlacementChoice::Shared, PlacementChoice::Global] {
        let forced = Knobs {
            options: BlockDependOptions {
                placement,
                ..BlockDependOptions::default()
            },
            ..default_knobs()
        };
        check(&p, &forced, Some(1e-4)).unwrap_or_else(|e| panic!("{placement:?}: {e}"));
    }
    // Split forced where not one row fits a block: an error naming the buffer.
    let none = Knobs {
        options: BlockDependOptions {
            placement: PlacementChoice::Split,
            ..BlockDependOptions::default()
        },
        limits: NONE,
        blocks: 2,
    };
    let error = emulate(&p, &none).unwrap_err();
    assert!(error.contains("one buffer"), "{error}");
}

#[test]
fn generated_challenge_networks_match() {
    for (n, l, rows) in [(1024, 30, 300), (4096, 12, 200)] {
        // MNIST-recipe rows, some of which live through every layer (uniform random rows
        // all die within the first ~10 layers and would only test dying).
        let p = spdnn_gputest::challenge_problem_mnist(n, l, rows, 5);
        let alive = spdnn_gputest::reference(&p).categories.len();
        assert!(
            alive > 0 || !spdnn_gputest::has_mnist(),
            "{n}-{l}: no row lives to the end"
        );
        for compress in [true, false] {
            let k = Knobs {
                options: BlockDependOptions {
                    compress,
                    ..BlockDependOptions::default()
                },
                ..default_knobs()
            };
            check(&p, &k, Some(1e-5))
                .unwrap_or_else(|e| panic!("{n}-{l} compress {compress}: {e}"));
        }
    }
}

#[test]
fn the_compressed_official_network_gives_the_official_truth() {
    let Some((p, truth)) = spdnn_gputest::official_1024_subset() else {
        return;
    };
    let result = emulate(&p, &default_knobs()).unwrap();
    assert_eq!(result.categories(), truth);
    let widths: Vec<usize> = result.layout.layers.iter().map(|l| l.out_width).collect();
    assert!(widths.iter().all(|&w| w == 64 || w == 32), "{widths:?}");
    check(&p, &default_knobs(), Some(1e-5)).unwrap();
    // Most rows are finished long before layer 120.
    let computed = &result.emulation.computed;
    assert_eq!(computed[0], p.input.nrows());
    assert_eq!(computed[119], 0, "{computed:?}");
    let _ = p.input.nnz();
}

#[test]
fn bad_options_are_errors() {
    let p = spdnn_gputest::challenge_problem(1024, 3, 4, 1);
    let bad = |options: BlockDependOptions| {
        emulate(
            &p,
            &Knobs {
                options,
                ..default_knobs()
            },
        )
    };
    assert!(
        bad(BlockDependOptions {
            tile_rows: Some(0),
            ..Default::default()
        })
        .is_err()
    );
    assert!(
        bad(BlockDependOptions {
            cuts: Some(vec![3]),
            ..Default::default()
        })
        .is_err()
    );
    assert!(
        bad(BlockDependOptions {
            cuts: Some(vec![2, 1]),
            ..Default::default()
        })
        .is_err()
    );
    let e = emulate(
        &p,
        &Knobs {
            options: BlockDependOptions {
                placement: PlacementChoice::Shared,
                compress: false,
                ..Default::default()
            },
            limits: NONE,
            blocks: 2,
        },
    )
    .unwrap_err();
    assert!(e.contains("shared memory"), "{e}");
}

#[test]
fn wide_scaled_layers_take_32_bit_entries_and_agree() {
    // 33000 inputs a layer: an index takes 16 bits, with m up to 3 (2 bits) an entry 32. Two
    // buffers of a row do not fit a block, one does: split and global tiles.
    let p = common::wide_scaled_problem();
    for placement in [PlacementChoice::Split, PlacementChoice::Global] {
        let k = Knobs {
            options: BlockDependOptions {
                placement,
                compress: false,
                ..BlockDependOptions::default()
            },
            ..default_knobs()
        };
        let result = emulate(&p, &with_format(&k, FormatChoice::Ell)).unwrap();
        let formats: Vec<Format> = result.layout.layers.iter().map(|l| l.format).collect();
        assert_eq!(
            formats,
            [Format::Input, Format::EllScaled32, Format::EllScaled32],
            "{placement:?}"
        );
        assert!(
            result
                .segments
                .iter()
                .all(|s| s.placement != Placement::Shared)
        );
        assert_eq!(
            check_scaled_against_pairs(&p, &k, None),
            Ok(2),
            "{placement:?}"
        );
    }
}

#[test]
fn compressed_challenge_networks_are_scaled_and_agree() {
    // Generated challenge networks, compressed: every ELL layer scaled (one value in the
    // first cycle, multiples of 1/16 after), the same results as pairs, and the reference's
    // within rounding (MNIST-recipe rows are not dyadic: the slots' order is not the
    // reference's; with synthetic binary rows, when MNIST is absent, they are bit for bit).
    for (n, l, rows) in [(1024, 30, 200), (4096, 16, 120)] {
        let p = spdnn_gputest::challenge_problem_mnist(n, l, rows, 5);
        let k = default_knobs();
        let relative = spdnn_gputest::has_mnist().then_some(1e-4);
        let scaled =
            check_scaled_against_pairs(&p, &k, relative).unwrap_or_else(|e| panic!("{n}-{l}: {e}"));
        let (_, _, ell) = emulate(&p, &with_format(&k, FormatChoice::Ell))
            .unwrap()
            .layout
            .format_counts();
        assert_eq!((scaled, ell), (l - 1, l - 1), "{n}-{l}");
    }
}

#[test]
fn networks_whose_layer_1_folds_run_it_a_row_a_lane() {
    // The networks of the GPU test `bitmap_inputs_count_the_folded_bins`: layer 1 folds into
    // its 32 or 64 bins (input k feeds k and k + 1 mod width: offsets 0 and width - 1), launch
    // 1 runs it a row a lane by default (where a binary batch is loaded as a bitmap), and the
    // emulation agrees with the reference. 40 and 1000 inputs leave a row's last word part
    // full; 2000 take two rounds of 32 words.
    for (inputs, width) in [(1000, 32), (2000, 64), (1024, 64), (40, 32)] {
        let p = common::folding_problem(inputs, width, 6, 200, 7);
        let k = default_knobs();
        let run = emulate(&p, &k).unwrap();
        let first = &run.layout.first;
        let fold = first.scaled.as_ref().and_then(|s| s.fold.clone());
        let case = format!("{inputs} inputs, {width} bins");
        assert_eq!(
            (first.width, fold),
            (width, Some(vec![[0, 1], [width as u32 - 1, 1]])),
            "{case}"
        );
        assert_ne!(first.fold_table, 0, "{case}");
        assert_eq!(run.segments[0].placement, Placement::Lanes, "{case}");
        check(&p, &k, Some(1e-5)).unwrap_or_else(|e| panic!("{case}: {e}"));
    }
}
