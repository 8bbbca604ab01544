//! The IEEE HPEC Sparse DNN Graph Challenge's data.
//!
//! - [`tsv`]: readers and writers of the official text formats (weights, images, truth),
//!   plain, gzip and the official `neuron{N}.tar.gz` folder.
//! - [`cache`]: a checksummed binary cache of a network or an input.
//! - [`generator`]: challenge-shaped (RadiX-Net) networks for any `N = 16·2^k ≥ 32`.
//! - [`images`]: the challenge's inputs rebuilt from MNIST, and a synthetic fallback.
//! - [`benchmark`]: benchmark descriptors (sizes, bias, bound, where the data came from).
//! - [`paths`]: where the data lives on disk.
//! - [`trained`]: trained networks (per-neuron biases) from `.safetensors` and bias files.
//! - [`limits`]: the largest sizes accepted, checked before allocating.

pub mod benchmark;
pub mod cache;
mod error;
pub mod generator;
pub mod images;
pub mod limits;
mod network;
pub mod paths;
pub mod trained;
pub mod tsv;

pub use error::SdgcError;
pub use network::{Input, InputOrigin, Network};

/// The challenge's upper bound on activations (YMAX).
pub const UPPER_BOUND: f32 = 32.0;
