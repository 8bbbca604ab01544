//! The parameters of the methods that take some (`xy`, `snicit`, the `+glare` methods),
//! shared by `spdnn infer` and `spdnn bench`, and `--glare`, which swaps each chosen
//! method for its GLARE variant.
//!
//! Each flag is optional; what is not given keeps the method crate's default (the engine's
//! [`MethodOptions::default`]). The defaults written in the help are checked against the
//! crates' by a test.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use spdnn_engine::run::MethodOptions;
use spdnn_engine::{Registry, spdnn_snicit};

/// Parameters of `xy` and `snicit`.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "Method parameters (xy, snicit)")]
pub struct MethodArgs {
    /// snicit: threshold layer t; layers 1..=t run the pre-convergence spMM, then the rows
    /// are clustered into centroids + residues [default: 30]. A t ≥ L is allowed: the
    /// pre-convergence spMM then runs through every layer and nothing is clustered.
    #[arg(long, value_name = "T", value_parser = at_least_one, allow_hyphen_values = true)]
    threshold: Option<usize>,
    /// snicit: rows sampled to pick the centroids, s [default: 32].
    #[arg(long, value_name = "S", value_parser = at_least_one, allow_hyphen_values = true)]
    samples: Option<usize>,
    /// snicit: bins of the sum downsampling, n [default: 16].
    #[arg(long, value_name = "N", value_parser = at_least_one, allow_hyphen_values = true)]
    bins: Option<usize>,
    /// snicit: ε, a bin of a sample differs from a base when by more than this
    /// [default: 0.03].
    #[arg(long, value_name = "E", value_parser = non_negative, allow_hyphen_values = true)]
    epsilon: Option<f32>,
    /// snicit: η, a sample is pruned when fewer than η·n of its bins differ from a base
    /// [default: 0.03].
    #[arg(long, value_name = "H", value_parser = non_negative, allow_hyphen_values = true)]
    eta: Option<f32>,
    /// snicit: layers between refreshes of the non-empty row index [default: 200].
    #[arg(long, value_name = "K", value_parser = at_least_one, allow_hyphen_values = true)]
    refresh: Option<usize>,
    /// snicit: rows per batch [default: all rows in one batch].
    #[arg(long, value_name = "B", value_parser = at_least_one, allow_hyphen_values = true)]
    batch: Option<usize>,
    /// snicit: the spMM of layers 1..=t [default: xy].
    #[arg(long, value_enum, value_name = "KERNEL")]
    pre_convergence: Option<PreConvergenceArg>,
    /// xy, and snicit's xy stage: delete the dead rows once after this many layers, or
    /// `never` [default: 22].
    #[arg(long, value_name = "L", value_parser = delete_at, allow_hyphen_values = true)]
    delete_at: Option<DeleteAt>,
    /// xy, and snicit's xy stage: row-major layers before the transpose to neuron-major
    /// (0: transpose the input) [default: detected from the data: the first layer and the
    /// stride layers].
    #[arg(long, value_name = "K", allow_hyphen_values = true)]
    row_major_layers: Option<usize>,
    /// xy, and snicit's xy stage: folder caching preprocessed networks
    /// [default: $SPDNN_DATA/cache/xy, or data/cache/xy].
    #[arg(long, value_name = "DIR", conflicts_with = "no_xy_cache")]
    xy_cache: Option<PathBuf>,
    /// xy, and snicit's xy stage: preprocess the network every run, cache nothing.
    #[arg(long)]
    no_xy_cache: bool,
    #[command(flatten)]
    glare: GlareArgs,
}

/// GLARE: which methods, and the parameters of the `+glare` methods.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "GLARE (bf+glare, snig+glare, xy+glare, snicit+glare)")]
pub struct GlareArgs {
    /// Run the GLARE variant of every chosen method that has one (bf → bf+glare, snig →
    /// snig+glare, xy → xy+glare, snicit → snicit+glare); the others run as they are,
    /// with a warning.
    #[arg(long)]
    glare: bool,
    /// +glare methods: segment length m (neurons per recorder unit) instead of the access
    /// model's choice; a power of two the kernel accepts (snig+glare: its section width)
    /// [default: chosen by the model].
    #[arg(long, value_name = "M", value_parser = at_least_one, allow_hyphen_values = true)]
    glare_segment: Option<usize>,
    /// +glare methods: input rows whose CPU-reference statistics the access model reads
    /// [default: 512, at most the rows run].
    #[arg(long, value_name = "R", value_parser = at_least_one, allow_hyphen_values = true)]
    glare_model_rows: Option<usize>,
    /// +glare methods: skip the census run that counts every layer's global-memory
    /// accesses (the report then has no `accesses` and no reduction).
    #[arg(long)]
    no_glare_census: bool,
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

/// `--delete-at L` or `--delete-at never`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeleteAt(pub Option<usize>);

const SNICIT: &[&str] = &["snicit", "snicit+glare"];
const XY_AND_SNICIT: &[&str] = &["xy", "snicit", "xy+glare", "snicit+glare"];
const GLARE: &[&str] = &["bf+glare", "snig+glare", "xy+glare", "snicit+glare"];

impl MethodArgs {
    /// The engine's options: the defaults with every given flag applied, validated.
    pub fn options(&self) -> anyhow::Result<MethodOptions> {
        let mut options = MethodOptions::default();
        let snicit = &mut options.snicit;
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
        for xy in [&mut options.xy, &mut options.snicit.xy] {
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
        }
        let glare = &mut options.glare;
        glare.segment = self.glare.glare_segment;
        if let Some(rows) = self.glare.glare_model_rows {
            glare.model_rows = rows;
        }
        glare.census = !self.glare.no_glare_census;
        options.validate()?;
        Ok(options)
    }

    /// The methods to run: `names`, each swapped for its GLARE variant under `--glare`
    /// (duplicates dropped, order kept), with one warning per method that has none.
    pub fn resolve_methods(
        &self,
        registry: &Registry,
        names: &[&'static str],
    ) -> (Vec<&'static str>, Vec<String>) {
        if !self.glare.glare {
            return (names.to_vec(), Vec::new());
        }
        let mut chosen: Vec<&'static str> = Vec::new();
        let mut warnings = Vec::new();
        for &name in names {
            let run = registry.glare_variant(name).unwrap_or_else(|| {
                warnings.push(format!(
                    "warning: --glare: {name} has no GLARE variant; it runs as it is"
                ));
                name
            });
            if !chosen.contains(&run) {
                chosen.push(run);
            }
        }
        (chosen, warnings)
    }

    /// The flags given, each with the methods that read it.
    fn given(&self) -> Vec<(&'static str, &'static [&'static str])> {
        [
            ("--threshold", self.threshold.is_some(), SNICIT),
            ("--samples", self.samples.is_some(), SNICIT),
            ("--bins", self.bins.is_some(), SNICIT),
            ("--epsilon", self.epsilon.is_some(), SNICIT),
            ("--eta", self.eta.is_some(), SNICIT),
            ("--refresh", self.refresh.is_some(), SNICIT),
            ("--batch", self.batch.is_some(), SNICIT),
            ("--pre-convergence", self.pre_convergence.is_some(), SNICIT),
            ("--delete-at", self.delete_at.is_some(), XY_AND_SNICIT),
            (
                "--row-major-layers",
                self.row_major_layers.is_some(),
                XY_AND_SNICIT,
            ),
            ("--xy-cache", self.xy_cache.is_some(), XY_AND_SNICIT),
            ("--no-xy-cache", self.no_xy_cache, XY_AND_SNICIT),
            ("--glare-segment", self.glare.glare_segment.is_some(), GLARE),
            (
                "--glare-model-rows",
                self.glare.glare_model_rows.is_some(),
                GLARE,
            ),
            ("--no-glare-census", self.glare.no_glare_census, GLARE),
        ]
        .into_iter()
        .filter(|(_, given, _)| *given)
        .map(|(flag, _, users)| (flag, users))
        .collect()
    }

    /// One warning per given flag that none of `methods` reads (`methods` as run, after
    /// [`Self::resolve_methods`]); `--glare-model-rows` also draws one when
    /// `--glare-segment` leaves the model nothing to choose.
    pub fn unused_warnings(&self, methods: &[&str]) -> Vec<String> {
        let mut warnings: Vec<String> = self
            .given()
            .into_iter()
            .filter(|(_, users)| !users.iter().any(|u| methods.contains(u)))
            .map(|(flag, users)| {
                format!(
                    "warning: {flag} has no effect on {} (it is read by {})",
                    methods.join(", "),
                    users.join(", ")
                )
            })
            .collect();
        let glare_run = GLARE.iter().any(|g| methods.contains(g));
        if glare_run && self.glare.glare_segment.is_some() && self.glare.glare_model_rows.is_some()
        {
            warnings.push(
                "warning: --glare-model-rows has no effect with --glare-segment (no model runs)"
                    .to_string(),
            );
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

/// A layer ≥ 1 or `never`.
fn delete_at(s: &str) -> Result<DeleteAt, String> {
    if s.trim().eq_ignore_ascii_case("never") {
        return Ok(DeleteAt(None));
    }
    at_least_one(s)
        .map(|v| DeleteAt(Some(v)))
        .map_err(|_| format!("'{s}' is neither a layer ≥ 1 nor 'never'"))
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use spdnn_engine::spdnn_xy;

    use super::*;

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
        parse(flags).unwrap().options().unwrap()
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
        let xy = spdnn_xy::XyOptions::default();
        assert_eq!(xy.delete_at, Some(22));
        assert_eq!(xy.row_major_layers, None);
        let glare = spdnn_engine::GlareSettings::default();
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
    }

    #[test]
    fn glare_parameters_warn_without_a_glare_method() {
        let args = parse(&["--glare-segment", "64", "--no-glare-census"]).unwrap();
        let plain = args.unused_warnings(&["bf", "xy"]);
        assert_eq!(plain.len(), 2, "{plain:?}");
        assert!(plain[0].contains("--glare-segment") && plain[0].contains("bf+glare"));
        assert!(args.unused_warnings(&["bf", "xy+glare"]).is_empty());
        // XY's and SNICIT's flags reach their GLARE variants too.
        let xy = parse(&["--delete-at", "30", "--threshold", "40"]).unwrap();
        assert!(xy.unused_warnings(&["snicit+glare"]).is_empty());
        assert_eq!(xy.unused_warnings(&["xy+glare"]).len(), 1);
        // A hand-given segment leaves the model rows unread.
        let both = parse(&["--glare-segment", "64", "--glare-model-rows", "8"]).unwrap();
        let warnings = both.unused_warnings(&["bf+glare"]);
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
        let args = parse(&["--threshold", "5", "--delete-at", "never"]).unwrap();
        assert!(args.unused_warnings(&["snicit"]).is_empty());
        let xy = args.unused_warnings(&["xy"]);
        assert_eq!(xy.len(), 1);
        assert!(xy[0].contains("--threshold") && xy[0].contains("snicit"));
        assert_eq!(args.unused_warnings(&["bf"]).len(), 2);
        assert!(args.unused_warnings(&["bf", "xy", "snicit"]).is_empty());
        assert!(parse(&[]).unwrap().unused_warnings(&["cpu"]).is_empty());
    }
}
