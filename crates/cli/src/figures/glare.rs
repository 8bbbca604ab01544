//! GLARE's access reduction per layer: the share of global-memory accesses each `+glare`
//! run avoided in every layer (GLARE's Fig. 3), from its census (`details.accesses`).

use anyhow::Result;
use plotters::prelude::*;
use spdnn_engine::RunReport;

use super::{Case, FONT, Figure, cases, method_color, methods, number};

/// One figure per benchmark on which some run took a census.
pub fn figures(reports: &[RunReport]) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    for case in cases(reports) {
        let of_case: Vec<RunReport> = reports
            .iter()
            .filter(|r| Case::of(r) == case && !r.details.accesses.is_empty())
            .cloned()
            .collect();
        if !of_case.is_empty() {
            out.push(figure(&case, &of_case)?);
        }
    }
    Ok(out)
}

fn figure(case: &Case, reports: &[RunReport]) -> Result<Figure> {
    let percent = |r: f64| if r.is_finite() { 100.0 * r } else { 0.0 };
    let layers = reports
        .iter()
        .flat_map(|r| r.details.accesses.iter().map(|a| a.layer))
        .max()
        .unwrap_or(1)
        .max(1);
    let lowest = reports
        .iter()
        .flat_map(|r| r.details.accesses.iter().map(|a| percent(a.reduction)))
        .fold(0.0f64, f64::min);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 540)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("GLARE: global-memory accesses avoided, {}", case.label()),
                (FONT, 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.5f64..layers as f64 + 0.5, (lowest.floor() - 1.0)..100f64)?;
        chart
            .configure_mesh()
            .x_desc("layer")
            .y_desc("% of the layer's accesses avoided")
            .x_label_formatter(&|x| number(x.round()))
            .y_label_formatter(&|y| number(*y))
            .label_style((FONT, 13))
            .draw()?;
        for name in methods(reports) {
            let Some(report) = reports.iter().rev().find(|r| r.method == name) else {
                continue;
            };
            let color = method_color(name);
            let points: Vec<(f64, f64)> = report
                .details
                .accesses
                .iter()
                .map(|a| (a.layer as f64, percent(a.reduction)))
                .collect();
            let overall = report
                .details
                .glare
                .as_ref()
                .and_then(|g| g.reduction)
                .map(|r| format!(", {:.1}% overall", 100.0 * r))
                .unwrap_or_default();
            let segment = report
                .details
                .glare
                .as_ref()
                .map(|g| format!(" (m = {}{overall})", g.segment))
                .unwrap_or_default();
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))?
                .label(format!("{name}{segment}"))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], color.stroke_width(3))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font((FONT, 13))
            .draw()?;
        root.present()?;
    }
    Ok(Figure {
        name: format!("glare-{}", case.slug()),
        svg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::tests::{has_text, report};

    #[test]
    fn reductions_of_the_runs_with_a_census() {
        let mut xy = report("xy+glare", 1024, 3, 6.0);
        let accesses: Vec<serde_json::Value> = [1, 2, 3]
            .map(|layer| {
                serde_json::json!({
                    "layer": layer, "activation_reads": 0, "activation_reads_skipped": 0,
                    "activation_writes": 0, "activation_writes_skipped": 0, "weight_reads": 0,
                    "recorder_reads": 0, "recorder_writes": 0, "write_backs": 0,
                    "without_recorder": 10, "with_recorder": 5, "avoided": 5,
                    "reduction": if layer == 1 { -0.001 } else { 0.68 }
                })
            })
            .to_vec();
        xy.details = serde_json::from_value(serde_json::json!({
            "glare": {"segment": 1024, "chosen_by": "model", "model_rows": 512, "model": [],
                      "census": true, "profile_ms": 0.0, "reduction": 0.676},
            "accesses": accesses
        }))
        .unwrap();
        let plain = report("xy", 1024, 3, 5.0);
        let figures = figures(&[plain, xy]).unwrap();
        assert_eq!(figures.len(), 1);
        assert_eq!(figures[0].name, "glare-1024-3");
        assert!(has_text(
            &figures[0].svg,
            "xy+glare (m = 1024, 67.6% overall)"
        ));
    }
}
