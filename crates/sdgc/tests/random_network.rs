//! The random unstructured generator: shapes, fan-in, weights, determinism, streaming.

use proptest::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_sdgc::generator::{
    self, DEFAULT_FAN_IN, for_each_random_layer, random_layer, random_network, random_weight_bound,
};

/// Every column of `layer` holds exactly `fan_in` distinct inputs with nonzero weights
/// inside `(−a, a)`.
fn assert_random_shaped(layer: &Csr, neurons: usize, fan_in: usize) {
    assert_eq!((layer.nrows(), layer.ncols()), (neurons, neurons));
    assert_eq!(layer.nnz(), fan_in * neurons);
    let a = random_weight_bound(fan_in);
    let columns = layer.transpose();
    for c in 0..neurons {
        let (inputs, weights) = columns.row(c);
        assert_eq!(inputs.len(), fan_in, "column {c}");
        assert!(
            inputs.windows(2).all(|p| p[0] < p[1]),
            "column {c}: not distinct"
        );
        assert!(
            weights.iter().all(|&w| w != 0.0 && w.abs() < a),
            "column {c}: a weight outside (−{a}, {a})"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Any N (not only 16·2^k), any fan-in up to N: the shape and the fan-in hold.
    #[test]
    fn every_column_has_fan_in_distinct_inputs(
        neurons in 1usize..300,
        fan_frac in 0.0f64..=1.0,
        layer in 1usize..5,
        seed in any::<u64>(),
    ) {
        let fan_in = ((neurons as f64 * fan_frac) as usize).clamp(1, neurons);
        let w = random_layer(neurons, layer, fan_in, seed).unwrap();
        assert_random_shaped(&w, neurons, fan_in);
    }
}

#[test]
fn the_challenge_sizes_have_32_inputs_per_output() {
    let net = random_network(1024, 3, DEFAULT_FAN_IN, 5).unwrap();
    assert_eq!(net.neurons(), 1024);
    assert_eq!(net.layers().len(), 3);
    for layer in net.layers() {
        assert_random_shaped(layer, 1024, 32);
    }
    // Rows get what the columns chose: about 32 each, not exactly.
    let rows: Vec<usize> = (0..1024).map(|r| net.layers()[0].row(r).0.len()).collect();
    assert!(rows.iter().any(|&n| n != 32));
    assert_eq!(rows.iter().sum::<usize>(), 32 * 1024);
}

#[test]
fn the_same_seed_gives_the_same_network_and_others_differ() {
    let a = random_network(200, 4, 16, 11).unwrap();
    assert_eq!(a, random_network(200, 4, 16, 11).unwrap());
    assert_ne!(a, random_network(200, 4, 16, 12).unwrap());
    // Layers differ from each other, and from another fan-in's.
    assert_ne!(a.layers()[0], a.layers()[1]);
    assert_ne!(
        random_layer(200, 1, 16, 11).unwrap(),
        random_layer(200, 1, 17, 11).unwrap()
    );
    // A layer alone equals the same layer of the whole network.
    assert_eq!(random_layer(200, 3, 16, 11).unwrap(), a.layers()[2]);
}

#[test]
fn the_weights_spread_around_zero() {
    let w = random_layer(4096, 1, 32, 0).unwrap();
    let a = random_weight_bound(32) as f64;
    let n = w.nnz() as f64;
    let mean = w.values().iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = w.values().iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / n;
    // Uniform on (−a, a): mean 0, variance a²/3 = 6/32 (131072 draws).
    assert!(mean.abs() < 0.01, "mean {mean}");
    assert!((var / (a * a / 3.0) - 1.0).abs() < 0.02, "variance {var}");
    let negative = w.values().iter().filter(|&&v| v < 0.0).count() as f64 / n;
    assert!((negative - 0.5).abs() < 0.01, "negative share {negative}");
}

#[test]
fn streaming_gives_the_whole_network_in_order() {
    let whole = random_network(96, 23, 8, 4).unwrap();
    let mut seen = 0;
    for_each_random_layer::<spdnn_sdgc::SdgcError>(96, 23, 8, 4, |index, layer| {
        seen += 1;
        assert_eq!(index, seen);
        assert_eq!(&layer, &whole.layers()[index - 1]);
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, 23);
}

#[test]
fn bad_sizes_are_errors_naming_the_parameter() {
    let e = random_network(64, 1, 65, 0).unwrap_err().to_string();
    assert!(e.contains("fan-in"), "{e}");
    let e = random_network(64, 1, 0, 0).unwrap_err().to_string();
    assert!(e.contains("fan-in"), "{e}");
    let e = random_network(0, 1, 1, 0).unwrap_err().to_string();
    assert!(e.contains("neurons"), "{e}");
    let e = random_network(64, 0, 4, 0).unwrap_err().to_string();
    assert!(e.contains("layer"), "{e}");
    assert!(generator::random_layer(64, 0, 4, 0).is_err());
    let e = for_each_random_layer::<spdnn_sdgc::SdgcError>(64, 0, 4, 0, |_, _| Ok(()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("layer"), "{e}");
}
