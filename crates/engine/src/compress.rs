//! Compression as a modifier: the `+compress` variant of every method runs it on the
//! network made smaller by `spdnn-compress` (identical output classes kept once, their
//! inputs merged; proved from the data, see docs/compress.md). Rows and categories are
//! unchanged by construction; the report says what the compression did.
//!
//! A network with a bias per neuron (a trained one) is compressed with its biases
//! (`spdnn_compress::compress_with_biases`: outputs merge only where their biases are equal
//! bit for bit, and the compressed network carries one bias per class), and its retirement
//! is proved with each column's own bias. Its predictions come back from the wrapped method
//! as compressed output classes; members of a class carry identical values and classes are
//! numbered by their smallest member, so the original argmax (first of the largest) is the
//! smallest member of the predicted class, and that is what the modifier reports.
//!
//! The compressed network depends only on the problem, so the methods run on one problem
//! share it through [`crate::method::SharedWork`]; the wrapped method gets a scoped view
//! of that store, so what it computes on the compressed network (GLARE's statistics)
//! never mixes with what the plain methods compute on the original.

use std::any::TypeId;
use std::sync::Arc;

use anyhow::{Context, Result};
use spdnn_compress::{Classes, CompressReport};
use spdnn_sdgc::Network;

use crate::method::{Method, MethodOutput, Problem, RunConfig, SharedWork};
use crate::options::OptionSet;

/// Suffix of the compressed variant of a method's name (`bf` → `bf+compress`).
pub const SUFFIX: &str = "+compress";

/// A network after compression, with what was done.
#[derive(Debug, Clone)]
pub struct Compression {
    /// The equivalent network (`N'_{l-1} × N'_l` layers; with a bias per compressed output
    /// when the original has a bias per neuron).
    pub network: Network,
    /// Class counts, widths, preserving layers, times.
    pub report: CompressReport,
    /// The classes of the last layer's outputs: compressed output `c` stands for the
    /// original neurons `final_classes.members(c)`.
    pub final_classes: Classes,
}

impl Compression {
    /// Compresses `network` (with its per-neuron biases when it has them; `bias` otherwise)
    /// and proves which of its compressed layers keep an all-at-bound row at the bound (for
    /// the report's retirement columns).
    pub fn of(network: &Network, bias: f32, upper_bound: f32) -> Result<Self> {
        // Shared with every other caller in the process that compresses this network
        // (BlockDepend's runs on each GPU), which then reuse it.
        let (compressed, retirement) = match network.biases() {
            Some(biases) => {
                let compressed =
                    spdnn_compress::compress_with_biases_shared(network.layers(), biases)
                        .context("compressing the network with its per-neuron biases")?;
                let retirement = compressed
                    .retirement_per_neuron(upper_bound)
                    .context("proving which layers preserve rows at the bound")?;
                (compressed, retirement)
            }
            None => {
                let compressed = spdnn_compress::compress_shared(network.layers())
                    .context("compressing the network")?;
                let retirement = compressed
                    .retirement(bias, upper_bound)
                    .context("proving which layers preserve rows at the bound")?;
                (compressed, retirement)
            }
        };
        let report = CompressReport::new(compressed.summary(), Some(&retirement));
        let final_classes = compressed.final_classes().clone();
        let (layers, biases) = std::sync::Arc::unwrap_or_clone(compressed).into_parts();
        let mut network = Network::chain(layers)?;
        if let Some(biases) = biases {
            network = network.with_biases(biases)?;
        }
        Ok(Self {
            network,
            report,
            final_classes,
        })
    }

    /// Maps predictions on the compressed network (indices of compressed output classes) to
    /// the original neurons: each class's smallest member, the original network's argmax
    /// (members carry identical values, and a class's smallest member comes before every
    /// later class's). Errors on a class past the last one.
    pub fn original_predictions(&self, predictions: &[Option<u32>]) -> Result<Vec<Option<u32>>> {
        predictions
            .iter()
            .map(|p| {
                p.map(|class| {
                    self.final_classes
                        .representative(class as usize)
                        .with_context(|| {
                            format!(
                                "a prediction of compressed output {class}, past the {} \
                                 classes of the last layer",
                                self.final_classes.len()
                            )
                        })
                })
                .transpose()
            })
            .collect()
    }

    /// The compression of `problem`'s network, computed once per [`SharedWork`].
    pub fn shared(problem: &Problem<'_>, shared: &SharedWork) -> Result<Arc<Self>> {
        let (compression, _) = shared.get_or_compute("compression", || {
            Self::of(problem.network, problem.bias, problem.upper_bound)
        })?;
        Ok(compression)
    }
}

/// The `+compress` variant of a method.
pub struct CompressRow {
    inner: Arc<dyn Method>,
    name: String,
    description: String,
}

impl CompressRow {
    /// The compressed variant of `inner`.
    pub fn new(inner: Arc<dyn Method>) -> Self {
        Self {
            name: format!("{}{SUFFIX}", inner.name()),
            description: format!(
                "{} on the exactly compressed network (identical outputs kept once)",
                inner.name()
            ),
            inner,
        }
    }
}

impl Method for CompressRow {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn needs_gpu(&self) -> bool {
        self.inner.needs_gpu()
    }

    fn in_default_run(&self) -> bool {
        false
    }

    fn reads(&self) -> Vec<TypeId> {
        self.inner.reads()
    }

    fn check(&self, options: &OptionSet, neurons: usize) -> Result<()> {
        self.inner.check(options, neurons)
    }

    fn run(&self, problem: &Problem<'_>, config: &RunConfig) -> Result<MethodOutput> {
        let compression = Compression::shared(problem, &config.shared)?;
        let compressed = Problem {
            network: &compression.network,
            input: problem.input,
            bias: problem.bias,
            upper_bound: problem.upper_bound,
        };
        let inner_config = RunConfig {
            shared: config.shared.scoped("compressed"),
            ..config.clone()
        };
        let mut output = self
            .inner
            .run(&compressed, &inner_config)
            .with_context(|| format!("{} on the compressed network", self.inner.name()))?;
        if let Some(predictions) = output.details.predictions.take() {
            output.details.predictions = Some(compression.original_predictions(&predictions)?);
        }
        output.details.compression = Some(compression.report.clone());
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use spdnn_formats::{Csr, SparseMatrix};
    use spdnn_sdgc::{Input, InputOrigin};

    use super::*;
    use crate::cpu::CpuReference;

    fn one_run() -> RunConfig {
        RunConfig {
            warmup: 0,
            repetitions: 1,
            ..RunConfig::default()
        }
    }

    /// `cpu` and `cpu+compress` on `network` over `features`: the plain and the compressed
    /// output.
    fn plain_and_compressed(network: &Network, features: &Csr) -> (MethodOutput, MethodOutput) {
        let input = Input {
            features: features.clone(),
            origin: InputOrigin::Synthetic { seed: 0 },
        };
        let problem = Problem {
            network,
            input: &input,
            bias: -0.3,
            upper_bound: 32.0,
        };
        let config = one_run();
        let plain = CpuReference.run(&problem, &config).unwrap();
        let compressed = CompressRow::new(Arc::new(CpuReference))
            .run(&problem, &config)
            .unwrap();
        (plain, compressed)
    }

    /// A classed problem (identical output columns, dyadic values) with a bias per neuron:
    /// each class of the plain compression draws one bias in `[−1/2, 1/4]` (both signs),
    /// and about one neuron in five takes 1/16 less, so it differs from its class mates
    /// only in its bias and must not merge with them.
    fn classed_biased_problem() -> impl Strategy<Value = (Network, Csr, Vec<Vec<f32>>)> {
        spdnn_gputest::classed_problem(40, 60)
            .prop_flat_map(|p| {
                let (n, depth) = (p.layers[0].nrows(), p.layers.len());
                let draws = (
                    proptest::collection::vec(-4i32..=2, n),
                    proptest::collection::vec(proptest::bool::weighted(0.2), n),
                );
                (Just(p), proptest::collection::vec(draws, depth))
            })
            .prop_map(|(p, draws)| {
                let plain = spdnn_compress::compress(&p.layers).unwrap();
                let biases: Vec<Vec<f32>> = draws
                    .iter()
                    .enumerate()
                    .map(|(l, (class_bias, split))| {
                        let class_of = plain.classes(l).unwrap().class_map();
                        class_of
                            .iter()
                            .zip(split)
                            .map(|(&c, &own)| {
                                class_bias[c as usize] as f32 / 8.0
                                    - if own { 1.0 / 16.0 } else { 0.0 }
                            })
                            .collect()
                    })
                    .collect();
                let network = Network::chain(p.layers)
                    .unwrap()
                    .with_biases(biases.clone())
                    .unwrap();
                (network, p.input, biases)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// Per-neuron biases: `cpu+compress` gives `cpu`'s categories and predictions
        /// exactly, and layer 1 (whose rows are never merged) keeps one column per pair
        /// of identical columns and equal bias: merged where the biases agree, split
        /// where they do not.
        #[test]
        fn per_neuron_biased_networks_compress_exactly(
            (network, features, biases) in classed_biased_problem()
        ) {
            let (plain, compressed) = plain_and_compressed(&network, &features);
            prop_assert_eq!(&compressed.categories, &plain.categories);
            prop_assert!(plain.details.predictions.is_some());
            prop_assert_eq!(&compressed.details.predictions, &plain.details.predictions);
            let report = compressed.details.compression.as_ref().unwrap();
            let plain_classes = spdnn_compress::compress(network.layers()).unwrap();
            let mut pairs: Vec<(u32, u32)> = plain_classes
                .classes(0)
                .unwrap()
                .class_map()
                .iter()
                .zip(&biases[0])
                .map(|(&c, b)| (c, b.to_bits()))
                .collect();
            pairs.sort_unstable();
            pairs.dedup();
            prop_assert_eq!(report.layers[0].classes, pairs.len());
        }
    }

    /// Input width 2; layer 1 (2 × 3) merges outputs 0 and 2; layer 2 (3 × 6) has classes
    /// {0, 1}, {2}, {3, 5} and {4}, output 4 equal to 3 and 5 but for a lower bias. Rows:
    /// the best in class {3, 5} (compressed column 2), in {0, 1}, none, a tie of 2 and
    /// {3, 5} (the first wins), {3, 5} again.
    fn merged_last_layer() -> (Network, Csr) {
        let mut t1 = vec![(1, 1, 1.0)];
        for c in [0, 2] {
            t1.extend([(0, c, 1.0), (1, c, 0.5)]);
        }
        let w1 = Csr::from_triplets(2, 3, &t1).unwrap();
        let mut t2 = vec![(1, 0, 1.0), (1, 1, 1.0), (0, 2, 0.5), (2, 2, 0.5)];
        for c in 3..6 {
            t2.extend([(0, c, 1.0), (2, c, 1.0)]);
        }
        let w2 = Csr::from_triplets(3, 6, &t2).unwrap();
        let biases = vec![
            vec![-0.25, 0.0, -0.25],
            vec![0.0, 0.0, 0.0, -0.5, -1.0, -0.5],
        ];
        let network = Network::chain(vec![w1, w2])
            .unwrap()
            .with_biases(biases)
            .unwrap();
        let features =
            Csr::from_triplets(5, 2, &[(0, 0, 1.0), (1, 1, 1.0), (3, 0, 0.75), (4, 0, 2.0)])
                .unwrap();
        (network, features)
    }

    #[test]
    fn predictions_on_a_merged_last_layer_name_the_original_neurons() {
        let (network, features) = merged_last_layer();
        let (plain, compressed) = plain_and_compressed(&network, &features);
        let expected = vec![Some(3), Some(0), None, Some(2), Some(3)];
        assert_eq!(plain.details.predictions.as_ref(), Some(&expected));
        assert_eq!(compressed.details.predictions, Some(expected));
        assert_eq!(compressed.categories, plain.categories);
        assert_eq!(plain.categories, vec![1, 2, 4, 5]);

        let report = compressed.details.compression.unwrap();
        assert!(!report.identity);
        let classes: Vec<usize> = report.layers.iter().map(|l| l.classes).collect();
        assert_eq!(classes, vec![2, 4]);

        let compression = Compression::of(&network, -0.3, 32.0).unwrap();
        assert_eq!(
            compression.network.biases().unwrap(),
            &[vec![-0.25, 0.0], vec![0.0, 0.0, -0.5, -1.0]]
        );
        assert_eq!(compression.final_classes.class_map(), &[0, 0, 1, 2, 3, 2]);
        assert_eq!(
            compression
                .original_predictions(&[Some(2), None, Some(3), Some(0)])
                .unwrap(),
            vec![Some(3), None, Some(4), Some(0)]
        );
        assert!(compression.original_predictions(&[Some(4)]).is_err());
    }

    #[test]
    fn one_bias_runs_carry_no_predictions() {
        let (network, features) = merged_last_layer();
        let unbiased = Network::chain(network.layers().to_vec()).unwrap();
        let (plain, compressed) = plain_and_compressed(&unbiased, &features);
        assert_eq!(compressed.categories, plain.categories);
        assert!(plain.details.predictions.is_none());
        assert!(compressed.details.predictions.is_none());
        assert!(compressed.details.compression.is_some());
    }

    #[test]
    fn the_compressed_reference_gives_the_same_categories() {
        let network = spdnn_sdgc::generator::network(256, 12, 0).unwrap();
        let input = spdnn_sdgc::images::synthetic(300, 256, 1).unwrap();
        let problem = Problem {
            network: &network,
            input: &input,
            bias: -0.3,
            upper_bound: 32.0,
        };
        let config = one_run();
        let plain = CpuReference.run(&problem, &config).unwrap();
        let row = CompressRow::new(Arc::new(CpuReference));
        assert_eq!(row.name(), "cpu+compress");
        assert!(!row.in_default_run() && !row.needs_gpu());
        let compressed = row.run(&problem, &config).unwrap();
        assert_eq!(compressed.categories, plain.categories);
        let report = compressed.details.compression.unwrap();
        assert!(!report.identity);
        assert_eq!(report.input_width, 256);
        assert!(report.width_ratio > 15.0, "{}", report.width_ratio);
        assert_eq!(report.layers.len(), 12);
        // Computed once for the case.
        let again = Compression::shared(&problem, &config.shared).unwrap();
        assert_eq!(again.report, report);
    }

    #[test]
    fn a_network_without_classes_compresses_to_itself() {
        let layer = Csr::from_triplets(3, 3, &[(0, 0, 1.0), (1, 1, 2.0), (2, 2, 3.0), (0, 1, 0.5)])
            .unwrap();
        let network = Network::new(3, vec![layer.clone(), layer]).unwrap();
        let compression = Compression::of(&network, -0.3, 32.0).unwrap();
        assert!(compression.report.identity);
        assert_eq!(compression.network.layers(), network.layers());
    }
}
