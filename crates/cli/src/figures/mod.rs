//! SVG figures of run reports, drawn with plotters' SVG backend.
//!
//! - `throughput`: TeraEdges/s of every method on every benchmark (log scale);
//! - `layers-<case>`: the per-layer latency of each method across the layers
//!   (`details.layer_ms`, SNICIT's Fig. 6 in full);
//! - `stages-<method>`: the stage breakdown of a multi-stage method on every benchmark
//!   (`details.stages_ms`, SNICIT's Fig. 7);
//! - `glare-<case>`: the share of global-memory accesses GLARE avoids in each layer
//!   (`details.accesses`, GLARE's Fig. 3), where a census ran;
//! - `sweep`: a method's infer time against one parameter (SNICIT's Fig. 8).
//!
//! Text is written as SVG `<text>` (plotters built without its font features), so nothing
//! here needs fontconfig or a font file; the viewer draws the text with its own fonts.

mod glare;
mod layers;
mod stages;
mod sweep;
mod throughput;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::style::RGBColor;
use spdnn_engine::RunReport;

use crate::results::Sweep;

pub use sweep::sweep;

/// One figure: its name (the file is `<stem>-<name>.svg`) and its SVG text.
#[derive(Debug, Clone)]
pub struct Figure {
    /// `throughput`, `layers-1024-120`, `stages-snicit`, …
    pub name: String,
    /// The SVG document.
    pub svg: String,
}

/// Every figure the reports have data for: throughput, per-layer latency per benchmark,
/// stage breakdown per multi-stage method, GLARE's access reduction per benchmark.
pub fn figures(reports: &[RunReport]) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    out.extend(throughput::figure(reports)?);
    out.extend(layers::figures(reports)?);
    out.extend(stages::figures(reports)?);
    out.extend(glare::figures(reports)?);
    Ok(out)
}

/// The figures of a results document: the sweep's for a sweep, else [`figures`].
pub fn of_document(reports: &[RunReport], sweep: Option<&Sweep>) -> Result<Vec<Figure>> {
    match sweep {
        Some(sweep) => Ok(self::sweep(reports, sweep)?.into_iter().collect()),
        None => figures(reports),
    }
}

/// Writes `figures` as `dir/<stem>-<name>.svg`; returns the paths.
pub fn write(dir: &Path, stem: &str, figures: &[Figure]) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    figures
        .iter()
        .map(|figure| {
            let path = dir.join(format!("{stem}-{}.svg", figure.name));
            std::fs::write(&path, &figure.svg)
                .with_context(|| format!("writing {}", path.display()))?;
            Ok(path)
        })
        .collect()
}

/// Writes the figures of `reports` beside a results file `json` (same folder and stem).
pub fn write_beside(json: &Path, reports: &[RunReport]) -> Result<Vec<PathBuf>> {
    let dir = json.parent().unwrap_or(Path::new("."));
    let stem = json
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "results".into());
    write(dir, &stem, &figures(reports)?)
}

/// One benchmark as the figures group reports: N, L, the network and the input.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Case {
    neurons: usize,
    layers: usize,
    /// 0 generated, 1 official, 2 anything else: the order within one N-L.
    kind: u8,
    weights: String,
    input: String,
}

impl Case {
    /// The case of a report.
    pub fn of(report: &RunReport) -> Self {
        let kind = if report.weights.starts_with("generated") {
            0
        } else if report.weights == "official" {
            1
        } else {
            2
        };
        Self {
            neurons: report.neurons,
            layers: report.layers,
            kind,
            weights: report.weights.clone(),
            input: report.input.clone(),
        }
    }

    /// `1024-120`, `1024-120 official`, `1024-120 random(…)`, with ` synthetic` when the
    /// input was.
    pub fn label(&self) -> String {
        let mut label = format!("{}-{}", self.neurons, self.layers);
        match self.kind {
            0 => {}
            1 => label.push_str(" official"),
            _ => label.push_str(&format!(" {}", self.weights)),
        }
        if self.input.contains("synthetic") {
            label.push_str(" synthetic");
        }
        label
    }

    /// The label as a file-name part: `1024-120-official`.
    pub fn slug(&self) -> String {
        slug(&self.label())
    }
}

/// Lower-case letters, digits and single dashes.
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// The distinct cases of `reports`, ordered by N, L, then generated before official.
fn cases(reports: &[RunReport]) -> Vec<Case> {
    let mut cases: Vec<Case> = reports.iter().map(Case::of).collect();
    cases.sort();
    cases.dedup();
    cases
}

/// The distinct method names of `reports`, in order of first appearance.
fn methods(reports: &[RunReport]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for report in reports {
        if !names.contains(&report.method.as_str()) {
            names.push(&report.method);
        }
    }
    names
}

/// A method's colour: one hue per method family, darker for `+glare`, lighter for
/// `+compress`, a little darker for any other variant (`sz+t4`), so variants sit next to
/// their method and still differ from it.
pub fn method_color(name: &str) -> RGBColor {
    let base = name.split('+').next().unwrap_or(name);
    let (r, g, b) = match base {
        "cpu" => (0x66, 0x66, 0x66),
        "bf" => (0x1f, 0x77, 0xb4),
        "snig" => (0xff, 0x7f, 0x0e),
        "xy" => (0x2c, 0xa0, 0x2c),
        "snicit" => (0xd6, 0x27, 0x28),
        "cusparse" => (0x94, 0x67, 0xbd),
        "dense" => (0x39, 0x3b, 0x79),
        "hp" => (0x8c, 0x56, 0x4b),
        "blockdepend" => (0xe3, 0x77, 0xc2),
        "sz" => (0x17, 0xbe, 0xcf),
        "adaptive" => (0xbc, 0xbd, 0x22),
        other => PALETTE[other.bytes().map(usize::from).sum::<usize>() % PALETTE.len()],
    };
    let mut color = (r as f64, g as f64, b as f64);
    if name.contains("+glare") {
        color = mix(color, (0.0, 0.0, 0.0), 0.35);
    }
    if name.contains("+compress") {
        color = mix(color, (255.0, 255.0, 255.0), 0.45);
    }
    for _ in name
        .split('+')
        .skip(1)
        .filter(|v| *v != "glare" && *v != "compress")
    {
        color = mix(color, (0.0, 0.0, 0.0), 0.2);
    }
    RGBColor(color.0 as u8, color.1 as u8, color.2 as u8)
}

/// `a` moved a share `t` of the way to `b`.
fn mix(a: (f64, f64, f64), b: (f64, f64, f64), t: f64) -> (f64, f64, f64) {
    (
        a.0 + (b.0 - a.0) * t,
        a.1 + (b.1 - a.1) * t,
        a.2 + (b.2 - a.2) * t,
    )
}

/// Colours for series without a method (stages, cases).
const PALETTE: [(u8, u8, u8); 10] = [
    (0x1f, 0x77, 0xb4),
    (0xff, 0x7f, 0x0e),
    (0x2c, 0xa0, 0x2c),
    (0xd6, 0x27, 0x28),
    (0x94, 0x67, 0xbd),
    (0x8c, 0x56, 0x4b),
    (0xe3, 0x77, 0xc2),
    (0x7f, 0x7f, 0x7f),
    (0xbc, 0xbd, 0x22),
    (0x17, 0xbe, 0xcf),
];

/// The `i`-th colour of [`PALETTE`], cycling.
fn palette(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// A log axis covering `values` (positive, finite ones): whole decades around them.
fn log_range(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values.into_iter().filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi <= 0.0 {
        return None;
    }
    let lo = 10f64.powf(lo.log10().floor());
    let mut hi = 10f64.powf(hi.log10().ceil());
    if hi <= lo {
        hi = lo * 10.0;
    }
    Some((lo, hi))
}

/// A linear axis over `range` whose ticks are exactly `ticks` (categories at 0, 1, …, or
/// the values a sweep ran), labelled by the chart's formatter.
#[derive(Debug, Clone)]
pub struct Ticked {
    range: std::ops::Range<f64>,
    ticks: Vec<f64>,
}

impl Ticked {
    /// `range` with ticks at `ticks`.
    pub fn new(range: std::ops::Range<f64>, ticks: Vec<f64>) -> Self {
        Self { range, ticks }
    }

    /// `n` categories at 0, 1, …, n − 1, each given a unit of width.
    pub fn categories(n: usize) -> Self {
        Self::new(-0.5..n as f64 - 0.5, (0..n).map(|i| i as f64).collect())
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let t = if span > 0.0 {
            (value - self.range.start) / span
        } else {
            0.0
        };
        limit.0 + ((limit.1 - limit.0) as f64 * t).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

/// Font family of every text.
const FONT: &str = "sans-serif";

/// A number for axis labels: no trailing zeros, no exponent for ordinary sizes.
fn number(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let magnitude = v.abs();
    if !(1e-3..1e6).contains(&magnitude) {
        return format!("{v:e}");
    }
    let text = format!("{v:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::results::tests::report_json;

    /// Whether `svg` draws `text` as one text element.
    pub fn has_text(svg: &str, text: &str) -> bool {
        svg.contains(&format!(">\n{text}\n</text>"))
    }

    pub fn report(method: &str, neurons: usize, layers: usize, ms: f64) -> RunReport {
        serde_json::from_value(report_json(method, neurons, layers, ms)).unwrap()
    }

    #[test]
    fn cases_order_and_label() {
        let mut official = report("bf", 1024, 120, 1.0);
        official.weights = "official".into();
        let mut synthetic = report("bf", 4096, 120, 1.0);
        synthetic.input = "synthetic(seed 1)".into();
        let reports = vec![
            synthetic,
            official,
            report("bf", 1024, 120, 1.0),
            report("xy", 1024, 120, 1.0),
        ];
        let labels: Vec<String> = cases(&reports).iter().map(Case::label).collect();
        assert_eq!(
            labels,
            ["1024-120", "1024-120 official", "4096-120 synthetic"]
        );
        assert_eq!(Case::of(&reports[0]).slug(), "4096-120-synthetic");
        assert_eq!(methods(&reports), ["bf", "xy"]);
    }

    #[test]
    fn variants_share_their_method_hue() {
        let plain = method_color("xy");
        let glare = method_color("xy+glare");
        let compress = method_color("xy+compress");
        assert!(glare.1 < plain.1 && compress.1 > plain.1);
        assert_ne!(method_color("bf"), method_color("snig"));
        let t4 = method_color("sz+t4");
        assert!(
            t4.1 < method_color("sz").1,
            "a variant without its own shade"
        );
        // Unknown names still get a colour.
        let _ = method_color("new-method");
    }

    #[test]
    fn log_ranges_cover_whole_decades() {
        assert_eq!(log_range([0.36, 563.0]), Some((0.1, 1000.0)));
        assert_eq!(log_range([10.0]), Some((10.0, 100.0)));
        assert_eq!(log_range([0.0, -1.0, f64::NAN]), None);
        assert_eq!(number(0.1), "0.1");
        assert_eq!(number(1000.0), "1000");
        assert_eq!(number(2.5e-5), "2.5e-5");
    }

    #[test]
    fn figures_are_written_beside_the_results() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("2026-11-23-vm.json");
        let mut snicit = report("snicit", 1024, 120, 5.8);
        snicit.details.layer_ms = vec![0.5, 0.25, 0.02];
        let paths = write_beside(&json, &[report("bf", 1024, 120, 86.0), snicit]).unwrap();
        let names: Vec<String> = paths
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "2026-11-23-vm-throughput.svg",
                "2026-11-23-vm-layers-1024-120.svg"
            ]
        );
        for path in &paths {
            let text = std::fs::read_to_string(path).unwrap();
            assert!(text.starts_with("<svg"), "{}", &text[..40.min(text.len())]);
            assert!(text.trim_end().ends_with("</svg>"));
        }
    }

    #[test]
    fn nothing_to_draw_gives_no_figures() {
        assert!(figures(&[]).unwrap().is_empty());
        let mut cpu = report("cpu", 1024, 120, 1.0);
        cpu.teraedges_per_s = 0.0;
        assert!(figures(&[cpu]).unwrap().is_empty());
    }
}
