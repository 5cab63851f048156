//! Reports of a capacity search ([`CapacityFile`]) beyond its text and JSON: Markdown (the
//! steps table and the answer, ready for a pull request), CSV (a row per step) and one
//! self-contained HTML page whose charts plot against the offered rate: latency percentiles
//! (p50, p90, p99, log scale) with the SLO's latency bounds, the error rate with its bound,
//! the achieved rate, and the target's CPU when it was monitored; the answer (capacity) and
//! the knee are marked on each. A search over connections plots against the connections
//! instead (and its achieved rate is the throughput they drew). The charts reuse the run
//! report's drawing helpers.

use std::fmt::Write;

use plotters::prelude::*;

use super::capacity_axes::{
    bound_line, build, by_rate, error_bound, latency_bounds, linear_axis, mark_rates, mesh, monitored,
    rate_axis, short_amount, x_desc, x_name, RateAxis, GREY, RED,
};
use super::html::{color, esc, legend_items, page_start, svg, LatencyScale};
use crate::capacity::{CapacityReport, StepResult, Verdict};
use crate::capacity_file::CapacityFile;
use crate::monitor::format_bytes;
use crate::report::tables::trim_float;
use crate::util::units::format_micros;

/// The percentiles plotted, each with its colour index.
const PLOTTED: [(&str, usize); 3] = [("p50", 0), ("p90", 1), ("p99", 2)];

fn percentile_of(step: &StepResult, name: &str) -> f64 {
    let micros = match name {
        "p50" => step.p50_us,
        "p90" => step.p90_us,
        _ => step.p99_us,
    };
    micros as f64
}

fn latency_chart(report: &CapacityReport) -> String {
    // Steps without a single answer have no latency to plot.
    let steps: Vec<&StepResult> = by_rate(report).into_iter().filter(|s| s.requests > s.errors).collect();
    let bounds = latency_bounds(report);
    let lowest = steps.iter().map(|s| s.p50_us as f64).filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let highest = steps.iter().map(|s| s.p99_us as f64).chain(bounds.iter().map(|b| b.1)).fold(1.0, f64::max);
    let scale = LatencyScale::log(if lowest.is_finite() { lowest } else { 1.0 }, highest * 1.3);
    let rate = rate_axis(report);
    svg(|root| {
        let mut chart = build(root, &rate, scale.axis())?;
        mesh(&mut chart, &rate, x_desc(report), scale.description(), &|y| scale.label(*y))?;
        for (name, index) in PLOTTED {
            let points: Vec<(f64, f64)> =
                steps.iter().map(|s| (rate.x(s.level()), scale.y(percentile_of(s, name)))).collect();
            chart.draw_series(LineSeries::new(points.iter().copied(), color(index).stroke_width(2)))?;
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color(index).filled())))?;
        }
        // Failing steps: a red cross on their p99.
        chart.draw_series(
            steps
                .iter()
                .filter(|s| !s.verdict.passed())
                .map(|s| Cross::new((rate.x(s.level()), scale.y(s.p99_us as f64)), 6, RED.stroke_width(2))),
        )?;
        for (label, limit) in &bounds {
            bound_line(&mut chart, &rate, scale.y(*limit), label)?;
        }
        let (low, high) = (scale.axis().range().start, scale.axis().range().end);
        mark_rates(&mut chart, report, &rate, low, high)
    })
}

fn errors_chart(report: &CapacityReport) -> String {
    let steps = by_rate(report);
    let bound = error_bound(report);
    let y_high = steps.iter().map(|s| s.error_percent).chain(bound.map(|b| b * 1.5)).fold(1.0, f64::max);
    let axis = linear_axis(y_high);
    let (low, high) = (axis.range().start, axis.range().end);
    let rate = rate_axis(report);
    svg(|root| {
        let mut chart = build(root, &rate, axis)?;
        mesh(&mut chart, &rate, x_desc(report), "errors (% of requests)", &|y| {
            format!("{}%", trim_float(*y))
        })?;
        let points: Vec<(f64, f64)> = steps.iter().map(|s| (rate.x(s.level()), s.error_percent)).collect();
        chart.draw_series(LineSeries::new(points.iter().copied(), RED.stroke_width(2)))?;
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, RED.filled())))?;
        if let Some(limit) = bound {
            bound_line(&mut chart, &rate, limit, &format!("errors<{}%", trim_float(limit)))?;
        }
        mark_rates(&mut chart, report, &rate, low, high)
    })
}

fn achieved_chart(report: &CapacityReport) -> String {
    let steps = by_rate(report);
    let rate = rate_axis(report);
    let closed = report.connections_mode();
    // On a log rate axis the achieved rate is on a log axis too, so that achieved = offered
    // stays a straight diagonal.
    let y = if closed { RateAxis::for_levels(steps.iter().map(|s| s.achieved_rate)) } else { rate };
    let (y_low, y_high) = (y.start(), y.end());
    svg(|root| {
        let mut chart = build(root, &rate, y.axis())?;
        mesh(&mut chart, &rate, x_desc(report), &y.describe("achieved rate (requests per second)"), &|at| {
            y.label(*at)
        })?;
        if !closed {
            chart.draw_series(DashedLineSeries::new(
                [(rate.start(), rate.start()), (rate.end(), rate.end())],
                6,
                4,
                GREY.stroke_width(1),
            ))?;
        }
        let points: Vec<(f64, f64)> =
            steps.iter().map(|s| (rate.x(s.level()), y.x(s.achieved_rate))).collect();
        chart.draw_series(LineSeries::new(points.iter().copied(), color(0).stroke_width(2)))?;
        chart.draw_series(steps.iter().map(|s| {
            let short = matches!(s.verdict, Verdict::GeneratorLimited | Verdict::ConnectionCap);
            let style = if short { RED.filled() } else { color(0).filled() };
            Circle::new((rate.x(s.level()), y.x(s.achieved_rate)), 4, style)
        }))?;
        mark_rates(&mut chart, report, &rate, y_low, y_high)
    })
}

fn cpu_chart(report: &CapacityReport) -> String {
    let steps: Vec<&StepResult> =
        by_rate(report).into_iter().filter(|s| s.target_resources.is_some()).collect();
    let cpu = |s: &StepResult| {
        s.target_resources.as_ref().map_or((0.0, 0.0), |r| (r.cpu_percent_avg, r.cpu_percent_peak))
    };
    let axis = linear_axis(steps.iter().map(|s| cpu(s).1).fold(10.0, f64::max));
    let (low, high) = (axis.range().start, axis.range().end);
    let rate = rate_axis(report);
    svg(|root| {
        let mut chart = build(root, &rate, axis)?;
        mesh(&mut chart, &rate, x_desc(report), "target CPU (% of one core)", &|y| format!("{y:.0}%"))?;
        for (index, pick) in [(0usize, 0usize), (1, 1)] {
            let points: Vec<(f64, f64)> = steps
                .iter()
                .map(|s| {
                    let (avg, peak) = cpu(s);
                    (rate.x(s.level()), if pick == 0 { avg } else { peak })
                })
                .collect();
            chart.draw_series(LineSeries::new(points.iter().copied(), color(index).stroke_width(2)))?;
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color(index).filled())))?;
        }
        mark_rates(&mut chart, report, &rate, low, high)
    })
}

/// The resources of a step as table cells: target CPU avg and peak, RSS peak (empty when the
/// step was not monitored), then the generator's CPU.
fn resource_cells(step: &StepResult) -> [String; 4] {
    let (cpu_avg, cpu_peak, rss) = match &step.target_resources {
        Some(r) => (
            format!("{:.1}%", r.cpu_percent_avg),
            format!("{:.1}%", r.cpu_percent_peak),
            format_bytes(r.rss_bytes_peak),
        ),
        None => (String::new(), String::new(), String::new()),
    };
    let generator = step
        .generator
        .as_ref()
        .and_then(|g| g.cpu_percent)
        .map(|cpu| format!("{cpu:.1}%"))
        .unwrap_or_default();
    [cpu_avg, cpu_peak, rss, generator]
}

fn settings_line(file: &CapacityFile) -> String {
    let settings = &file.report.settings;
    if file.report.connections_mode() {
        return format!(
            "{} · started {} · {} on {} cores",
            file.report.settings_text(),
            file.started_at,
            file.report.tool,
            file.machine.cores
        );
    }
    format!(
        "SLO {} · open-loop steps of {} after {} warmup, {} cool-down · from {}/s up to {}/s, precision {}% · started {} · {} on {} cores",
        settings.slo,
        format_micros(settings.step_us as f64),
        format_micros(settings.warmup_us as f64),
        format_micros(settings.cooldown_us as f64),
        trim_float(settings.start_rate),
        trim_float(settings.max_rate),
        trim_float(settings.precision_percent),
        file.started_at,
        file.report.tool,
        file.machine.cores
    )
}

/// Text as literal Markdown (see `printable::markdown`).
pub(super) fn md_cell(text: &str) -> String {
    crate::util::printable::markdown(text)
}

/// The search as Markdown: the settings, a table of the steps and the answer.
pub fn render_capacity_markdown(file: &CapacityFile) -> String {
    let report = &file.report;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## rpcbench capacity: {} against {}",
        md_cell(&report.method),
        crate::util::printable::markdown_code(&report.target)
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", md_cell(&settings_line(file)));
    let _ = writeln!(out);
    let monitored = monitored(report);
    let target_columns = if monitored { " target CPU avg | target CPU peak | target RSS peak |" } else { "" };
    let target_align = if monitored { "---:|---:|---:|" } else { "" };
    let level = if report.connections_mode() { "connections" } else { "offered/s" };
    let heads = super::capacity_heads::followed(report);
    let (heads_columns, heads_align) =
        if heads { (" lag p50/max | stale |", "---:|---:|") } else { ("", "") };
    let _ = writeln!(
        out,
        "| step | {level} | achieved/s | requests | p50 | p90 | p99 | errors |{target_columns}{heads_columns} generator CPU | verdict |"
    );
    let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|---:|---:|{target_align}{heads_align}---:|---|");
    for step in &report.steps {
        let [cpu_avg, cpu_peak, rss, generator] = resource_cells(step);
        let mut target = if monitored { format!(" {cpu_avg} | {cpu_peak} | {rss} |") } else { String::new() };
        if heads {
            let (lag, stale) = step.heads_cells();
            let _ = write!(target, " {lag} | {stale} |");
        }
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {} | {} | {} | {} | {:.2}% |{target} {generator} | {} |",
            step.step,
            trim_float(step.level()),
            step.achieved_rate,
            step.requests,
            format_micros(step.p50_us as f64),
            format_micros(step.p90_us as f64),
            format_micros(step.p99_us as f64),
            step.error_percent,
            md_cell(&step.verdict_text())
        );
    }
    let _ = writeln!(out);
    for line in report.summary_lines() {
        let line = line.trim_start();
        if let Some(answer) = line.strip_prefix("Capacity: ") {
            let _ = writeln!(out, "**Capacity: {}**", md_cell(answer));
        } else {
            let _ = writeln!(out, "{}", md_cell(line));
        }
        let _ = writeln!(out);
    }
    out
}

/// The columns of the capacity CSV, in order.
pub const CAPACITY_CSV_COLUMNS: &[&str] = &[
    "step",
    "offered_rate",
    "achieved_rate",
    "requests",
    "errors",
    "error_pct",
    "unsent",
    "p50_us",
    "p90_us",
    "p99_us",
    "p99_uncorrected_us",
    "send_lag_mean_us",
    "verdict",
    "breaches",
    "target_cpu_avg_pct",
    "target_cpu_peak_pct",
    "target_rss_avg_bytes",
    "target_rss_peak_bytes",
    "target_disk_read_bytes",
    "target_disk_write_bytes",
    "target_conns_avg",
    "target_conns_peak",
    "generator_cpu_pct",
    "generator_peak_rss_bytes",
];

fn optional<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

/// The search as CSV: a row per step, in the order run, plain units. A search over
/// connections has `connections` in place of `offered_rate`.
pub fn render_capacity_csv(file: &CapacityFile) -> String {
    super::csv::csv_text(&capacity_csv_columns(&file.report), &capacity_csv_rows(file))
}

/// The CSV columns of a search: [`CAPACITY_CSV_COLUMNS`], with `connections` in place of
/// `offered_rate` for a search over connections.
pub(super) fn capacity_csv_columns(report: &CapacityReport) -> Vec<&'static str> {
    let mut columns = CAPACITY_CSV_COLUMNS.to_vec();
    if report.connections_mode() {
        columns[1] = "connections";
    }
    columns
}

/// The CSV rows of a search, one per step in the order run.
pub(super) fn capacity_csv_rows(file: &CapacityFile) -> Vec<Vec<String>> {
    let mut rows = Vec::with_capacity(file.report.steps.len());
    for step in &file.report.steps {
        let verdict = serde_json::to_value(step.verdict).ok().and_then(|v| v.as_str().map(str::to_string));
        let breaches: Vec<&str> = step.breaches.iter().map(|b| b.clause.as_str()).collect();
        let target = step.target_resources.as_ref();
        let generator = step.generator.as_ref();
        let cells = vec![
            step.step.to_string(),
            step.level().to_string(),
            format!("{:.2}", step.achieved_rate),
            step.requests.to_string(),
            step.errors.to_string(),
            format!("{:.2}", step.error_percent),
            step.unsent.to_string(),
            step.p50_us.to_string(),
            step.p90_us.to_string(),
            step.p99_us.to_string(),
            step.p99_uncorrected_us.to_string(),
            step.send_lag_mean_us.to_string(),
            verdict.unwrap_or_default(),
            breaches.join(" "),
            optional(target.map(|t| format!("{:.2}", t.cpu_percent_avg))),
            optional(target.map(|t| format!("{:.2}", t.cpu_percent_peak))),
            optional(target.map(|t| t.rss_bytes_avg)),
            optional(target.map(|t| t.rss_bytes_peak)),
            optional(target.and_then(|t| t.disk_read_bytes)),
            optional(target.and_then(|t| t.disk_write_bytes)),
            optional(target.and_then(|t| t.tcp_connections_avg).map(|n| format!("{n:.2}"))),
            optional(target.and_then(|t| t.tcp_connections_peak)),
            optional(generator.and_then(|g| g.cpu_percent).map(|p| format!("{p:.2}"))),
            optional(generator.and_then(|g| g.peak_rss_bytes)),
        ];
        rows.push(cells);
    }
    rows
}

fn card(label: &str, value: &str, class: &str) -> String {
    format!("<div class=\"card{class}\"><span>{label}</span><b>{}</b></div>", esc(value))
}

pub(super) fn steps_table(report: &CapacityReport) -> String {
    let monitored = monitored(report);
    let level = if report.connections_mode() { "connections" } else { "offered/s" };
    let mut out = format!(
        "<table><tr><th>step</th><th>{level}</th><th>achieved/s</th><th>requests</th><th>p50</th><th>p90</th><th>p99</th><th>errors</th>",
    );
    if monitored {
        out.push_str("<th>target CPU avg</th><th>target CPU peak</th><th>target RSS peak</th>");
    }
    let heads = super::capacity_heads::followed(report);
    if heads {
        out.push_str(super::capacity_heads::HTML_HEADER);
    }
    out.push_str("<th>generator CPU</th><th class=\"text\">verdict</th></tr>");
    for step in &report.steps {
        let class = if step.verdict.passed() { "" } else { " class=\"err\"" };
        let _ = write!(
            out,
            "<tr{class}><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}%</td>",
            step.step,
            trim_float(step.level()),
            step.achieved_rate,
            step.requests,
            esc(&format_micros(step.p50_us as f64)),
            esc(&format_micros(step.p90_us as f64)),
            esc(&format_micros(step.p99_us as f64)),
            step.error_percent
        );
        let [cpu_avg, cpu_peak, rss, generator] = resource_cells(step);
        if monitored {
            let _ =
                write!(out, "<td>{}</td><td>{}</td><td>{}</td>", esc(&cpu_avg), esc(&cpu_peak), esc(&rss));
        }
        if heads {
            out.push_str(&super::capacity_heads::html_cells(step));
        }
        let _ = write!(
            out,
            "<td>{}</td><td class=\"text\">{}</td></tr>",
            esc(&generator),
            esc(&step.verdict_text())
        );
    }
    out.push_str("</table>");
    out
}

/// The search as one self-contained HTML page: the answer, charts against the offered rate
/// with the SLO bounds, the capacity and the knee marked, and the steps table.
pub fn render_capacity_html(file: &CapacityFile) -> String {
    let report = &file.report;
    let title = format!("rpcbench capacity: {} against {}", report.method, report.target);
    let mut out = String::new();
    page_start(&mut out, &title);
    let _ = writeln!(out, "<h1>{}</h1>", esc(&title));
    let _ = writeln!(out, "<p class=\"sub\">{}</p>", esc(&settings_line(file)));
    let rate = |level: Option<f64>| level.map(|l| short_amount(report, l)).unwrap_or_else(|| "none".into());
    out.push_str("<section class=\"cards\">");
    out.push_str(&card(
        "capacity",
        &rate(report.capacity),
        if report.capacity.is_none() { " bad" } else { "" },
    ));
    out.push_str(&card("first failing", &rate(report.first_failing_rate), ""));
    let margin = match (report.margin, report.margin_percent) {
        (Some(margin), Some(percent)) => {
            format!("{} ({}%)", short_amount(report, margin), trim_float(percent))
        }
        _ => "-".into(),
    };
    out.push_str(&card("margin", &margin, ""));
    out.push_str(&card("knee", &rate(report.knee), ""));
    out.push_str(&card(
        "limited by",
        &report.limited_by,
        if matches!(report.limited_by.as_str(), "generator" | "connection_cap") { " bad" } else { "" },
    ));
    out.push_str(&card("steps", &report.steps.len().to_string(), ""));
    out.push_str("</section>");
    let lines = report.summary_lines();
    let warnings: Vec<&String> =
        lines.iter().filter(|l| l.trim_start().starts_with("WARNING") || l.contains("INTERRUPTED")).collect();
    if !warnings.is_empty() {
        out.push_str("<section class=\"warning\"><h2>Warnings</h2><ul>");
        for warning in warnings {
            let _ = write!(out, "<li>{}</li>", esc(warning.trim()));
        }
        out.push_str("</ul></section>");
    }
    let marks = "green: capacity · orange dashed: knee · red dashed: SLO bound";
    let _ = writeln!(
        out,
        "<section><h2>Latency against {}</h2>{}{}</section>",
        x_name(report),
        legend_items(&[("p50", 0), ("p90", 1), ("p99", 2)], &format!("red crosses: failing steps · {marks}")),
        latency_chart(report)
    );
    let _ = writeln!(
        out,
        "<section><h2>Errors against {}</h2>{}{}</section>",
        x_name(report),
        legend_items(&[], marks),
        errors_chart(report)
    );
    let _ = writeln!(
        out,
        "<section><h2>Achieved against {}</h2>{}{}</section>",
        x_name(report),
        legend_items(
            &[("achieved", 0)],
            if report.connections_mode() {
                "the throughput the connections drew"
            } else {
                "grey dashed: achieved = offered · red: generator-limited steps"
            }
        ),
        achieved_chart(report)
    );
    if monitored(report) {
        let _ = writeln!(
            out,
            "<section><h2>Target CPU against {}</h2>{}{}</section>",
            x_name(report),
            legend_items(&[("average", 0), ("peak", 1)], "percent of one core"),
            cpu_chart(report)
        );
    }
    if let Some(section) = super::capacity_heads::heads_section(report) {
        out.push_str(&section);
    }
    let _ = writeln!(out, "<section><h2>Steps</h2>{}</section>", steps_table(report));
    out.push_str("<section><h2>Answer</h2>");
    for line in &lines {
        let _ = write!(out, "<p>{}</p>", esc(line.trim()));
    }
    let _ = writeln!(
        out,
        "<p class=\"note\">Request: <code>{}</code></p></section>",
        esc(&file.request.to_string())
    );
    let _ = writeln!(
        out,
        "<footer>{} · rpcbench capacity format {}</footer>\n</main>\n</body>\n</html>",
        esc(&report.tool),
        file.version
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::capacity_axes::compact;

    #[test]
    fn a_doubling_search_gets_a_log_rate_axis_with_its_steps_spread_and_short_labels() {
        // 100/s doubled up to 57,600/s: on a linear axis the first eight steps would share its
        // first 2%; on the log axis each doubling is the same width.
        let levels: Vec<f64> = (0..10).map(|i| 100.0 * 2f64.powi(i)).chain([57_600.0]).collect();
        let axis = RateAxis::for_levels(levels.iter().copied());
        let width = axis.end() - axis.start();
        let share = |a: f64, b: f64| (axis.x(b) - axis.x(a)) / width;
        assert!(share(100.0, 200.0) > 0.08, "{}", share(100.0, 200.0));
        assert!((share(100.0, 200.0) - share(12_800.0, 25_600.0)).abs() < 1e-9);
        let ticked = axis.axis();
        let labels: Vec<String> = ticked
            .key_points(plotters::coord::ranged1d::BoldPoints(100))
            .iter()
            .map(|x| axis.label(*x))
            .collect();
        assert!(labels.contains(&"100".to_string()) && labels.contains(&"50k".to_string()), "{labels:?}");
        assert!(labels.iter().all(|label| label.len() <= 4), "short labels do not overlap: {labels:?}");
        assert!(axis.describe("offered rate").ends_with("(log scale)"));
        // A narrow search stays linear from zero.
        let narrow = RateAxis::for_levels([100.0, 200.0, 400.0]);
        assert_eq!((narrow.start(), narrow.x(200.0)), (0.0, 200.0));
        assert_eq!(compact(1_500_000.0), "1.5M");
        assert_eq!(compact(12_500.0), "12.5k");
    }
}
