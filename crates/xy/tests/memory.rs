//! XY's memory model against the sizes its allocations take: the prepared layout's bytes
//! per layer (and the per-neuron biases), and the run's buffers at several batch sizes.

use spdnn_cuda::memory::WeightPlacement;
use spdnn_cuda::method::{KernelMethod, LayerChain};
use spdnn_xy::gpu::XyRun;
use spdnn_xy::{Xy, XyNetwork, XyOptions};

/// What `prepare`, `load`'s buffers and a pass allocate for batches of `rows`: the layers
/// as uploaded, the run's buffers, the category flag, and the larger transient (the
/// deletion's list or the export).
fn allocated(network: &XyNetwork, bias_bytes: usize, rows: usize) -> usize {
    let widest = network.widest();
    let layers: usize = network.layers.iter().map(|l| l.device_bytes()).sum();
    layers
        + bias_bytes
        + XyRun::bytes(rows, widest)
        + rows
        + (4 * rows).max(XyRun::export_bytes(rows, widest))
}

fn check(chain: &LayerChain<'_>) {
    let model = Xy::memory(chain, &XyOptions::default());
    assert!(model.exact && !model.streaming);
    let network = XyNetwork::prepare(chain.layers).unwrap();
    let bias_bytes: usize = (0..chain.layers.len()).map(|l| chain.bias_bytes(l)).sum();
    for rows in [1, 2, 7, 1000] {
        assert_eq!(
            model.bytes(rows, &WeightPlacement::Resident),
            allocated(&network, bias_bytes, rows),
            "{rows} rows"
        );
    }
}

#[test]
fn the_model_is_what_prepare_and_a_pass_allocate() {
    // Grouped challenge layers, their compressed (general, narrower) chain, and a layer
    // whose outputs are no multiple of 16.
    let challenge = spdnn_gputest::challenge_problem(1024, 24, 4, 5);
    check(&LayerChain::new(&challenge.layers, -0.3, 32.0));
    let (compressed, _) = spdnn_gputest::compressed(&challenge);
    check(&LayerChain::new(&compressed.layers, -0.3, 32.0));
    let odd = spdnn_formats::Csr::from_triplets(5, 5, &[(0, 1, 1.0), (3, 4, 0.5)]).unwrap();
    check(&LayerChain::new(std::slice::from_ref(&odd), -0.3, 32.0));
    // A trained-shaped chain with a bias per neuron.
    let trained = spdnn_gputest::biased::trained_shaped_problem(128, 3, 10, false, 1);
    let chain = LayerChain::with_biases(&trained.layers, &trained.biases, trained.upper);
    check(&chain);
    assert!(Xy::memory(&chain, &XyOptions::default()).weight_bytes() > 4 * 128 * 4);
}
