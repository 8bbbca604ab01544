//! `auto`'s flags.

use std::any::TypeId;

use clap::Args;
use spdnn_engine::OptionSet;
use spdnn_engine::auto::AutoOptions;

use super::{GroupArgs, at_least_one};

/// How `--method auto` chooses.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "auto")]
pub struct AutoArgs {
    /// Rows of the trial's larger slice (the smaller has half), at least 64 [default: 4096].
    #[arg(long, value_name = "ROWS", value_parser = at_least_one, allow_hyphen_values = true)]
    pub auto_trial_rows: Option<usize>,
    /// Choose again (model and trial) every run instead of reading the cached choice.
    #[arg(long)]
    pub no_auto_cache: bool,
}

impl GroupArgs for AutoArgs {
    fn group(&self) -> TypeId {
        TypeId::of::<AutoOptions>()
    }

    fn apply(&self, options: &mut OptionSet) {
        if self.given().is_empty() {
            return;
        }
        options.edit::<AutoOptions>(|auto| {
            if let Some(rows) = self.auto_trial_rows {
                auto.trial_rows = rows;
            }
            if self.no_auto_cache {
                auto.cache_dir = None;
            }
        });
    }

    fn flags(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("--auto-trial-rows", self.auto_trial_rows.is_some()),
            ("--no-auto-cache", self.no_auto_cache),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(flags: &[&str]) -> Result<OptionSet, String> {
        super::super::parse_group::<AutoArgs>(flags)
    }

    #[test]
    fn flags_reach_the_options() {
        let defaults = options(&[]).unwrap().get::<AutoOptions>();
        assert_eq!(defaults.trial_rows, 4096);
        assert!(defaults.cache_dir.is_some());
        let set = options(&["--auto-trial-rows", "1000", "--no-auto-cache"]).unwrap();
        let auto = set.get::<AutoOptions>();
        assert_eq!((auto.trial_rows, auto.cache_dir), (1000, None));
        assert!(options(&["--auto-trial-rows", "10"]).is_err());
    }
}
