//! How large the GPU tests' problems are: `SPDNN_TEST_SCALE`, read here and nowhere else.
//!
//! - `full` (the default, also when unset): the suites as written.
//! - `sanitize`: sizes compute-sanitizer finishes in seconds (`bash .device/run.sh
//!   sanitize` sets it; racecheck runs a kernel hundreds of times slower). What shrinks:
//!   proptest cases (at most [`SANITIZE_CASES`] a suite, no shrinking of a failure), timed
//!   runs (one after the warm-up, or one alone under racecheck, see [`run_spec`]), the rows
//!   of the large problems ([`challenge_rows`], the official subset's window, the trained
//!   networks' test images, the tests' own sizes through [`sized`]), and the depth of the
//!   generated challenge networks ([`challenge_layers`]: at most [`SANITIZE_MAX_LAYERS`]).
//!   What stays: every option set a suite loops over, every width, every phase that depth
//!   selects, and so every kernel instance, tile kind and phase the full suite reaches
//!   (docs/reliability.md, "The sanitize scale", says how each suite keeps them).

use std::sync::OnceLock;

use proptest::test_runner::Config;
use spdnn_cuda::rows::RunSpec;

/// The environment variable that picks the scale.
pub const SCALE_VAR: &str = "SPDNN_TEST_SCALE";

/// Most proptest cases a suite runs at sanitize scale.
pub const SANITIZE_CASES: u32 = 2;

/// At sanitize scale a challenge problem keeps at most this many activations a layer
/// (rows × N), and at least [`SANITIZE_MIN_ROWS`] rows.
pub const SANITIZE_ROW_FLOATS: usize = 64 * 1024;

/// Fewest rows a challenge problem keeps at sanitize scale.
pub const SANITIZE_MIN_ROWS: usize = 16;

/// Most layers a generated challenge network keeps at sanitize scale. Every launch under a
/// sanitizer costs far more than its kernel (the tool checks each one), and the per-layer
/// methods launch once a layer or more, so depth multiplies a run's time. 40 keeps every
/// phase that depth selects in the suites: XY's deletion of dead rows after layer 22 and
/// its neuron-major layers, GLARE's layers from 22, SNICIT's threshold at layer 30 with
/// ten layers after it, blockdepend's four launches (cuts after 4, 8 and 16 layers, as at
/// any depth), and several whole cycles of the generator's permutations (6 layers a cycle
/// at N = 1024).
/// The official 1024-120 network is real and keeps its 120 layers (its truth is layer
/// 120's).
pub const SANITIZE_MAX_LAYERS: usize = 40;

// The phases depth selects stay: XY's deletion and GLARE after layer 22, SNICIT's threshold
// at 30 with layers after it, blockdepend's cut after 32 layers.
const _: () = assert!(SANITIZE_MAX_LAYERS > 32);

/// Rows of the official N = 1024 subset kept at sanitize scale: the window of this many
/// consecutive images that holds the most rows of the truth (see [`densest_window`]): images
/// 1073–1200, 7 of the 19 rows that reach layer 120. (32 images, tried on 2026-11-26 call 13,
/// did not shorten these runs under racecheck measurably: their time is the 120 layers'
/// launches, not the rows.)
pub const SANITIZE_OFFICIAL_ROWS: usize = 128;

/// The scale the GPU tests run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// The suites as written.
    Full,
    /// Small enough for compute-sanitizer, every kernel path kept.
    Sanitize,
}

impl Scale {
    /// The scale a value of `SPDNN_TEST_SCALE` names (`None` or empty: full).
    pub fn parse(value: Option<&str>) -> Result<Scale, String> {
        match value.map(str::trim) {
            None | Some("") | Some("full") => Ok(Scale::Full),
            Some("sanitize") => Ok(Scale::Sanitize),
            Some(other) => Err(format!(
                "{SCALE_VAR}={other:?}: expected `full` (the default) or `sanitize`"
            )),
        }
    }

    /// `full` at full scale, `sanitize` at sanitize scale.
    pub fn pick<T>(self, full: T, sanitize: T) -> T {
        match self {
            Scale::Full => full,
            Scale::Sanitize => sanitize,
        }
    }

    /// Proptest cases for a suite that asks for `requested`, with `PROPTEST_CASES` at
    /// `env_cases` (proptest's default when unset): `requested` at full scale; at sanitize
    /// scale at most [`SANITIZE_CASES`] and at most `env_cases`, never 0.
    pub fn cases(self, requested: u32, env_cases: u32) -> u32 {
        match self {
            Scale::Full => requested,
            Scale::Sanitize => requested.min(env_cases).clamp(1, SANITIZE_CASES),
        }
    }

    /// Rows of a challenge problem of `neurons` neurons asked with `rows` rows.
    pub fn challenge_rows(self, neurons: usize, rows: usize) -> usize {
        match self {
            Scale::Full => rows,
            Scale::Sanitize => {
                rows.min((SANITIZE_ROW_FLOATS / neurons.max(1)).max(SANITIZE_MIN_ROWS))
            }
        }
    }

    /// Layers of a generated challenge network asked with `layers` layers.
    pub fn challenge_layers(self, layers: usize) -> usize {
        match self {
            Scale::Full => layers,
            Scale::Sanitize => layers.min(SANITIZE_MAX_LAYERS),
        }
    }
}

/// The scale of this process, read once from `SPDNN_TEST_SCALE`; panics naming the
/// variable when its value is neither `full` nor `sanitize` (a test must not run at a
/// scale it did not ask for).
pub fn scale() -> Scale {
    static SCALE: OnceLock<Scale> = OnceLock::new();
    *SCALE.get_or_init(|| {
        let value = std::env::var(SCALE_VAR).ok();
        Scale::parse(value.as_deref()).unwrap_or_else(|e| panic!("{e}"))
    })
}

/// Whether this process runs at sanitize scale.
pub fn sanitizing() -> bool {
    scale() == Scale::Sanitize
}

/// A size of a test's own problem: `full` at full scale, `sanitize` at sanitize scale.
pub fn sized<T>(full: T, sanitize: T) -> T {
    scale().pick(full, sanitize)
}

/// Rows of the challenge problem `neurons` wide asked with `rows` rows at this scale.
pub fn challenge_rows(neurons: usize, rows: usize) -> usize {
    scale().challenge_rows(neurons, rows)
}

/// Layers of the generated challenge network asked with `layers` layers at this scale.
pub fn challenge_layers(layers: usize) -> usize {
    scale().challenge_layers(layers)
}

/// The proptest configuration of a suite: `cases` cases (`None`: proptest's default,
/// `PROPTEST_CASES` when set) at full scale; at sanitize scale at most [`SANITIZE_CASES`]
/// and no shrinking (a failing case is reported as found: shrinking it under a sanitizer
/// would outlast the run).
pub fn proptest_config(cases: Option<u32>) -> Config {
    let default = Config::default();
    let s = scale();
    Config {
        cases: s.cases(cases.unwrap_or(default.cases), default.cases),
        max_shrink_iters: s.pick(default.max_shrink_iters, 0),
        ..default
    }
}

/// The environment variable that, set to `1` at sanitize scale, makes [`run_spec`] one pass,
/// the profiled one, with no warm-up (`run.sh sanitize` sets it for racecheck: its hazards
/// are those of one launch's shared memory, which a second pass of the same kernels on the
/// same input repeats, at racecheck's cost; the other tools keep the warm-up and the timed
/// pass, which reuse the state of the pass before).
pub const ONE_RUN_VAR: &str = "SPDNN_TEST_ONE_RUN";

/// Whether [`ONE_RUN_VAR`] asks for one run (read once; only at sanitize scale).
fn one_run() -> bool {
    static ONE: OnceLock<bool> = OnceLock::new();
    *ONE.get_or_init(|| sanitizing() && std::env::var(ONE_RUN_VAR).is_ok_and(|v| v.trim() == "1"))
}

/// The run spec of the GPU tests: `warmup` untimed runs, then `repetitions` timed ones, the
/// output kept, every row in one batch. At sanitize scale one timed run: with the warm-up
/// still two runs, so a run that reuses the state of the one before is still checked (only
/// the profiled pass when [`ONE_RUN_VAR`] says so).
pub fn run_spec(warmup: usize, repetitions: usize) -> RunSpec {
    let profiled_only = one_run();
    let (warmup, repetitions) = if profiled_only {
        (0, 1)
    } else {
        (warmup, sized(repetitions, repetitions.min(1)))
    };
    RunSpec {
        warmup,
        repetitions,
        keep_output: true,
        batch: None,
        profiled_only,
    }
}

/// The first row (0-based) of the `width` consecutive rows of `0..total` that hold the
/// most rows of `truth` (1-based row ids, as the challenge's truth files number them); the
/// earliest such window. 0 when `width ≥ total`.
pub fn densest_window(truth: &[u32], total: usize, width: usize) -> usize {
    let mut best = (0, 0);
    for start in 0..=total.saturating_sub(width) {
        let held = truth
            .iter()
            .filter(|&&r| (start + 1..=start + width).contains(&(r as usize)))
            .count();
        if held > best.1 {
            best = (start, held);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_is_full_unless_sanitize_is_named() {
        assert_eq!(Scale::parse(None), Ok(Scale::Full));
        assert_eq!(Scale::parse(Some("")), Ok(Scale::Full));
        assert_eq!(Scale::parse(Some("full")), Ok(Scale::Full));
        assert_eq!(Scale::parse(Some("sanitize")), Ok(Scale::Sanitize));
        let error = Scale::parse(Some("small")).unwrap_err();
        assert!(
            error.contains(SCALE_VAR) && error.contains("small"),
            "{error}"
        );
        assert_eq!(Scale::Full.pick(3000, 64), 3000);
        assert_eq!(Scale::Sanitize.pick(3000, 64), 64);
    }

    #[test]
    fn sanitize_caps_cases_and_never_runs_none() {
        assert_eq!(Scale::Full.cases(24, 256), 24);
        assert_eq!(Scale::Full.cases(256, 1), 256);
        assert_eq!(Scale::Sanitize.cases(24, 256), SANITIZE_CASES);
        assert_eq!(Scale::Sanitize.cases(256, 1), 1);
        assert_eq!(Scale::Sanitize.cases(1, 256), 1);
        assert_eq!(Scale::Sanitize.cases(0, 0), 1);
    }

    #[test]
    fn sanitize_keeps_few_challenge_rows_but_never_adds_any() {
        let s = Scale::Sanitize;
        assert_eq!(s.challenge_rows(1024, 3000), 64);
        assert_eq!(s.challenge_rows(4096, 500), 16);
        assert_eq!(s.challenge_rows(16384, 64), SANITIZE_MIN_ROWS);
        assert_eq!(s.challenge_rows(65536, 24), SANITIZE_MIN_ROWS);
        assert_eq!(s.challenge_rows(65536, 8), 8);
        assert_eq!(s.challenge_rows(1024, 40), 40);
        assert_eq!(Scale::Full.challenge_rows(65536, 24), 24);
    }

    #[test]
    fn sanitize_caps_the_depth_of_deep_networks_only() {
        let s = Scale::Sanitize;
        assert_eq!(s.challenge_layers(120), SANITIZE_MAX_LAYERS);
        assert_eq!(s.challenge_layers(1920), SANITIZE_MAX_LAYERS);
        assert_eq!(s.challenge_layers(24), 24);
        assert_eq!(s.challenge_layers(SANITIZE_MAX_LAYERS), SANITIZE_MAX_LAYERS);
        assert_eq!(Scale::Full.challenge_layers(120), 120);
    }

    #[test]
    fn the_densest_window_holds_the_most_truth_rows() {
        // The official subset's truth (rows ≤ 1200 of neuron1024-l120-categories.tsv).
        let truth = [
            287, 295, 386, 427, 428, 529, 571, 666, 757, 943, 945, 1031, 1097, 1098, 1177, 1184,
            1190, 1194, 1200,
        ];
        let start = densest_window(&truth, 1200, 128);
        assert_eq!(start, 1072);
        let held = truth
            .iter()
            .filter(|&&r| r as usize > start && r as usize <= start + 128)
            .count();
        assert_eq!(held, 7);
        assert_eq!(densest_window(&truth, 1200, 5000), 0);
        assert_eq!(densest_window(&[], 1200, 128), 0);
        assert_eq!(densest_window(&[10], 100, 4), 6);
    }
}
