//! Compression as a modifier: the `+compress` variant of every method runs it on the
//! network made smaller by `spdnn-compress` (identical output classes kept once, their
//! inputs merged; proved from the data, see docs/compress.md). Rows and categories are
//! unchanged by construction; the report says what the compression did.
//!
//! The compressed network depends only on the problem, so the methods run on one problem
//! share it through [`crate::method::SharedWork`]; the wrapped method gets a scoped view
//! of that store, so what it computes on the compressed network (GLARE's statistics)
//! never mixes with what the plain methods compute on the original.

use std::any::TypeId;
use std::sync::Arc;

use anyhow::{Context, Result};
use spdnn_compress::CompressReport;
use spdnn_sdgc::Network;

use crate::method::{Method, MethodOutput, Problem, RunConfig, SharedWork};
use crate::options::OptionSet;

/// Suffix of the compressed variant of a method's name (`bf` → `bf+compress`).
pub const SUFFIX: &str = "+compress";

/// A network after compression, with what was done.
#[derive(Debug, Clone)]
pub struct Compression {
    /// The equivalent network (`N'_{l-1} × N'_l` layers).
    pub network: Network,
    /// Class counts, widths, preserving layers, times.
    pub report: CompressReport,
}

impl Compression {
    /// Compresses `network` and proves which of its compressed layers keep an all-at-bound
    /// row at the bound (for the report's retirement columns).
    pub fn of(network: &Network, bias: f32, upper_bound: f32) -> Result<Self> {
        if network.biases().is_some() {
            anyhow::bail!(
                "compression takes one bias for all neurons, and this network has a bias per \
                 neuron (its class test does not compare biases yet): run the method without \
                 --compress"
            );
        }
        let compressed =
            spdnn_compress::compress(network.layers()).context("compressing the network")?;
        let retirement = compressed
            .retirement(bias, upper_bound)
            .context("proving which layers preserve rows at the bound")?;
        let report = CompressReport::new(compressed.summary(), Some(&retirement));
        let network = Network::chain(compressed.into_layers())?;
        Ok(Self { network, report })
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
        output.details.compression = Some(compression.report.clone());
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuReference;

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
        let config = RunConfig {
            warmup: 0,
            repetitions: 1,
            ..RunConfig::default()
        };
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
        let layer = spdnn_formats::Csr::from_triplets(
            3,
            3,
            &[(0, 0, 1.0), (1, 1, 2.0), (2, 2, 3.0), (0, 1, 0.5)],
        )
        .unwrap();
        let network = Network::new(3, vec![layer.clone(), layer]).unwrap();
        let compression = Compression::of(&network, -0.3, 32.0).unwrap();
        assert!(compression.report.identity);
        assert_eq!(compression.network.layers(), network.layers());
    }
}
