//! A run: a method on a benchmark, timed, checked against a truth.

use anyhow::{Result, bail};
use serde::Serialize;
use spdnn_sdgc::benchmark::Benchmark;

use crate::glare::GlareSettings;
use crate::method::{Method, Problem};
use crate::report::{CategoryCheck, RunReport};

/// Floating-point precision of the CPU reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Single precision (as the GPU methods and the papers).
    #[default]
    F32,
    /// Double precision.
    F64,
}

/// How a run is repeated.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Untimed runs before the timed ones.
    pub warmup: usize,
    /// Timed runs; the report gives the median.
    pub repetitions: usize,
    /// Precision of the CPU reference.
    pub precision: Precision,
    /// Parameters of the methods that have some (each method reads its own).
    pub methods: MethodOptions,
    /// The GLARE access model's statistics of this run's problem, computed once by a
    /// caller that runs several `+glare` methods on it ([`crate::glare::shared_profile`]);
    /// `None`, or one that does not fit the problem: each such method computes its own.
    pub glare_profile: Option<std::sync::Arc<crate::glare::Profile>>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            warmup: 1,
            repetitions: 3,
            precision: Precision::F32,
            methods: MethodOptions::default(),
            glare_profile: None,
        }
    }
}

/// The parameters of the methods that take some, one field per method.
///
/// The default is each crate's default, with the XY preprocessing cache under
/// `data_dir()/cache/xy` (`$SPDNN_DATA` honoured) for `xy` and for SNICIT's XY stage.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodOptions {
    /// `xy`.
    pub xy: spdnn_xy::XyOptions,
    /// `snicit` (its `xy` field tunes the pre-convergence layers when they run XY).
    pub snicit: spdnn_snicit::SnicitOptions,
    /// The `+glare` methods (on top of their plain method's options above).
    pub glare: GlareSettings,
}

impl Default for MethodOptions {
    fn default() -> Self {
        let xy = spdnn_xy::XyOptions {
            cache_dir: Some(default_xy_cache_dir()),
            ..spdnn_xy::XyOptions::default()
        };
        Self {
            snicit: spdnn_snicit::SnicitOptions {
                xy: xy.clone(),
                ..spdnn_snicit::SnicitOptions::default()
            },
            xy,
            glare: GlareSettings::default(),
        }
    }
}

impl MethodOptions {
    /// Checks every method's parameters (see [`validate_xy`], [`validate_snicit`],
    /// [`GlareSettings::validate`]; the kernel-specific GLARE checks are
    /// [`GlareSettings::validate_for`] and [`crate::glare::check_method`]).
    pub fn validate(&self) -> Result<()> {
        validate_xy(&self.xy)?;
        validate_snicit(&self.snicit)?;
        self.glare.validate()
    }
}

/// Where preprocessed XY networks are cached by default: `data_dir()/cache/xy`.
pub fn default_xy_cache_dir() -> std::path::PathBuf {
    spdnn_sdgc::paths::data_dir().join("cache").join("xy")
}

/// XY's parameters: `delete_at`, when given, is at least 1 (`row_major_layers` may be 0:
/// the input is then transposed and every layer runs neuron-major).
pub fn validate_xy(options: &spdnn_xy::XyOptions) -> Result<()> {
    if options.delete_at == Some(0) {
        bail!("XY delete-at must be a layer ≥ 1 (or never), not 0");
    }
    Ok(())
}

/// SNICIT's parameters: t, s, n, the refresh interval and the batch at least 1; ε and η
/// finite and ≥ 0; XY's options valid. A threshold t ≥ L is allowed: the pre-convergence
/// spMM then runs through every layer.
pub fn validate_snicit(options: &spdnn_snicit::SnicitOptions) -> Result<()> {
    let counts = [
        ("threshold layer t", options.threshold),
        ("samples s", options.samples),
        ("bins n", options.bins),
        ("refresh interval", options.refresh_interval),
        ("batch", options.batch.unwrap_or(1)),
    ];
    for (what, value) in counts {
        if value == 0 {
            bail!("SNICIT {what} must be at least 1, not 0");
        }
    }
    for (what, value) in [("epsilon ε", options.epsilon), ("eta η", options.eta)] {
        if !value.is_finite() || value < 0.0 {
            bail!("SNICIT {what} must be a finite number ≥ 0, not {value}");
        }
    }
    validate_xy(&options.xy)
}

/// The categories a run must produce, and where they came from.
#[derive(Debug, Clone)]
pub struct Truth {
    /// 1-based ascending rows.
    pub categories: Vec<u32>,
    /// A label such as the truth file's path or "cpu reference".
    pub source: String,
    /// The truth covers rows `1..=rows` only.
    pub rows: usize,
}

impl Truth {
    /// The truth restricted to the first `rows` rows (rows are independent).
    pub fn restricted(&self, rows: usize) -> Truth {
        Truth {
            categories: self
                .categories
                .iter()
                .copied()
                .filter(|&r| (r as usize) <= rows)
                .collect(),
            source: self.source.clone(),
            rows: rows.min(self.rows),
        }
    }
}

/// A finished run: its report and the categories it found.
#[derive(Debug, Clone)]
pub struct Execution {
    /// What is printed and written to results.
    pub report: RunReport,
    /// 1-based ascending rows found.
    pub categories: Vec<u32>,
}

/// Runs `method` on `problem` and checks it against `truth` when given.
///
/// A truth computed on fewer rows than were run (`truth.rows`) is compared with the
/// categories among those rows only.
pub fn execute(
    method: &dyn Method,
    benchmark: &Benchmark,
    problem: &Problem<'_>,
    config: &RunConfig,
    truth: Option<&Truth>,
) -> Result<Execution> {
    let output = method.run(problem, config)?;
    let check = truth.map(|t| {
        let found: Vec<u32> = output
            .categories
            .iter()
            .copied()
            .filter(|&r| (r as usize) <= t.rows)
            .collect();
        CategoryCheck::compare(&found, &t.categories, &t.source)
    });
    let report = RunReport::new(method.name(), benchmark, &output, check);
    Ok(Execution {
        report,
        categories: output.categories,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_options_are_valid_and_cache_under_the_data_dir() {
        let options = MethodOptions::default();
        options.validate().unwrap();
        let dir = spdnn_sdgc::paths::data_dir().join("cache").join("xy");
        assert_eq!(options.xy.cache_dir.as_deref(), Some(dir.as_path()));
        assert_eq!(options.snicit.xy.cache_dir.as_deref(), Some(dir.as_path()));
        assert_eq!(options.xy.delete_at, Some(22));
        assert_eq!(options.snicit.threshold, 30);
        assert_eq!(options.glare, GlareSettings::default());
        assert!(options.xy.glare.is_none() && options.snicit.glare.is_none());
        assert!(options.snicit.xy.glare.is_none());
        assert_eq!(RunConfig::default().methods, options);
        assert!(RunConfig::default().glare_profile.is_none());
    }

    #[test]
    fn zero_counts_are_rejected() {
        let base = MethodOptions::default();
        let cases: [fn(&mut MethodOptions); 9] = [
            |o| o.snicit.threshold = 0,
            |o| o.snicit.samples = 0,
            |o| o.snicit.bins = 0,
            |o| o.snicit.refresh_interval = 0,
            |o| o.snicit.batch = Some(0),
            |o| o.snicit.xy.delete_at = Some(0),
            |o| o.xy.delete_at = Some(0),
            |o| o.glare.model_rows = 0,
            |o| o.glare.segment = Some(0),
        ];
        for (i, change) in cases.iter().enumerate() {
            let mut options = base.clone();
            change(&mut options);
            assert!(options.validate().is_err(), "case {i} was accepted");
        }
    }

    #[test]
    fn bad_epsilon_and_eta_are_rejected() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.01] {
            let mut options = MethodOptions::default();
            options.snicit.epsilon = bad;
            let message = options.validate().unwrap_err().to_string();
            assert!(message.contains("epsilon"), "{message}");
            let mut options = MethodOptions::default();
            options.snicit.eta = bad;
            assert!(options.validate().is_err());
        }
    }

    #[test]
    fn edge_values_are_accepted() {
        let mut options = MethodOptions::default();
        options.snicit.threshold = 100_000; // ≥ L: pre-convergence all the way
        options.snicit.epsilon = 0.0;
        options.snicit.eta = 0.0;
        options.snicit.batch = Some(1);
        options.snicit.xy.delete_at = None;
        options.xy.row_major_layers = Some(1);
        options.validate().unwrap();
    }
}
