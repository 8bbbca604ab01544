//! `xy`'s flags (read too by every method that embeds XY's options: SNICIT's XY stage).

use std::any::TypeId;
use std::path::PathBuf;

use clap::Args;
use spdnn_engine::OptionSet;
use spdnn_engine::spdnn_xy::XyOptions;

use super::{GroupArgs, at_least_one};

/// XY-2021's parameters.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "xy (also snicit's XY stage)")]
pub struct XyArgs {
    /// Delete the dead rows once after this many layers, or `never` [default: 22].
    #[arg(long, value_name = "L", value_parser = delete_at, allow_hyphen_values = true)]
    pub delete_at: Option<DeleteAt>,
    /// Row-major layers before the transpose to neuron-major (0: transpose the input)
    /// [default: detected from the data: the first layer and the stride layers].
    #[arg(long, value_name = "K", allow_hyphen_values = true)]
    pub row_major_layers: Option<usize>,
    /// Folder caching preprocessed networks (files over 2 GiB are not kept: a larger
    /// network is prepared every run) [default: $SPDNN_DATA/cache/xy, or data/cache/xy].
    #[arg(long, value_name = "DIR", conflicts_with = "no_xy_cache")]
    pub xy_cache: Option<PathBuf>,
    /// Preprocess the network every run, cache nothing.
    #[arg(long)]
    pub no_xy_cache: bool,
}

/// `--delete-at L` or `--delete-at never`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeleteAt(pub Option<usize>);

/// A layer ≥ 1 or `never`.
fn delete_at(s: &str) -> Result<DeleteAt, String> {
    if s.trim().eq_ignore_ascii_case("never") {
        return Ok(DeleteAt(None));
    }
    at_least_one(s)
        .map(|v| DeleteAt(Some(v)))
        .map_err(|_| format!("'{s}' is neither a layer ≥ 1 nor 'never'"))
}

impl GroupArgs for XyArgs {
    fn group(&self) -> TypeId {
        TypeId::of::<XyOptions>()
    }

    fn apply(&self, options: &mut OptionSet) {
        if self.given().is_empty() {
            return;
        }
        options.edit::<XyOptions>(|xy| {
            if let Some(DeleteAt(at)) = self.delete_at {
                xy.delete_at = at;
            }
            if let Some(k) = self.row_major_layers {
                xy.row_major_layers = Some(k);
            }
            if self.no_xy_cache {
                xy.cache_dir = None;
            } else if let Some(dir) = &self.xy_cache {
                xy.cache_dir = Some(dir.clone());
            }
        });
    }

    fn flags(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("--delete-at", self.delete_at.is_some()),
            ("--row-major-layers", self.row_major_layers.is_some()),
            ("--xy-cache", self.xy_cache.is_some()),
            ("--no-xy-cache", self.no_xy_cache),
        ]
    }
}
