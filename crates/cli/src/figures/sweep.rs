//! A parameter sweep: the method's infer time against the swept value, one line per
//! benchmark (SNICIT's Fig. 8: runtime against the threshold layer t).

use anyhow::Result;
use plotters::prelude::*;
use spdnn_engine::RunReport;

use super::{Case, FONT, Figure, Ticked, cases, number, palette};
use crate::results::Sweep;

/// The sweep's figure; `None` when no point has a time.
pub fn sweep(reports: &[RunReport], sweep: &Sweep) -> Result<Option<Figure>> {
    // Numeric values are placed by value, anything else in the order run.
    let numeric: Option<Vec<f64>> = sweep
        .values
        .iter()
        .map(|v| v.trim().parse::<f64>().ok().filter(|x| x.is_finite()))
        .collect();
    let x_of = |value: &str| -> Option<f64> {
        let index = sweep.values.iter().position(|v| v == value)?;
        Some(match &numeric {
            Some(xs) => xs[index],
            None => index as f64,
        })
    };
    let points: Vec<(Case, f64, f64)> = reports
        .iter()
        .zip(&sweep.points)
        .filter(|(r, _)| r.infer_ms.is_finite() && r.infer_ms > 0.0)
        .filter_map(|(r, value)| Some((Case::of(r), x_of(value)?, r.infer_ms)))
        .collect();
    if points.is_empty() {
        return Ok(None);
    }
    let (mut x_lo, mut x_hi) = points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.1), hi.max(p.1))
        });
    let pad = ((x_hi - x_lo) * 0.05).max(0.5);
    (x_lo, x_hi) = (x_lo - pad, x_hi + pad);
    let y_hi = points.iter().map(|p| p.2).fold(0.0, f64::max) * 1.1;
    let values = sweep.values.clone();
    let categorical = numeric.is_none();

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 540)).into_drawing_area();
        root.fill(&WHITE)?;
        let x_range = match &numeric {
            Some(xs) => Ticked::new(x_lo..x_hi, xs.clone()),
            None => Ticked::new(x_lo..x_hi, (0..values.len()).map(|i| i as f64).collect()),
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{}: infer time against --{}", sweep.method, sweep.param),
                (FONT, 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range, 0f64..y_hi)?;
        chart
            .configure_mesh()
            .x_desc(format!("--{}", sweep.param))
            .y_desc("infer ms")
            .x_label_formatter(&|x| {
                if categorical {
                    values
                        .get(x.round().max(0.0) as usize)
                        .cloned()
                        .unwrap_or_default()
                } else {
                    number(*x)
                }
            })
            .y_label_formatter(&|y| number(*y))
            .label_style((FONT, 13))
            .draw()?;
        for (k, case) in cases(reports).iter().enumerate() {
            let color = palette(k);
            let mut line: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.0 == *case)
                .map(|p| (p.1, p.2))
                .collect();
            if line.is_empty() {
                continue;
            }
            line.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?
                .label(case.label())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], color.stroke_width(3))
                });
            chart.draw_series(line.into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
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
        name: format!(
            "sweep-{}-{}",
            super::slug(&sweep.method),
            super::slug(&sweep.param)
        ),
        svg,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::tests::{has_text, report};

    fn sweep_of(values: &[&str], points: &[&str]) -> Sweep {
        Sweep {
            method: "snicit".into(),
            param: "threshold".into(),
            values: values.iter().map(|s| s.to_string()).collect(),
            points: points.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn one_line_per_benchmark_over_the_values() {
        let reports = vec![
            report("snicit", 1024, 120, 7.0),
            report("snicit", 1024, 120, 5.9),
            report("snicit", 4096, 120, 20.0),
            report("snicit", 4096, 120, 16.6),
        ];
        let sweep = sweep_of(&["10", "30"], &["10", "30", "10", "30"]);
        let figure = super::sweep(&reports, &sweep).unwrap().unwrap();
        assert_eq!(figure.name, "sweep-snicit-threshold");
        for text in ["1024-120", "4096-120", "--threshold", "10", "30"] {
            assert!(has_text(&figure.svg, text), "{text} missing");
        }
        assert_eq!(figure.svg.matches("<circle").count(), 4);
    }

    #[test]
    fn words_are_placed_in_the_order_run() {
        let reports = vec![
            report("snicit", 1024, 120, 7.0),
            report("snicit", 1024, 120, 6.0),
        ];
        let mut sweep = sweep_of(&["xy", "bf"], &["xy", "bf"]);
        sweep.param = "pre-convergence".into();
        let figure = super::sweep(&reports, &sweep).unwrap().unwrap();
        assert!(has_text(&figure.svg, "xy") && has_text(&figure.svg, "bf"));
        assert!(super::sweep(&[], &sweep_of(&["1"], &[])).unwrap().is_none());
    }
}
