use super::*;
use proptest::prelude::*;

fn params(buffer: usize, layout: Layout) -> Params {
    Params { buffer, layout }
}

/// `Y · W` then the activation, row by row in neuron order (the reference's rule
/// with a negative bias): `y` is rows × `w.nrows()`, the result rows × `w.ncols()`.
fn dense_layer(y: &[f32], rows: usize, w: &Csr, bias: f32, upper: f32) -> Vec<f32> {
    dense_layer_biased(y, rows, w, &vec![bias; w.ncols()], upper)
}

/// [`dense_layer`] with `biases[k]` for output `k`.
fn dense_layer_biased(y: &[f32], rows: usize, w: &Csr, biases: &[f32], upper: f32) -> Vec<f32> {
    let (inputs, n) = (w.nrows(), w.ncols());
    let mut out = vec![0f32; rows * n];
    for row in 0..rows {
        let acc = &mut out[row * n..(row + 1) * n];
        for r in 0..inputs {
            let v = y[row * inputs + r];
            if v != 0.0 {
                let (cols, vals) = w.row(r);
                for (&c, &wv) in cols.iter().zip(vals) {
                    acc[c as usize] += v * wv;
                }
            }
        }
        for (a, &b) in acc.iter_mut().zip(biases) {
            *a = (*a + b).max(0.0).min(upper);
        }
    }
    out
}

fn without_zeros(w: &Csr) -> Csr {
    let t: Vec<_> = w.triplets().filter(|t| t.2 != 0.0).collect();
    Csr::from_triplets(w.nrows(), w.ncols(), &t).unwrap()
}

/// A random `rows × cols` layer.
fn matrix(
    rows: usize,
    cols: usize,
    density: f64,
    value: impl Strategy<Value = f32>,
) -> impl Strategy<Value = Csr> {
    proptest::collection::vec((proptest::bool::weighted(density), value), rows * cols).prop_map(
        move |cells| {
            let t: Vec<(u32, u32, f32)> = cells
                .into_iter()
                .enumerate()
                .filter(|(_, (keep, _))| *keep)
                .map(|(i, (_, v))| ((i / cols) as u32, (i % cols) as u32, v))
                .collect();
            Csr::from_triplets(rows, cols, &t).unwrap()
        },
    )
}

/// A chain of random layers of widths `widths[0] → widths[1] → …`.
fn chain(
    widths: &[usize],
    density: f64,
    value: impl Strategy<Value = f32> + Clone + 'static,
) -> Vec<BoxedStrategy<Csr>> {
    widths
        .windows(2)
        .map(|pair| matrix(pair[0], pair[1], density, value.clone()).boxed())
        .collect()
}

/// Widths of a chain of 1–`depth` layers, each 1–`max` wide; square (one width
/// repeated) about a quarter of the time.
fn widths(max: usize, depth: usize) -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        1 => (1..=max, 1..=depth).prop_map(|(n, l)| vec![n; l + 1]),
        3 => proptest::collection::vec(1..=max, 2..=depth + 1),
    ]
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![Just(Layout::Grouped), Just(Layout::Paper)]
}

#[test]
fn one_block_one_buffer_by_hand() {
    // 3 × 3: output 0 ← inputs 0, 2; output 2 ← input 1; output 1 empty.
    let w = Csr::from_triplets(3, 3, &[(0, 0, 1.0), (2, 0, 2.0), (1, 2, 3.0)]).unwrap();
    let layer = HpLayer::build(&w, None, vec![0, 1, 2], &params(8, Layout::Paper), 1).unwrap();
    assert_eq!(layer.blocks(), 1);
    assert_eq!(layer.buffers(), 1);
    assert_eq!(layer.map(), &[0, 1, 2]);
    // Warp 0 has width 2 (output 0), warps 1..8 are empty.
    assert_eq!(layer.slice_starts(), &[0, 2, 2, 2, 2, 2, 2, 2, 2]);
    assert_eq!(&layer.index()[..3], &[0, 0, 1]);
    assert_eq!(&layer.value()[..3], &[1.0, 0.0, 3.0]);
    assert_eq!(layer.index()[32], 2);
    assert_eq!(layer.value()[32], 2.0);
    assert_eq!(layer.value()[34], 0.0);
    assert_eq!(layer.nnz(), 3);
    layer.validate(8).unwrap();
    let y = [1.0, 10.0, 100.0];
    assert_eq!(
        layer.emulate(&y, 1, -0.5, 1000.0).unwrap(),
        vec![200.5, 0.0, 29.5]
    );
}

#[test]
fn rectangular_layers_by_hand() {
    // 3 → 2: output 0 ← inputs 0 (1.0), 2 (2.0); output 1 ← input 1 (3.0).
    // 2 → 5: outputs 0 and 4 ← input 0 (0.5); output 2 ← input 1 (0.25).
    let narrow = Csr::from_triplets(3, 2, &[(0, 0, 1.0), (2, 0, 2.0), (1, 1, 3.0)]).unwrap();
    let wide = Csr::from_triplets(2, 5, &[(0, 0, 0.5), (0, 4, 0.5), (1, 2, 0.25)]).unwrap();
    let layers = [narrow.clone(), wide.clone()];
    assert_eq!(check_layers(&layers).unwrap(), vec![3, 2, 5]);
    let hp = HpNetwork::build(&layers, &params(8, Layout::Paper)).unwrap();
    let (first, second) = (&hp.layers[0], &hp.layers[1]);
    assert_eq!((first.inputs(), first.neurons(), first.blocks()), (3, 2, 1));
    assert_eq!(
        (second.inputs(), second.neurons(), second.blocks()),
        (2, 5, 1)
    );
    assert_eq!(first.map(), &[0, 1, 2]);
    assert_eq!(second.map(), &[0, 1]);
    assert_eq!(first.to_csr(None).unwrap(), narrow);
    assert_eq!(second.to_csr(None).unwrap(), wide);
    // One row: y = [1, 10, 100] → [201 - 0.5, 30 - 0.5] → [100.25 - 0.5, 0, 7.375 - 0.5,
    // 0, 100.25 - 0.5].
    let y = [1.0, 10.0, 100.0];
    let hidden = first.emulate(&y, 1, -0.5, 1000.0).unwrap();
    assert_eq!(hidden, vec![200.5, 29.5]);
    assert_eq!(
        second.emulate(&hidden, 1, -0.5, 1000.0).unwrap(),
        vec![99.75, 0.0, 6.875, 0.0, 99.75]
    );
    assert_eq!(
        hp.emulate(&y, 1, -0.5, 1000.0).unwrap(),
        vec![99.75, 0.0, 6.875, 0.0, 99.75]
    );
    // Activations of the wrong width are an error, not a panic.
    assert!(second.emulate(&y, 1, -0.5, 1000.0).is_err());
    // Grouped: outputs 0 and 4 read the same input set and become neighbours.
    let grouped = HpNetwork::build(&layers, &params(8, Layout::Grouped)).unwrap();
    assert_eq!(grouped.layers[1].outputs(), &[0, 4, 2, 1, 3]);
    assert_eq!(
        grouped.emulate(&y, 1, -0.5, 1000.0).unwrap(),
        vec![99.75, 0.0, 6.875, 0.0, 99.75]
    );
    for (l, layer) in grouped.layers.iter().enumerate() {
        assert_eq!(layer.to_csr(grouped.input_neurons(l)).unwrap(), layers[l]);
    }
}

#[test]
fn wide_and_narrow_layers_across_blocks() {
    // 700 → 30 → 520 → 1 → 1: one output block, three, one, one; a footprint of up to
    // 700 inputs into 30 outputs, 30 into 520, 520 into one.
    let (a, b, c, d) = (700u32, 30u32, 520u32, 1u32);
    let w1: Vec<_> = (0..a)
        .flat_map(|r| {
            (0..b)
                .filter(move |o| (r * 7 + o * 3) % 5 == 0)
                .map(move |o| (r, o, [0.25, -0.5, 0.75][(r + o) as usize % 3]))
        })
        .collect();
    let w2: Vec<_> = (0..b)
        .flat_map(|r| {
            (0..c)
                .filter(move |o| (r + o) % 4 != 0)
                .map(move |o| (r, o, [0.5, 0.25, -0.25][(r * o) as usize % 3]))
        })
        .collect();
    let w3: Vec<_> = (0..c).map(|r| (r, 0, 0.125 * (1 + r % 4) as f32)).collect();
    let layers = [
        Csr::from_triplets(a as usize, b as usize, &w1).unwrap(),
        Csr::from_triplets(b as usize, c as usize, &w2).unwrap(),
        Csr::from_triplets(c as usize, d as usize, &w3).unwrap(),
        Csr::from_triplets(d as usize, d as usize, &[(0, 0, 1.0)]).unwrap(),
    ];
    let rows = 3;
    let y: Vec<f32> = (0..rows * a as usize)
        .map(|i| [0.0, 0.5, 1.0, 2.0][i % 4])
        .collect();
    let mut want = y.clone();
    for w in &layers {
        want = dense_layer(&want, rows, w, -0.25, 32.0);
    }
    assert_eq!(want.len(), rows);
    assert!(want.iter().any(|&v| v > 0.0), "{want:?}");
    for layout in [Layout::Paper, Layout::Grouped] {
        for buffer in [7, 64, MAX_BUFFER] {
            let hp = HpNetwork::build(&layers, &params(buffer, layout)).unwrap();
            let blocks: Vec<usize> = hp.layers.iter().map(HpLayer::blocks).collect();
            assert_eq!(blocks, vec![1, 3, 1, 1]);
            for (l, layer) in hp.layers.iter().enumerate() {
                layer.validate(buffer).unwrap();
                assert_eq!(layer.to_csr(hp.input_neurons(l)).unwrap(), layers[l]);
            }
            assert_eq!(hp.emulate(&y, rows, -0.25, 32.0).unwrap(), want);
        }
    }
}

#[test]
fn a_compressed_challenge_network_emulates_the_reference() {
    // The generated 1024-12 compressed into rectangular layers (1024 × 64, then
    // narrower ones): the emulated kernel matches the reference on the compressed
    // layers (values) and the uncompressed ones (categories).
    let original = spdnn_gputest::challenge_problem(1024, 12, 48, 5);
    let (problem, shrunk) = spdnn_gputest::compressed(&original);
    assert!(shrunk > 0);
    let widths = check_layers(&problem.layers).unwrap();
    assert_eq!(widths[0], 1024);
    assert!(widths[1..].iter().all(|&w| w < 1024), "{widths:?}");
    let expected = spdnn_gputest::reference(&problem);
    let want = expected.output.expect("the reference keeps its output");
    assert_eq!(
        expected.categories,
        spdnn_gputest::reference(&original).categories
    );
    let rows = problem.input.nrows();
    let input: Vec<f32> = problem.input.to_dense().iter().copied().collect();
    for layout in [Layout::Grouped, Layout::Paper] {
        let hp = HpNetwork::build(&problem.layers, &params(721, layout)).unwrap();
        let got = hp
            .emulate(&input, rows, problem.bias, problem.upper)
            .unwrap();
        assert_eq!(got.len(), rows * widths[widths.len() - 1]);
        for (g, e) in got.iter().zip(want.iter()) {
            assert!(
                (g - e).abs() <= 1e-5 * e.abs().max(1.0),
                "{layout:?}: {g} vs {e}"
            );
        }
        let categories: Vec<u32> = got
            .chunks_exact(widths[widths.len() - 1])
            .enumerate()
            .filter(|(_, row)| row.iter().any(|&v| v != 0.0))
            .map(|(r, _)| r as u32 + 1)
            .collect();
        assert_eq!(categories, expected.categories, "{layout:?}");
    }
}

#[test]
fn an_empty_layer_has_no_buffers() {
    let w = Csr::zeros(300, 300).unwrap();
    let layer = HpLayer::build(
        &w,
        None,
        (0..300).collect(),
        &params(16, Layout::Grouped),
        1,
    )
    .unwrap();
    assert_eq!(layer.blocks(), 2);
    assert_eq!(layer.buffers(), 0);
    assert_eq!(layer.slot_rows(), 0);
    assert_eq!(layer.max_buffer(), 0);
    layer.validate(16).unwrap();
    let y = vec![1.0; 600];
    assert!(
        layer
            .emulate(&y, 2, -0.25, 32.0)
            .unwrap()
            .iter()
            .all(|&v| v == 0.0)
    );
}

#[test]
fn bad_parameters_are_errors() {
    let w = Csr::zeros(4, 4).unwrap();
    let p = |b| params(b, Layout::Paper);
    assert_eq!(
        HpNetwork::build(std::slice::from_ref(&w), &p(0)),
        Err(HpError::Buffer(0))
    );
    assert_eq!(
        HpNetwork::build(std::slice::from_ref(&w), &p(MAX_BUFFER + 1)),
        Err(HpError::Buffer(MAX_BUFFER + 1))
    );
    assert_eq!(HpNetwork::build(&[], &p(4)), Err(HpError::NoLayers));
    // 4 → 4 → 5 chains; a 5 × 4 layer after a 4 × 4 one does not.
    let wide = Csr::zeros(4, 5).unwrap();
    assert!(HpNetwork::build(&[w.clone(), wide.clone()], &p(4)).is_ok());
    let tall = Csr::zeros(5, 4).unwrap();
    assert_eq!(
        HpNetwork::build(&[w.clone(), tall.clone()], &p(4)),
        Err(HpError::LayerShape {
            layer: 2,
            rows: 5,
            cols: 4,
            inputs: 4
        })
    );
    let e = HpNetwork::build(&[wide.clone(), wide.clone()], &p(4)).unwrap_err();
    assert!(e.to_string().contains("gives 5 values a row"), "{e}");
    assert!(HpNetwork::build(&[wide.clone(), tall], &p(4)).is_ok());
    assert_eq!(
        HpNetwork::build(&[Csr::zeros(3, 0).unwrap()], &p(4)),
        Err(HpError::Neurons(0))
    );
    assert!(HpLayer::build(&w, None, vec![0, 1], &p(4), 1).is_err());
    assert!(HpLayer::build(&w, Some(&[0, 1, 2]), vec![0, 1, 2, 3], &p(4), 1).is_err());
    // A 4 × 5 layer takes 4 input positions and 5 outputs.
    assert!(HpLayer::build(&wide, Some(&[0, 1, 2, 3, 4]), (0..5).collect(), &p(4), 1).is_err());
    assert!(HpLayer::build(&wide, Some(&[3, 2, 1, 0]), (0..4).collect(), &p(4), 1).is_err());
    assert!(HpLayer::build(&wide, Some(&[3, 2, 1, 0]), (0..5).collect(), &p(4), 1).is_ok());
    assert!(Layout::from_name("paper") == Some(Layout::Paper));
    assert!(Layout::from_name("x").is_none());
}

#[test]
fn a_warp_whose_rows_are_all_empty_has_an_empty_slice() {
    // N = 100: outputs 32..64 read nothing; the others read two inputs.
    let mut t = Vec::new();
    for o in (0..100u32).filter(|o| !(32..64).contains(o)) {
        t.push((o % 7, o, 0.5));
        t.push((50 + o % 11, o, 0.25));
    }
    let w = Csr::from_triplets(100, 100, &t).unwrap();
    let layer =
        HpLayer::build(&w, None, (0..100).collect(), &params(64, Layout::Paper), 1).unwrap();
    layer.validate(64).unwrap();
    let s = layer.slice_starts();
    assert_eq!(s[1] - s[0], 2);
    assert_eq!(s[2], s[1], "warp 1's outputs are empty");
    assert_eq!(layer.to_csr(None).unwrap(), w);
}

#[test]
fn footprints_larger_than_a_buffer_are_cut() {
    // Every output reads all 40 inputs: buffers of 16 → 3 buffers per block.
    let t: Vec<_> = (0..40u32)
        .flat_map(|r| (0..40u32).map(move |c| (r, c, 1.0 + (r % 3) as f32)))
        .collect();
    let w = Csr::from_triplets(40, 40, &t).unwrap();
    for layout in [Layout::Paper, Layout::Grouped] {
        let layer = HpLayer::build(&w, None, (0..40).collect(), &params(16, layout), 1).unwrap();
        layer.validate(16).unwrap();
        assert_eq!(layer.buffers(), 3);
        assert!(layer.max_buffer() <= 16);
        if layout == Layout::Paper {
            // Consecutive cuts of the sorted footprint: 16, 16, 8.
            assert_eq!(layer.buffer_starts(), &[0, 16, 32, 40]);
        } else {
            // Every lane reads all 40 inputs: balanced cuts of 14, 13, 13.
            let widths: Vec<u32> = (0..3)
                .map(|k| layer.slice_starts()[k * WARPS + 1] - layer.slice_starts()[k * WARPS])
                .collect();
            assert_eq!(widths.iter().sum::<u32>(), 40);
            assert!(widths.iter().all(|&w| (13..=14).contains(&w)), "{widths:?}");
        }
        assert_eq!(layer.to_csr(None).unwrap(), w);
    }
}

#[test]
fn grouped_order_puts_shared_input_sets_together() {
    // Outputs 0, 2, 4 read {0, 1}; outputs 1, 3 read {2}; output 5 reads nothing.
    let mut t = Vec::new();
    for o in [0u32, 2, 4] {
        t.extend([(0, o, 1.0), (1, o, 1.0)]);
    }
    for o in [1u32, 3] {
        t.push((2, o, 1.0));
    }
    let w = Csr::from_triplets(6, 6, &t).unwrap();
    let wt = w.transpose();
    let groups = input_set_groups(&wt);
    assert_eq!(groups, vec![vec![0, 2, 4], vec![1, 3], vec![5]]);
    assert_eq!(grouped_order(&wt, &groups, None), vec![0, 2, 4, 1, 3, 5]);
    // With inputs at reversed positions, the group reading input 2 comes first.
    let positions = [5, 4, 0, 1, 2, 3];
    assert_eq!(
        grouped_order(&wt, &groups, Some(&positions)),
        vec![1, 3, 0, 2, 4, 5]
    );
    assert_eq!(inverse(&[2, 0, 1]), vec![1, 2, 0]);
    // Positions 0, 1, … hold outputs 0, 2, 4, 1, 3, 5: inputs 0 and 1 are read
    // first, then 2; inputs 3, 4, 5 by nobody.
    assert_eq!(
        first_reader_order(&wt, &[0, 2, 4, 1, 3, 5]),
        vec![0, 1, 2, 3, 4, 5]
    );
    assert_eq!(
        first_reader_order(&wt, &[1, 3, 0, 2, 4, 5]),
        vec![2, 0, 1, 3, 4, 5]
    );
    let y = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let order = [2, 0, 1];
    assert_eq!(
        to_position_order(&y, &order),
        vec![3.0, 1.0, 2.0, 6.0, 4.0, 5.0]
    );
    assert_eq!(
        to_neuron_order(&to_position_order(&y, &order), &order),
        y.to_vec()
    );
}

#[test]
fn the_challenge_layers_pack_without_padding_when_grouped() {
    let net = spdnn_sdgc::generator::network(1024, 12, 3).unwrap();
    let layers = net.layers();
    let stats = |layout| {
        let hp = HpNetwork::build(layers, &params(722, layout)).unwrap();
        let mut s = LayoutStats::default();
        hp.layers.iter().for_each(|l| s.add(l));
        (hp, s)
    };
    let (grouped, g) = stats(Layout::Grouped);
    let (_, p) = stats(Layout::Paper);
    assert_eq!(g.nnz, 1024 * 32 * 12);
    assert_eq!(
        g.fill(),
        1.0,
        "every lane of a grouped challenge block has 32 entries"
    );
    assert!(
        g.max_buffer <= 512,
        "16 groups of 16 outputs read at most 512 inputs"
    );
    assert_eq!(g.buffers, g.blocks);
    assert!(p.footprint > g.footprint);
    for (l, layer) in grouped.layers.iter().enumerate() {
        let previous = grouped.input_neurons(l);
        assert_eq!(without_zeros(&layers[l]), layer.to_csr(previous).unwrap());
    }
    // The first layer reads runs of neighbouring positions of the reordered input.
    assert!(grouped.input_order.is_some());
    let mut first = LayoutStats::default();
    first.add(&grouped.layers[0]);
    assert!(first.sectors * 4 <= first.footprint, "{first:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The layout is valid and returns the layer's weights, buffer by buffer as
    /// sliced ELL and as a whole.
    #[test]
    fn round_trip(
        w in (1usize..=300, 1usize..=300)
            .prop_flat_map(|(r, c)| matrix(r, c, 0.08, -3.0f32..3.0)),
        buffer in 1usize..=48,
        layout in layout(),
        square in proptest::bool::weighted(0.25),
        reversed in proptest::bool::ANY,
    ) {
        // A quarter of the cases square (the challenge's shape), the rest rectangular.
        let w = if square {
            let n = w.nrows().min(w.ncols());
            let t: Vec<_> = w.triplets().filter(|t| (t.0 as usize) < n && (t.1 as usize) < n).collect();
            Csr::from_triplets(n, n, &t).unwrap()
        } else {
            w
        };
        let (inputs, n) = (w.nrows(), w.ncols());
        let wt = w.transpose();
        // Inputs at their own positions or reversed (a previous layer's order).
        let input_order: Option<Vec<u32>> = reversed.then(|| (0..inputs as u32).rev().collect());
        let positions = input_order.as_deref().map(inverse);
        let outputs = match layout {
            Layout::Grouped => grouped_order(&wt, &input_set_groups(&wt), positions.as_deref()),
            Layout::Paper => (0..n as u32).collect(),
        };
        let layer = HpLayer::from_transposed(&wt, positions.as_deref(), outputs, &params(buffer, layout), 1).unwrap();
        layer.validate(buffer).unwrap();
        prop_assert_eq!((layer.inputs(), layer.neurons()), (inputs, n));
        prop_assert_eq!(layer.blocks(), n.div_ceil(BLOCK));
        prop_assert_eq!(layer.to_csr(input_order.as_deref()).unwrap(), without_zeros(&w));
        // Each (block, buffer) as sliced ELL: its dense form is W restricted to the
        // buffer's inputs and the block's outputs (inputs at their own positions: a
        // lane's offsets then increase, as sliced ELL wants).
        let dense = w.to_dense();
        let blocks = if input_order.is_none() { layer.blocks() } else { 0 };
        for block in 0..blocks {
            for k in layer.block_buffers()[block]..layer.block_buffers()[block + 1] {
                let k = k as usize;
                let ell = layer.buffer_ell(block, k).unwrap();
                let buffer_inputs = &layer.map()[layer.buffer_starts()[k] as usize..layer.buffer_starts()[k + 1] as usize];
                let sub = ell.to_dense();
                for (t, &o) in layer.outputs()[block * BLOCK..].iter().take(BLOCK).enumerate() {
                    for (c, &r) in buffer_inputs.iter().enumerate() {
                        prop_assert_eq!(sub[[t, c]], dense[[r as usize, o as usize]]);
                    }
                }
            }
        }
    }

    /// The kernel's indexing (emulated) equals `Y · W` exactly on dyadic values, over
    /// chains of square and rectangular layers whose positions are permuted, with
    /// footprints cut into many buffers.
    #[test]
    fn emulated_chain_is_exact_on_dyadic_values(
        (widths, ws, y) in widths(300, 3).prop_flat_map(|widths| (
            Just(widths.clone()),
            chain(&widths, 0.05, (-8i32..=8).prop_map(|k| k as f32 / 4.0)),
            proptest::collection::vec(prop_oneof![Just(0.0f32), (1i32..=8).prop_map(|k| k as f32 / 2.0)], 3 * widths[0]),
        )),
        buffer in 1usize..=40,
        layout in layout(),
        bias in (1i32..=8).prop_map(|k| -(k as f32) / 4.0),
    ) {
        let hp = HpNetwork::build(&ws, &params(buffer, layout)).unwrap();
        prop_assert_eq!(check_layers(&ws).unwrap(), widths.clone());
        let got = hp.emulate(&y, 3, bias, 32.0).unwrap();
        let mut want = y.clone();
        for w in &ws {
            want = dense_layer(&want, 3, w, bias, 32.0);
        }
        prop_assert_eq!(got.len(), 3 * widths[widths.len() - 1]);
        prop_assert_eq!(got.len(), want.len());
        for (i, (g, e)) in got.iter().zip(&want).enumerate() {
            prop_assert!(g == e, "value {} of widths {:?}: {} != {}", i, widths, g, e);
        }
    }

    /// A bias per output neuron (trained networks, ≤ 0, zero included): each layer's
    /// biases in its position order give the dense result exactly, in both layouts
    /// (the grouped one permutes the positions).
    #[test]
    fn emulated_chain_with_a_bias_per_neuron_is_exact(
        (widths, ws, y) in widths(300, 3).prop_flat_map(|widths| (
            Just(widths.clone()),
            chain(&widths, 0.05, (-8i32..=8).prop_map(|k| k as f32 / 4.0)),
            proptest::collection::vec(prop_oneof![Just(0.0f32), (1i32..=8).prop_map(|k| k as f32 / 2.0)], 3 * widths[0]),
        )),
        seeds in proptest::collection::vec(0i32..=8, 1..=61),
        buffer in 1usize..=40,
        layout in layout(),
    ) {
        let hp = HpNetwork::build(&ws, &params(buffer, layout)).unwrap();
        let mut next = 0usize;
        let biases: Vec<Vec<f32>> = ws
            .iter()
            .map(|w| {
                (0..w.ncols())
                    .map(|_| {
                        next += 1;
                        -(seeds[(next * 7) % seeds.len()] as f32) / 4.0
                    })
                    .collect()
            })
            .collect();
        let got = hp.emulate_biased(&y, 3, &biases, 32.0).unwrap();
        let mut want = y.clone();
        for (w, b) in ws.iter().zip(&biases) {
            want = dense_layer_biased(&want, 3, w, b, 32.0);
        }
        prop_assert_eq!(got.len(), want.len());
        for (i, (g, e)) in got.iter().zip(&want).enumerate() {
            prop_assert!(g == e, "value {} of widths {:?}: {} != {}", i, widths, g, e);
        }
    }

    /// On arbitrary values, within the GPU tests' tolerance; with one buffer per
    /// block in the paper's layout the sum runs in input order, bit for bit.
    #[test]
    fn emulated_layer_matches_general_values(
        (w, y) in (1usize..=200, 1usize..=200).prop_flat_map(|(inputs, n)| (
            matrix(inputs, n, 0.2, 0.001f32..0.5),
            proptest::collection::vec(0.0f32..1.0, 2 * inputs),
        )),
        buffer in prop_oneof![Just(MAX_BUFFER), 1usize..=32],
        layout in layout(),
    ) {
        let hp = HpNetwork::build(std::slice::from_ref(&w), &params(buffer, layout)).unwrap();
        let got = hp.emulate(&y, 2, -0.1, 32.0).unwrap();
        let want = dense_layer(&y, 2, &w, -0.1, 32.0);
        let exact = buffer == MAX_BUFFER && layout == Layout::Paper;
        for (g, e) in got.iter().zip(&want) {
            if exact {
                prop_assert_eq!(g.to_bits(), e.to_bits());
            } else {
                prop_assert!((g - e).abs() <= 1e-5 * e.abs().max(1.0), "{} vs {}", g, e);
            }
        }
    }
}
