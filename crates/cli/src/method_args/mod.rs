//! The flags of the methods and modifiers that take some, shared by `spdnn infer` and
//! `spdnn bench`: one file per option group (`xy.rs`, `snicit.rs`, `glare.rs`), each a
//! clap `Args` struct whose flags set one options type of the engine's `OptionSet`.
//!
//! Which methods read a flag follows from the code: a method reads the option groups of
//! its type (and those embedded in it, and its modifiers'), `Method::reads`; a flag no
//! chosen method reads draws a warning naming the methods that do. Each flag is optional;
//! what is not given keeps the crate's default. The defaults written in the help are
//! checked against the crates' by a test.

mod auto;
mod blockdepend;
mod compress;
mod dense;
mod glare;
mod hp;
mod memory;
mod snicit;
mod sz;
mod tcchain;
mod xy;

use std::any::TypeId;

use clap::Args;
use spdnn_engine::{OptionSet, Registry};

/// The flags of one option group.
pub trait GroupArgs {
    /// The options type the flags set.
    fn group(&self) -> TypeId;
    /// Applies the given flags to `options`.
    fn apply(&self, options: &mut OptionSet);
    /// Each flag of the group, with whether it was given.
    fn flags(&self) -> Vec<(&'static str, bool)>;
    /// The flags given.
    fn given(&self) -> Vec<&'static str> {
        self.flags()
            .into_iter()
            .filter(|(_, given)| *given)
            .map(|(flag, _)| flag)
            .collect()
    }
    /// Warnings beyond "no chosen method reads this flag", given whether some chosen
    /// method reads the group.
    fn extra_warnings(&self, read: bool) -> Vec<String> {
        let _ = read;
        Vec::new()
    }
}

/// The variant of a method a modifier flag asks for, when the registry has one.
type Variant<'r> = fn(&'r Registry, &str) -> Option<&'r str>;

/// Declares [`MethodArgs`] with one flattened field per option group (a [`GroupArgs`]) and
/// its `groups()`, from one list: a new method's args file is one line here.
macro_rules! method_args {
    ($($field:ident: $group:ty),* $(,)?) => {
        /// Every method and modifier flag.
        #[derive(Args, Clone, Debug, Default)]
        pub struct MethodArgs {
            $(
                #[command(flatten)]
                $field: $group,
            )*
            #[command(flatten)]
            compress: compress::CompressArgs,
        }

        impl MethodArgs {
            /// Every group's flags.
            fn groups(&self) -> Vec<&dyn GroupArgs> {
                vec![$(&self.$field),*]
            }
        }
    };
}

method_args! {
    snicit: snicit::SnicitArgs,
    xy: xy::XyArgs,
    hp: hp::HpArgs,
    blockdepend: blockdepend::BlockDependArgs,
    sz: sz::SzArgs,
    tcchain: tcchain::TcChainArgs,
    dense: dense::DenseArgs,
    auto: auto::AutoArgs,
    glare: glare::GlareArgs,
    memory: memory::MemoryArgs,
}

impl MethodArgs {
    /// The run's options: the defaults with every given flag applied, validated.
    pub fn options(&self) -> anyhow::Result<OptionSet> {
        let mut options = OptionSet::default();
        for group in self.groups() {
            group.apply(&mut options);
        }
        options.validate()?;
        Ok(options)
    }

    /// The methods to run: `names`, each swapped for its GLARE variant under `--glare` and
    /// for its compressed variant under `--compress` (duplicates dropped, order kept), with
    /// one warning per method that has no such variant.
    pub fn resolve_methods<'r>(
        &self,
        registry: &'r Registry,
        names: &[&'r str],
    ) -> (Vec<&'r str>, Vec<String>) {
        let mut chosen = names.to_vec();
        let mut warnings = Vec::new();
        let swaps: [(bool, &str, Variant<'r>); 2] = [
            (self.glare.glare, "--glare", |r, n| r.glare_variant(n)),
            (self.compress.compress, "--compress", |r, n| {
                r.compress_variant(n)
            }),
        ];
        for (asked, flag, variant) in swaps {
            if !asked {
                continue;
            }
            let mut swapped: Vec<&str> = Vec::new();
            for name in chosen {
                let run = variant(registry, name).unwrap_or_else(|| {
                    warnings.push(format!(
                        "warning: {flag}: {name} has no such variant; it runs as it is"
                    ));
                    name
                });
                if !swapped.contains(&run) {
                    swapped.push(run);
                }
            }
            chosen = swapped;
        }
        (chosen, warnings)
    }

    /// One warning per given flag that none of `methods` (as run, after
    /// [`Self::resolve_methods`]) reads, naming the methods of `registry` that do; and a
    /// group's own warnings (`--glare-model-rows` with `--glare-segment`).
    pub fn unused_warnings(&self, registry: &Registry, methods: &[&str]) -> Vec<String> {
        let mut warnings = Vec::new();
        for group in self.groups() {
            let reads = |name: &str| {
                registry
                    .get(name)
                    .is_ok_and(|m| m.reads().contains(&group.group()))
            };
            let read = methods.iter().any(|m| reads(m));
            if !read {
                let readers: Vec<&str> =
                    registry.names().into_iter().filter(|m| reads(m)).collect();
                for flag in group.given() {
                    warnings.push(format!(
                        "warning: {flag} has no effect on {} (it is read by {})",
                        methods.join(", "),
                        readers.join(", ")
                    ));
                }
            }
            warnings.extend(group.extra_warnings(read));
        }
        warnings
    }
}

/// A whole number ≥ 1.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1, not 0".into()),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("'{s}' is not a whole number ≥ 1")),
    }
}

/// A finite number ≥ 0 (no NaN, no infinity).
fn non_negative(s: &str) -> Result<f32, String> {
    let value: f32 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if !value.is_finite() {
        return Err(format!("must be a finite number ≥ 0, not {s}"));
    }
    if value < 0.0 {
        return Err(format!("must be ≥ 0, not {s}"));
    }
    Ok(value)
}

/// Test support: the option set `flags` give through one group's arguments `A` (parsed as a
/// command line of their own, applied to the defaults, validated); the error of the parse
/// or of the validation.
#[cfg(test)]
pub(crate) fn parse_group<A: clap::Args + GroupArgs>(flags: &[&str]) -> Result<OptionSet, String> {
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper<A: clap::Args> {
        #[command(flatten)]
        args: A,
    }

    let argv = std::iter::once("test").chain(flags.iter().copied());
    let args = Wrapper::<A>::try_parse_from(argv)
        .map_err(|e| e.to_string())?
        .args;
    let mut set = OptionSet::default();
    args.apply(&mut set);
    set.validate().map_err(|e| e.to_string())?;
    Ok(set)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;
    use spdnn_engine::GlareSettings;
    use spdnn_engine::spdnn_snicit::{self, SnicitOptions};
    use spdnn_engine::spdnn_xy::{self, XyOptions};

    use super::*;

    /// The groups these flags set, as the methods read them.
    #[derive(Debug, PartialEq)]
    struct MethodOptions {
        xy: XyOptions,
        snicit: SnicitOptions,
        glare: GlareSettings,
    }

    impl MethodOptions {
        fn of(set: &OptionSet) -> Self {
            Self {
                xy: set.get(),
                snicit: set.get(),
                glare: set.get(),
            }
        }
    }

    impl Default for MethodOptions {
        fn default() -> Self {
            Self::of(&OptionSet::default())
        }
    }

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: MethodArgs,
    }

    fn parse(flags: &[&str]) -> Result<MethodArgs, clap::Error> {
        let argv = std::iter::once("test").chain(flags.iter().copied());
        Wrapper::try_parse_from(argv).map(|w| w.args)
    }

    fn options(flags: &[&str]) -> MethodOptions {
        MethodOptions::of(&parse(flags).unwrap().options().unwrap())
    }

    #[test]
    fn no_flags_give_the_engine_defaults() {
        assert_eq!(options(&[]), MethodOptions::default());
    }

    #[test]
    fn help_defaults_match_the_crates() {
        let snicit = spdnn_snicit::SnicitOptions::default();
        assert_eq!(snicit.threshold, 30);
        assert_eq!(snicit.samples, 32);
        assert_eq!(snicit.bins, 16);
        assert_eq!(snicit.epsilon, 0.03);
        assert_eq!(snicit.eta, 0.03);
        assert_eq!(snicit.refresh_interval, 200);
        assert_eq!(snicit.batch, None);
        assert_eq!(snicit.pre_convergence, spdnn_snicit::PreConvergence::Xy);
        assert_eq!(snicit.prune, 0.0);
        let xy = spdnn_xy::XyOptions::default();
        assert_eq!(xy.delete_at, Some(22));
        assert_eq!(xy.row_major_layers, None);
        let glare = GlareSettings::default();
        assert_eq!(spdnn_engine::glare::DEFAULT_MODEL_ROWS, 512);
        assert_eq!(
            (glare.segment, glare.model_rows, glare.census),
            (None, 512, true)
        );
    }

    #[test]
    fn glare_flags_are_applied() {
        let o = options(&[
            "--glare",
            "--glare-segment",
            "1024",
            "--glare-model-rows",
            "64",
            "--no-glare-census",
        ]);
        assert_eq!(o.glare.segment, Some(1024));
        assert_eq!(o.glare.model_rows, 64);
        assert!(!o.glare.census);
        // The kernels' own options stay without a recorder: the engine sets it per run.
        assert!(o.xy.glare.is_none() && o.snicit.glare.is_none());
        // A section width that is not a power of two parses (snig+glare takes it).
        assert_eq!(
            options(&["--glare-segment", "10944"]).glare.segment,
            Some(10944)
        );
        let defaults = options(&["--glare"]);
        assert_eq!(defaults, MethodOptions::default());
    }

    #[test]
    fn glare_swaps_each_method_for_its_variant() {
        let registry = Registry::default();
        let plain = parse(&[]).unwrap();
        let (same, warnings) = plain.resolve_methods(&registry, &["bf", "cpu"]);
        assert_eq!(same, ["bf", "cpu"]);
        assert!(warnings.is_empty());

        let glare = parse(&["--glare"]).unwrap();
        let names = ["cpu", "bf", "snig", "xy", "snicit", "cusparse", "bf+glare"];
        let (run, warnings) = glare.resolve_methods(&registry, &names);
        assert_eq!(
            run,
            [
                "cpu",
                "bf+glare",
                "snig+glare",
                "xy+glare",
                "snicit+glare",
                "cusparse"
            ]
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("cpu") && warnings[1].contains("cusparse"));

        let both = parse(&["--glare", "--compress"]).unwrap();
        let (run, warnings) = both.resolve_methods(&registry, &["cpu", "xy", "cusparse"]);
        assert_eq!(
            run,
            ["cpu+compress", "xy+glare+compress", "cusparse+compress"]
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
    }

    #[test]
    fn glare_parameters_warn_without_a_glare_method() {
        let registry = Registry::default();
        let args = parse(&["--glare-segment", "64", "--no-glare-census"]).unwrap();
        let plain = args.unused_warnings(&registry, &["bf", "xy"]);
        assert_eq!(plain.len(), 2, "{plain:?}");
        assert!(plain[0].contains("--glare-segment") && plain[0].contains("bf+glare"));
        assert!(
            args.unused_warnings(&registry, &["bf", "xy+glare"])
                .is_empty()
        );
        // XY's and SNICIT's flags reach their GLARE variants too.
        let xy = parse(&["--delete-at", "30", "--threshold", "40"]).unwrap();
        assert!(xy.unused_warnings(&registry, &["snicit+glare"]).is_empty());
        assert_eq!(xy.unused_warnings(&registry, &["xy+glare"]).len(), 1);
        // A hand-given segment leaves the model rows unread.
        let both = parse(&["--glare-segment", "64", "--glare-model-rows", "8"]).unwrap();
        let warnings = both.unused_warnings(&registry, &["bf+glare"]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("--glare-model-rows"));
    }

    #[test]
    fn every_flag_is_applied() {
        let o = options(&[
            "--threshold",
            "12",
            "--samples",
            "64",
            "--bins",
            "8",
            "--epsilon",
            "0.1",
            "--eta",
            "0",
            "--refresh",
            "50",
            "--batch",
            "10000",
            "--pre-convergence",
            "bf",
            "--prune",
            "0.01",
            "--delete-at",
            "30",
            "--row-major-layers",
            "3",
            "--xy-cache",
            "/tmp/xy",
        ]);
        let s = &o.snicit;
        assert_eq!(
            (s.threshold, s.samples, s.bins, s.refresh_interval, s.batch),
            (12, 64, 8, 50, Some(10000))
        );
        assert_eq!((s.epsilon, s.eta), (0.1, 0.0));
        assert_eq!(s.pre_convergence, spdnn_snicit::PreConvergence::Bf);
        assert_eq!(s.prune, 0.01);
        for xy in [&o.xy, &o.snicit.xy] {
            assert_eq!(xy.delete_at, Some(30));
            assert_eq!(xy.row_major_layers, Some(3));
            assert_eq!(xy.cache_dir, Some(PathBuf::from("/tmp/xy")));
        }
    }

    #[test]
    fn delete_at_never_and_no_cache() {
        let o = options(&["--delete-at", "never", "--no-xy-cache"]);
        for xy in [&o.xy, &o.snicit.xy] {
            assert_eq!(xy.delete_at, None);
            assert_eq!(xy.cache_dir, None);
        }
        assert_eq!(options(&["--delete-at=NEVER"]).xy.delete_at, None);
    }

    #[test]
    fn a_threshold_beyond_any_network_is_allowed() {
        assert_eq!(options(&["--threshold", "5000"]).snicit.threshold, 5000);
    }

    #[test]
    fn bad_values_are_rejected_with_the_flag_named() {
        let cases: &[&[&str]] = &[
            &["--epsilon", "nan"],
            &["--epsilon", "NaN"],
            &["--epsilon", "inf"],
            &["--epsilon", "-0.1"],
            &["--epsilon", "1e50"],
            &["--eta", "-1"],
            &["--eta", "x"],
            &["--threshold", "0"],
            &["--threshold", "-3"],
            &["--threshold", "1.5"],
            &["--samples", "0"],
            &["--bins", "0"],
            &["--refresh", "0"],
            &["--batch", "0"],
            &["--delete-at", "0"],
            &["--delete-at", "sometimes"],
            &["--row-major-layers", "-1"],
            &["--pre-convergence", "cusparse"],
            &["--prune", "-0.01"],
            &["--prune", "nan"],
            &["--prune", "inf"],
            &["--prune", "small"],
            &["--xy-cache", "d", "--no-xy-cache"],
            &["--glare-segment", "0"],
            &["--glare-segment", "-64"],
            &["--glare-segment", "big"],
            &["--glare-model-rows", "0"],
            &["--glare-model-rows", "1.5"],
        ];
        for flags in cases {
            let error = match parse(flags) {
                Err(e) => e.to_string(),
                Ok(args) => panic!("{flags:?} was accepted: {args:?}"),
            };
            let flag = flags[0];
            assert!(error.contains(flag), "{flags:?}: {error}");
        }
    }

    #[test]
    fn unused_flags_are_named() {
        let registry = Registry::default();
        let args = parse(&["--threshold", "5", "--delete-at", "never"]).unwrap();
        assert!(args.unused_warnings(&registry, &["snicit"]).is_empty());
        let xy = args.unused_warnings(&registry, &["xy"]);
        assert_eq!(xy.len(), 1);
        assert!(xy[0].contains("--threshold") && xy[0].contains("snicit"));
        assert_eq!(args.unused_warnings(&registry, &["bf"]).len(), 2);
        assert!(
            args.unused_warnings(&registry, &["bf", "xy", "snicit"])
                .is_empty()
        );
        assert!(
            parse(&[])
                .unwrap()
                .unused_warnings(&registry, &["cpu"])
                .is_empty()
        );
    }
}
