//! The GLARE modifier's flags: `--glare` and the parameters of the `+glare` methods.

use std::any::TypeId;

use clap::Args;
use spdnn_engine::{GlareSettings, OptionSet};

use super::{GroupArgs, at_least_one};

/// GLARE: which methods, and the parameters of the `+glare` methods.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "GLARE (the +glare methods)")]
pub struct GlareArgs {
    /// Run the GLARE variant of every chosen method that has one (bf → bf+glare, snig →
    /// snig+glare, xy → xy+glare, snicit → snicit+glare); the others run as they are,
    /// with a warning.
    #[arg(long)]
    pub glare: bool,
    /// Segment length m (neurons per recorder unit) instead of the access model's choice;
    /// a power of two the kernel accepts (snig+glare: its section width)
    /// [default: chosen by the model].
    #[arg(long, value_name = "M", value_parser = at_least_one, allow_hyphen_values = true)]
    pub glare_segment: Option<usize>,
    /// Input rows whose CPU-reference statistics the access model reads [default: 512, at
    /// most the rows run].
    #[arg(long, value_name = "R", value_parser = at_least_one, allow_hyphen_values = true)]
    pub glare_model_rows: Option<usize>,
    /// Skip the census run that counts every layer's global-memory accesses (the report
    /// then has no `accesses` and no reduction).
    #[arg(long)]
    pub no_glare_census: bool,
}

impl GroupArgs for GlareArgs {
    fn group(&self) -> TypeId {
        TypeId::of::<GlareSettings>()
    }

    fn apply(&self, options: &mut OptionSet) {
        if self.given().is_empty() {
            return;
        }
        options.edit::<GlareSettings>(|glare| {
            glare.segment = self.glare_segment;
            if let Some(rows) = self.glare_model_rows {
                glare.model_rows = rows;
            }
            glare.census = !self.no_glare_census;
        });
    }

    fn flags(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("--glare-segment", self.glare_segment.is_some()),
            ("--glare-model-rows", self.glare_model_rows.is_some()),
            ("--no-glare-census", self.no_glare_census),
        ]
    }

    fn extra_warnings(&self, read: bool) -> Vec<String> {
        if read && self.glare_segment.is_some() && self.glare_model_rows.is_some() {
            vec![
                "warning: --glare-model-rows has no effect with --glare-segment (no model runs)"
                    .to_string(),
            ]
        } else {
            Vec::new()
        }
    }
}
