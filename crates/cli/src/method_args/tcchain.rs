//! `tcchain`'s flags.

use std::any::TypeId;

use clap::Args;
use spdnn_engine::OptionSet;
use spdnn_engine::spdnn_tcchain::TcChainOptions;

use super::{GroupArgs, at_least_one};

/// The fused tensor-core chain's parameters.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "tcchain")]
pub struct TcChainArgs {
    /// Rows a block carries through the chain: 16, 32, 48, 64 or 80 [default: chosen from
    /// the device, the rows and the widths].
    #[arg(long, value_name = "ROWS", value_parser = at_least_one, allow_hyphen_values = true)]
    pub tc_tile_rows: Option<usize>,
}

impl GroupArgs for TcChainArgs {
    fn group(&self) -> TypeId {
        TypeId::of::<TcChainOptions>()
    }

    fn apply(&self, options: &mut OptionSet) {
        if let Some(rows) = self.tc_tile_rows {
            options.edit::<TcChainOptions>(|tc| tc.tile_rows = Some(rows));
        }
    }

    fn flags(&self) -> Vec<(&'static str, bool)> {
        vec![("--tc-tile-rows", self.tc_tile_rows.is_some())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(flags: &[&str]) -> Result<OptionSet, String> {
        super::super::parse_group::<TcChainArgs>(flags)
    }

    #[test]
    fn the_flag_reaches_the_options_and_bad_heights_are_errors() {
        assert_eq!(
            options(&[]).unwrap().get::<TcChainOptions>().tile_rows,
            None
        );
        let set = options(&["--tc-tile-rows", "48"]).unwrap();
        assert_eq!(set.get::<TcChainOptions>().tile_rows, Some(48));
        for bad in ["0", "24", "96", "x"] {
            assert!(options(&["--tc-tile-rows", bad]).is_err(), "{bad}");
        }
    }
}
