//! The tables of a run's or a comparison's page: the summary (cards for one run, a row or a
//! column per run for several), per method, the latency distribution, resources, outcomes and
//! errors by class, the run details and the stages; ratios against the first run, coloured
//! better or worse only between runs of the same kind of load.

use std::fmt::Write;

use super::kit::{clipped, esc, seconds_label, swatch};
use crate::report::tables::{
    count_with_share, describe_load, distribution_rows, format_ratio, method_rows, outcome_rows,
    stage_groups, stage_levels, summary_rows, usage_rows, MethodRow, MetricRow, Unit,
};
use crate::report::RunReport;
use crate::results::SavedRun;
use crate::util::units::format_micros;

/// Whether a larger value of the metric is better (req/s, ok %, MB/s) or worse (latency,
/// errors); used only to colour the ratios.
pub(super) fn higher_is_better(metric: &str) -> bool {
    matches!(metric, "req/s" | "ok %" | "MB/s")
}

/// Whether two runs made the same calls under the same kind of load (closed loop at the same
/// connections, or open loop at the same offered rate, through the same stages), so that a
/// ratio between them says better or worse. An open loop's req/s is the rate it was offered:
/// against a closed loop's, its ratio measures the load chosen, not the target; getBlock
/// against getSlot measures the methods, not the servers.
pub(in crate::report) fn like_for_like(a: &RunReport, b: &RunReport) -> bool {
    let stages = |r: &RunReport| r.stages.iter().map(|s| (s.level, s.duration_s)).collect::<Vec<_>>();
    a.method == b.method
        && a.load.mode == b.load.mode
        && a.load.connections == b.load.connections
        && a.load.rate == b.load.rate
        && stages(a) == stages(b)
}

/// For each run, whether it ran the same kind of load as the first (see [`like_for_like`]).
pub(super) fn like_first(runs: &[SavedRun]) -> Vec<bool> {
    runs.iter().map(|run| like_for_like(&runs[0].report, &run.report)).collect()
}

/// The ratio of run `index` to the first, coloured better or worse only when `like` (the two
/// ran the same kind of load); otherwise grey and in italics, with the reason in a tooltip.
pub(super) fn ratio_span(row: &MetricRow, index: usize, like: bool) -> String {
    if index == 0 {
        return String::new();
    }
    match row.ratios()[index] {
        // The generator's own CPU and memory are not the target's better or worse.
        Some(ratio) if row.metric.starts_with("generator") => {
            format!("<span class=\"ratio\" title=\"{GENERATOR_TOOLTIP}\">{}</span>", format_ratio(ratio))
        }
        Some(ratio) if !like => {
            format!("<span class=\"ratio unlike\" title=\"{UNLIKE_TOOLTIP}\">{}</span>", format_ratio(ratio))
        }
        Some(ratio) => {
            let better = if higher_is_better(&row.metric) { ratio > 1.05 } else { ratio < 0.95 };
            let worse = if higher_is_better(&row.metric) { ratio < 0.95 } else { ratio > 1.05 };
            let class = if better {
                "ratio up"
            } else if worse {
                "ratio down"
            } else {
                "ratio"
            };
            format!("<span class=\"{class}\">{}</span>", format_ratio(ratio))
        }
        None => "<span class=\"ratio\">-</span>".into(),
    }
}

const UNLIKE_TOOLTIP: &str =
    "other calls or a different kind of load from the first run: not better or worse";

const GENERATOR_TOOLTIP: &str = "rpcbench's own usage: not the target's better or worse";

/// The note under a table whose ratios include runs of another kind of load.
pub(super) fn unlike_note(likes: &[bool]) -> &'static str {
    if likes.iter().all(|like| *like) {
        ""
    } else {
        "<p class=\"note\">Ratios in grey italics compare other calls or a different kind of load with the \
         first run's (another method, open against closed loop, other connections, another offered rate \
         or stages): they are not coloured better or worse, as the choice made the difference.</p>"
    }
}

pub(super) fn cards(report: &RunReport) -> String {
    let total = report.requests.total;
    let ok_percent = if total == 0 { 0.0 } else { report.requests.ok as f64 * 100.0 / total as f64 };
    let card = |label: &str, value: String, bad: bool| {
        format!(
            "<div class=\"card{}\"><span>{label}</span><b>{}</b></div>",
            if bad { " bad" } else { "" },
            esc(&value)
        )
    };
    let mut out = String::from("<section class=\"cards\">");
    out.push_str(&card("req/s", format!("{:.0}", report.requests.rate), false));
    out.push_str(&card("ok", format!("{ok_percent:.2}%"), report.requests.errors > 0));
    out.push_str(&card("p50", format_micros(report.latency.percentile("p50") as f64), false));
    out.push_str(&card("p99", format_micros(report.latency.percentile("p99") as f64), false));
    out.push_str(&card("max", format_micros(report.latency.max_us as f64), false));
    out.push_str(&card("MB/s", format!("{:.2}", report.bytes.received_per_sec / 1e6), false));
    out.push_str("</section>");
    out
}

pub(super) fn same_target(runs: &[SavedRun]) -> bool {
    runs.iter().all(|r| r.report.target == runs[0].report.target)
}

/// The summary: what each run was (its method, its load, its target when they differ) and its
/// headline figures, ratios against the first run. Fifteen columns of a row per run do not fit
/// a window of 900 px, so up to [`MAX_RUN_COLUMNS`] runs get a row per figure and a column per
/// run (as the distribution and resources tables do), and more runs a row each over two tables
/// (load, outcomes and rate; then latency and bytes), each narrow enough.
pub(super) fn summary_table(runs: &[SavedRun]) -> String {
    let reports: Vec<&RunReport> = runs.iter().map(|r| &r.report).collect();
    let rows = summary_rows(&reports);
    // The target is in the page's subtitle when every run had the same.
    let target_column = !same_target(runs);
    let likes = like_first(runs);
    let load_cell = |run: &SavedRun| {
        let mut load = describe_load(&run.report);
        if run.file.shards() > 1 {
            load.push_str(&format!(", {} shards", run.file.shards()));
        }
        if run.report.interrupted {
            load.push_str(", interrupted");
        }
        // The load in short (its kind and level); the whole description in the tooltip.
        format!("<td class=\"text nowrap\" title=\"{}\">{}</td>", esc(&load), esc(&short_load(&run.report)))
    };
    let metric_cell = |row: &MetricRow, index: usize| {
        format!("<td>{}{}</td>", esc(&row.cell(index)), ratio_span(row, index, likes[index]))
    };
    let mut out = String::new();
    if runs.len() <= MAX_RUN_COLUMNS {
        let class = if runs.len() <= 3 { "summary columns narrow" } else { "summary columns" };
        let _ = write!(out, "<table class=\"{class}\"><tr><th></th>");
        for (index, run) in runs.iter().enumerate() {
            let _ = write!(out, "<th class=\"text\">{}{}</th>", swatch(index), clipped(&run.label));
        }
        out.push_str("</tr>");
        if target_column {
            out.push_str("<tr><td>target</td>");
            for run in runs {
                let _ = write!(out, "<td class=\"text\">{}</td>", clipped(&run.report.target));
            }
            out.push_str("</tr>");
        }
        out.push_str("<tr><td>method</td>");
        for run in runs {
            let _ = write!(out, "<td class=\"text\">{}</td>", clipped(&run.report.method));
        }
        out.push_str("</tr><tr><td>load</td>");
        for run in runs {
            out.push_str(&load_cell(run));
        }
        out.push_str("</tr>");
        for row in &rows {
            let _ = write!(out, "<tr><td>{}</td>", esc(&row.metric));
            for index in 0..runs.len() {
                out.push_str(&metric_cell(row, index));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table>");
    } else {
        let is_latency =
            |row: &&MetricRow| matches!(row.metric.as_str(), "p50" | "p75" | "p90" | "p95" | "p99" | "max");
        let (latency, other): (Vec<&MetricRow>, Vec<&MetricRow>) = rows.iter().partition(is_latency);
        let (bytes, outcomes): (Vec<&MetricRow>, Vec<&MetricRow>) =
            other.into_iter().partition(|row| matches!(row.metric.as_str(), "MB/s" | "bytes/response"));
        for (index, part) in [outcomes, [latency, bytes].concat()].into_iter().enumerate() {
            out.push_str("<table class=\"summary\"><tr><th>run</th>");
            if index == 0 {
                if target_column {
                    out.push_str("<th class=\"text\">target</th>");
                }
                out.push_str("<th class=\"text\">method</th><th class=\"text\">load</th>");
            }
            for row in &part {
                let _ = write!(out, "<th>{}</th>", esc(&row.metric));
            }
            out.push_str("</tr>");
            for (run_index, run) in runs.iter().enumerate() {
                let _ = write!(out, "<tr><td>{}{}</td>", swatch(run_index), clipped(&run.label));
                if index == 0 {
                    if target_column {
                        let _ = write!(out, "<td class=\"text\">{}</td>", clipped(&run.report.target));
                    }
                    let _ = write!(out, "<td class=\"text\">{}</td>", clipped(&run.report.method));
                    out.push_str(&load_cell(run));
                }
                for row in &part {
                    out.push_str(&metric_cell(row, run_index));
                }
                out.push_str("</tr>");
            }
            out.push_str("</table>");
        }
    }
    if runs.len() > 1 {
        let _ = write!(out, "<p class=\"note\">Ratios are against {}.</p>", esc(&runs[0].label));
        out.push_str(unlike_note(&likes));
    }
    out
}

/// A load in a few words for a table cell: `closed, 16 conns`, `open, 2000/s`, `closed, 3
/// stages, 16..64 conns`.
fn short_load(report: &RunReport) -> String {
    let load = &report.load;
    let levels = stage_levels(report);
    match (load.connections, load.rate) {
        (Some(connections), _) => {
            format!("closed, {} conns", levels.unwrap_or_else(|| connections.to_string()))
        }
        (None, Some(rate)) => {
            format!("open, {}/s", levels.unwrap_or_else(|| crate::util::units::trim_float(rate)))
        }
        _ => load.mode.clone(),
    }
}

/// Past this many runs, the tables with a column per run turn to a row per run.
const MAX_RUN_COLUMNS: usize = 4;

/// A row per run, a column per metric.
fn metric_rows_table(labels: &[String], rows: &[MetricRow], likes: &[bool]) -> String {
    let mut out = String::from("<table><tr><th>run</th>");
    for row in rows {
        let _ = write!(out, "<th>{}</th>", esc(&row.metric));
    }
    out.push_str("</tr>");
    for (index, label) in labels.iter().enumerate() {
        let _ = write!(out, "<tr><td>{}{}</td>", swatch(index), clipped(label));
        for row in rows {
            let _ = write!(out, "<td>{}{}</td>", esc(&row.cell(index)), ratio_span(row, index, likes[index]));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out.push_str(unlike_note(likes));
    out
}

pub(super) fn methods_table(runs: &[SavedRun]) -> String {
    let mut out = String::from(
        "<table><tr><th>run</th><th class=\"text\">method</th><th>requests</th><th>req/s</th><th>ok %</th><th>errors</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>",
    );
    let rows = method_rows(runs);
    // In a comparison, each call's figures carry their ratio against the first run's same call.
    let baseline_run = runs.first().filter(|_| runs.len() > 1).map(|run| run.label.as_str());
    let likes = like_first(runs);
    for row in &rows {
        let like = runs.iter().position(|run| run.label == row.run).is_none_or(|index| likes[index]);
        let us = |v: u64| format_micros(v as f64);
        let baseline = baseline_run
            .filter(|label| *label != row.run)
            .and_then(|label| rows.iter().find(|r| r.run == label && r.method == row.method));
        let ratio = |metric: &str, value: &dyn Fn(&MethodRow) -> f64| match baseline {
            Some(base) => ratio_span(
                &MetricRow {
                    metric: metric.into(),
                    unit: Unit::Decimal,
                    values: vec![value(base), value(row)],
                },
                1,
                like,
            ),
            None => String::new(),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"text\">{}</td><td>{}</td><td>{:.2}{}</td><td>{:.2}{}</td><td>{}</td><td>{}{}</td><td>{}{}</td><td>{}{}</td><td>{}{}</td><td>{}{}</td><td>{}{}</td></tr>",
            clipped(&row.run),
            clipped(&row.method),
            row.requests,
            row.rate,
            ratio("req/s", &|r| r.rate),
            row.ok_percent(),
            ratio("ok %", &|r| r.ok_percent()),
            row.errors,
            us(row.latency.mean_us),
            ratio("mean", &|r| r.latency.mean_us as f64),
            us(row.latency.percentile("p50")),
            ratio("p50", &|r| r.latency.percentile("p50") as f64),
            us(row.latency.percentile("p90")),
            ratio("p90", &|r| r.latency.percentile("p90") as f64),
            us(row.latency.percentile("p99")),
            ratio("p99", &|r| r.latency.percentile("p99") as f64),
            us(row.latency.percentile("p99.9")),
            ratio("p99.9", &|r| r.latency.percentile("p99.9") as f64),
            us(row.latency.max_us),
            ratio("max", &|r| r.latency.max_us as f64),
        );
    }
    out.push_str("</table>");
    out
}

/// A row per metric, a column per run; `likes`: with ratios against the first column, whether
/// each run ran the same kind of load as the first.
fn metric_columns_table(
    first: &str,
    labels: &[String],
    rows: &[MetricRow],
    likes: Option<&[bool]>,
) -> String {
    let class = if labels.len() <= 3 { " class=\"narrow\"" } else { "" };
    let mut out = format!("<table{class}><tr><th>{}</th>", esc(first));
    for label in labels {
        let _ = write!(out, "<th>{}</th>", clipped(label));
    }
    out.push_str("</tr>");
    for row in rows {
        let _ = write!(out, "<tr><td>{}</td>", esc(&row.metric));
        for index in 0..row.values.len() {
            let ratio = likes.map_or(String::new(), |likes| ratio_span(row, index, likes[index]));
            let _ = write!(out, "<td>{}{ratio}</td>", esc(&row.cell(index)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out.push_str(likes.map_or("", unlike_note));
    out
}

pub(super) fn distribution_table(runs: &[SavedRun]) -> String {
    if let [run] = runs {
        if run.report.is_open_loop() {
            let rows = distribution_rows(&[&run.report.latency, &run.report.latency_uncorrected]);
            return metric_columns_table(
                "percentile",
                &["corrected".into(), "uncorrected".into()],
                &rows,
                None,
            );
        }
    }
    let labels: Vec<String> =
        if runs.len() == 1 { vec!["latency".into()] } else { runs.iter().map(|r| r.label.clone()).collect() };
    let latencies: Vec<_> = runs.iter().map(|r| &r.report.latency).collect();
    let likes = like_first(runs);
    if runs.len() > MAX_RUN_COLUMNS {
        return metric_rows_table(&labels, &distribution_rows(&latencies), &likes);
    }
    metric_columns_table("percentile", &labels, &distribution_rows(&latencies), Some(&likes))
}

pub(super) fn resources_table(runs: &[SavedRun]) -> String {
    let reports: Vec<&RunReport> = runs.iter().map(|r| &r.report).collect();
    let rows = usage_rows(&reports);
    if runs.len() == 1 {
        return metric_columns_table("resource", &["value".into()], &rows, None);
    }
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    let likes = like_first(runs);
    if runs.len() > MAX_RUN_COLUMNS {
        return metric_rows_table(&labels, &rows, &likes);
    }
    metric_columns_table("resource", &labels, &rows, Some(&likes))
}

pub(super) fn errors_table(runs: &[SavedRun]) -> String {
    let reports: Vec<&RunReport> = runs.iter().map(|r| &r.report).collect();
    let rows = outcome_rows(&reports);
    let mut out = String::new();
    if runs.len() > MAX_RUN_COLUMNS {
        out.push_str("<table><tr><th>run</th>");
        for row in &rows {
            let _ =
                write!(out, "<th{}>{}</th>", if row.ok { "" } else { " class=\"err\"" }, esc(&row.outcome));
        }
        out.push_str("</tr>");
        for (index, (run, report)) in runs.iter().zip(&reports).enumerate() {
            let _ = write!(out, "<tr><td>{}{}</td>", swatch(index), clipped(&run.label));
            for row in &rows {
                let _ = write!(
                    out,
                    "<td>{}</td>",
                    esc(&count_with_share(row.counts[index], report.requests.total))
                );
            }
            out.push_str("</tr>");
        }
        out.push_str("</table>");
        return out;
    }
    out.push_str("<table class=\"narrow\"><tr><th>outcome</th>");
    if runs.len() == 1 {
        out.push_str("<th>count</th>");
    } else {
        for run in runs {
            let _ = write!(out, "<th>{}</th>", clipped(&run.label));
        }
    }
    out.push_str("</tr>");
    for row in rows {
        let _ =
            write!(out, "<tr{}><td>{}</td>", if row.ok { "" } else { " class=\"err\"" }, esc(&row.outcome));
        for (count, report) in row.counts.iter().zip(&reports) {
            let _ = write!(out, "<td>{}</td>", esc(&count_with_share(*count, report.requests.total)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

pub(super) fn details_table(runs: &[SavedRun]) -> String {
    let us = |v: u64| format_micros(v as f64);
    type Cell<'a> = Box<dyn Fn(&SavedRun) -> String + 'a>;
    let rows: Vec<(&str, Cell<'_>)> = vec![
        ("target", Box::new(|r| r.file.target.clone())),
        (
            "request",
            Box::new(|r| {
                r.file.methods.values().map(|m| m.request.to_string()).collect::<Vec<_>>().join("; ")
            }),
        ),
        ("load", Box::new(|r| describe_load(&r.report))),
        ("started", Box::new(|r| r.file.started_at.clone())),
        ("measured", Box::new(move |r| us(r.report.elapsed_us))),
        ("interrupted", Box::new(|r| if r.file.interrupted { "yes".into() } else { "no".into() })),
        ("shards", Box::new(|r| r.file.shards().to_string())),
        ("timeout", Box::new(move |r| us(r.file.workload.timeout_us))),
        ("connect timeout", Box::new(move |r| us(r.file.workload.connect_timeout_us))),
        ("keep-alive", Box::new(|r| if r.file.workload.keepalive { "yes".into() } else { "no".into() })),
        (
            "headers",
            Box::new(|r| {
                if r.file.workload.headers.is_empty() {
                    "-".into()
                } else {
                    r.file.workload.headers.join("; ")
                }
            }),
        ),
        ("check", Box::new(|r| r.file.workload.check.clone())),
        ("worker threads", Box::new(|r| r.file.workload.threads.to_string())),
        ("seed", Box::new(|r| r.file.workload.seed.to_string())),
        (
            "machine",
            Box::new(|r| {
                format!("{} cores, {} {}", r.file.machine.cores, r.file.machine.os, r.file.machine.arch)
            }),
        ),
        ("tool", Box::new(|r| r.file.tool.clone())),
    ];
    // Settings shared by every run are listed once; those that differ get a row per run.
    let mut common = String::from("<table class=\"narrow\">");
    let mut differing: Vec<(&str, Vec<String>)> = Vec::new();
    for (name, value) in rows {
        let values: Vec<String> = runs.iter().map(&value).collect();
        if values.iter().all(|v| *v == values[0]) {
            let class = if matches!(name, "request" | "headers") { "text code" } else { "text" };
            let _ = write!(common, "<tr><td>{name}</td><td class=\"{class}\">{}</td></tr>", esc(&values[0]));
        } else {
            differing.push((name, values));
        }
    }
    common.push_str("</table>");
    if differing.is_empty() {
        return common;
    }
    let mut out = String::from("<table><tr><th>run</th>");
    for (name, _) in &differing {
        let _ = write!(out, "<th class=\"text\">{name}</th>");
    }
    out.push_str("</tr>");
    for (index, run) in runs.iter().enumerate() {
        let _ = write!(out, "<tr><td>{}{}</td>", swatch(index), clipped(&run.label));
        for (name, values) in &differing {
            if matches!(*name, "request" | "headers") {
                let _ = write!(out, "<td class=\"text code\"><div>{}</div></td>", esc(&values[index]));
            } else {
                let class = if *name == "started" { "text nowrap" } else { "text" };
                let _ = write!(out, "<td class=\"{class}\">{}</td>", esc(&values[index]));
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</table><h3>Common to every run</h3>");
    out.push_str(&common);
    out
}

/// The "Per stage" section: one run's stages; or, for a comparison, a row per stage and run with
/// ratios against the first run's same stage, then the stages' schedule.
pub(super) fn stages_section(runs: &[SavedRun]) -> String {
    if runs.len() == 1 {
        return stages_tables(runs);
    }
    let mut out = stages_comparison_table(runs);
    let staged: Vec<&SavedRun> = runs.iter().filter(|run| !run.report.stages.is_empty()).collect();
    let schedule = |run: &SavedRun| -> Vec<(u64, u64, u64, u64)> {
        let ms = |seconds: f64| (seconds * 1000.0).round() as u64;
        run.report
            .stages
            .iter()
            .map(|s| (s.level.to_bits(), ms(s.start_s), ms(s.duration_s), ms(s.ramp_s)))
            .collect()
    };
    match staged.as_slice() {
        [first, rest @ ..] if rest.iter().all(|run| schedule(run) == schedule(first)) => {
            let _ = write!(out, "<h3>Stages</h3>{}", schedule_table(&first.report));
        }
        _ => {
            out.push_str("<h3>Each run's stages</h3>");
            out.push_str(&stages_tables(runs));
        }
    }
    out
}

/// The stages of a comparison side by side, as the per-method table sets calls: a row per
/// stage and run (stages matched by position, named after the first run's level, as the text,
/// Markdown and JSON comparisons do), each figure with its ratio against the first run's same
/// stage, coloured better or worse only between runs of the same kind of load.
fn stages_comparison_table(runs: &[SavedRun]) -> String {
    let reports: Vec<&RunReport> = runs.iter().map(|run| &run.report).collect();
    let groups = stage_groups(&reports);
    let likes = like_first(runs);
    let mut out = String::from(
        "<table class=\"stages\"><tr><th>stage</th><th class=\"text\">run</th><th>requests</th><th>req/s</th><th>ok %</th><th>errors</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>",
    );
    for (position, group) in groups.iter().enumerate() {
        let present: Vec<(usize, &crate::report::StageReport)> = runs
            .iter()
            .enumerate()
            .filter_map(|(index, run)| run.report.stages.get(position).map(|stage| (index, stage)))
            .collect();
        for (row, (index, stage)) in present.iter().enumerate() {
            out.push_str(if row == 0 { "<tr class=\"group\">" } else { "<tr>" });
            if row == 0 {
                let _ = write!(out, "<td rowspan=\"{}\">{}</td>", present.len(), esc(&group.name));
            }
            let _ = write!(
                out,
                "<td class=\"text\">{}{}</td><td>{}</td>",
                swatch(*index),
                clipped(&runs[*index].label),
                stage.requests
            );
            // req/s and ok %, then errors (a count, no ratio), then the latencies.
            let cell = |metric: &MetricRow| {
                format!("<td>{}{}</td>", esc(&metric.cell(*index)), ratio_span(metric, *index, likes[*index]))
            };
            let [rate, ok, latencies @ ..] = group.rows.as_slice() else { continue };
            out.push_str(&cell(rate));
            out.push_str(&cell(ok));
            let _ = write!(out, "<td>{}</td>", stage.errors);
            for metric in latencies {
                out.push_str(&cell(metric));
            }
            out.push_str("</tr>");
        }
    }
    out.push_str("</table>");
    let _ = write!(out, "<p class=\"note\">Ratios are against {}'s same stage.</p>", esc(&runs[0].label));
    out.push_str(unlike_note(&likes));
    out
}

/// The stages every run of a comparison went through: level, start, length, ramp.
fn schedule_table(report: &RunReport) -> String {
    let level = if report.is_open_loop() { "req/s offered" } else { "connections" };
    let mut out = format!(
        "<table class=\"narrow\"><tr><th>stage</th><th>{level}</th><th>from</th><th>duration</th><th>ramp</th></tr>"
    );
    for stage in &report.stages {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            stage.stage,
            esc(&crate::util::units::trim_float(stage.level)),
            esc(&seconds_label(stage.start_s)),
            esc(&seconds_label(stage.duration_s)),
            esc(&seconds_label(stage.ramp_s)),
        );
    }
    out.push_str("</table>");
    out
}

/// The per-stage tables of the staged runs: level, start, length, requests, rate, latency and
/// errors of each stage; one table per staged run, under its label when several runs are shown.
fn stages_tables(runs: &[SavedRun]) -> String {
    let us = |v: u64| format_micros(v as f64);
    let mut out = String::new();
    for (index, run) in runs.iter().enumerate().filter(|(_, run)| !run.report.stages.is_empty()) {
        if runs.len() > 1 {
            let _ = write!(out, "<h3>{}{}</h3>", swatch(index), clipped(&run.label));
        }
        let level = if run.report.load.mode == "open" { "req/s offered" } else { "connections" };
        let _ = write!(
            out,
            "<table><tr><th>stage</th><th>{level}</th><th>from</th><th>duration</th><th>ramp</th><th>requests</th><th>req/s</th><th>p50</th><th>p99</th><th>errors</th></tr>"
        );
        for stage in &run.report.stages {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                stage.stage,
                esc(&crate::util::units::trim_float(stage.level)),
                esc(&seconds_label(stage.start_s)),
                esc(&seconds_label(stage.duration_s)),
                esc(&seconds_label(stage.ramp_s)),
                stage.requests,
                stage.rate,
                us(stage.latency.percentile("p50")),
                us(stage.latency.percentile("p99")),
                esc(&count_with_share(stage.errors, stage.requests)),
            );
        }
        out.push_str("</table>");
    }
    out
}
