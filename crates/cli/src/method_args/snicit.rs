//! `snicit`'s flags.

use std::any::TypeId;

use clap::{Args, ValueEnum};
use spdnn_engine::OptionSet;
use spdnn_engine::spdnn_snicit::{self, SnicitOptions};

use super::{GroupArgs, at_least_one, non_negative};

/// SNICIT's parameters.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "snicit")]
pub struct SnicitArgs {
    /// Threshold layer t; layers 1..=t run the pre-convergence spMM, then the rows are
    /// clustered into centroids + residues [default: 30]. A t ≥ L is allowed: the
    /// pre-convergence spMM then runs through every layer and nothing is clustered.
    #[arg(long, value_name = "T", value_parser = at_least_one, allow_hyphen_values = true)]
    pub threshold: Option<usize>,
    /// Rows sampled to pick the centroids, s [default: 32].
    #[arg(long, value_name = "S", value_parser = at_least_one, allow_hyphen_values = true)]
    pub samples: Option<usize>,
    /// Bins of the sum downsampling, n [default: 16].
    #[arg(long, value_name = "N", value_parser = at_least_one, allow_hyphen_values = true)]
    pub bins: Option<usize>,
    /// ε, a bin of a sample differs from a base when by more than this [default: 0.03].
    #[arg(long, value_name = "E", value_parser = non_negative, allow_hyphen_values = true)]
    pub epsilon: Option<f32>,
    /// η, a sample is pruned when fewer than η·n of its bins differ from a base
    /// [default: 0.03].
    #[arg(long, value_name = "H", value_parser = non_negative, allow_hyphen_values = true)]
    pub eta: Option<f32>,
    /// Layers between refreshes of the non-empty row index [default: 200].
    #[arg(long, value_name = "K", value_parser = at_least_one, allow_hyphen_values = true)]
    pub refresh: Option<usize>,
    /// Rows per batch [default: all rows in one batch].
    #[arg(long, value_name = "B", value_parser = at_least_one, allow_hyphen_values = true)]
    pub batch: Option<usize>,
    /// The spMM of layers 1..=t [default: xy].
    #[arg(long, value_enum, value_name = "KERNEL")]
    pub pre_convergence: Option<PreConvergenceArg>,
    /// LOSSY: after each layer past t, set a non-centroid row's elements within EPS of its
    /// centroid's to the centroid's (the paper's pruning of near-zero residues) [default: 0,
    /// off: exact]. The categories may then differ from the truth; `spdnn classify` shows
    /// the accuracy it costs. Not with --glare.
    #[arg(long, value_name = "EPS", value_parser = non_negative, allow_hyphen_values = true)]
    pub prune: Option<f32>,
    /// Run the post-convergence layers once per batch, instead of holding each batch's
    /// non-empty rows back for one pass over the rows of several batches.
    #[arg(long)]
    pub no_hold_back: bool,
}

/// The pre-convergence spMM of SNICIT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PreConvergenceArg {
    /// XY-2021's kernels (the paper's choice).
    Xy,
    /// BF-2019's kernel.
    Bf,
}

impl From<PreConvergenceArg> for spdnn_snicit::PreConvergence {
    fn from(arg: PreConvergenceArg) -> Self {
        match arg {
            PreConvergenceArg::Xy => Self::Xy,
            PreConvergenceArg::Bf => Self::Bf,
        }
    }
}

impl GroupArgs for SnicitArgs {
    fn group(&self) -> TypeId {
        TypeId::of::<SnicitOptions>()
    }

    fn apply(&self, options: &mut OptionSet) {
        if self.given().is_empty() {
            return;
        }
        options.edit::<SnicitOptions>(|snicit| {
            if let Some(t) = self.threshold {
                snicit.threshold = t;
            }
            if let Some(s) = self.samples {
                snicit.samples = s;
            }
            if let Some(n) = self.bins {
                snicit.bins = n;
            }
            if let Some(e) = self.epsilon {
                snicit.epsilon = e;
            }
            if let Some(h) = self.eta {
                snicit.eta = h;
            }
            if let Some(k) = self.refresh {
                snicit.refresh_interval = k;
            }
            if let Some(b) = self.batch {
                snicit.batch = Some(b);
            }
            if let Some(p) = self.pre_convergence {
                snicit.pre_convergence = p.into();
            }
            if let Some(eps) = self.prune {
                snicit.prune = eps;
            }
            if self.no_hold_back {
                snicit.hold_back = false;
            }
        });
    }

    fn flags(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("--threshold", self.threshold.is_some()),
            ("--samples", self.samples.is_some()),
            ("--bins", self.bins.is_some()),
            ("--epsilon", self.epsilon.is_some()),
            ("--eta", self.eta.is_some()),
            ("--refresh", self.refresh.is_some()),
            ("--batch", self.batch.is_some()),
            ("--pre-convergence", self.pre_convergence.is_some()),
            ("--prune", self.prune.is_some()),
            ("--no-hold-back", self.no_hold_back),
        ]
    }
}
