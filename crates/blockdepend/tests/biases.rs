//! Trained networks (a bias per output neuron of every layer, each ≤ 0) through the kernel's
//! algorithm emulated on the CPU (`spdnn_blockdepend::emulate`, the kernel's arithmetic step
//! for step) against the CPU reference's official rule: random rectangular chains, chains
//! with planted classes that split where biases differ, saturating chains whose rows retire with
//! per-column proofs, and chains shaped like the paper's MNIST networks (dense first and
//! last layers, bound 1), under every option and device shape. A positive bias is refused.
//! No GPU needed.

use proptest::prelude::*;
use spdnn_blockdepend::emulate::{EmulatedRun, run};
use spdnn_blockdepend::{
    Bias, BlockDepend, BlockDependOptions, Compression, FormatChoice, PlacementChoice, Retire,
    STATE_BOUND,
};
use spdnn_cuda::method::{LayerChain, check_bias_support};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_gputest::biased::{BiasedProblem, biased_problem, reference, trained_shaped_problem};

mod common;

use common::{BIG, Knobs, NONE, SMALL, default_knobs, planted, saturating_biased};

fn with_knobs(
    problem: impl Strategy<Value = BiasedProblem>,
) -> impl Strategy<Value = (BiasedProblem, Knobs)> {
    common::with_knobs_of(problem, |p| p.layers.len())
}

fn emulate<'p>(p: &'p BiasedProblem, k: &Knobs) -> Result<EmulatedRun<'p>, String> {
    run(
        &p.layers, &p.input, &p.biases, p.upper, &k.options, &k.limits, k.blocks,
    )
}

/// Categories equal; values bit for bit (`None`) or within `relative·max(|v|, 1)`.
fn check(p: &BiasedProblem, k: &Knobs, relative: Option<f32>) -> Result<(), String> {
    let result = emulate(p, k)?;
    common::compare_emulated(&result, &reference(p), p.upper, p.input.nrows(), relative)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    /// Random rectangular chains with dyadic per-neuron biases ≤ 0: bit for bit, under
    /// every option and device shape.
    #[test]
    fn per_neuron_biased_random_networks((p, k) in with_knobs(biased_problem(70, 120, false))) {
        check(&p, &k, None).map_err(TestCaseError::fail)?;
    }

    /// Chains with planted classes of identical columns, one bias per class and some
    /// neurons with a bias of their own: compression merges only outputs with equal
    /// biases, bit for bit.
    #[test]
    fn planted_per_neuron_biased_networks((p, k) in with_knobs(planted())) {
        check(&p, &k, None).map_err(TestCaseError::fail)?;
    }

    /// Saturating chains with per-column biases: rows retire at the bound where every
    /// column of every later layer was proved with its own bias, bit for bit, and retiring
    /// changes nothing.
    #[test]
    fn saturating_per_neuron_biased_networks_retire((p, k) in with_knobs(saturating_biased())) {
        check(&p, &k, None).map_err(TestCaseError::fail)?;
        let with = |retire: bool| Knobs {
            options: BlockDependOptions { retire, ..k.options.clone() },
            ..k.clone()
        };
        let on = emulate(&p, &with(true)).map_err(TestCaseError::fail)?;
        let off = emulate(&p, &with(false)).map_err(TestCaseError::fail)?;
        prop_assert_eq!(on.categories(), off.categories());
        prop_assert_eq!(on.values(p.upper).unwrap(), off.values(p.upper).unwrap());
        prop_assert!(off.emulation.states.iter().all(|&s| s != STATE_BOUND));
    }
}

#[test]
fn classes_split_where_biases_differ() {
    // Grouped layers of 64 outputs (4 classes of 16), biases per class: compressed to 4
    // columns a layer; a bias of its own for one neuron splits its class.
    let layer = |shift: u32| {
        let t: Vec<(u32, u32, f32)> = (0..64u32)
            .flat_map(|r| {
                (0..64u32)
                    .filter(move |c| (r + c / 16 + shift).is_multiple_of(3))
                    .map(move |c| (r, c, (1 + c / 16) as f32 / 32.0))
            })
            .collect();
        Csr::from_triplets(64, 64, &t).unwrap()
    };
    let layers = vec![layer(0), layer(1), layer(2)];
    let input = Csr::from_triplets(
        5,
        64,
        &(0..5u32)
            .flat_map(|r| {
                (0..64u32)
                    .filter(move |c| (r + c) % 4 == 0)
                    .map(move |c| (r, c, 1.0))
            })
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let per_class: Vec<Vec<f32>> = (0..3)
        .map(|l| (0..64).map(|c| -((c / 16 + l) % 3) as f32 / 64.0).collect())
        .collect();
    let mut split = per_class.clone();
    split[1][17] = -1.0 / 128.0;
    for (biases, widths) in [(per_class, [4, 4, 4]), (split, [4, 5, 4])] {
        let p = BiasedProblem {
            layers: layers.clone(),
            input: input.clone(),
            biases,
            upper: 4.0,
        };
        let result = emulate(&p, &default_knobs()).unwrap();
        assert!(matches!(
            result.chain.compression(),
            Compression::Compressed { .. }
        ));
        let got: Vec<usize> = result.chain.layers().iter().map(|w| w.ncols()).collect();
        assert_eq!(got, widths);
        let kept = result.chain.biases().unwrap();
        assert_eq!(
            kept.iter().map(Vec::len).collect::<Vec<_>>(),
            widths.to_vec()
        );
        // The layout holds them per layer at the widest padded width, padding 0.
        assert_eq!(result.layout.bias_stride, 32);
        for (l, b) in kept.iter().enumerate() {
            let laid = result.layout.biases_of(l).unwrap();
            assert_eq!(&laid[..b.len()], &b[..]);
            assert!(laid[b.len()..].iter().all(|v| v.to_bits() == 0));
        }
        check(&p, &default_knobs(), None).unwrap();
    }
}

#[test]
fn one_columns_bias_moves_the_retirement_suffix() {
    // Dense layers of ones, bound 1: every column sums to 8 ≥ 1 with a small bias. Sinking
    // one column of layer 3 moves the proved suffix behind it; the rows still come out
    // right (and all at the bound).
    let ones = Csr::from_triplets(
        8,
        8,
        &(0..8u32)
            .flat_map(|r| (0..8u32).map(move |c| (r, c, 1.0)))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let layers = vec![ones; 5];
    let input = Csr::from_triplets(3, 8, &[(0, 0, 1.0), (1, 3, 0.5), (2, 7, 2.0)]).unwrap();
    let mut biases = vec![vec![-0.25; 8]; 5];
    let strong = BiasedProblem {
        layers: layers.clone(),
        input: input.clone(),
        biases: biases.clone(),
        upper: 1.0,
    };
    let result = emulate(&strong, &default_knobs()).unwrap();
    assert_eq!(result.chain.retire(), &Retire::Proved { suffix_start: 0 });
    check(&strong, &default_knobs(), None).unwrap();
    biases[2][5] = -7.5;
    let weak = BiasedProblem { biases, ..strong };
    let k = Knobs {
        options: BlockDependOptions {
            compress: false,
            ..BlockDependOptions::default()
        },
        ..default_knobs()
    };
    let result = emulate(&weak, &k).unwrap();
    assert_eq!(result.chain.retire(), &Retire::Proved { suffix_start: 3 });
    // Column 5 of layer 3 gives 8 − 7.5 = 0.5, then layers 4–5 bring every row back to 1.
    assert!(result.emulation.computed[3] > 0);
    check(&weak, &k, None).unwrap();
    check(&weak, &default_knobs(), None).unwrap();
}

#[test]
fn trained_shaped_chains_match_the_reference() {
    // 784 → n (dense) → n × sparse (55%) → 10 (dense), random real weights and inputs,
    // biases ≤ 0, bound 1: layer 1 scatters in input order, so within rounding.
    for (n, sparse, seed) in [(32, 3, 1), (128, 2, 2), (64, 1, 3)] {
        let p = trained_shaped_problem(n, sparse, 150, false, seed);
        assert_eq!(p.layers[0].nnz(), 784 * n);
        for k in [
            default_knobs(),
            Knobs {
                options: BlockDependOptions {
                    compress: false,
                    cuts: Some(vec![1, 2]),
                    ..BlockDependOptions::default()
                },
                limits: SMALL,
                blocks: 3,
            },
            Knobs {
                options: BlockDependOptions {
                    format: FormatChoice::Ell,
                    placement: PlacementChoice::Global,
                    ..BlockDependOptions::default()
                },
                limits: NONE,
                blocks: 2,
            },
        ] {
            check(&p, &k, Some(1e-4)).unwrap_or_else(|e| panic!("{n}-{sparse} {k:?}: {e}"));
        }
        let result = emulate(&p, &default_knobs()).unwrap();
        // Random real weights: nothing merges, and the dense ends keep their shapes.
        assert_eq!(result.chain.compression(), &Compression::Identity);
        assert_eq!(result.layout.layers[0].in_width, 784);
        assert_eq!(result.layout.layers.last().unwrap().out_width, 10);
        assert_eq!(result.layout.bias_stride, n.div_ceil(32) * 32);
    }
}

#[test]
fn positive_biases_are_refused_with_a_clear_error() {
    let p = trained_shaped_problem(32, 1, 4, true, 3);
    let (layer, neuron, value) = LayerChain::with_biases(&p.layers, &p.biases, p.upper)
        .first_positive_bias()
        .expect("a positive bias");
    // The harness refuses it before anything is prepared (the GPU test checks the run).
    let chain = LayerChain::with_biases(&p.layers, &p.biases, p.upper);
    let error = check_bias_support::<BlockDepend>(&chain)
        .unwrap_err()
        .to_string();
    for part in [
        "blockdepend",
        "only for biases ≤ 0",
        &format!("neuron {neuron} of layer {layer} has bias {value}"),
    ] {
        assert!(error.contains(part), "{part}: {error}");
    }
    // The chain itself refuses it too (for users of the crate's own functions).
    let error = emulate(&p, &default_knobs()).unwrap_err();
    assert!(
        error.contains("only for biases ≤ 0") && error.contains(&format!("has bias {value}")),
        "{error}"
    );
    // Biases ≤ 0 (zeros and −0.0 included) are taken.
    let mut fine = p.clone();
    for b in fine.biases.iter_mut().flatten() {
        *b = if *b > 0.0 { -0.0 } else { *b };
    }
    let chain = LayerChain::with_biases(&fine.layers, &fine.biases, fine.upper);
    check_bias_support::<BlockDepend>(&chain).unwrap();
    check(&fine, &default_knobs(), Some(1e-4)).unwrap();
    // The scalar form still works alongside.
    let scalar = run(
        &fine.layers,
        &fine.input,
        Bias::One(-0.125),
        fine.upper,
        &BlockDependOptions::default(),
        &BIG,
        2,
    )
    .unwrap();
    assert!(scalar.chain.biases().is_none());
    assert_eq!(scalar.layout.bias_stride, 0);
}

#[test]
fn outputs_reordered_for_the_banks_keep_their_biases() {
    // Random sparse layers reading 4096 inputs (fan-in 32): the layout moves the outputs of
    // every layer that feeds one within their groups of 32 to balance its banks, and each
    // bias moves with its neuron. Dyadic weights, biases and inputs: bit for bit.
    let mut state = 0x853c_49e6_748f_ea9bu64;
    let mut next = move |below: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    };
    let widths = [64usize, 4096, 4096, 4096, 40];
    let mut layers = Vec::new();
    let mut biases = Vec::new();
    for pair in widths.windows(2) {
        let (inputs, outputs) = (pair[0], pair[1]);
        let mut triplets = Vec::new();
        for c in 0..outputs as u32 {
            let mut chosen: Vec<u32> = Vec::new();
            while chosen.len() < 32.min(inputs) {
                let k = next(inputs as u64) as u32;
                if !chosen.contains(&k) {
                    chosen.push(k);
                }
            }
            for k in chosen {
                let w = (next(15) as f32 - 6.0) / 8.0;
                triplets.push((k, c, w));
            }
        }
        layers.push(Csr::from_triplets(inputs, outputs, &triplets).unwrap());
        biases.push((0..outputs).map(|_| -(next(4) as f32) / 16.0).collect());
    }
    let input_triplets: Vec<(u32, u32, f32)> = (0..50u32)
        .flat_map(|r| {
            (0..64u32)
                .filter(move |k| (r + k) % 3 == 0)
                .map(move |k| (r, k, 1.0))
        })
        .collect();
    let p = BiasedProblem {
        layers,
        input: Csr::from_triplets(50, 64, &input_triplets).unwrap(),
        biases,
        upper: 32.0,
    };
    let result = emulate(&p, &default_knobs()).unwrap();
    assert!(!result.categories().is_empty());
    // The outputs of layers 1-3, read by ELL layers of 32 random entries a column out of
    // 4096 (layer 4's 40 outputs too); the last layer's never move.
    assert!(result.layout.positions[..3].iter().all(Option::is_some));
    assert!(result.layout.positions.last().unwrap().is_none());
    // The layout's biases are the chain's, moved with their outputs.
    for (l, position) in result.layout.positions.iter().enumerate() {
        let stored = result.layout.biases_of(l).unwrap();
        for (c, &b) in p.biases[l].iter().enumerate() {
            let at = position.as_ref().map_or(c, |p| p[c] as usize);
            assert_eq!(stored[at].to_bits(), b.to_bits(), "layer {l} output {c}");
        }
    }
    check(&p, &default_knobs(), None).unwrap();
}
