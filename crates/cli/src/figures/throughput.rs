//! TeraEdges/s of every method on every benchmark: bars grouped by benchmark, log scale.

use anyhow::Result;
use plotters::prelude::*;
use spdnn_engine::RunReport;

use super::{Case, FONT, Figure, Ticked, cases, log_range, method_color, methods, number};

/// The throughput figure; `None` when no report has a positive rate.
pub fn figure(reports: &[RunReport]) -> Result<Option<Figure>> {
    let reports: Vec<&RunReport> = reports
        .iter()
        .filter(|r| r.teraedges_per_s.is_finite() && r.teraedges_per_s > 0.0)
        .collect();
    let Some((lo, hi)) = log_range(reports.iter().map(|r| r.teraedges_per_s)) else {
        return Ok(None);
    };
    let owned: Vec<RunReport> = reports.iter().map(|r| (*r).clone()).collect();
    let cases = cases(&owned);
    let names = methods(&owned);
    // Per case, the methods run on it, in the global order; the last report of a
    // (case, method) wins.
    let groups: Vec<Vec<(&str, f64)>> = cases
        .iter()
        .map(|case| {
            names
                .iter()
                .filter_map(|&name| {
                    reports
                        .iter()
                        .rev()
                        .find(|r| r.method == name && Case::of(r) == *case)
                        .map(|r| (name, r.teraedges_per_s))
                })
                .collect()
        })
        .collect();
    let widest = groups.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let width = (120 + cases.len() * (14 * widest).max(96)).clamp(640, 2400) as u32;
    let labels: Vec<String> = cases.iter().map(Case::label).collect();

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 560)).into_drawing_area();
        root.fill(&WHITE)?;
        let x_range = Ticked::categories(cases.len());
        let mut chart = ChartBuilder::on(&root)
            .caption("Throughput per method and benchmark", (FONT, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range, (lo..hi).log_scale())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("benchmark (N-L)")
            .y_desc("TeraEdges/s (log)")
            .x_label_formatter(&|x| {
                labels
                    .get(x.round().max(0.0) as usize)
                    .cloned()
                    .unwrap_or_default()
            })
            .y_label_formatter(&|y| number(*y))
            .label_style((FONT, 13))
            .draw()?;
        for &name in &names {
            let color = method_color(name);
            let mut bars = Vec::new();
            for (i, group) in groups.iter().enumerate() {
                let Some(slot) = group.iter().position(|(n, _)| *n == name) else {
                    continue;
                };
                let step = 0.84 / group.len() as f64;
                let left = i as f64 - 0.42 + slot as f64 * step;
                bars.push(Rectangle::new(
                    [(left, lo), (left + step * 0.9, group[slot].1)],
                    color.filled(),
                ));
            }
            chart.draw_series(bars)?.label(name).legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
            });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font((FONT, 13))
            .draw()?;
        root.present()?;
    }
    Ok(Some(Figure {
        name: "throughput".into(),
        svg,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::tests::{has_text, report};

    #[test]
    fn every_method_and_benchmark_is_named() {
        let reports = vec![
            report("bf", 1024, 120, 86.0),
            report("blockdepend", 1024, 120, 0.36),
            report("blockdepend", 65536, 1920, 10.7),
            report("xy+glare", 4096, 480, 29.5),
        ];
        let figure = figure(&reports).unwrap().unwrap();
        for text in [
            "bf",
            "blockdepend",
            "xy+glare",
            "1024-120",
            "4096-480",
            "65536-1920",
        ] {
            assert!(has_text(&figure.svg, text), "{text} missing");
        }
        assert!(has_text(&figure.svg, "TeraEdges/s (log)"));
        // Four bars (and four legend swatches) in the methods' colours.
        let bf = method_color("bf");
        let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", bf.0, bf.1, bf.2);
        assert!(figure.svg.matches(&fill).count() >= 2, "{fill}");
    }
}
