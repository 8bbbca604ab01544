//! A small trained-like network in the official TSV form with a bias file, its images, and
//! the library's reference on what was written: shared by the CPU and GPU tests of
//! `spdnn infer --biases --upper-bound`.

use std::path::Path;

use spdnn_formats::{Csr, SparseMatrix};
use spdnn_reference::Inference;

/// Neurons of every layer.
pub const NEURONS: usize = 64;
/// Layers.
pub const LAYERS: usize = 6;
/// Images.
pub const ROWS: usize = 300;
/// The bound the tests run with (small enough that activations reach it).
pub const BOUND: &str = "0.75";

/// A deterministic stream of numbers in `[0, 1)` (a 64-bit LCG; no dependency).
struct Stream(u64);

impl Stream {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A multiple of 1/64 in `[lo, hi)` (exact in f32 and in the files' decimals).
    fn dyadic(&mut self, lo: f64, hi: f64) -> f32 {
        ((lo + (hi - lo) * self.next()) * 64.0).floor() as f32 / 64.0
    }
}

/// Writes into `dir`: the network's layers as `net/n64-l{i}.tsv` (each neuron reads 12
/// inputs, weights of both signs; the last layer has two outputs with weights, the rest
/// are structurally zero), `images.tsv` (every image has a pixel, up to a third of them),
/// and the bias files `biases.tsv` (every bias ≤ 0, some 0; the last layer's two outputs
/// −1 and −2, so that a row's category depends on how large its activations are) and
/// `positive.tsv` (the same with one positive bias). With bound 0.75 the reference finds
/// 94 of the 300 rows, 123 with bound 32, all 300 with biases 0 (the CPU test checks that
/// the three differ).
pub fn write(dir: &Path) {
    let mut stream = Stream(26);
    let layers: Vec<Csr> = (0..LAYERS)
        .map(|l| {
            let mut triplets = Vec::new();
            let outputs = if l + 1 == LAYERS { 2 } else { NEURONS as u32 };
            for k in 0..outputs {
                let mut inputs: Vec<u32> = (0..NEURONS as u32).collect();
                for i in 0..12 {
                    let j = i + (stream.next() * (NEURONS - i) as f64) as usize;
                    inputs.swap(i, j);
                    triplets.push((inputs[i], k, stream.dyadic(-0.25, 0.75)));
                }
            }
            Csr::from_triplets(NEURONS, NEURONS, &triplets).unwrap()
        })
        .collect();
    let network = spdnn_sdgc::Network::chain(layers).unwrap();
    spdnn_sdgc::tsv::write_network_dir(&dir.join("net"), &network, &mut |_| {}).unwrap();

    // Images from one pixel to about a third of them lit.
    let mut pixels = Vec::new();
    for r in 0..ROWS as u32 {
        pixels.push((r, r % NEURONS as u32, stream.dyadic(0.25, 1.0)));
        let density = 0.3 * (r % 10) as f64 / 9.0;
        for c in 0..NEURONS as u32 {
            if c != r % NEURONS as u32 && stream.next() < density {
                pixels.push((r, c, stream.dyadic(0.0625, 1.0)));
            }
        }
    }
    let images = Csr::from_triplets(ROWS, NEURONS, &pixels).unwrap();
    spdnn_sdgc::tsv::write_images(&dir.join("images.tsv"), &images).unwrap();

    let mut text = String::new();
    let mut positive = String::new();
    for l in 1..=LAYERS {
        for k in 1..=NEURONS {
            let bias = if l == LAYERS && k <= 2 {
                -(k as f32)
            } else if k % 5 == 0 {
                0.0
            } else {
                stream.dyadic(-1.0, 0.0)
            };
            text += &format!("{l}\t{k}\t{bias}\n");
            let bias = if (l, k) == (3, 7) { 0.125 } else { bias };
            positive += &format!("{l}\t{k}\t{bias}\n");
        }
    }
    std::fs::write(dir.join("biases.tsv"), text).unwrap();
    std::fs::write(dir.join("positive.tsv"), positive).unwrap();
}

/// The reference's categories for the files [`write`] put in `dir`, read back by the
/// library, with the bias file `biases` and the bound `bound`.
pub fn reference(dir: &Path, biases: &str, bound: f32) -> Vec<u32> {
    let network =
        spdnn_sdgc::tsv::read_network(&dir.join("net"), Some(NEURONS), LAYERS, &mut |_| {})
            .unwrap();
    let widths: Vec<usize> = network.layers().iter().map(SparseMatrix::ncols).collect();
    let biases = spdnn_sdgc::trained::read_biases(&dir.join(biases), &widths).unwrap();
    let images = spdnn_sdgc::tsv::read_images(&dir.join("images.tsv"), NEURONS, None).unwrap();
    assert_eq!(images.nrows(), ROWS);
    let out: Inference<f32> = spdnn_reference::infer_with_biases(
        network.layers(),
        &images,
        &biases,
        bound,
        &spdnn_reference::Options::default(),
    )
    .unwrap();
    out.categories
}

/// `spdnn infer` arguments for the files in the folder: `method`, the bias file and
/// `--upper-bound` [`BOUND`], the categories into `categories_out`.
pub fn infer_args(method: &str, biases: &str, categories_out: &str) -> Vec<String> {
    let layers = LAYERS.to_string();
    [
        "infer",
        "--method",
        method,
        "--weights",
        "net",
        "--layers",
        &layers,
        "--images",
        "images.tsv",
        "--biases",
        biases,
        "--upper-bound",
        BOUND,
        "--categories-out",
        categories_out,
    ]
    .map(String::from)
    .to_vec()
}

/// The categories `spdnn infer --categories-out` wrote to `dir/name`.
pub fn categories(dir: &Path, name: &str) -> Vec<u32> {
    spdnn_sdgc::tsv::read_categories(&dir.join(name)).unwrap()
}
