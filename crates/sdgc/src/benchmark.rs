//! Benchmark descriptors: what was run, on which data.

use serde::Serialize;

use crate::{InputOrigin, SdgcError, UPPER_BOUND};

/// The four official sizes and their biases.
pub const OFFICIAL_BIASES: [(usize, f32); 4] =
    [(1024, -0.3), (4096, -0.35), (16384, -0.4), (65536, -0.45)];

/// The official layer counts.
pub const OFFICIAL_LAYERS: [usize; 3] = [120, 480, 1920];

/// Rows of the official input.
pub const OFFICIAL_ROWS: usize = 60000;

/// The official bias for `neurons`, if it is one of the four official sizes.
pub fn official_bias(neurons: usize) -> Option<f32> {
    OFFICIAL_BIASES
        .iter()
        .find(|(n, _)| *n == neurons)
        .map(|&(_, b)| b)
}

/// Where a network came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WeightsOrigin {
    /// Official files (TSV folder, tar.gz or a cache made from them).
    Official { path: String },
    /// The RadiX-Net generator with this seed.
    Generated { seed: u64 },
    /// Some other file given by the user.
    File { path: String },
}

impl WeightsOrigin {
    /// A short label for tables.
    pub fn label(&self) -> String {
        match self {
            Self::Official { .. } => "official".into(),
            Self::Generated { seed } => format!("generated(seed {seed})"),
            Self::File { .. } => "file".into(),
        }
    }
}

/// One benchmark: sizes, the activation parameters and the data's origin.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Benchmark {
    /// N.
    pub neurons: usize,
    /// L.
    pub layers: usize,
    /// Rows of the input actually run.
    pub rows: usize,
    /// Bias added to every structurally nonzero output (negative).
    pub bias: f32,
    /// Activations are clipped to `[0, upper_bound]`.
    pub upper_bound: f32,
    /// Where the weights came from.
    pub weights: WeightsOrigin,
    /// Where the input came from.
    pub input: InputOrigin,
}

impl Benchmark {
    /// A descriptor with the official bias for `neurons` unless `bias` is given, and bound 32.
    ///
    /// Errors when no bias is given for a non-official N, or the bias is not negative and
    /// finite.
    pub fn new(
        neurons: usize,
        layers: usize,
        rows: usize,
        bias: Option<f32>,
        weights: WeightsOrigin,
        input: InputOrigin,
    ) -> Result<Self, SdgcError> {
        let bias = match bias.or_else(|| official_bias(neurons)) {
            Some(b) => b,
            None => {
                return Err(SdgcError::Parameter(format!(
                    "N = {neurons} is not an official size: give the bias explicitly (--bias)"
                )));
            }
        };
        validate_activation(bias, UPPER_BOUND)?;
        Ok(Self {
            neurons,
            layers,
            rows,
            bias,
            upper_bound: UPPER_BOUND,
            weights,
            input,
        })
    }

    /// Edges of the network as the challenge counts them: 32·N·L.
    pub fn challenge_edges(&self) -> u64 {
        32 * self.neurons as u64 * self.layers as u64
    }

    /// A short name like `1024-120`.
    pub fn name(&self) -> String {
        format!("{}-{}", self.neurons, self.layers)
    }
}

/// Checks `bias < 0` and `upper_bound > 0`, both finite.
pub fn validate_activation(bias: f32, upper_bound: f32) -> Result<(), SdgcError> {
    if !(bias.is_finite() && bias < 0.0) {
        return Err(SdgcError::Parameter(format!(
            "the bias must be negative and finite, got {bias}"
        )));
    }
    if !(upper_bound.is_finite() && upper_bound > 0.0) {
        return Err(SdgcError::Parameter(format!(
            "the upper bound must be positive and finite, got {upper_bound}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn official_sizes_get_their_bias() {
        let b = Benchmark::new(
            4096,
            120,
            10,
            None,
            WeightsOrigin::Generated { seed: 0 },
            InputOrigin::Mnist,
        )
        .unwrap();
        assert_eq!(b.bias, -0.35);
        assert_eq!(b.challenge_edges(), 32 * 4096 * 120);
        assert!(
            Benchmark::new(
                2048,
                1,
                1,
                None,
                WeightsOrigin::Generated { seed: 0 },
                InputOrigin::Mnist
            )
            .is_err()
        );
        assert!(
            Benchmark::new(
                2048,
                1,
                1,
                Some(0.1),
                WeightsOrigin::Generated { seed: 0 },
                InputOrigin::Mnist
            )
            .is_err()
        );
        assert!(
            Benchmark::new(
                2048,
                1,
                1,
                Some(-0.1),
                WeightsOrigin::Generated { seed: 0 },
                InputOrigin::Mnist
            )
            .is_ok()
        );
    }
}
