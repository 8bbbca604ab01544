//! The chain the kernels run: the network compressed exactly (or as given), the class map
//! that expands the final values back, and the number of layers from which a row all at
//! the upper bound is finished (the retirement proof).
//!
//! Everything here is detected and proved from the data (`spdnn-compress`); when a step
//! finds nothing (no classes, no preserving suffix) or cannot be trusted (a merged weight
//! that overflowed), the chain falls back to the plain network and says why.
//!
//! A trained network has a bias per output neuron of every layer ([`Bias::PerNeuron`]):
//! compression merges outputs only where their biases are equal too and the chain carries
//! a bias per compressed output; the retirement proof takes each column's own bias. The
//! kernels compute `clip(Z + b)`, which is the official rule (the bias only where `Y·W` is
//! structurally nonzero) only for `b ≤ 0`: a positive bias is refused.

use std::borrow::Cow;
use std::time::Instant;

use serde::Serialize;
use spdnn_compress::{Classes, Retirement, compress_shared, compress_with_biases_shared};
use spdnn_formats::{Csr, SparseMatrix};

/// The bias of a chain's neurons.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bias<'a> {
    /// One bias for every neuron of every layer (the challenge's networks; negative).
    One(f32),
    /// A bias per output neuron of every layer, `biases[l][k]` (trained networks): one
    /// finite value ≤ 0 per column of layer `l`.
    PerNeuron(&'a [Vec<f32>]),
}

impl From<f32> for Bias<'_> {
    fn from(bias: f32) -> Self {
        Bias::One(bias)
    }
}

impl<'a> From<&'a [Vec<f32>]> for Bias<'a> {
    fn from(biases: &'a [Vec<f32>]) -> Self {
        Bias::PerNeuron(biases)
    }
}

impl<'a> From<&'a Vec<Vec<f32>>> for Bias<'a> {
    fn from(biases: &'a Vec<Vec<f32>>) -> Self {
        Bias::PerNeuron(biases)
    }
}

/// What compression did for this run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Compression {
    /// Not asked for: the network runs as given.
    Off,
    /// Asked for, but no layer has a class of two or more outputs: the network is its own
    /// compression.
    Identity,
    /// The network runs compressed.
    Compressed {
        /// Sum of the original widths over the sum of the compressed ones.
        width_ratio: f64,
        /// Stored entries of the original over the compressed network.
        nnz_ratio: f64,
    },
    /// Compression could not be used (the reason); the network runs as given.
    FellBack {
        /// Why.
        reason: String,
    },
}

/// What the retirement analysis found for this run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Retire {
    /// Not asked for: only rows of zeros are dropped.
    Off,
    /// Rows all at the bound after `suffix_start` or more layers are finished.
    Proved {
        /// The 0-based index of the first layer of the preserving suffix (the number of
        /// layers after which an all-at-bound row is finished).
        suffix_start: usize,
    },
    /// No layer suffix preserves all-at-bound rows (or the analysis failed: the reason):
    /// only rows of zeros are dropped.
    None {
        /// Why.
        reason: String,
    },
}

/// The network the kernels run (borrowed when it is the network as given), with what it
/// takes to report results in the original neuron order.
#[derive(Debug, Clone)]
pub struct Chain<'a> {
    layers: Cow<'a, [Csr]>,
    /// Per-neuron biases of the layers the kernels run (`None`: one bias for all).
    biases: Option<Cow<'a, [Vec<f32>]>>,
    classes: Option<Classes>,
    suffix_start: Option<usize>,
    compression: Compression,
    retire: Retire,
    compress_ms: f64,
    retire_ms: f64,
}

/// What a run keeps of a chain to report its results: the widths and the final class map.
#[derive(Debug, Clone, PartialEq)]
pub struct Expansion {
    input_width: usize,
    output_width: usize,
    classes: Option<Classes>,
}

impl Expansion {
    /// Width of the input rows.
    pub fn input_width(&self) -> usize {
        self.input_width
    }

    /// Width of the final values the kernels produce.
    pub fn output_width(&self) -> usize {
        self.output_width
    }

    /// Width of the final values in the original neuron order.
    pub fn original_width(&self) -> usize {
        self.classes
            .as_ref()
            .map_or(self.output_width, Classes::width)
    }

    /// Expands final values (`rows × output_width()`, row-major) to the original neurons
    /// (`rows × original_width()`).
    pub fn expand(&self, values: Vec<f32>, rows: usize) -> Result<Vec<f32>, String> {
        match &self.classes {
            None => Ok(values),
            Some(c) => c.expand(&values, rows).map_err(|e| e.to_string()),
        }
    }
}

impl<'a> Chain<'a> {
    /// Prepares `layers` (`N_{l-1} × N_l`, row = input neuron; at least one) for the
    /// kernels: compressed when `compress` (falling back to the layers as given when no
    /// class merges or a merged weight is not finite), with the retirement proof when
    /// `retire`. `bias` is one bias for all neurons (an `f32`) or a bias per output neuron
    /// of every layer ([`Bias::PerNeuron`]; compression then merges outputs only where
    /// their biases are equal, and the proof takes each column's own). Errors when the
    /// layers do not chain, or the per-neuron biases do not fit them or are not all finite
    /// and ≤ 0.
    pub fn build(
        layers: &'a [Csr],
        bias: impl Into<Bias<'a>>,
        upper: f32,
        compress_network: bool,
        retire: bool,
    ) -> Result<Self, String> {
        check_chain(layers)?;
        let bias = bias.into();
        let given = match bias {
            Bias::One(_) => None,
            Bias::PerNeuron(biases) => {
                check_biases(layers, biases)?;
                Some(biases)
            }
        };
        let started = Instant::now();
        let borrowed = || given.map(Cow::Borrowed);
        let (run_layers, run_biases, classes, compression) = if compress_network {
            // Shared: every GPU's run, and the oracle of a benchmark on the same network,
            // compress it once per process.
            let compressed = match given {
                None => compress_shared(layers),
                Some(biases) => compress_with_biases_shared(layers, biases),
            };
            match compressed {
                Ok(c) if c.is_identity() => (
                    Cow::Borrowed(layers),
                    borrowed(),
                    None,
                    Compression::Identity,
                ),
                Ok(c) => {
                    let finite = c
                        .layers()
                        .iter()
                        .all(|w| w.values().iter().all(|v| v.is_finite()));
                    if finite {
                        let original: usize = layers.iter().map(SparseMatrix::ncols).sum();
                        let small: usize = c.layers().iter().map(SparseMatrix::ncols).sum();
                        let nnz: usize = layers.iter().map(SparseMatrix::nnz).sum();
                        let small_nnz: usize = c.layers().iter().map(SparseMatrix::nnz).sum();
                        let compression = Compression::Compressed {
                            width_ratio: original as f64 / small.max(1) as f64,
                            nnz_ratio: nnz as f64 / small_nnz.max(1) as f64,
                        };
                        let classes = c.final_classes().clone();
                        let classes = (!classes.is_trivial()).then_some(classes);
                        let small = c.layers().to_vec();
                        let small_biases = c.biases().map(<[Vec<f32>]>::to_vec);
                        (
                            Cow::Owned(small),
                            small_biases.map(Cow::Owned),
                            classes,
                            compression,
                        )
                    } else {
                        let reason = "a merged weight is not finite (its sum overflowed f32)";
                        (
                            Cow::Borrowed(layers),
                            borrowed(),
                            None,
                            Compression::FellBack {
                                reason: reason.into(),
                            },
                        )
                    }
                }
                Err(e) => (
                    Cow::Borrowed(layers),
                    borrowed(),
                    None,
                    Compression::FellBack {
                        reason: e.to_string(),
                    },
                ),
            }
        } else {
            (Cow::Borrowed(layers), borrowed(), None, Compression::Off)
        };
        let compress_ms = started.elapsed().as_secs_f64() * 1e3;

        let started = Instant::now();
        let (suffix_start, retire) = if retire {
            let analysis = match (&run_biases, bias) {
                (Some(biases), _) => Retirement::analyze_per_neuron(&run_layers, biases, upper),
                (None, Bias::One(bias)) => Retirement::analyze(&run_layers, bias, upper),
                (None, Bias::PerNeuron(_)) => unreachable!("per-neuron biases are carried"),
            };
            match analysis {
                Ok(r) if r.preserving_suffix_len() > 0 => (
                    Some(r.suffix_start()),
                    Retire::Proved {
                        suffix_start: r.suffix_start(),
                    },
                ),
                Ok(_) => (
                    None,
                    Retire::None {
                        reason: "the last layer does not preserve all-at-bound rows".into(),
                    },
                ),
                Err(e) => (
                    None,
                    Retire::None {
                        reason: e.to_string(),
                    },
                ),
            }
        } else {
            (None, Retire::Off)
        };
        let retire_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(Self {
            layers: run_layers,
            biases: run_biases,
            classes,
            suffix_start,
            compression,
            retire,
            compress_ms,
            retire_ms,
        })
    }

    /// The chain of `layers` as given, with rows all at the bound finished after
    /// `suffix_start` layers (`None`: never). For tests and tools that build their own
    /// chains; the caller vouches for the suffix.
    pub fn from_parts(layers: Vec<Csr>, suffix_start: Option<usize>) -> Result<Self, String> {
        check_chain(&layers)?;
        Ok(Self {
            layers: Cow::Owned(layers),
            biases: None,
            classes: None,
            suffix_start,
            compression: Compression::Off,
            retire: match suffix_start {
                Some(s) => Retire::Proved { suffix_start: s },
                None => Retire::Off,
            },
            compress_ms: 0.0,
            retire_ms: 0.0,
        })
    }

    /// The chain with a bias per output neuron of every layer (`biases[l][k]`, one finite
    /// value ≤ 0 per column of its layer) instead of one bias for all. For chains built by
    /// [`Chain::from_parts`]; the caller vouches for the suffix with these biases. Errors
    /// when the biases do not fit the layers.
    pub fn with_biases(mut self, biases: Vec<Vec<f32>>) -> Result<Self, String> {
        check_biases(&self.layers, &biases)?;
        self.biases = Some(Cow::Owned(biases));
        Ok(self)
    }

    /// The layers the kernels run (compressed: `N'_{l-1} × N'_l`, `N'_0 = N_0`).
    pub fn layers(&self) -> &[Csr] {
        &self.layers
    }

    /// The bias of every output of the layers the kernels run (`biases()[l][k]`, compressed
    /// with them), or `None` when one bias serves every neuron.
    pub fn biases(&self) -> Option<&[Vec<f32>]> {
        self.biases.as_deref()
    }

    /// Width of the input rows.
    pub fn input_width(&self) -> usize {
        self.layers[0].nrows()
    }

    /// Width of the final values the kernels produce (the last layer's columns).
    pub fn output_width(&self) -> usize {
        self.layers[self.layers.len() - 1].ncols()
    }

    /// Width of the final values in the original neuron order.
    pub fn original_width(&self) -> usize {
        self.classes
            .as_ref()
            .map_or_else(|| self.output_width(), Classes::width)
    }

    /// The class map of the last layer (`None`: the identity).
    pub fn classes(&self) -> Option<&Classes> {
        self.classes.as_ref()
    }

    /// Layers after which a row all at the bound is finished (`None`: never).
    pub fn suffix_start(&self) -> Option<usize> {
        self.suffix_start
    }

    /// What compression did.
    pub fn compression(&self) -> &Compression {
        &self.compression
    }

    /// What the retirement analysis found.
    pub fn retire(&self) -> &Retire {
        &self.retire
    }

    /// Time spent compressing, ms.
    pub fn compress_ms(&self) -> f64 {
        self.compress_ms
    }

    /// Time spent proving retirement, ms.
    pub fn retire_ms(&self) -> f64 {
        self.retire_ms
    }

    /// Expands final values (`rows × output_width()`, row-major) to the original neurons
    /// (`rows × original_width()`).
    pub fn expand(&self, values: Vec<f32>, rows: usize) -> Result<Vec<f32>, String> {
        self.expansion().expand(values, rows)
    }

    /// The widths and the class map, without the layers.
    pub fn expansion(&self) -> Expansion {
        Expansion {
            input_width: self.input_width(),
            output_width: self.output_width(),
            classes: self.classes.clone(),
        }
    }
}

/// Checks per-neuron biases against the layers: one vector per layer, one finite value
/// ≤ 0 per output (the kernels compute `clip(Z + b)`, the official rule only for `b ≤ 0`).
fn check_biases(layers: &[Csr], biases: &[Vec<f32>]) -> Result<(), String> {
    if biases.len() != layers.len() {
        return Err(format!(
            "{} bias vectors for {} layers",
            biases.len(),
            layers.len()
        ));
    }
    for (l, (w, b)) in layers.iter().zip(biases).enumerate() {
        if b.len() != w.ncols() {
            return Err(format!(
                "layer {} has {} outputs but {} biases",
                l + 1,
                w.ncols(),
                b.len()
            ));
        }
        if let Some(k) = b.iter().position(|v| !v.is_finite()) {
            return Err(format!(
                "the bias of neuron {} of layer {} is {}, not finite",
                k + 1,
                l + 1,
                b[k]
            ));
        }
        if let Some(k) = b.iter().position(|&v| v > 0.0) {
            return Err(format!(
                "the kernels compute clip(Z + b), which equals the structural rule (the bias \
                 only where Y·W is structurally nonzero) only for biases ≤ 0, and neuron {} of \
                 layer {} has bias {}",
                k + 1,
                l + 1,
                b[k]
            ));
        }
    }
    Ok(())
}

fn check_chain(layers: &[Csr]) -> Result<(), String> {
    if layers.is_empty() {
        return Err("the network has no layers".into());
    }
    for (l, pair) in layers.windows(2).enumerate() {
        if pair[1].nrows() != pair[0].ncols() {
            return Err(format!(
                "layer {} has {} rows but layer {} has {} columns",
                l + 2,
                pair[1].nrows(),
                l + 1,
                pair[0].ncols()
            ));
        }
    }
    if layers.iter().any(|w| w.nrows() == 0 || w.ncols() == 0) {
        return Err("a layer has no rows or no columns".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(rows: usize, cols: usize, t: &[(u32, u32, f32)]) -> Csr {
        Csr::from_triplets(rows, cols, t).unwrap()
    }

    #[test]
    fn classes_compress_and_expand() {
        // Outputs 0 and 1 identical in layer 1.
        let w1 = csr(2, 2, &[(0, 0, 1.0), (0, 1, 1.0), (1, 0, 0.5), (1, 1, 0.5)]);
        let w2 = csr(2, 2, &[(0, 0, 1.0), (1, 1, 2.0)]);
        let layers = [w1, w2];
        let c = Chain::build(&layers, -0.25, 4.0, true, true).unwrap();
        assert!(matches!(c.compression(), Compression::Compressed { .. }));
        assert_eq!(c.layers()[0].ncols(), 1);
        assert_eq!(c.input_width(), 2);
        assert_eq!(c.output_width(), 2);
        assert_eq!(c.original_width(), 2);
        let first = [c.layers()[0].clone()];
        let c = Chain::build(&first, -0.25, 4.0, false, false).unwrap();
        assert_eq!(c.compression(), &Compression::Off);
        assert_eq!(c.retire(), &Retire::Off);
        assert_eq!(c.suffix_start(), None);
    }

    #[test]
    fn a_classless_network_is_its_own_compression() {
        let w = csr(2, 2, &[(0, 0, 1.0), (1, 1, 2.0)]);
        let c = Chain::build(std::slice::from_ref(&w), -0.25, 4.0, true, true).unwrap();
        assert_eq!(c.compression(), &Compression::Identity);
        assert_eq!(c.layers(), std::slice::from_ref(&w));
        assert!(matches!(c.layers, Cow::Borrowed(_)));
        assert!(c.classes().is_none());
        // Column 0 gives 4·1 − 0.25 < 4 from an all-at-bound row: not preserving.
        assert!(matches!(c.retire(), Retire::None { .. }));
        assert_eq!(c.expand(vec![1.0, 2.0], 1).unwrap(), vec![1.0, 2.0]);
    }

    #[test]
    fn strong_layers_retire_from_the_start() {
        let w = csr(2, 2, &[(0, 0, 1.0), (1, 0, 1.0), (0, 1, 1.0), (1, 1, 1.0)]);
        let layers = [w.clone(), w];
        let c = Chain::build(&layers, -0.25, 1.0, false, true).unwrap();
        assert_eq!(c.suffix_start(), Some(0));
        assert_eq!(c.retire(), &Retire::Proved { suffix_start: 0 });
    }

    #[test]
    fn bad_chains_are_errors() {
        assert!(Chain::build(&[], -0.3, 32.0, true, true).is_err());
        let a = csr(2, 3, &[]);
        let b = csr(2, 2, &[]);
        let e = Chain::build(&[a, b], -0.3, 32.0, true, true).unwrap_err();
        assert!(e.contains("layer 2"), "{e}");
        assert!(Chain::from_parts(vec![], None).is_err());
    }

    #[test]
    fn per_neuron_biases_split_classes_and_follow_compression() {
        // Outputs 0, 1 and 2 of layer 1 identical; 0 and 2 share a bias, 1 does not.
        let w1 = csr(
            2,
            3,
            &[
                (0, 0, 1.0),
                (0, 1, 1.0),
                (0, 2, 1.0),
                (1, 0, 0.5),
                (1, 1, 0.5),
                (1, 2, 0.5),
            ],
        );
        let w2 = csr(3, 2, &[(0, 0, 1.0), (1, 1, 2.0), (2, 0, 0.5)]);
        let layers = [w1, w2];
        let biases = vec![vec![-0.25, -0.5, -0.25], vec![0.0, -0.125]];
        let c = Chain::build(&layers, &biases, 4.0, true, true).unwrap();
        assert!(matches!(c.compression(), Compression::Compressed { .. }));
        assert_eq!(c.layers()[0].ncols(), 2);
        assert_eq!(c.biases().unwrap(), &[vec![-0.25, -0.5], vec![0.0, -0.125]]);
        // Rows 0 and 2 of layer 2 merged: 1.0 + 0.5 in column 0.
        assert_eq!(
            c.layers()[1].triplets().collect::<Vec<_>>(),
            vec![(0, 0, 1.5), (1, 1, 2.0)]
        );
        // One bias for all: the three outputs are one class.
        let one = Chain::build(&layers, -0.25, 4.0, true, true).unwrap();
        assert_eq!(one.layers()[0].ncols(), 1);
        assert!(one.biases().is_none());
        // Not compressed: the biases as given, borrowed.
        let off = Chain::build(&layers, &biases, 4.0, false, false).unwrap();
        assert_eq!(off.biases().unwrap(), &biases[..]);
        assert!(matches!(off.biases, Some(Cow::Borrowed(_))));
        assert_eq!(off.layers(), &layers);
    }

    #[test]
    fn the_retirement_proof_takes_each_columns_bias() {
        // Every column sums to 2 from a row all at 1.
        let w = csr(2, 2, &[(0, 0, 1.0), (1, 0, 1.0), (0, 1, 1.0), (1, 1, 1.0)]);
        let layers = [w.clone(), w.clone(), w];
        let strong = vec![vec![-0.5, 0.0]; 3];
        let c = Chain::build(&layers, &strong, 1.0, false, true).unwrap();
        assert_eq!(c.suffix_start(), Some(0));
        // Layer 2's second column: 2 − 1.5 < 1: the suffix starts after it.
        let mut weak = strong.clone();
        weak[1][1] = -1.5;
        let c = Chain::build(&layers, &weak, 1.0, false, true).unwrap();
        assert_eq!(c.retire(), &Retire::Proved { suffix_start: 2 });
        // In the last layer: no suffix at all.
        let mut last = strong;
        last[2][0] = -1.0;
        let c = Chain::build(&layers, &last, 1.0, true, true).unwrap();
        assert!(matches!(c.retire(), Retire::None { .. }));
        assert_eq!(c.suffix_start(), None);
    }

    #[test]
    fn positive_and_misfit_biases_are_errors() {
        let w = csr(2, 2, &[(0, 0, 1.0), (1, 1, 2.0)]);
        let layers = [w.clone(), w];
        let e = Chain::build(
            &layers,
            &vec![vec![-1.0, 0.0], vec![0.0, 0.25]],
            4.0,
            true,
            true,
        )
        .unwrap_err();
        for part in [
            "clip(Z + b)",
            "only for biases ≤ 0",
            "neuron 2 of layer 2 has bias 0.25",
        ] {
            assert!(e.contains(part), "{part}: {e}");
        }
        let e = Chain::build(&layers, &vec![vec![0.0; 2]], 4.0, true, true).unwrap_err();
        assert!(e.contains("1 bias vectors for 2 layers"), "{e}");
        let e =
            Chain::build(&layers, &vec![vec![0.0; 2], vec![0.0; 3]], 4.0, true, true).unwrap_err();
        assert!(e.contains("layer 2 has 2 outputs but 3 biases"), "{e}");
        let e = Chain::build(
            &layers,
            &vec![vec![f32::NAN, 0.0], vec![0.0; 2]],
            4.0,
            true,
            true,
        )
        .unwrap_err();
        assert!(e.contains("neuron 1 of layer 1"), "{e}");
        let parts = Chain::from_parts(layers.to_vec(), None).unwrap();
        assert!(parts.clone().with_biases(vec![vec![0.0; 2]]).is_err());
        let biased = parts.with_biases(vec![vec![-0.0; 2]; 2]).unwrap();
        assert_eq!(biased.biases().unwrap().len(), 2);
    }

    #[test]
    fn trained_shapes_chain_with_dense_ends() {
        // 784 → 128 (dense) → 128 (sparse) → 10 (dense), bound 1, biases ≤ 0.
        let dense = |rows: usize, cols: usize| {
            let t: Vec<(u32, u32, f32)> = (0..rows as u32)
                .flat_map(|r| {
                    (0..cols as u32)
                        .map(move |c| (r, c, ((r * 7 + c * 3) % 11) as f32 / 64.0 - 0.08))
                })
                .collect();
            csr(rows, cols, &t)
        };
        let sparse: Vec<(u32, u32, f32)> = (0..128u32)
            .flat_map(|r| {
                (0..128u32)
                    .filter(move |c| (r + 3 * c) % 9 < 5)
                    .map(move |c| (r, c, ((r + c) % 5) as f32 / 32.0 - 0.05))
            })
            .collect();
        let layers = [dense(784, 128), csr(128, 128, &sparse), dense(128, 10)];
        let biases = vec![vec![-0.01; 128], vec![0.0; 128], vec![-0.02; 10]];
        let c = Chain::build(&layers, &biases, 1.0, true, true).unwrap();
        assert_eq!((c.input_width(), c.output_width()), (784, 10));
        assert_eq!(c.biases().unwrap().len(), 3);
    }

    #[test]
    fn overflowing_merges_fall_back() {
        // Outputs 0 and 1 identical; layer 2 merges rows 0 and 1 into f32::MAX + f32::MAX.
        let w1 = csr(1, 2, &[(0, 0, 1.0), (0, 1, 1.0)]);
        let w2 = csr(2, 1, &[(0, 0, f32::MAX), (1, 0, f32::MAX)]);
        let layers = [w1.clone(), w2.clone()];
        let c = Chain::build(&layers, -0.3, 32.0, true, false).unwrap();
        assert!(matches!(c.compression(), Compression::FellBack { .. }));
        assert_eq!(c.layers(), &[w1, w2]);
    }
}
