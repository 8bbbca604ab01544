//! SNICIT's memory model: a batch holds two activation buffers of the widest rows (both
//! spMMs run on them) and a few bytes more a row, whichever pre-convergence spMM; the
//! layers are XY's layouts (or BF's slabs before t): the post-convergence ones as the
//! model's layers (they stream), the pre-convergence ones as fixed bytes.

use spdnn_cuda::memory::WeightPlacement;
use spdnn_cuda::method::{KernelMethod, LayerChain};
use spdnn_cuda::slab_weights::{chosen_slab_width, packed_layer_bytes};
use spdnn_snicit::{PreConvergence, Snicit, SnicitOptions};
use spdnn_xy::XyNetwork;

fn check(chain: &LayerChain<'_>, threshold: usize) {
    let widest = spdnn_cuda::memory::widest(chain);
    let network = XyNetwork::prepare(chain.layers).unwrap();
    let t = threshold.min(chain.layers.len());
    for pre in [PreConvergence::Xy, PreConvergence::Bf] {
        let options = SnicitOptions {
            threshold,
            pre_convergence: pre,
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
