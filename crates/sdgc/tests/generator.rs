//! The RadiX-Net generator: structure, determinism and agreement with the official N = 1024 files.

use proptest::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_sdgc::generator::{self, WEIGHT};
use spdnn_sdgc::paths::{find_official, workspace_root_from_manifest};

/// Asserts that every row and every column of `layer` has 32 entries, all equal to 1/16.
fn assert_challenge_shaped(layer: &Csr, neurons: usize, index: usize) {
    assert_eq!(
        (layer.nrows(), layer.ncols()),
        (neurons, neurons),
        "layer {index}"
    );
    assert_eq!(layer.nnz(), 32 * neurons, "layer {index}");
    assert!(
        layer.values().iter().all(|&v| v == WEIGHT),
        "layer {index}: a value is not 1/16"
    );
    let mut column_counts = vec![0u32; neurons];
    for row in 0..neurons {
        let (cols, _) = layer.row(row);
        assert_eq!(cols.len(), 32, "layer {index}, row {row}");
        for &c in cols {
            column_counts[c as usize] += 1;
        }
    }
    if let Some(col) = column_counts.iter().position(|&c| c != 32) {
        panic!(
            "layer {index}, column {col} has {} entries",
            column_counts[col]
        );
    }
}

#[test]
fn layers_1_to_6_equal_the_official_n1024_files() {
    let root = workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
    let Some(path) = find_official(&root, "neuron1024.tar.gz") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI: neuron1024.tar.gz is missing"
        );
        eprintln!(
            "skipped: neuron1024.tar.gz not found (looked in data/sdgc and ../shared/data/sdgc)"
        );
        return;
    };
    let official = spdnn_sdgc::tsv::read_network(&path, Some(1024), 6, &mut |_| {}).unwrap();
    let generated = generator::network(1024, 6, 12345).unwrap();
    for (l, (ours, theirs)) in generated.layers().iter().zip(official.layers()).enumerate() {
        assert_eq!(ours, theirs, "layer {}", l + 1);
    }
}

#[test]
fn official_n1024_cycle_2_is_the_formula_with_one_row_permutation() {
    let root = workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
    let Some(path) = find_official(&root, "neuron1024.tar.gz") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI: neuron1024.tar.gz is missing"
        );
        eprintln!(
            "skipped: neuron1024.tar.gz not found (looked in data/sdgc and ../shared/data/sdgc)"
        );
        return;
    };
    let official = spdnn_sdgc::tsv::read_network(&path, Some(1024), 12, &mut |_| {}).unwrap();
    let groups = 64u32;
    let mut class_sizes = vec![0u32; groups as usize];
    for r in 0..1024 {
        // Layer 7 (p = 0): row r holds the residues {g, g − 1} with g = π(r) mod 64.
        let (cols, _) = official.layers()[6].row(r);
        let residues: Vec<u32> = cols.iter().map(|c| c % groups).collect();
        let g = *residues
            .iter()
            .find(|&&g| residues.contains(&((g + groups - 1) % groups)))
            .expect("layer 7 rows hold two neighbouring residues");
        class_sizes[g as usize] += 1;
        for p in 0..6u32 {
            let offset = 1 << p;
            let expected: Vec<u32> = (0..1024u32)
                .filter(|&j| (j % groups == g) || (j % groups == (g + groups - offset) % groups))
                .collect();
            assert_eq!(
                official.layers()[6 + p as usize].row(r).0,
                expected.as_slice(),
                "layer {}, row {r}",
                7 + p
            );
        }
    }
    // π is a permutation: every residue class receives 16 rows.
    assert!(class_sizes.iter().all(|&c| c == 16), "{class_sizes:?}");
}

#[test]
fn the_first_cycle_follows_the_formula_and_later_cycles_permute_rows() {
    // N = 256: G = 16, c = 4. Layer 3 (p = 2, cycle 0): (r − j) mod 16 ∈ {0, 4}.
    let neurons = 256;
    let w = generator::layer(neurons, 3, 9).unwrap();
    for r in 0..neurons {
        let expected: Vec<u32> = (0..neurons as u32)
            .filter(|&j| matches!((r as u32 + 16 - j % 16) % 16, 0 | 4))
            .collect();
        assert_eq!(w.row(r).0, expected.as_slice(), "row {r}");
    }
    // Layers 5 and 7 (cycle 1, p = 0 and 2) are layers 1 and 3 with the same rows permuted.
    let base1 = generator::layer(neurons, 1, 9).unwrap();
    let cycle1 = generator::layer(neurons, 5, 9).unwrap();
    let cycle1_p2 = generator::layer(neurons, 7, 9).unwrap();
    let permutation = generator::cycle_permutation(neurons, 9, 1).unwrap();
    for (r, &source) in permutation.iter().enumerate() {
        let source = source as usize;
        assert_eq!(cycle1.row(r), base1.row(source), "layer 5, row {r}");
        assert_eq!(cycle1_p2.row(r), w.row(source), "layer 7, row {r}");
    }
    assert_ne!(cycle1, base1);
}

#[test]
fn streaming_gives_the_same_layers_in_order() {
    let whole = generator::network(512, 23, 4).unwrap();
    let mut seen = Vec::new();
    generator::for_each_layer::<spdnn_sdgc::SdgcError>(512, 23, 4, |index, layer| {
        assert_eq!(&layer, &whole.layers()[index - 1], "layer {index}");
        seen.push(index);
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, (1..=23).collect::<Vec<_>>());
}

#[test]
fn streaming_stops_at_the_consumers_error() {
    let mut calls = 0;
    let result = generator::for_each_layer::<Wrapped>(64, 30, 0, |index, _| {
        calls += 1;
        if index == 3 {
            Err(Wrapped("stop".to_string()))
        } else {
            Ok(())
        }
    });
    assert_eq!(result.unwrap_err().0, "stop");
    assert_eq!(calls, 3);
}

impl From<spdnn_sdgc::SdgcError> for Wrapped {
    fn from(e: spdnn_sdgc::SdgcError) -> Self {
        Wrapped(e.to_string())
    }
}

#[derive(Debug)]
struct Wrapped(String);

#[test]
fn bad_sizes_are_rejected() {
    for bad in [0, 1, 16, 48, 1000, 1024 + 16, 3 * 1024] {
        let err = generator::check_neurons(bad).unwrap_err().to_string();
        assert!(err.contains(&bad.to_string()), "{err}");
        assert!(generator::network(bad, 1, 0).is_err());
    }
    for good in [32, 64, 1024, 4096, 65536] {
        generator::check_neurons(good).unwrap();
    }
    assert!(generator::layer(1024, 0, 0).is_err());
    assert!(generator::network(1024, 0, 0).is_err());
    let err = generator::for_each_layer::<Wrapped>(48, 3, 0, |_, _| Ok(())).unwrap_err();
    assert!(err.0.contains("48"), "{}", err.0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_row_and_column_has_32_entries_of_one_sixteenth(
        k in 1u32..=8, layers in 1usize..=20, seed in any::<u64>()
    ) {
        let neurons = 16usize << k;
        let net = generator::network(neurons, layers, seed).unwrap();
        prop_assert_eq!(net.num_layers(), layers);
        for (l, layer) in net.layers().iter().enumerate() {
            assert_challenge_shaped(layer, neurons, l + 1);
        }
    }

    #[test]
    fn the_seed_decides_the_network(k in 1u32..=8, layers in 1usize..=20, seed in any::<u64>()) {
        let neurons = 16usize << k;
        let a = generator::network(neurons, layers, seed).unwrap();
        prop_assert_eq!(&a, &generator::network(neurons, layers, seed).unwrap());
        let other = generator::network(neurons, layers, seed ^ 0x9e37_79b9_7f4a_7c15).unwrap();
        let per_cycle = generator::layers_per_cycle(neurons);
        if layers > per_cycle && neurons > 32 {
            // For N = 32 (G = 2, offset 1) every row holds both residue classes, so every
            // layer is all 32×32 entries whatever the permutation.
            prop_assert_ne!(&a, &other);
        } else {
            prop_assert_eq!(&a, &other);
        }
    }
}
