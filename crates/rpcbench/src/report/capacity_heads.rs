//! The heads of a capacity search (`capacity --heads`) on its HTML page and in its Markdown:
//! the target's head lag at each step, drawn against the offered rate (does the node fall
//! behind as the load rises?), and the columns of the steps tables.

use std::fmt::Write;

use plotters::prelude::*;

use super::capacity_axes::{build, by_rate, count_axis, mark_rates, mesh, rate_axis, x_desc, x_name};
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
    let highest = steps.iter().map(|(_, heads)| heads.lag_max).max().unwrap_or(0);
    let axis = count_axis(highest);
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::capacity::{summarize, CapacitySettings, Slo, StepResult, Verdict};
    use crate::heads_lag::HeadLagWindow;

    /// A passing step at `rate` whose head lag was `lag` in every sample.
    fn step(number: usize, rate: f64, lag: u64) -> StepResult {
        StepResult {
            step: number,
            target_rate: rate,
            connections: None,
            achieved_rate: rate * 0.999,
            requests: rate as u64,
            errors: 0,
            error_percent: 0.0,
            unsent: 0,
            p50_us: 100,
            p90_us: 200,
            p99_us: 300,
            p99_uncorrected_us: 300,
            send_lag_mean_us: 0,
            verdict: Verdict::Pass,
            breaches: Vec::new(),
            generator_shortfall: false,
            target_resources: None,
            generator: None,
            connect_causes: Default::default(),
            heads: Some(HeadLagWindow {
                samples: 10,
                failed: 0,
                lag_p50: lag,
                lag_p99: lag,
                lag_max: lag,
                at_tip: if lag == 0 { 1.0 } else { 0.0 },
                stale_share: 0.0,
            }),
        }
    }

    fn search(steps: Vec<StepResult>) -> CapacityReport {
        let target = crate::engine::config::Target::parse("http://127.0.0.1:8899/").unwrap();
        let base = crate::engine::config::RunConfig::new(
            target,
            crate::jsonrpc::RequestTemplate::from_method("getSlot", None).unwrap(),
        );
        let settings = CapacitySettings::new(Slo::parse("p99<50ms").unwrap());
        summarize(&base, &settings, steps, false, Duration::from_secs(10))
    }

    /// The texts of an SVG's `<text>` elements, in order.
    fn svg_texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|rest| {
                let body = rest.split_once('>')?.1;
                Some(body.split_once("</text>")?.0.trim().to_string())
            })
            .collect()
    }

    #[test]
    fn a_lag_chart_of_zero_lags_labels_whole_blocks_from_zero_to_four() {
        let report = search(vec![step(1, 50.0, 0), step(2, 100.0, 0), step(3, 200.0, 0), step(4, 400.0, 0)]);
        let texts = svg_texts(&lag_chart(&report));
        let counts: Vec<&str> = texts.iter().map(String::as_str).filter(|t| t.len() == 1).collect();
        assert_eq!(counts, ["0", "1", "2", "3", "4"], "{texts:?}");
    }

    #[test]
    fn a_lag_chart_labels_whole_blocks_only_and_reaches_above_the_largest_lag() {
        let report = search(vec![step(1, 100.0, 0), step(2, 200.0, 3), step(3, 400.0, 30)]);
        let axis = count_axis(30);
        let ticks = axis.key_points(plotters::coord::ranged1d::BoldPoints(100));
        assert!(ticks.iter().all(|t| t.fract() == 0.0), "{ticks:?}");
        assert!(axis.range().end >= 30.0 && ticks.len() >= 4, "{ticks:?}");
        for highest in [0, 1, 2, 5, 7, 13, 99, 1234] {
            let axis = count_axis(highest);
            let ticks = axis.key_points(plotters::coord::ranged1d::BoldPoints(100));
            assert!(ticks.iter().all(|t| t.fract() == 0.0), "{highest}: {ticks:?}");
            assert!(axis.range().end >= highest as f64, "{highest}: {:?}", axis.range());
            let mut labels: Vec<String> = ticks.iter().map(|t| format!("{t:.0}")).collect();
            labels.dedup();
            assert_eq!(labels.len(), ticks.len(), "{highest}: no label twice: {labels:?}");
        }
        assert!(svg_texts(&lag_chart(&report)).iter().any(|t| t == "30"));
    }

    #[test]
    fn a_log_rate_axis_labels_the_last_step_where_the_capacity_stands() {
        // 100/s doubled to 1,600/s, then 1,800/s: on the log axis the 1-2-5 ticks stop at 1k
        // and 2k, and the last step, where the capacity stands, fell between them unlabelled.
        let report = search(vec![
            step(1, 100.0, 0),
            step(2, 200.0, 0),
            step(3, 400.0, 0),
            step(4, 800.0, 0),
            step(5, 1_600.0, 0),
            step(6, 1_800.0, 0),
        ]);
        assert_eq!(report.capacity, Some(1_800.0));
        let texts = svg_texts(&lag_chart(&report));
        assert!(texts.iter().any(|t| t == "1.8k"), "the last step is labelled: {texts:?}");
        assert!(texts.iter().any(|t| t == "100") && texts.iter().any(|t| t == "1k"), "{texts:?}");
        // The 1-2-5 tick beside it gives way, so that two labels do not overlap.
        assert!(!texts.iter().any(|t| t == "2k"), "{texts:?}");
        let rate = rate_axis(&report);
        assert!(rate.describe("x").ends_with("(log scale)"));
        let ticks = rate.axis().key_points(plotters::coord::ranged1d::BoldPoints(100));
        assert!(ticks.windows(2).all(|pair| pair[1] - pair[0] >= 0.12 - 1e-9), "{ticks:?}");
    }
}
