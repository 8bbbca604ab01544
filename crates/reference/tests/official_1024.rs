//! End to end on the real N = 1024 network (120 layers, bias -0.3, bound 32): the 60000
//! MNIST-recipe images give exactly the official truth, and so do the official first 1200
//! images (whose truth file says `nlayers: 1920`: the challenge's categories are the same
//! for every L, and they are the 120-layer truth restricted to rows ≤ 1200).
//!
//! Needs `../shared/data/sdgc/` (or `data/sdgc/`) and `data/mnist/`; without them the tests
//! say why and pass, except under CI, where a missing file is a failure.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use spdnn_formats::{Csr, SparseMatrix};
use spdnn_reference::{Activation, Element, Options, infer};
use spdnn_sdgc::paths::{find_official, workspace_root_from_manifest};
use spdnn_sdgc::{Network, tsv};

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

/// The real network, read once for all tests of this file.
fn network() -> Option<&'static Network> {
    static NETWORK: OnceLock<Option<Network>> = OnceLock::new();
    NETWORK
        .get_or_init(|| {
            let path = official("neuron1024.tar.gz")?;
            let start = Instant::now();
            let network = tsv::read_network(&path, Some(1024), 120, &mut |_| {});
            eprintln!("network read in {:.1?}", start.elapsed());
            Some(network.expect("reads the net"))
        })
        .as_ref()
}

fn categories<T: Element>(network: &Network, input: &Csr) -> Vec<u32> {
    let activation = Activation::new(-0.3, 32.0).unwrap();
    let result = infer::<T>(network.layers(), input, activation, &Options::default()).unwrap();
    assert_eq!(result.stats.len(), 120);
    assert_eq!(result.stats[119].active_rows, result.categories.len());
    result.categories
}

fn read_truth(path: &Path) -> Vec<u32> {
    tsv::read_categories(path).expect("reads the truth")
}

#[test]
fn mnist_recipe_images_give_the_official_truth() {
    let (Some(network), Some(truth_path)) = (network(), official("neuron1024-l120-categories.tsv"))
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
    let start = Instant::now();
    let mnist = spdnn_sdgc::images::load_mnist_train(&data).expect("loads MNIST");
    let input = spdnn_sdgc::images::from_mnist(&mnist, 1024, &|_, _| {}).expect("builds images");
    eprintln!("MNIST images built in {:.1?}", start.elapsed());
    assert_eq!(input.rows(), 60000);
    let truth = read_truth(&truth_path);
    assert_eq!(truth.len(), 1812);
    let start = Instant::now();
    assert_eq!(categories::<f32>(network, &input.features), truth, "f32");
    eprintln!("60000 rows, f32: {:.1?}", start.elapsed());
    let start = Instant::now();
    assert_eq!(categories::<f64>(network, &input.features), truth, "f64");
    eprintln!("60000 rows, f64: {:.1?}", start.elapsed());
}

#[test]
fn official_first_1200_images_give_the_official_truth() {
    let (Some(network), Some(images), Some(subset_truth), Some(truth)) = (
        network(),
        official("sparse-images-1024_subset.mtx"),
        official("neuron1024-l120-categories_subset.mtx"),
        official("neuron1024-l120-categories.tsv"),
    ) else {
        return;
    };
    let input = tsv::read_images(&images, 1024, None).expect("reads the images");
    assert_eq!(input.nrows(), 1200);
    let subset_truth = read_truth(&subset_truth);
    let restricted: Vec<u32> = read_truth(&truth)
        .into_iter()
        .filter(|&r| r <= 1200)
        .collect();
    assert_eq!(
        subset_truth, restricted,
        "the subset truth is the 120-layer truth's head"
    );
    assert_eq!(subset_truth.len(), 19);
    assert_eq!(categories::<f32>(network, &input), subset_truth, "f32");
    assert_eq!(categories::<f64>(network, &input), subset_truth, "f64");
}
