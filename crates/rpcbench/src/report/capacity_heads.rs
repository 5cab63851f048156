//! The heads of a capacity search (`capacity --heads`) on its HTML page and in its Markdown:
//! the target's head lag at each step, drawn against the offered rate (does the node fall
//! behind as the load rises?), and the columns of the steps tables.

use std::fmt::Write;

use plotters::prelude::*;

use super::capacity_axes::{build, by_rate, linear_axis, mark_rates, mesh, rate_axis, x_desc, x_name};
use super::html::{color, esc, legend_items, svg};
use crate::capacity::CapacityReport;

/// Whether any step has head lags.
pub(super) fn followed(report: &CapacityReport) -> bool {
    report.steps.iter().any(|step| step.heads.is_some())
}

/// The head lag against the offered rate: each step's median and largest lag (blocks or
/// slots), with the capacity and the knee marked.
fn lag_chart(report: &CapacityReport) -> String {
    let steps: Vec<_> = by_rate(report)
        .into_iter()
        .filter_map(|step| step.heads.as_ref().filter(|h| h.samples > 0).map(|heads| (step.level(), heads)))
        .collect();
    let highest = steps.iter().map(|(_, heads)| heads.lag_max as f64).fold(1.0, f64::max);
    let axis = linear_axis(highest * 1.15);
    let top = axis.range().end;
    let rate = rate_axis(report);
    svg(|root| {
        let mut chart = build(root, &rate, axis)?;
        mesh(&mut chart, &rate, x_desc(report), "head lag, blocks (slots)", &|y| format!("{y:.0}"))?;
        for (index, figure) in [(0usize, 0usize), (2, 1)] {
            let points: Vec<(f64, f64)> = steps
                .iter()
                .map(|(level, heads)| {
                    (rate.x(*level), if figure == 0 { heads.lag_p50 as f64 } else { heads.lag_max as f64 })
                })
                .collect();
            chart.draw_series(LineSeries::new(points.iter().copied(), color(index).stroke_width(2)))?;
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color(index).filled())))?;
        }
        mark_rates(&mut chart, report, &rate, 0.0, top)
    })
}

/// The section of the page with the lag chart (none when the heads were not followed); what
/// the lags are measured against is said under the answer.
pub(super) fn heads_section(report: &CapacityReport) -> Option<String> {
    if !followed(report) {
        return None;
    }
    let mut out = String::new();
    let _ = write!(
        out,
        "<section><h2>Head lag against {}</h2>{}{}",
        x_name(report),
        legend_items(
            &[("lag p50", 0), ("lag max", 2)],
            "blocks (slots) behind the highest head seen, per step (its warm-up included) · green: capacity · orange dashed: knee"
        ),
        lag_chart(report)
    );
    out.push_str("</section>");
    Some(out)
}

/// The header cells of the steps table's head columns (HTML).
pub(super) const HTML_HEADER: &str = "<th>lag p50/max</th><th>stale</th>";

/// A step's head cells (HTML).
pub(super) fn html_cells(step: &crate::capacity::StepResult) -> String {
    let (lag, stale) = step.heads_cells();
    format!("<td>{}</td><td>{}</td>", esc(&lag), esc(&stale))
}
