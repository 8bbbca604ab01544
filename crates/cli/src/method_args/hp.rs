//! `hp`'s flags.

use std::any::TypeId;

use clap::{Args, ValueEnum};
use spdnn_engine::OptionSet;
use spdnn_engine::spdnn_hp::{HpOptions, Layout};

use super::{GroupArgs, at_least_one};

/// H&P-2020's parameters.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "hp")]
pub struct HpArgs {
    /// Rows per register minibatch: 1, 2, 4, 8, 12, 16, 24 or 32 [default: 16].
    #[arg(long, value_name = "MB", value_parser = at_least_one, allow_hyphen_values = true)]
    pub minibatch: Option<usize>,
    /// Most inputs per shared-memory buffer, 1 to 65536 [default: what fits 48 KiB at the
    /// minibatch].
    #[arg(long, value_name = "INPUTS", value_parser = at_least_one, allow_hyphen_values = true)]
    pub hp_buffer: Option<usize>,
    /// Output order and buffer cuts: `grouped` (outputs sharing inputs side by side) or
    /// `paper` (neuron order, consecutive cuts, as published) [default: grouped].
    #[arg(long, value_enum, value_name = "LAYOUT")]
    pub hp_layout: Option<LayoutArg>,
}

/// H&P's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LayoutArg {
    /// Outputs that read the same inputs side by side, balanced buffer cuts.
    Grouped,
    /// The published layout.
    Paper,
}

impl GroupArgs for HpArgs {
    fn group(&self) -> TypeId {
        TypeId::of::<HpOptions>()
    }

    fn apply(&self, options: &mut OptionSet) {
        if self.given().is_empty() {
            return;
        }
        options.edit::<HpOptions>(|hp| {
            if let Some(minibatch) = self.minibatch {
                hp.minibatch = Some(minibatch);
            }
            if let Some(buffer) = self.hp_buffer {
                hp.buffer = Some(buffer);
            }
            if let Some(layout) = self.hp_layout {
                hp.layout = match layout {
                    LayoutArg::Grouped => Layout::Grouped,
                    LayoutArg::Paper => Layout::Paper,
                };
            }
        });
    }

    fn flags(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("--minibatch", self.minibatch.is_some()),
            ("--hp-buffer", self.hp_buffer.is_some()),
            ("--hp-layout", self.hp_layout.is_some()),
        ]
    }
}
