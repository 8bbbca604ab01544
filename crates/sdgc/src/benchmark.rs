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
    /// The random unstructured generator (`generator::random_network`) with this fan-in
    /// and seed.
    Random { seed: u64, fan_in: usize },
    /// Some other file given by the user.
    File { path: String },
}

impl WeightsOrigin {
    /// A short label for tables.
    pub fn label(&self) -> String {
        match self {
            Self::Official { .. } => "official".into(),
            Self::Generated { seed } => format!("generated(seed {seed})"),
            Self::Random { seed, fan_in } => format!("random(fan-in {fan_in}, seed {seed})"),
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
    #[serde(serialize_with = "shortest_f32")]
    pub bias: f32,
    /// Activations are clipped to `[0, upper_bound]`.
    #[serde(serialize_with = "shortest_f32")]
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

/// Serialises an `f32` as its shortest decimal (-0.3, not -0.30000001192092896), also where
/// the serialiser widens it to `f64` (`serde_json::to_value`); non-finite values as `null`.
pub fn shortest_f32<S: serde::Serializer>(value: &f32, s: S) -> Result<S::Ok, S::Error> {
    match value.to_string().parse::<f64>() {
        Ok(wide) if wide.is_finite() => s.serialize_f64(wide),
        _ => s.serialize_none(),
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
    fn the_bias_serialises_as_given() {
        let b = Benchmark::new(
            1024,
            120,
            10,
            None,
            WeightsOrigin::Generated { seed: 0 },
            InputOrigin::Mnist,
        )
        .unwrap();
        let text = serde_json::to_string(&serde_json::to_value(&b).unwrap()).unwrap();
        assert!(text.contains("\"bias\":-0.3,"), "{text}");
        assert!(text.contains("\"upper_bound\":32.0"), "{text}");
        let odd = Benchmark {
            bias: -0.1234567,
            ..b
        };
        let value = serde_json::to_value(&odd).unwrap();
        assert_eq!(value["bias"].as_f64(), Some(-0.1234567));
        assert_eq!(value["bias"].as_f64().unwrap() as f32, -0.1234567f32);
    }

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

    #[test]
    fn labels_name_the_generator_and_its_parameters() {
        assert_eq!(
            WeightsOrigin::Generated { seed: 3 }.label(),
            "generated(seed 3)"
        );
        let random = WeightsOrigin::Random {
            seed: 3,
            fan_in: 32,
        };
        assert_eq!(random.label(), "random(fan-in 32, seed 3)");
    }
}
