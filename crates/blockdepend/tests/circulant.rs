//! Circulant layers (`layout::Circulant`): which layers the layout proves circulant, their
//! tables and descriptors, and the stored entries they stand for. The GPU side, circulant
//! items against their gathers, is `gpu.rs`'s `circulant_items_agree_with_their_gathers`.

use spdnn_blockdepend::layout::{CIRCULANT_CODE, DESC_WORDS, WARP};
use spdnn_blockdepend::{Chain, FormatChoice, Layout};
use spdnn_formats::{Csr, SparseMatrix};

mod common;

use common::circulant_layer;

fn csr(rows: usize, cols: usize, t: &[(u32, u32, f32)]) -> Csr {
    Csr::from_triplets(rows, cols, t).unwrap()
}

#[test]
fn circulant_layers_get_their_table_in_offset_order() {
    let first = csr(8, 128, &[(0, 0, 1.0), (3, 40, 0.5)]);
    let aligned = circulant_layer(128, 96, &[(20, 0.5), (0, 1.5), (8, 0.25)]);
    let unaligned = circulant_layer(96, 64, &[(6, 1.0), (0, 1.0)]);
    let one = circulant_layer(64, 32, &[(0, 2.0)]);
    let mut other = circulant_layer(32, 32, &[(0, 1.0), (4, 1.0)]);
    other = csr(
        32,
        32,
        &other
            .triplets()
            .map(|(k, c, v)| if c == 17 { (k, c, 3.0) } else { (k, c, v) })
            .collect::<Vec<_>>(),
    );
    let chain = Chain::from_parts(vec![first, aligned, unaligned, one, other], None).unwrap();
    assert_eq!(chain.layers()[1].nrows(), 128);
    for choice in [FormatChoice::Auto, FormatChoice::Ell] {
        let layout = Layout::build(&chain, choice).unwrap();
        let table = |l: usize| {
            let at = layout.layers[l].circulant;
            assert_ne!(at, 0, "layer {l}");
            let head = layout.ell[at];
            layout.ell[at..at + 1 + head[0] as usize].to_vec()
        };
        let w = |v: f32| v.to_bits();
        assert_eq!(table(1), [[3, 1], [0, w(1.5)], [8, w(0.25)], [20, w(0.5)]]);
        assert_eq!(table(2), [[2, 0], [0, w(1.0)], [6, w(1.0)]]);
        assert_eq!(table(3), [[1, 1], [0, w(2.0)]]);
        // One weight off the pattern: gathered.
        assert_eq!(layout.layers[4].circulant, 0);
        assert_eq!(layout.layers[0].circulant, 0);
        let desc = layout.descriptors();
        for l in 1..5 {
            assert_eq!(
                desc[l * DESC_WORDS + DESC_WORDS - 1] as usize,
                layout.layers[l].circulant
            );
        }
        assert_ne!(layout.formats() & (1 << CIRCULANT_CODE), 0);
        // The entries as stored read the table's inputs slot by slot.
        for l in 1..4 {
            let layer = &layout.layers[l];
            let entries = layout.ell_entries_of(l);
            let t = table(l);
            for (i, e) in entries.iter().enumerate() {
                let (slot, lane) = (i / WARP, i % WARP);
                let (g, s) = (slot / (t.len() - 1), slot % (t.len() - 1));
                let c = g * WARP + lane;
                let [d, wb] = t[1 + s];
                assert_eq!(*e, [((c + d as usize) % layer.in_width) as u32, wb]);
            }
        }
    }
    // The pairs layout gathers every layer (the kernel's A/B form keeps no tables).
    let pairs = Layout::build(&chain, FormatChoice::EllPairs).unwrap();
    assert!(pairs.layers.iter().all(|l| l.circulant == 0));
    assert_eq!(pairs.formats() & (1 << CIRCULANT_CODE), 0);
}

#[test]
fn layers_that_are_not_circulant_get_no_table() {
    for layer in [
        // An odd offset: four outputs' inputs cross a pair boundary.
        circulant_layer(64, 64, &[(0, 1.0), (3, 1.0)]),
        // Outputs not a multiple of 32.
        circulant_layer(64, 48, &[(0, 1.0), (4, 1.0)]),
        // Inputs not a multiple of 4.
        circulant_layer(66, 64, &[(0, 1.0), (4, 1.0)]),
        // More outputs than inputs.
        circulant_layer(64, 96, &[(0, 1.0), (4, 1.0)]),
        // More slots than the kernel compiles.
        circulant_layer(64, 64, &[(0, 1.0), (2, 1.0), (4, 1.0), (6, 1.0), (8, 1.0)]),
        // An offset that differs by column.
        csr(
            64,
            64,
            &(0..64u32)
                .flat_map(|c| [(c, c, 1.0), ((c + 2 + 2 * (c % 2)) % 64, c, 1.0)])
                .collect::<Vec<_>>(),
        ),
    ] {
        let first = csr(8, layer.nrows(), &[(0, 0, 1.0)]);
        let chain = Chain::from_parts(vec![first, layer], None).unwrap();
        let layout = Layout::build(&chain, FormatChoice::Ell).unwrap();
        assert_eq!(layout.layers[1].circulant, 0);
        assert_eq!(layout.formats() & (1 << CIRCULANT_CODE), 0);
    }
}

#[test]
fn generated_challenge_layers_are_circulant_until_the_first_cycle_ends() {
    // Compressed, the generated networks' layers 2 .. are x[c] + x[c + 2^(l-1)] until
    // the width halves (layer 8 at N = 4096, 10 at 16384); the later ones are not.
    let net = spdnn_sdgc::generator::network(4096, 12, 0).unwrap();
    let chain = Chain::build(net.layers(), -0.35f32, 32.0, true, true).unwrap();
    let layout = Layout::build(&chain, FormatChoice::Auto).unwrap();
    let circulant: Vec<usize> = (0..layout.layers.len())
        .filter(|&l| layout.layers[l].circulant != 0)
        .map(|l| l + 1)
        .collect();
    assert_eq!(circulant, [2, 3, 4, 5, 6, 7, 8]);
    let at = layout.layers[2].circulant;
    assert_eq!(layout.ell[at], [2, 1]);
    assert_eq!(layout.ell[at + 1][0], 0);
    assert_eq!(layout.ell[at + 2][0], 4);
}

#[test]
fn tiles_check_their_rows_after_the_circulant_layers_only() {
    // A tile skips its row check before a circulant layer (plan::Segment::check_deferred):
    // rows that died run through the cheap layer and the next check finishes them in the same
    // state. Against the gathers (a check after every layer): the same states and values, the
    // same rows carried between launches, and more rows computed in the circulant layers.
    use spdnn_blockdepend::{ItemChoice, PlacementChoice};
    let p = spdnn_gputest::challenge_problem_mnist(4096, 12, 300, 5);
    let emulate = |items| emulate_challenge(&p, PlacementChoice::Auto, items);
    let (exact, gathers) = (emulate(ItemChoice::Auto), emulate(ItemChoice::Gathers));
    let deferred: Vec<usize> = exact
        .segments
        .iter()
        .flat_map(|s| (s.first + 1..s.end).filter(|&done| s.check_deferred(&exact.layout, done)))
        .collect();
    // Launches 1-4 and 5-8: no check after layers 1, 2, 3 and 5, 6, 7.
    assert_eq!(deferred, [1, 2, 3, 5, 6, 7], "{:?}", exact.segments);
    assert!(
        gathers
            .segments
            .iter()
            .all(|s| (1..s.end).all(|done| !s.check_deferred(&gathers.layout, done)))
    );
    let (a, b) = (&exact.emulation, &gathers.emulation);
    assert_eq!(a.states, b.states);
    assert_eq!(a.values(p.upper), b.values(p.upper));
    assert_eq!(a.carried, b.carried);
    assert!(
        a.computed.iter().zip(&b.computed).all(|(x, y)| x >= y),
        "{:?} against {:?}",
        a.computed,
        b.computed
    );
    assert!(a.computed[1..8].iter().sum::<usize>() > b.computed[1..8].iter().sum::<usize>());
}

#[test]
fn lanes_check_their_rows_after_the_launch_only() {
    // A row a lane checks its rows after the launch's last layer only (a warp computes its
    // rows whatever their state; plan::Segment::check_deferred): on a compressed 1024-12
    // challenge network the lanes launch (layers 1-6) defers after layers 1-5 and the states
    // and values are those of shared tiles with a check after every layer.
    use spdnn_blockdepend::plan::Placement;
    use spdnn_blockdepend::{ItemChoice, PlacementChoice};
    let p = spdnn_gputest::challenge_problem_mnist(1024, 12, 300, 5);
    let emulate = |placement, items| emulate_challenge(&p, placement, items);
    let lanes = emulate(PlacementChoice::Auto, ItemChoice::Auto);
    let first = &lanes.segments[0];
    assert_eq!(
        (first.placement, first.first, first.end),
        (Placement::Lanes, 0, 6),
        "{:?}",
        lanes.segments
    );
    let deferred: Vec<usize> = (1..=first.end)
        .filter(|&done| first.check_deferred(&lanes.layout, done))
        .collect();
    assert_eq!(deferred, [1, 2, 3, 4, 5]);
    let tiles = emulate(PlacementChoice::Shared, ItemChoice::Gathers);
    assert!(
        tiles
            .segments
            .iter()
            .all(|s| s.placement == Placement::Shared)
    );
    assert!(
        tiles
            .segments
            .iter()
            .all(|s| (s.first + 1..=s.end).all(|done| !s.check_deferred(&tiles.layout, done)))
    );
    let (a, b) = (&lanes.emulation, &tiles.emulation);
    assert_eq!(a.states, b.states);
    assert_eq!(a.values(p.upper), b.values(p.upper));
}

/// The CPU emulation of `p` with the default options but `placement` and `items`, on a
/// device of `common::BIG`'s shape with 8 blocks.
fn emulate_challenge(
    p: &spdnn_gputest::Problem,
    placement: spdnn_blockdepend::PlacementChoice,
    items: spdnn_blockdepend::ItemChoice,
) -> spdnn_blockdepend::emulate::EmulatedRun<'_> {
    let options = spdnn_blockdepend::BlockDependOptions {
        placement,
        items,
        ..spdnn_blockdepend::BlockDependOptions::default()
    };
    spdnn_blockdepend::emulate::run(
        &p.layers,
        &p.input,
        p.bias,
        p.upper,
        &options,
        &common::BIG,
        8,
    )
    .unwrap()
}
