//! Per-layer latency of each method across the layers of one benchmark (log scale).

use anyhow::Result;
use plotters::prelude::*;
use spdnn_engine::RunReport;

use super::{Case, FONT, Figure, cases, log_range, method_color, methods, number};

/// One figure per benchmark on which some method measured its layers.
pub fn figures(reports: &[RunReport]) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    for case in cases(reports) {
        let of_case: Vec<RunReport> = reports
            .iter()
            .filter(|r| Case::of(r) == case && !r.details.layer_ms.is_empty())
            .cloned()
            .collect();
        if let Some(figure) = figure(&case, &of_case)? {
            out.push(figure);
        }
    }
    Ok(out)
}

fn figure(case: &Case, reports: &[RunReport]) -> Result<Option<Figure>> {
    let Some((lo, hi)) = log_range(reports.iter().flat_map(|r| r.details.layer_ms.clone())) else {
        return Ok(None);
    };
    let layers = reports
        .iter()
        .map(|r| r.details.layer_ms.len())
        .max()
        .unwrap_or(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 540)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("Per-layer latency, {} (one profiled run)", case.label()),
                (FONT, 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.5f64..layers as f64 + 0.5, (lo..hi).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("layer")
            .y_desc("ms per layer (log)")
            .x_label_formatter(&|x| number(x.round()))
            .y_label_formatter(&|y| number(*y))
            .label_style((FONT, 13))
            .draw()?;
        for name in methods(reports) {
            // The last report of a method on this case wins.
            let Some(report) = reports.iter().rev().find(|r| r.method == name) else {
                continue;
            };
            let color = method_color(name);
            let points: Vec<(f64, f64)> = report
                .details
                .layer_ms
                .iter()
                .enumerate()
                .filter(|(_, ms)| ms.is_finite() && **ms > 0.0)
                .map(|(i, ms)| ((i + 1) as f64, *ms))
                .collect();
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))?
                .label(format!("{name} ({} ms in all)", number(report.infer_ms)))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], color.stroke_width(3))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font((FONT, 13))
            .draw()?;
        root.present()?;
    }
    Ok(Some(Figure {
        name: format!("layers-{}", case.slug()),
        svg,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::tests::{has_text, report};

    #[test]
    fn one_figure_per_benchmark_with_layer_times() {
        let mut xy = report("xy", 1024, 3, 1.0);
        xy.details.layer_ms = vec![0.5, 0.02, 0.019];
        let mut snicit = report("snicit", 1024, 3, 1.1);
        snicit.details.layer_ms = vec![0.5, 0.0, 0.023];
        let mut official = snicit.clone();
        official.weights = "official".into();
        let untimed = report("blockdepend", 4096, 3, 0.7);
        let figures = figures(&[xy, snicit, official, untimed]).unwrap();
        let names: Vec<&str> = figures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["layers-1024-3", "layers-1024-3-official"]);
        let svg = &figures[0].svg;
        assert!(has_text(svg, "xy (1 ms in all)"), "legend with the total");
        assert!(has_text(svg, "snicit (1.1 ms in all)"));
        assert!(has_text(
            svg,
            "Per-layer latency, 1024-3 (one profiled run)"
        ));
    }
}
