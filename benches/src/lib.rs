//! The problems the criterion benches of `spdnn-benches` share (`cargo xtask bench
//! --criterion`, or `cargo bench -p spdnn-benches [-- FILTER]`):
//!
//! - `reference`: the CPU reference (f32) on a generated network;
//! - `readers`: the official TSV layers (a folder), the images TSV and the binary cache;
//! - `prepare`: what each method does before its timed region: XY's grouping, H&P's
//!   sliced-ELL layout, exact compression, BlockDepend's chain (compression, retirement
//!   proof, layout);
//! - `gpu_layer`: one layer of each GPU method between CUDA events (`iter_custom`), after
//!   the method's preparation; skipped, with a line saying why, without a GPU or NVRTC.
//!
//! Networks are the generator's (RadiX-Net, seed 0, the challenge's topology); inputs are
//! the seeded synthetic ~10 % dense binary rows, so the benches need no downloaded data.
//! Per-crate benches of the formats, the data handling and the reference stay beside
//! their crates (`crates/{formats,sdgc,reference}/benches`).

use spdnn_formats::Csr;
use spdnn_sdgc::benchmark::official_bias;

/// The challenge's upper bound.
pub const UPPER: f32 = 32.0;

/// A generated network of `layers` layers of `neurons` (seed 0), its bias, and `rows`
/// synthetic input rows (seed 1).
pub fn problem(neurons: usize, layers: usize, rows: usize) -> (Vec<Csr>, Csr, f32) {
    let network = spdnn_sdgc::generator::network(neurons, layers, 0)
        .unwrap_or_else(|e| panic!("generating {neurons}-{layers}: {e}"));
    let input = spdnn_sdgc::images::synthetic(rows, neurons, 1)
        .unwrap_or_else(|e| panic!("a synthetic input of {rows} x {neurons}: {e}"));
    let bias = official_bias(neurons).unwrap_or(-0.3);
    (network.layers().to_vec(), input.features, bias)
}
