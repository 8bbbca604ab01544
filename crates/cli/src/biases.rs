//! What `spdnn infer` and `spdnn classify` share for networks with a bias per neuron: the
//! bias file of a TSV network and the upper bound.

use std::path::Path;

use anyhow::{Result, bail};
use spdnn_formats::SparseMatrix;
use spdnn_sdgc::Network;

/// `network` with the per-neuron biases of `path`, a file of `layer<TAB>neuron<TAB>bias`
/// lines (`spdnn_sdgc::trained::read_biases`: one line for every output neuron of every
/// layer; an error names the file and line, or the first neuron without a bias).
pub fn with_bias_file(network: Network, path: &Path) -> Result<Network> {
    let widths: Vec<usize> = network.layers().iter().map(SparseMatrix::ncols).collect();
    let biases = spdnn_sdgc::trained::read_biases(path, &widths)?;
    Ok(network.with_biases(biases)?)
}

/// The upper bound to run with: `given` (`--upper-bound`), else the network file's own,
/// else the challenge's (32). An error unless it is positive and finite.
pub fn upper_bound(given: Option<f32>, from_file: Option<f32>) -> Result<f32> {
    let upper = given.or(from_file).unwrap_or(spdnn_sdgc::UPPER_BOUND);
    if !(upper.is_finite() && upper > 0.0) {
        bail!("the upper bound must be positive and finite, got {upper}");
    }
    Ok(upper)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_the_given_one_else_the_files_else_32_and_must_be_positive_and_finite() {
        assert_eq!(upper_bound(Some(0.5), Some(1.0)).unwrap(), 0.5);
        assert_eq!(upper_bound(None, Some(1.0)).unwrap(), 1.0);
        assert_eq!(upper_bound(None, None).unwrap(), spdnn_sdgc::UPPER_BOUND);
        for bad in [0.0, -1.0, f32::NAN, f32::INFINITY] {
            let message = upper_bound(Some(bad), None).unwrap_err().to_string();
            assert!(message.contains("positive and finite"), "{message}");
        }
    }
}
