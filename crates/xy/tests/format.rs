//! The XY format against a plain dense evaluation: random unstructured networks, random
//! grouped networks, generated challenge networks, each also as chains of rectangular
//! layers (`N_{l-1} × N_l`), and compressed challenge networks.

use std::collections::HashMap;

use proptest::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_xy::{GROUP, XyError, XyNetwork};

const UPPER: f32 = 8.0;

/// SplitMix64: a small deterministic generator for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound`.
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    /// True with probability `percent`/100.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A nonzero dyadic weight k/4, k in ±1..=8.
    fn weight(&mut self) -> f32 {
        let magnitude = (self.below(8) + 1) as f32 / 4.0;
        if self.chance(50) {
            magnitude
        } else {
            -magnitude
        }
    }

    fn shuffle(&mut self, items: &mut [u32]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i as u64 + 1) as usize);
        }
    }
}

/// `min(max(v, 0), upper)` with +0.0 for non-positive values.
fn clip(value: f32, upper: f32) -> f32 {
    if value > 0.0 { value.min(upper) } else { 0.0 }
}

/// The dense evaluation: `out_k = clip(Σ_j y_j·W[j, k] + bias, 0, upper)`, layer by layer.
fn dense_infer(layers: &[Csr], sample: &[f32], bias: f32, upper: f32) -> Vec<f32> {
    let mut y = sample.to_vec();
    for layer in layers {
        let w = layer.to_dense();
        let n = layer.ncols();
        y = (0..n)
            .map(|k| {
                let sum: f32 = (0..layer.nrows()).map(|j| y[j] * w[[j, k]]).sum();
                clip(sum + bias, upper)
            })
            .collect();
    }
    y
}

/// The XY evaluation: `apply` layer by layer on positions, then back to original order.
fn xy_infer(network: &XyNetwork, sample: &[f32], bias: f32, upper: f32) -> Vec<f32> {
    let mut y = sample.to_vec();
    for layer in &network.layers {
        y = layer.apply(&y, bias, upper);
    }
    network.to_original(&y)
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// Checks that `network` stores exactly the entries of `layers`, each once, at the place
/// the format says, and passes `validate`; and that the memory model's bytes of each layer
/// (from the layer alone) are those of its prepared layout.
fn assert_faithful(network: &XyNetwork, layers: &[Csr]) {
    network.validate().expect("a prepared network is valid");
    assert_eq!(network.layers.len(), layers.len());
    for (index, (xy, w)) in network.layers.iter().zip(layers).enumerate() {
        assert_eq!(
            spdnn_xy::format::layer_device_bytes(w),
            xy.device_bytes(),
            "layer {}: the model's bytes (grouped {})",
            index + 1,
            xy.is_grouped()
        );
        let stored: HashMap<(u32, u32), f32> = w.triplets().map(|(r, c, v)| ((r, c), v)).collect();
        assert_eq!(xy.values.len(), w.nnz(), "layer {}", index + 1);
        let group = xy.group as usize;
        let mut seen = std::collections::HashSet::new();
        for block in 0..xy.blocks() {
            let range = xy.block_offsets[block] as usize..xy.block_offsets[block + 1] as usize;
            for slot in range {
                let position = xy.inputs[slot];
                let input = if index == 0 {
                    position
                } else {
                    network.layers[index - 1].outputs[position as usize]
                };
                for o in 0..group {
                    let output = xy.outputs[block * group + o];
                    let value = stored.get(&(input, output)).unwrap_or_else(|| {
                        panic!("layer {}: ({input}, {output}) is not an entry", index + 1)
                    });
                    assert_eq!(
                        xy.values[slot * group + o].to_bits(),
                        value.to_bits(),
                        "layer {}",
                        index + 1
                    );
                    assert!(seen.insert((input, output)), "entry stored twice");
                }
            }
        }
    }
}

/// Rows of dyadic inputs k/4 (k in 0..=8, about half zero), the last row all zero.
fn samples(rng: &mut Rng, neurons: usize, rows: usize) -> Vec<Vec<f32>> {
    let mut rows: Vec<Vec<f32>> = (0..rows)
        .map(|_| {
            (0..neurons)
                .map(|_| {
                    if rng.chance(50) {
                        0.0
                    } else {
                        (rng.below(8) + 1) as f32 / 4.0
                    }
                })
                .collect()
        })
        .collect();
    rows.push(vec![0.0; neurons]);
    rows
}

/// A random `rows × cols` layer: every entry present with probability `percent`, some
/// rows and columns emptied on purpose.
fn random_layer(rng: &mut Rng, rows: usize, cols: usize, percent: u64) -> Csr {
    let empty_row = rng.below(rows as u64 + 1) as u32;
    let empty_col = rng.below(cols as u64 + 1) as u32;
    let mut triplets = Vec::new();
    for r in 0..rows as u32 {
        for c in 0..cols as u32 {
            if r != empty_row && c != empty_col && rng.chance(percent) {
                triplets.push((r, c, rng.weight()));
            }
        }
    }
    Csr::from_triplets(rows, cols, &triplets).unwrap()
}

/// A random `inputs × outputs` layer whose outputs share input sets 16 at a time: output
/// ids shuffled and cut into groups of 16, each group reading a random input set with its
/// own values.
fn grouped_layer(rng: &mut Rng, inputs: usize, outputs: usize, percent: u64) -> Csr {
    let mut ids: Vec<u32> = (0..outputs as u32).collect();
    rng.shuffle(&mut ids);
    let mut triplets = Vec::new();
    for members in ids.chunks(GROUP) {
        let read: Vec<u32> = (0..inputs as u32).filter(|_| rng.chance(percent)).collect();
        for &input in &read {
            for &output in members {
                triplets.push((input, output, rng.weight()));
            }
        }
    }
    Csr::from_triplets(inputs, outputs, &triplets).unwrap()
}

fn check_exact(layers: &[Csr], network: &XyNetwork, rng: &mut Rng, bias: f32) {
    for sample in samples(rng, network.neurons, 3) {
        let expected = dense_infer(layers, &sample, bias, UPPER);
        let found = xy_infer(network, &sample, bias, UPPER);
        assert_eq!(bits(&found), bits(&expected));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_networks_evaluate_exactly(
        neurons in 1usize..=70,
        densities in prop::collection::vec(prop::sample::select(vec![0u64, 3, 10, 30, 100]), 1..=4),
        bias_quarters in 0u32..=4,
        seed in any::<u64>(),
    ) {
        let mut rng = Rng(seed);
        let layers: Vec<Csr> = densities
            .iter()
            .map(|&percent| random_layer(&mut rng, neurons, neurons, percent))
            .collect();
        let network = XyNetwork::prepare(&layers).unwrap();
        assert_faithful(&network, &layers);
        check_exact(&layers, &network, &mut rng, -(bias_quarters as f32) / 4.0);
        let mut bytes = Vec::new();
        network.write_to(&mut bytes).unwrap();
        prop_assert_eq!(XyNetwork::read_from(&mut bytes.as_slice()).unwrap(), network);
    }

    #[test]
    fn grouped_networks_are_grouped_and_exact(
        groups in 1usize..=4,
        densities in prop::collection::vec(prop::sample::select(vec![0u64, 5, 20, 60, 100]), 1..=4),
        bias_quarters in 0u32..=4,
        seed in any::<u64>(),
    ) {
        let neurons = groups * GROUP;
        let mut rng = Rng(seed);
        let layers: Vec<Csr> = densities
            .iter()
            .map(|&percent| grouped_layer(&mut rng, neurons, neurons, percent))
            .collect();
        let network = XyNetwork::prepare(&layers).unwrap();
        for (index, layer) in network.layers.iter().enumerate() {
            prop_assert!(layer.is_grouped(), "layer {} is not grouped", index + 1);
            prop_assert_eq!(layer.blocks(), groups);
        }
        assert_faithful(&network, &layers);
        check_exact(&layers, &network, &mut rng, -(bias_quarters as f32) / 4.0);
    }

    #[test]
    fn rectangular_networks_evaluate_exactly(
        widths in prop::collection::vec(1usize..=70, 2..=5),
        densities in prop::collection::vec(prop::sample::select(vec![0u64, 3, 10, 30, 100]), 4),
        bias_quarters in 0u32..=4,
        seed in any::<u64>(),
    ) {
        let mut rng = Rng(seed);
        let layers: Vec<Csr> = widths
            .windows(2)
            .zip(&densities)
            .map(|(pair, &percent)| random_layer(&mut rng, pair[0], pair[1], percent))
            .collect();
        let network = XyNetwork::prepare(&layers).unwrap();
        prop_assert_eq!(&network.widths(), &widths);
        prop_assert_eq!(network.output_width(), *widths.last().unwrap());
        prop_assert_eq!(network.widest(), *widths.iter().max().unwrap());
        assert_faithful(&network, &layers);
        check_exact(&layers, &network, &mut rng, -(bias_quarters as f32) / 4.0);
        let mut bytes = Vec::new();
        network.write_to(&mut bytes).unwrap();
        prop_assert_eq!(XyNetwork::read_from(&mut bytes.as_slice()).unwrap(), network);
    }

    #[test]
    fn rectangular_grouped_networks_are_grouped_and_exact(
        groups in prop::collection::vec(1usize..=4, 2..=5),
        input_width in 1usize..=70,
        densities in prop::collection::vec(prop::sample::select(vec![0u64, 5, 20, 60, 100]), 4),
        bias_quarters in 0u32..=4,
        seed in any::<u64>(),
    ) {
        // The input any width; every layer's outputs a multiple of 16, grouped.
        let widths: Vec<usize> = std::iter::once(input_width)
            .chain(groups[1..].iter().map(|&g| g * GROUP))
            .collect();
        let mut rng = Rng(seed);
        let layers: Vec<Csr> = widths
            .windows(2)
            .zip(&densities)
            .map(|(pair, &percent)| grouped_layer(&mut rng, pair[0], pair[1], percent))
            .collect();
        let network = XyNetwork::prepare(&layers).unwrap();
        for (index, layer) in network.layers.iter().enumerate() {
            prop_assert!(layer.is_grouped(), "layer {} is not grouped", index + 1);
            prop_assert_eq!(layer.blocks(), widths[index + 1] / GROUP);
            prop_assert_eq!(layer.width(), widths[index + 1]);
        }
        assert_faithful(&network, &layers);
        check_exact(&layers, &network, &mut rng, -(bias_quarters as f32) / 4.0);
    }
}

#[test]
fn a_layer_grouped_in_a_rectangular_chain_reads_positions_of_the_narrower_one_before() {
    // 24 inputs → 32 outputs in two groups (evens read {1, 2}, odds {0}) → 20 general
    // outputs, output k reading position k of layer 1's order.
    let mut first = Vec::new();
    for k in 0..32u32 {
        let inputs: &[u32] = if k % 2 == 0 { &[1, 2] } else { &[0] };
        for &j in inputs {
            first.push((j, k, (k + 1) as f32 + j as f32 / 4.0));
        }
    }
    let second: Vec<(u32, u32, f32)> = (0..20).map(|k| (k, k, 1.0)).collect();
    let layers = [
        Csr::from_triplets(24, 32, &first).unwrap(),
        Csr::from_triplets(32, 20, &second).unwrap(),
    ];
    let network = XyNetwork::prepare(&layers).unwrap();
    assert_eq!(network.widths(), [24, 32, 20]);
    let l1 = &network.layers[0];
    assert!(l1.is_grouped());
    let evens_then_odds: Vec<u32> = (0..32).step_by(2).chain((1..32).step_by(2)).collect();
    assert_eq!(l1.outputs, evens_then_odds);
    let l2 = &network.layers[1];
    assert!(!l2.is_grouped());
    assert_eq!((l2.blocks(), l2.width()), (20, 20));
    // Original neuron k of layer 1 sits at position k/2 (even) or 16 + k/2 (odd).
    let expected: Vec<u32> = (0..20)
        .map(|k| if k % 2 == 0 { k / 2 } else { 16 + k / 2 })
        .collect();
    assert_eq!(l2.inputs, expected);
    assert_faithful(&network, &layers);
    let out = network.to_original(&(0..40).map(|p| p as f32).collect::<Vec<_>>());
    assert_eq!(out.len(), 40, "two rows of N_L = 20");
}

#[test]
fn compressed_challenge_networks_take_the_general_path_and_stay_exact() {
    // Compression keeps one output of each class of identical columns: in a generated
    // network no 16 of the kept outputs share an input set, so every layer is general.
    for (neurons, depth) in [(1024, 12), (256, 9)] {
        let original = spdnn_gputest::challenge_problem(neurons, depth, 4, 5);
        let (problem, shrunk) = spdnn_gputest::compressed(&original);
        assert!(shrunk > 0, "{neurons}-{depth} did not compress");
        let layers = &problem.layers;
        let network = XyNetwork::prepare(layers).unwrap();
        let widths: Vec<usize> = std::iter::once(neurons)
            .chain(layers.iter().map(|w| w.ncols()))
            .collect();
        assert_eq!(network.widths(), widths);
        assert!(widths[1..].iter().all(|&w| w < neurons), "{widths:?}");
        assert_eq!(
            network.layers.iter().filter(|l| l.is_grouped()).count(),
            0,
            "{neurons}-{depth}: grouped layers after compression"
        );
        assert_faithful(&network, layers);
        let mut rng = Rng(neurons as u64);
        for _ in 0..3 {
            let sample: Vec<f32> = (0..neurons)
                .map(|_| f32::from(u8::from(rng.chance(10))))
                .collect();
            let expected = dense_infer(layers, &sample, problem.bias, problem.upper);
            let found = xy_infer(&network, &sample, problem.bias, problem.upper);
            for (k, (&a, &b)) in found.iter().zip(&expected).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-4 * b.abs().max(1.0),
                    "neuron {k}: {a} vs {b}"
                );
            }
        }
    }
}

#[test]
fn groups_are_ordered_by_smallest_member_and_next_inputs_are_positions() {
    // Layer 1: even outputs read inputs {1, 2}, odd outputs read {0}. Layer 2: the
    // identity, so output k reads position of k in layer 1's order.
    let mut first = Vec::new();
    for k in 0..32u32 {
        let inputs: &[u32] = if k % 2 == 0 { &[1, 2] } else { &[0] };
        for &j in inputs {
            first.push((j, k, (k + 1) as f32 + j as f32 / 4.0));
        }
    }
    let identity: Vec<(u32, u32, f32)> = (0..32).map(|k| (k, k, 1.0)).collect();
    let layers = [
        Csr::from_triplets(32, 32, &first).unwrap(),
        Csr::from_triplets(32, 32, &identity).unwrap(),
    ];
    let network = XyNetwork::prepare(&layers).unwrap();
    let l1 = &network.layers[0];
    assert!(l1.is_grouped());
    let evens_then_odds: Vec<u32> = (0..32).step_by(2).chain((1..32).step_by(2)).collect();
    assert_eq!(l1.outputs, evens_then_odds);
    assert_eq!(l1.block_offsets, [0, 2, 3]);
    assert_eq!(l1.inputs, [1, 2, 0]);
    assert_eq!(
        l1.values[..16],
        (0..16)
            .map(|o| (2 * o + 1) as f32 + 0.25)
            .collect::<Vec<_>>()[..]
    );
    assert_eq!(
        l1.values[16..32],
        (0..16)
            .map(|o| (2 * o + 1) as f32 + 0.5)
            .collect::<Vec<_>>()[..]
    );
    assert_eq!(l1.max_input_runs, 1);
    let l2 = &network.layers[1];
    assert!(!l2.is_grouped());
    assert_eq!(l2.outputs, (0..32).collect::<Vec<u32>>());
    let expected: Vec<u32> = (0..32)
        .map(|k| if k % 2 == 0 { k / 2 } else { 16 + k / 2 })
        .collect();
    assert_eq!(l2.inputs, expected);
    assert_eq!(l2.max_input_runs, 1);
    assert_faithful(&network, &layers);
}

#[test]
fn a_group_size_off_by_one_makes_the_layer_general() {
    // 17 outputs read {0}, 15 read {1}: not multiples of 16.
    let triplets: Vec<(u32, u32, f32)> = (0..32).map(|k| (u32::from(k >= 17), k, 1.0)).collect();
    let layers = [Csr::from_triplets(32, 32, &triplets).unwrap()];
    let network = XyNetwork::prepare(&layers).unwrap();
    let layer = &network.layers[0];
    assert!(!layer.is_grouped());
    assert_eq!(layer.blocks(), 32);
    assert_eq!(layer.outputs, (0..32).collect::<Vec<u32>>());
    assert_faithful(&network, &layers);
}

#[test]
fn empty_layers_group_all_outputs_and_have_no_runs() {
    let layers = [Csr::zeros(48, 48).unwrap(), Csr::zeros(48, 48).unwrap()];
    let network = XyNetwork::prepare(&layers).unwrap();
    for layer in &network.layers {
        assert!(layer.is_grouped());
        assert_eq!(layer.blocks(), 3);
        assert_eq!(layer.max_input_runs, 0);
        assert_eq!(layer.max_block_inputs(), 0);
    }
    let out = xy_infer(&network, &[1.0; 48], -0.5, UPPER);
    assert_eq!(out, vec![0.0; 48]);
}

#[test]
fn bad_shapes_are_errors_naming_the_layer() {
    assert!(matches!(XyNetwork::prepare(&[]), Err(XyError::NoLayers)));
    let square = Csr::zeros(32, 32).unwrap();
    let wide = Csr::zeros(32, 48).unwrap();
    // A wide layer chains (32 → 48); a square one of 32 rows after it does not.
    XyNetwork::prepare(&[square.clone(), square.clone(), wide.clone()]).unwrap();
    let error = XyNetwork::prepare(&[square.clone(), wide, square.clone()]).unwrap_err();
    assert!(matches!(
        error,
        XyError::LayerShape {
            layer: 3,
            rows: 32,
            cols: 32,
            previous: 48
        }
    ));
    assert!(error.to_string().contains("layer 3"), "{error}");
    let smaller = Csr::zeros(16, 16).unwrap();
    let error = XyNetwork::prepare(&[square.clone(), smaller]).unwrap_err();
    assert!(
        matches!(error, XyError::LayerShape { layer: 2, .. }),
        "{error}"
    );
    let no_outputs = Csr::zeros(32, 0).unwrap();
    let error = XyNetwork::prepare(&[square, no_outputs]).unwrap_err();
    assert!(
        matches!(error, XyError::Outputs { layer: 2, cols: 0 }),
        "{error}"
    );
    let nothing = Csr::zeros(0, 0).unwrap();
    assert!(matches!(
        XyNetwork::prepare(&[nothing]),
        Err(XyError::Neurons(0))
    ));
}

#[test]
fn to_original_maps_every_row_of_a_batch() {
    let mut rng = Rng(3);
    let layers = [grouped_layer(&mut rng, 32, 32, 30)];
    let network = XyNetwork::prepare(&layers).unwrap();
    let outputs = &network.layers[0].outputs;
    let positions: Vec<f32> = (0..64).map(|p| p as f32).collect();
    let original = network.to_original(&positions);
    for row in 0..2 {
        for p in 0..32 {
            assert_eq!(
                original[row * 32 + outputs[p] as usize],
                (row * 32 + p) as f32
            );
        }
    }
}

/// Checks a generated network: every layer grouped with N/16 blocks of 32 inputs, the
/// stride layers of the first cycle with at most two input runs, and the evaluation
/// equal to the CSR one.
fn check_generated(neurons: usize, layer_count: usize) {
    let generated = spdnn_sdgc::generator::network(neurons, layer_count, 7).unwrap();
    let layers = generated.layers();
    let network = XyNetwork::prepare(layers).unwrap();
    network.validate().unwrap();
    let per_cycle = spdnn_sdgc::generator::layers_per_cycle(neurons);
    for (index, layer) in network.layers.iter().enumerate() {
        let number = index + 1;
        assert!(layer.is_grouped(), "layer {number}");
        assert_eq!(layer.blocks(), neurons / GROUP, "layer {number}");
        assert!(
            layer.block_offsets.windows(2).all(|w| w[1] - w[0] == 32),
            "layer {number}: a block without 32 inputs"
        );
        if (2..=per_cycle).contains(&number) {
            assert!(
                layer.max_input_runs <= 2,
                "layer {number}: {} runs",
                layer.max_input_runs
            );
        }
    }
    let mut rng = Rng(neurons as u64);
    for _ in 0..3 {
        let sample: Vec<f32> = (0..neurons)
            .map(|_| f32::from(u8::from(rng.chance(10))))
            .collect();
        let mut y = sample.clone();
        for w in layers {
            let mut next = vec![0f32; neurons];
            for (j, &value) in y.iter().enumerate() {
                if value != 0.0 {
                    w.axpy_row(j, value, &mut next);
                }
            }
            y = next.into_iter().map(|v| clip(v - 0.3, 32.0)).collect();
        }
        let found = xy_infer(&network, &sample, -0.3, 32.0);
        for (k, (&a, &b)) in found.iter().zip(&y).enumerate() {
            assert!(
                (a - b).abs() <= 1e-4 * b.abs().max(1.0),
                "neuron {k}: {a} vs {b}"
            );
        }
    }
}

#[test]
fn generated_1024_network_is_grouped_with_stride_layers() {
    check_generated(1024, 12);
}

#[test]
fn generated_4096_network_is_grouped_with_stride_layers() {
    check_generated(4096, 4);
}
