//! `sz`'s flags (read too by `sz+t4`, which embeds S&Z's options).

use std::any::TypeId;
use std::path::PathBuf;

use clap::Args;
use spdnn_engine::OptionSet;
use spdnn_sz::{Compaction, SzOptions};

use super::{GroupArgs, at_least_one, non_negative};

/// S&Z-2022's parameters and T4's split.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "sz, sz+t4")]
pub struct SzArgs {
    /// Least share of a 16 × 16 block's entries that must be nonzero for it to run on
    /// the tensor cores; above 1 every nonzero stays in the CSR rest [default: 0.25].
    #[arg(long, value_name = "SHARE", value_parser = non_negative, allow_hyphen_values = true)]
    pub sz_fill: Option<f32>,
    /// Rows per item of the plain S&Z kernel: 32, 64 or 128 [default: 64].
    #[arg(long, value_name = "ROWS", value_parser = at_least_one, allow_hyphen_values = true)]
    pub sz_rows: Option<usize>,
    /// When dead rows are compacted away: `doubling` (after layers 1, 2, 4, 8, …),
    /// `never`, or a list of layers such as `1,3,9` [default: doubling].
    #[arg(long, value_name = "WHEN", value_parser = compaction, allow_hyphen_values = true)]
    pub sz_compact: Option<Compaction>,
    /// Folder caching reorderings and T4 profiles [default: $SPDNN_DATA/cache/sz, or
    /// data/cache/sz].
    #[arg(long, value_name = "DIR", conflicts_with = "no_sz_cache")]
    pub sz_cache: Option<PathBuf>,
    /// Reorder the network (and profile T4) every run, cache nothing.
    #[arg(long)]
    pub no_sz_cache: bool,
    /// sz+t4: rows per item (the paper's blocksize.y): 32, 64 or 128 [default: 64].
    #[arg(long, value_name = "ROWS", value_parser = at_least_one, allow_hyphen_values = true)]
    pub t4_rows: Option<usize>,
    /// sz+t4: tensor-core warps per block, 2 or 4 (four CUDA-core warps beside them)
    /// [default: 4].
    #[arg(long, value_name = "WARPS", value_parser = at_least_one, allow_hyphen_values = true)]
    pub t4_warps: Option<usize>,
    /// sz+t4: tiles of 16 outputs per item shared out between the two kinds of warps,
    /// 1 to 64 [default: 4].
    #[arg(long, value_name = "TILES", value_parser = at_least_one, allow_hyphen_values = true)]
    pub t4_group: Option<usize>,
    /// sz+t4: P_M by hand (CUDA-core tiles per tensor-core tile at most) [default: the
    /// turning point profiled on the device, cached].
    #[arg(long, value_name = "RATIO", value_parser = non_negative, allow_hyphen_values = true)]
    pub t4_ratio: Option<f32>,
}

/// `doubling`, `never` or a list of layers ≥ 1.
fn compaction(s: &str) -> Result<Compaction, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("doubling") {
        return Ok(Compaction::Doubling);
    }
    if t.eq_ignore_ascii_case("never") {
        return Ok(Compaction::Never);
    }
    let layers = t
        .split(',')
        .map(at_least_one)
        .collect::<Result<Vec<usize>, String>>()
        .map_err(|e| format!("'{s}' is not 'doubling', 'never' or a list of layers ≥ 1: {e}"))?;
    Ok(Compaction::After(layers))
}

impl GroupArgs for SzArgs {
    fn group(&self) -> TypeId {
        TypeId::of::<SzOptions>()
    }

    fn apply(&self, options: &mut OptionSet) {
        if self.given().is_empty() {
            return;
        }
        options.edit::<SzOptions>(|sz| {
            if let Some(fill) = self.sz_fill {
                sz.min_fill = fill;
            }
            if let Some(rows) = self.sz_rows {
                sz.rows = rows;
            }
            if let Some(c) = &self.sz_compact {
                sz.compact = c.clone();
            }
            if self.no_sz_cache {
                sz.cache_dir = None;
            } else if let Some(dir) = &self.sz_cache {
                sz.cache_dir = Some(dir.clone());
            }
            if let Some(rows) = self.t4_rows {
                sz.t4_options.rows = rows;
            }
            if let Some(warps) = self.t4_warps {
                sz.t4_options.tc_warps = warps;
            }
            if let Some(group) = self.t4_group {
                sz.t4_options.group = group;
            }
            if let Some(ratio) = self.t4_ratio {
                sz.t4_options.ratio = Some(f64::from(ratio));
            }
        });
    }

    fn flags(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("--sz-fill", self.sz_fill.is_some()),
            ("--sz-rows", self.sz_rows.is_some()),
            ("--sz-compact", self.sz_compact.is_some()),
            ("--sz-cache", self.sz_cache.is_some()),
            ("--no-sz-cache", self.no_sz_cache),
            ("--t4-rows", self.t4_rows.is_some()),
            ("--t4-warps", self.t4_warps.is_some()),
            ("--t4-group", self.t4_group.is_some()),
            ("--t4-ratio", self.t4_ratio.is_some()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use spdnn_sz::{SzT4Options, T4Options};

    use super::*;

    fn options(flags: &[&str]) -> Result<OptionSet, String> {
        crate::method_args::parse_group::<SzArgs>(flags)
    }

    #[test]
    fn help_defaults_match_the_crate() {
        let o = SzOptions::default();
        assert_eq!(
            (o.min_fill, o.rows, o.compact),
            (0.25, 64, Compaction::Doubling)
        );
        assert_eq!(
            T4Options::default(),
            T4Options {
                rows: 64,
                tc_warps: 4,
                group: 4,
                ratio: None
            }
        );
        let set = options(&[]).unwrap();
        assert!(!set.get::<SzOptions>().t4);
        assert!(set.get::<SzT4Options>().effective().t4);
    }

    #[test]
    fn every_flag_reaches_sz_and_sz_t4() {
        let set = options(&[
            "--sz-fill",
            "0.5",
            "--sz-rows",
            "128",
            "--sz-compact",
            "1,3,9",
            "--sz-cache",
            "/tmp/sz",
            "--t4-rows",
            "32",
            "--t4-warps",
            "2",
            "--t4-group",
            "8",
            "--t4-ratio",
            "1.5",
        ])
        .unwrap();
        let t4 = set.get::<SzT4Options>().effective();
        for o in [set.get::<SzOptions>(), t4.clone()] {
            assert_eq!((o.min_fill, o.rows), (0.5, 128));
            assert_eq!(o.compact, Compaction::After(vec![1, 3, 9]));
            assert_eq!(o.cache_dir, Some(PathBuf::from("/tmp/sz")));
            assert_eq!(
                o.t4_options,
                T4Options {
                    rows: 32,
                    tc_warps: 2,
                    group: 8,
                    ratio: Some(1.5)
                }
            );
        }
        assert!(t4.t4);
        let never = options(&["--sz-compact", "NEVER", "--no-sz-cache"]).unwrap();
        let o = never.get::<SzOptions>();
        assert_eq!((o.compact, o.cache_dir), (Compaction::Never, None));
    }

    #[test]
    fn bad_values_are_errors() {
        for flags in [
            &["--sz-fill", "-1"][..],
            &["--sz-fill", "nan"],
            &["--sz-rows", "0"],
            &["--sz-rows", "48"],
            &["--sz-compact", "sometimes"],
            &["--sz-compact", "0,2"],
            &["--sz-compact", "3,2"],
            &["--sz-cache", "d", "--no-sz-cache"],
            &["--t4-rows", "16"],
            &["--t4-warps", "3"],
            &["--t4-group", "65"],
            &["--t4-ratio", "-0.5"],
        ] {
            assert!(options(flags).is_err(), "{flags:?} was accepted");
        }
    }
}
