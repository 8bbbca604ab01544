//! Small networks and statistics computed by hand.

use ndarray::{Array2, array};
use spdnn_formats::Csr;
use spdnn_reference::{
    Activation, Inference, LayerStats, Options, ReferenceError, SegmentStats, categories_of, infer,
    input_stats,
};

fn csr(nrows: usize, ncols: usize, entries: &[(u32, u32, f32)]) -> Csr {
    Csr::from_triplets(nrows, ncols, entries).unwrap()
}

fn keep() -> Options {
    Options {
        keep_output: true,
        ..Options::default()
    }
}

fn run<T: spdnn_reference::Element>(
    layers: &[Csr],
    input: &Csr,
    bias: f32,
    upper_bound: f32,
) -> Inference<T> {
    infer::<T>(layers, input, Activation { bias, upper_bound }, &keep()).unwrap()
}

/// W: y0 feeds outputs 0 and 1, y1 feeds output 1 with -1 (cancelling y0), y2 feeds
/// output 2; nothing feeds output 3.
fn cancelling_layer() -> Csr {
    csr(4, 4, &[(0, 0, 1.0), (0, 1, 1.0), (1, 1, -1.0), (2, 2, 5.0)])
}

#[test]
fn bias_goes_only_where_the_product_is_structurally_nonzero() {
    // Y = [1, 1, 0, 0]: Z = [1, 0 (1 - 1, structural), 0 (y2 = 0), 0 (no weight)].
    let input = csr(1, 4, &[(0, 0, 1.0), (0, 1, 1.0)]);
    let positive = run::<f64>(&[cancelling_layer()], &input, 0.5, 32.0);
    assert_eq!(positive.output.unwrap(), array![[1.5, 0.5, 0.0, 0.0]]);
    let negative = run::<f32>(&[cancelling_layer()], &input, -0.25, 32.0);
    assert_eq!(negative.output.unwrap(), array![[0.75f32, 0.0, 0.0, 0.0]]);
    assert_eq!(negative.categories, vec![1]);
}

#[test]
fn a_stored_input_zero_is_not_structural() {
    // y2 is stored but 0: output 2 gets no bias even though W_22 is stored.
    let input = csr(1, 4, &[(0, 1, 2.0), (0, 2, 0.0)]);
    let result = run::<f32>(&[cancelling_layer()], &input, 0.5, 32.0);
    // Z = [0, -2 (structural), 0, 0] -> [0, -1.5 -> 0, 0, 0]
    assert_eq!(result.output.unwrap(), array![[0.0f32, 0.0, 0.0, 0.0]]);
    assert!(result.categories.is_empty());
}

#[test]
fn activations_are_clipped_to_the_bound() {
    // Z = [3, 3] + (-0.5) = 2.5 -> clipped to 2; the second output gets 1 - 0.5 = 0.5.
    let w = csr(2, 2, &[(0, 0, 3.0), (1, 1, 1.0)]);
    let input = csr(1, 2, &[(0, 0, 1.0), (0, 1, 1.0)]);
    let result = run::<f64>(std::slice::from_ref(&w), &input, -0.5, 2.0);
    assert_eq!(result.output.unwrap(), array![[2.0, 0.5]]);
    // Layer two feeds on the clipped value: 2·3 - 0.5 = 5.5 -> 2, 0.5·1 - 0.5 = 0 -> dropped.
    let result = run::<f32>(&[w.clone(), w], &input, -0.5, 2.0);
    assert_eq!(result.output.unwrap(), array![[2.0f32, 0.0]]);
    assert_eq!(result.stats[1].nonzeros, 1);
    assert_eq!(result.stats[1].at_upper_bound, 1);
}

#[test]
fn a_dead_row_stays_dead_even_with_a_positive_bias() {
    // Layer 1 kills row 2 (Z = -1 + 0.5 < 0) and keeps row 1 (Z = 1 + 0.5).
    // Layer 2 would give any row with a structural nonzero at least the bias 0.5;
    // row 2 has none, so it stays zero.
    let layer1 = csr(2, 2, &[(0, 0, 1.0), (1, 0, -1.0)]);
    let layer2 = csr(2, 2, &[(0, 0, 1.0), (0, 1, 0.0), (1, 1, 1.0)]);
    let input = csr(2, 2, &[(0, 0, 1.0), (1, 1, 1.0)]);
    let result = run::<f64>(&[layer1, layer2], &input, 0.5, 32.0);
    // Row 1: [1.5, 0] -> Z = [1.5, 0 (stored zero weight, structural)] -> [2.0, 0.5].
    assert_eq!(
        result.output.as_ref().unwrap(),
        &array![[2.0, 0.5], [0.0, 0.0]]
    );
    assert_eq!(result.categories, vec![1]);
    assert_eq!(result.stats.len(), 2);
    assert_eq!(result.stats[0].active_rows, 1);
    assert_eq!(result.stats[1].active_rows, 1);
    assert_eq!(result.stats[1].layer, 2);
}

#[test]
fn categories_are_one_based_ascending_rows_with_a_nonzero_sum() {
    // Identity-like layer: row r keeps its value minus 0.5 if above.
    let w = csr(3, 3, &[(0, 0, 1.0), (1, 1, 1.0), (2, 2, 1.0)]);
    let input = csr(
        5,
        3,
        &[
            (0, 0, 0.25),
            (1, 1, 1.0),
            (2, 2, 0.5),
            (3, 0, 2.0),
            (3, 2, 0.25),
            (4, 2, 3.0),
        ],
    );
    for categories in [
        run::<f32>(std::slice::from_ref(&w), &input, -0.5, 32.0).categories,
        run::<f64>(std::slice::from_ref(&w), &input, -0.5, 32.0).categories,
    ] {
        assert_eq!(categories, vec![2, 4, 5]);
    }
    let result = run::<f64>(&[w], &input, -0.5, 32.0);
    assert_eq!(categories_of(result.output.unwrap().view()), vec![2, 4, 5]);
}

#[test]
fn categories_of_uses_the_row_sum() {
    let output = array![[0.0f32, 0.0], [1.0, -1.0], [0.0, 2.0], [-3.0, 0.0]];
    assert_eq!(categories_of(output.view()), vec![3, 4]);
    assert!(categories_of(Array2::<f64>::zeros((3, 2)).view()).is_empty());
}

#[test]
fn many_rows_cross_block_boundaries() {
    // 1000 rows, row r has value (r mod 7) at neuron r mod 3; the layer is the identity
    // with bias -2.5, so rows with r mod 7 ≥ 3 survive.
    let n = 1000;
    let w = csr(3, 3, &[(0, 0, 1.0), (1, 1, 1.0), (2, 2, 1.0)]);
    let entries: Vec<(u32, u32, f32)> = (0..n)
        .filter(|r| r % 7 != 0)
        .map(|r| (r as u32, (r % 3) as u32, (r % 7) as f32))
        .collect();
    let input = csr(n, 3, &entries);
    let result = run::<f32>(&[w], &input, -2.5, 32.0);
    let expected: Vec<u32> = (0..n)
        .filter(|r| r % 7 >= 3)
        .map(|r| r as u32 + 1)
        .collect();
    assert_eq!(result.categories, expected);
    let output = result.output.unwrap();
    assert_eq!(output[[999, 0]], (999 % 7) as f32 - 2.5);
    assert_eq!(result.stats[0].active_rows, expected.len());
    assert_eq!(result.stats[0].rows, n);
}

#[test]
fn no_layers_returns_the_input() {
    let input = csr(2, 3, &[(1, 2, 4.0)]);
    let result = run::<f64>(&[], &input, -0.3, 32.0);
    assert_eq!(
        result.output.unwrap(),
        array![[0.0, 0.0, 0.0], [0.0, 0.0, 4.0]]
    );
    assert_eq!(result.categories, vec![2]);
    assert!(result.stats.is_empty());
}

#[test]
fn options_turn_output_and_stats_off() {
    let w = csr(2, 2, &[(0, 0, 1.0)]);
    let input = csr(1, 2, &[(0, 0, 1.0)]);
    let options = Options {
        keep_output: false,
        collect_stats: false,
        segment_lengths: vec![],
    };
    let result =
        infer::<f32>(&[w], &input, Activation::new(-0.5, 32.0).unwrap(), &options).unwrap();
    assert_eq!(result.categories, vec![1]);
    assert!(result.output.is_none());
    assert!(result.stats.is_empty());
    let default = Options::default();
    assert!(!default.keep_output && default.collect_stats);
    assert_eq!(default.segment_lengths, vec![32, 256, 1024]);
}

#[test]
fn bad_arguments_are_errors() {
    let w3 = csr(3, 3, &[(0, 0, 1.0)]);
    let w2 = csr(2, 2, &[(0, 0, 1.0)]);
    let input = csr(1, 3, &[(0, 0, 1.0)]);
    let act = Activation::new(-0.3, 32.0).unwrap();
    let options = Options::default();
    assert!(matches!(
        infer::<f32>(std::slice::from_ref(&w2), &input, act, &options),
        Err(ReferenceError::InputWidth {
            expected: 2,
            found: 3
        })
    ));
    assert!(matches!(
        infer::<f32>(&[w3.clone(), w2], &input, act, &options),
        Err(ReferenceError::LayerShape {
            layer: 2,
            expected: 3,
            found: 2
        })
    ));
    let zero_length = Options {
        segment_lengths: vec![4, 0],
        ..Options::default()
    };
    assert!(matches!(
        infer::<f32>(std::slice::from_ref(&w3), &input, act, &zero_length),
        Err(ReferenceError::ZeroSegmentLength { index: 1 })
    ));
    for (bias, bound) in [
        (f32::NAN, 32.0),
        (-0.3, 0.0),
        (-0.3, f32::INFINITY),
        (-0.3, -1.0),
    ] {
        let act = Activation {
            bias,
            upper_bound: bound,
        };
        assert!(matches!(
            infer::<f64>(std::slice::from_ref(&w3), &input, act, &options),
            Err(ReferenceError::Activation(_))
        ));
    }
    assert!(Activation::new(0.3, 32.0).is_err());
    assert!(Activation::new(0.0, 32.0).is_err());
    assert!(Activation::new(-0.3, 0.0).is_err());
    assert_eq!(
        Activation::official(1024),
        Some(Activation {
            bias: -0.3,
            upper_bound: 32.0
        })
    );
    assert_eq!(Activation::official(1000), None);
    let message = infer::<f32>(&[w3.clone(), csr(2, 2, &[])], &input, act, &options)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("layer 2") && message.contains("layer 1"),
        "{message}"
    );
}

#[test]
fn input_stats_by_hand() {
    // Bound 2, N = 5; segments of 2 are {0,1}, {2,3}, {4} (partial).
    // Row 0: 2 at 0, 1 and 4 -> segments 0 and 2 all at the bound, segment 1 zero.
    // Row 1: 1 at 2 -> segment 1 nonzero, not at the bound; segments 0 and 2 zero.
    // Row 2: only a stored zero -> dead.
    let input = csr(
        3,
        5,
        &[
            (0, 0, 2.0),
            (0, 1, 2.0),
            (0, 4, 2.0),
            (1, 2, 1.0),
            (2, 3, 0.0),
        ],
    );
    let stats = input_stats(&input, 2.0, &[2, 5, 1]);
    assert_eq!(
        stats,
        LayerStats {
            layer: 0,
            rows: 3,
            neurons: 5,
            active_rows: 2,
            nonzeros: 4,
            at_upper_bound: 3,
            segments: vec![
                SegmentStats {
                    length: 2,
                    total: 9,
                    all_upper_bound: 2,
                    all_zero: 6
                },
                SegmentStats {
                    length: 5,
                    total: 3,
                    all_upper_bound: 0,
                    all_zero: 1
                },
                SegmentStats {
                    length: 1,
                    total: 15,
                    all_upper_bound: 3,
                    all_zero: 11
                },
            ],
        }
    );
    assert_eq!(stats.density(), 4.0 / 15.0);
    assert_eq!(stats.active_density(), 4.0 / 10.0);
    assert_eq!(stats.active_row_share(), 2.0 / 3.0);
    assert_eq!(stats.upper_bound_share(), 3.0 / 4.0);
    let by_two = stats.segment(2).unwrap();
    assert_eq!(by_two.all_upper_bound_share(), 2.0 / 9.0);
    assert_eq!(by_two.all_zero_share(), 6.0 / 9.0);
    assert!(stats.segment(3).is_none());
    let json = serde_json::to_string(&stats).unwrap();
    assert!(json.contains("\"all_upper_bound\":2"), "{json}");
}

#[test]
fn layer_stats_by_hand() {
    // N = 4, bound 1, bias -0.5, segments of 3: {0,1,2}, {3}.
    // Layer: output k = 2·y_k (diagonal), plus output 3 = y_0.
    // Row 0 = [1, 1, 1, 0] -> Z = [2, 2, 2, 1] - 0.5 -> [1, 1, 1, 0.5]: segment 0 all at
    //   the bound, segment 1 nonzero below it.
    // Row 1 = [0, 0.5, 0, 0] -> [0, 0.5, 0, 0]: segment 0 nonzero, segment 1 zero.
    // Row 2 = [0, 0, 0, 0.25] -> [0, 0, 0, 0]: dead.
    let w = csr(
        4,
        4,
        &[
            (0, 0, 2.0),
            (0, 3, 1.0),
            (1, 1, 2.0),
            (2, 2, 2.0),
            (3, 3, 2.0),
        ],
    );
    let input = csr(
        3,
        4,
        &[
            (0, 0, 1.0),
            (0, 1, 1.0),
            (0, 2, 1.0),
            (1, 1, 0.5),
            (2, 3, 0.25),
        ],
    );
    let options = Options {
        segment_lengths: vec![3],
        ..keep()
    };
    for stats in [
        infer::<f32>(
            std::slice::from_ref(&w),
            &input,
            Activation::new(-0.5, 1.0).unwrap(),
            &options,
        )
        .unwrap()
        .stats,
        infer::<f64>(
            std::slice::from_ref(&w),
            &input,
            Activation::new(-0.5, 1.0).unwrap(),
            &options,
        )
        .unwrap()
        .stats,
    ] {
        assert_eq!(
            stats,
            vec![LayerStats {
                layer: 1,
                rows: 3,
                neurons: 4,
                active_rows: 2,
                nonzeros: 5,
                at_upper_bound: 3,
                segments: vec![SegmentStats {
                    length: 3,
                    total: 6,
                    all_upper_bound: 1,
                    all_zero: 3
                }],
            }]
        );
    }
}

#[test]
fn stats_of_layers_after_every_row_died_count_zeros() {
    let w = csr(2, 2, &[(0, 0, 1.0)]);
    let input = csr(2, 2, &[(0, 0, 0.25), (1, 1, 3.0)]);
    let result = run::<f32>(&[w.clone(), w.clone(), w], &input, -0.5, 32.0);
    assert!(result.categories.is_empty());
    assert_eq!(result.stats.len(), 3);
    for (l, stats) in result.stats.iter().enumerate() {
        assert_eq!(stats.layer, l + 1);
        assert_eq!((stats.rows, stats.active_rows, stats.nonzeros), (2, 0, 0));
        let seg = stats.segment(32).unwrap();
        assert_eq!((seg.total, seg.all_zero, seg.all_upper_bound), (2, 2, 0));
    }
}
