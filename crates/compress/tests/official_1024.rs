//! The real N = 1024 network (120 layers, bias −0.3, bound 32), compressed: 16× (32× in
//! every sixth layer), every layer proved to preserve all-at-bound rows, and the reference
//! on the compressed network gives the official truth: for the 60000 MNIST-recipe images
//! and for the official first 1200 images (whose values also match the uncompressed run).
//!
//! Needs `../shared/data/sdgc/` (or `data/sdgc/`) and `data/mnist/`; without them the tests
//! say why and pass, except under CI, where a missing file is a failure.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use common::{max_difference, reference};
use spdnn_compress::{CompressReport, Compressed, Retirement, compress};
use spdnn_formats::SparseMatrix;
use spdnn_reference::{Activation, Element, Options, infer};
use spdnn_sdgc::paths::{find_official, workspace_root_from_manifest};
use spdnn_sdgc::{Network, tsv};

/// A whole row as one segment: its statistics count the rows all at the bound.
const WHOLE_ROW: usize = 1 << 30;

fn root() -> PathBuf {
    workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"))
}

/// `found`, or `None` after saying what is missing; under CI a missing file fails.
fn required(found: Option<PathBuf>, what: &str) -> Option<PathBuf> {
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} is missing, and CI needs it"
        );
        eprintln!("skipped: {what} is not there");
    }
    found
}

fn official(name: &str) -> Option<PathBuf> {
    required(
        find_official(&root(), name),
        &format!("the official file {name}"),
    )
}

/// The real network and its compression, made once for all tests of this file.
fn network() -> Option<&'static (Network, Compressed)> {
    static NETWORK: OnceLock<Option<(Network, Compressed)>> = OnceLock::new();
    NETWORK
        .get_or_init(|| {
            let path = official("neuron1024.tar.gz")?;
            let network =
                tsv::read_network(&path, Some(1024), 120, &mut |_| {}).expect("reads the net");
            let start = Instant::now();
            let compressed = compress(network.layers()).expect("compresses");
            eprintln!("compressed in {:.1?}", start.elapsed());
            Some((network, compressed))
        })
        .as_ref()
}

fn activation() -> Activation {
    Activation::new(-0.3, 32.0).unwrap()
}

#[test]
fn the_official_network_compresses_16x_and_32x() {
    let Some((_, c)) = network() else {
        return;
    };
    for (l, s) in c.summary().layers.iter().enumerate() {
        // Offset-32 layers (every sixth) have classes of 32, the others of 16.
        let (classes, size) = if (l + 1) % 6 == 0 { (32, 32) } else { (64, 16) };
        assert_eq!(
            (s.classes, s.largest_class),
            (classes, size),
            "layer {}",
            l + 1
        );
        assert_eq!(s.merged_classes, classes);
        let map = c.classes(l).unwrap();
        assert!((0..1024).all(|j| map.class_of(j) == Some((j % classes) as u32)));
    }
    let retirement = c.retirement(-0.3, 32.0).unwrap();
    assert_eq!(retirement.suffix_start(), 0, "every layer preserves");
    let original = Retirement::analyze(network().unwrap().0.layers(), -0.3, 32.0).unwrap();
    assert_eq!(original.suffix_start(), 0);
    let report = CompressReport::new(c.summary(), Some(&retirement));
    eprintln!(
        "1024-120: widths ×{:.2}, entries ×{:.2} ({} → {}), compress {:.1} ms, retirement {:.2} ms",
        report.width_ratio,
        report.nnz_ratio,
        report.layers.iter().map(|l| l.nnz).sum::<usize>(),
        report
            .layers
            .iter()
            .map(|l| l.compressed_nnz)
            .sum::<usize>(),
        report.compress_ms,
        report.retirement_ms.unwrap()
    );
}

#[test]
fn mnist_recipe_images_give_the_official_truth_compressed() {
    let (Some((_, c)), Some(truth_path)) = (network(), official("neuron1024-l120-categories.tsv"))
    else {
        return;
    };
    let data = root().join("data");
    let mnist_file = spdnn_sdgc::images::mnist::mnist_dir(&data)
        .join(spdnn_sdgc::images::mnist::MNIST_TRAIN_IMAGES);
    if required(
        mnist_file.is_file().then_some(mnist_file),
        "MNIST (data/mnist/)",
    )
    .is_none()
    {
        return;
    }
    let mnist = spdnn_sdgc::images::load_mnist_train(&data).expect("loads MNIST");
    let input = spdnn_sdgc::images::from_mnist(&mnist, 1024, &|_, _| {}).expect("builds images");
    let truth = tsv::read_categories(&truth_path).expect("reads the truth");
    assert_eq!(truth.len(), 1812);
    let options = Options {
        keep_output: false,
        collect_stats: true,
        segment_lengths: vec![WHOLE_ROW],
    };
    for f64_too in [false, true] {
        let start = Instant::now();
        let categories = if f64_too {
            categories::<f64>(c, &input.features, &options)
        } else {
            categories::<f32>(c, &input.features, &options)
        };
        assert_eq!(categories, truth, "f64: {f64_too}");
        eprintln!(
            "60000 rows on the compressed net ({}): {:.1?}",
            if f64_too { "f64" } else { "f32" },
            start.elapsed()
        );
    }
    // Rows finished (all zero, or all at the bound with every later layer preserving).
    let result = infer::<f32>(c.layers(), &input.features, activation(), &options).unwrap();
    let finished: Vec<usize> = result
        .stats
        .iter()
        .map(|s| {
            let at_bound = s.segment(WHOLE_ROW).unwrap().all_upper_bound as usize;
            (s.rows - s.active_rows) + at_bound
        })
        .collect();
    let active: Vec<usize> = finished.iter().map(|f| 60000 - f).collect();
    eprintln!(
        "rows still active after layers 1, 5, 10, 15, 20, 25, 30, 40, 60, 120: {:?}",
        [1, 5, 10, 15, 20, 25, 30, 40, 60, 120].map(|l| active[l - 1])
    );
    assert_eq!(
        active[119], 0,
        "every row ends all zero or all at the bound"
    );
    // `active[l]` counts rows after layer l + 1: all are finished after layer `done`.
    let done = active.iter().rposition(|&a| a > 0).map_or(1, |l| l + 2);
    eprintln!("every row is finished after layer {done}");
}

fn categories<T: Element>(
    c: &Compressed,
    input: &spdnn_formats::Csr,
    options: &Options,
) -> Vec<u32> {
    let result = infer::<T>(c.layers(), input, activation(), options).unwrap();
    assert_eq!(result.stats.len(), 120);
    result.categories
}

#[test]
fn official_first_1200_images_match_the_uncompressed_run() {
    let (Some((network, c)), Some(images), Some(truth)) = (
        network(),
        official("sparse-images-1024_subset.mtx"),
        official("neuron1024-l120-categories_subset.mtx"),
    ) else {
        return;
    };
    let input = tsv::read_images(&images, 1024, None).expect("reads the images");
    let truth = tsv::read_categories(&truth).expect("reads the truth");
    let original = reference::<f32>(network.layers(), &input, activation());
    let small = reference::<f32>(c.layers(), &input, activation());
    assert_eq!(small.categories, truth);
    assert_eq!(original.categories, truth);
    let values: Vec<f32> = small.output.unwrap().iter().copied().collect();
    let expanded = c.expand(&values, input.nrows()).unwrap();
    let original_values: Vec<f32> = original.output.unwrap().iter().copied().collect();
    assert_eq!(expanded.len(), 1200 * 1024);
    let diff = max_difference(&expanded, &original_values);
    eprintln!("official 1200 rows: max |compressed − original| = {diff:e}");
    assert!(diff <= 32.0 * 1e-5);
    assert_eq!(c.layers()[0].nrows(), input.ncols());
}
