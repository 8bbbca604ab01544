//! SNICIT's memory model: a batch holds two activation buffers of the widest rows (both
//! spMMs run on them) and a few bytes more a row, whichever pre-convergence spMM; the
//! layers are XY's layouts (or BF's slabs before t): the post-convergence ones as the
//! model's layers (they stream), the pre-convergence ones as fixed bytes.

use spdnn_cuda::memory::WeightPlacement;
use spdnn_cuda::method::{KernelMethod, LayerChain};
use spdnn_cuda::slab_weights::{chosen_slab_width, packed_layer_bytes};
use spdnn_formats::SparseMatrix;
use spdnn_snicit::{HELD_SHARE, PreConvergence, Snicit, SnicitOptions, held_bytes, held_slots};
use spdnn_xy::XyNetwork;

fn check(chain: &LayerChain<'_>, threshold: usize) {
    let widest = spdnn_cuda::memory::widest(chain);
    let network = XyNetwork::prepare(chain.layers).unwrap();
    let t = threshold.min(chain.layers.len());
    for pre in [PreConvergence::Xy, PreConvergence::Bf] {
        let options = SnicitOptions {
            threshold,
            pre_convergence: pre,
            hold_back: false,
            ..Default::default()
        };
        let model = Snicit::memory(chain, &options);
        // The post-convergence layers are the model's layers; they stream when there are
        // at least two.
        assert!(model.exact);
        assert_eq!(model.streaming, chain.layers.len() - t > 1, "{pre:?}");
        // Two activation buffers and at most 40 bytes more a row (lists, flags, ids, the
        // cluster arrays).
        assert!(
            (8 * widest..=8 * widest + 40).contains(&model.per_row),
            "{pre:?}: {} bytes a row for rows of {widest}",
            model.per_row
        );
        let slab = chosen_slab_width(&chain.layers[..t], None);
        let slabs = packed_layer_bytes(&chain.layers[..t], slab);
        let layer_bytes: Vec<usize> = network
            .layers
            .iter()
            .enumerate()
            .map(|(l, layer)| {
                chain.bias_bytes(l)
                    + match pre {
                        PreConvergence::Bf if l < t => slabs[l],
                        _ => layer.device_bytes(),
                    }
            })
            .collect();
        assert_eq!(model.layers, layer_bytes[t..], "{pre:?}");
        // Fixed: the pre-convergence layers, the streaming slots beyond two of the largest
        // layer, the samples' sums and centroids, a row's permutation.
        let pre_bytes: usize = layer_bytes[..t].iter().sum();
        let slots = spdnn_xy::stream::slot_bytes(network.layers[t..].iter().enumerate().map(
            |(i, layer)| {
                [
                    layer.block_offsets.len(),
                    layer.inputs.len().max(1),
                    spdnn_xy::format::stored_values(&layer.values)
                        .0
                        .len()
                        .max(1),
                    chain.bias_bytes(t + i) / 4,
                ]
            },
        ));
        let excess = slots.saturating_sub(2 * model.largest_layer());
        let sums = 4 * options.samples * (options.bins + 1);
        let rest = model.fixed - pre_bytes - excess;
        assert!(
            rest >= sums && rest <= sums + 4 * widest + 64,
            "{pre:?}: fixed {} = {pre_bytes} of layers + {excess} of slots + {rest}",
            model.fixed
        );
        assert_eq!(
            model.bytes(1000, &WeightPlacement::Resident),
            model.fixed + 1000 * model.per_row + model.weight_bytes()
        );
        if model.streaming {
            assert_eq!(
                model.bytes(1000, &WeightPlacement::Streamed(Default::default())),
                model.fixed + 1000 * model.per_row + 2 * model.largest_layer()
            );
        }
        // Holding rows back (the default) adds the held slots, ⌈rows / HELD_SHARE⌉ of the
        // widest post-convergence rows: a share of a slot a row (rounded up to a byte) and
        // one slot more, so never less than the slots and at most one slot and a byte a
        // row more.
        let held = Snicit::memory(
            chain,
            &SnicitOptions {
                hold_back: true,
                ..options.clone()
            },
        );
        let added = |rows: usize| {
            held.bytes(rows, &WeightPlacement::Resident)
                - model.bytes(rows, &WeightPlacement::Resident)
        };
        if t < chain.layers.len() {
            let post_widest = chain.layers[t..]
                .iter()
                .map(SparseMatrix::ncols)
                .chain([chain.layers[t].nrows()])
                .max()
                .unwrap();
            let slot = held_bytes(2, post_widest) - held_bytes(1, post_widest);
            for rows in [1, 2, 15, 16, 17, 999, 60000] {
                let slots = held_bytes(held_slots(rows, HELD_SHARE), post_widest);
                assert!(
                    (slots..=slots + slot + rows).contains(&added(rows)),
                    "{pre:?}: {rows} rows hold {slots} bytes of slots, the model {}",
                    added(rows)
                );
            }
            assert_eq!(held_slots(17, HELD_SHARE), 2);
            assert_eq!(held_slots(17, 1), 17);
            assert_eq!(HELD_SHARE, 16);
        } else {
            assert_eq!(
                added(1000),
                0,
                "{pre:?}: no post-convergence layers, no slots"
            );
        }
    }
}

#[test]
fn a_batch_holds_two_activation_buffers_and_the_layouts() {
    let challenge = spdnn_gputest::challenge_problem(1024, 24, 4, 5);
    let chain = LayerChain::new(&challenge.layers, -0.3, 32.0);
    check(&chain, 8);
    check(&chain, 30);
    let (compressed, _) = spdnn_gputest::compressed(&challenge);
    check(&LayerChain::new(&compressed.layers, -0.3, 32.0), 8);
    let trained = spdnn_gputest::biased::trained_shaped_problem(128, 3, 10, false, 1);
    check(
        &LayerChain::with_biases(&trained.layers, &trained.biases, trained.upper),
        2,
    );
}
