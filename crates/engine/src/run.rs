//! A run: a method on a benchmark, timed, checked against a truth.

use anyhow::Result;
use serde::Serialize;
use spdnn_sdgc::benchmark::Benchmark;

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
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            warmup: 1,
            repetitions: 3,
            precision: Precision::F32,
        }
    }
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
