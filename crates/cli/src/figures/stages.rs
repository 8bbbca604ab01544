//! The stage breakdown of a multi-stage method: one bar per benchmark, each stage's share
//! of one profiled run (SNICIT's Fig. 7, all benchmarks in one figure).

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use spdnn_engine::RunReport;

use super::{Case, FONT, Figure, Ticked, cases, methods, number, palette, slug};

/// One figure per method that reported stages.
pub fn figures(reports: &[RunReport]) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    for name in methods(reports) {
        // Per benchmark (in the usual order) the last report of this method with stages.
        let rows: Vec<&RunReport> = cases(reports)
            .into_iter()
            .filter_map(|case| {
                reports
                    .iter()
                    .rev()
                    .find(|r| r.method == name && Case::of(r) == case && stage_sum(r) > 0.0)
            })
            .collect();
        if !rows.is_empty() {
            out.push(figure(name, &rows)?);
        }
    }
    Ok(out)
}

/// The sum of a report's stage times (0 without stages).
fn stage_sum(report: &RunReport) -> f64 {
    report
        .details
        .stages
        .iter()
        .map(|s| s.ms)
        .filter(|ms| ms.is_finite() && *ms > 0.0)
        .sum()
}

fn figure(method: &str, rows: &[&RunReport]) -> Result<Figure> {
    // Every stage name, in order of first appearance.
    let mut stages: Vec<&str> = Vec::new();
    for report in rows {
        for stage in &report.details.stages {
            if !stages.contains(&stage.stage.as_str()) {
                stages.push(&stage.stage);
            }
        }
    }
    let labels: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} ({} ms)",
                Case::of(r).label(),
                number(round3(stage_sum(r)))
            )
        })
        .collect();
    let longest = labels.iter().map(String::len).max().unwrap_or(10);
    let height = (150 + 38 * rows.len() + 22 * stages.len().div_ceil(3)) as u32;
    let n = rows.len();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (chart_area, legend_area) =
            root.split_vertically(height - 22 * stages.len().div_ceil(3) as u32 - 10);
        let mut chart = ChartBuilder::on(&chart_area)
            .caption(
                format!("{method}: stage breakdown (share of one profiled run)"),
                (FONT, 20),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size((longest * 7 + 16) as u32)
            .build_cartesian_2d(0f64..100f64, Ticked::categories(n))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("% of the profiled run")
            .y_label_formatter(&|y| {
                // Benchmarks top to bottom in order.
                let i = y.round().max(0.0) as usize;
                labels
                    .get(n.saturating_sub(1 + i))
                    .cloned()
                    .unwrap_or_default()
            })
            .label_style((FONT, 13))
            .draw()?;
        for (k, &stage) in stages.iter().enumerate() {
            let color = palette(k);
            let mut boxes = Vec::new();
            let mut texts = Vec::new();
            for (i, report) in rows.iter().enumerate() {
                let sum = stage_sum(report);
                let y = (n - 1 - i) as f64;
                let mut left = 0.0;
                for s in &report.details.stages {
                    let share = if s.ms.is_finite() && s.ms > 0.0 {
                        100.0 * s.ms / sum
                    } else {
                        0.0
                    };
                    if s.stage == stage && share > 0.0 {
                        boxes.push(Rectangle::new(
                            [(left, y - 0.35), (left + share, y + 0.35)],
                            color.filled(),
                        ));
                        if share >= 7.0 {
                            texts.push((format!("{share:.1}%"), (left + share / 2.0, y)));
                        }
                    }
                    left += share;
                }
            }
            chart.draw_series(boxes)?;
            let style = TextStyle::from((FONT, 12).into_font())
                .color(&WHITE)
                .pos(Pos::new(HPos::Center, VPos::Center));
            chart.draw_series(
                texts
                    .into_iter()
                    .map(|(text, at)| Text::new(text, at, style.clone())),
            )?;
        }
        // The legend: one swatch per stage, three a line, below the chart.
        for (k, &stage) in stages.iter().enumerate() {
            let (x, y) = (70 + 290 * (k % 3) as i32, 6 + 22 * (k / 3) as i32);
            legend_area.draw(&Rectangle::new(
                [(x, y), (x + 14, y + 14)],
                palette(k).filled(),
            ))?;
            legend_area.draw(&Text::new(
                stage.to_string(),
                (x + 20, y + 1),
                (FONT, 13).into_font(),
            ))?;
        }
        root.present()?;
    }
    Ok(Figure {
        name: format!("stages-{}", slug(method)),
        svg,
    })
}

/// `v` to three decimals.
fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use spdnn_engine::method::Stage;

    use super::*;
    use crate::figures::tests::{has_text, report};

    fn stage(name: &str, ms: f64) -> Stage {
        Stage {
            stage: name.into(),
            ms,
        }
    }

    #[test]
    fn shares_per_benchmark_and_a_legend_per_stage() {
        let mut small = report("snicit", 1024, 120, 5.9);
        small.details.stages = vec![
            stage("pre-convergence", 3.7),
            stage("conversion", 0.3),
            stage("post-convergence", 2.0),
            stage("recovery", 0.0),
        ];
        let mut big = report("snicit", 65536, 120, 220.0);
        big.details.stages = vec![
            stage("pre-convergence", 214.5),
            stage("conversion", 1.0),
            stage("post-convergence", 5.2),
            stage("recovery", 0.01),
        ];
        let plain = report("bf", 1024, 120, 86.0);
        let figures = figures(&[small, plain, big]).unwrap();
        assert_eq!(figures.len(), 1, "bf has no stages");
        let svg = &figures[0].svg;
        assert_eq!(figures[0].name, "stages-snicit");
        for text in [
            "pre-convergence",
            "recovery",
            "1024-120 (6 ms)",
            "65536-120 (220.71 ms)",
            "61.7%",
            "33.3%",
        ] {
            assert!(has_text(svg, text), "{text} missing");
        }
        // Shares below 7 % are drawn without a label.
        assert!(!has_text(svg, "5.0%"));
    }

    #[test]
    fn methods_with_a_plus_get_safe_names() {
        let mut r = report("xy+glare+compress", 1024, 120, 5.0);
        r.details.stages = vec![stage("row-major layers", 1.0)];
        assert_eq!(figures(&[r]).unwrap()[0].name, "stages-xy-glare-compress");
    }
}
