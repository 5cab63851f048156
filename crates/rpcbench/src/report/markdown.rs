//! The Markdown report: GitHub-flavoured tables ready to paste into a pull request. One run
//! gives a summary, its latency distribution, its outcomes and the resources used (by the
//! target process when monitored, and by the generator); several runs give the same tables
//! with a column per run and ratios against the first (a comparison), per stage and per call
//! too.

use std::fmt::Write;

use super::tables::{
    count_with_share, describe_load, distinct_methods, distribution_rows, method_groups, method_rows,
    outcome_rows, stage_groups, summary_rows, usage_rows, MetricRow, RowGroup,
};
use super::RunReport;
use crate::results::SavedRun;
use crate::util::units::format_micros;

/// Text from a server or a file as literal Markdown: nothing in it breaks a table cell or
/// turns into markup.
fn cell(text: &str) -> String {
    crate::util::printable::markdown(text)
}

fn header(out: &mut String, first: &str, columns: &[String]) {
    let _ = write!(out, "| {first} |");
    for column in columns {
        let _ = write!(out, " {} |", cell(column));
    }
    let _ = writeln!(out);
    let _ = write!(out, "|---|");
    for _ in columns {
        let _ = write!(out, "---:|");
    }
    let _ = writeln!(out);
}

fn metric_table(out: &mut String, first: &str, labels: &[String], rows: &[MetricRow], ratios: bool) {
    header(out, first, labels);
    for row in rows {
        let _ = write!(out, "| {} |", row.metric);
        for index in 0..row.values.len() {
            let value = if ratios { row.cell_with_ratio(index) } else { row.cell(index) };
            let _ = write!(out, " {value} |");
        }
        let _ = writeln!(out);
    }
}

fn outcomes_table(out: &mut String, labels: &[String], reports: &[&RunReport]) {
    header(out, "outcome", labels);
    for row in outcome_rows(reports) {
        let _ = write!(out, "| {} |", cell(&row.outcome));
        for (count, report) in row.counts.iter().zip(reports) {
            let _ = write!(out, " {} |", count_with_share(*count, report.requests.total));
        }
        let _ = writeln!(out);
    }
}

/// The calls of one run (a comparison shows them grouped, with ratios).
fn methods_table(out: &mut String, run: &SavedRun) {
    let _ = writeln!(out, "| method | requests | req/s | ok % | p50 | p90 | p99 | max |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for row in method_rows(std::slice::from_ref(run)) {
        let us = |v: u64| format_micros(v as f64);
        let _ = writeln!(
            out,
            "| {} | {} | {:.2} | {:.2} | {} | {} | {} | {} |",
            cell(&row.method),
            row.requests,
            row.rate,
            row.ok_percent(),
            us(row.latency.percentile("p50")),
            us(row.latency.percentile("p90")),
            us(row.latency.percentile("p99")),
            us(row.latency.max_us),
        );
    }
}

/// Grouped rows (per stage, per call) with a column per run and ratios against the first:
/// a row per metric, named after its group (`eth_call p99`).
fn grouped_table(out: &mut String, labels: &[String], groups: &[RowGroup]) {
    header(out, "metric", labels);
    for group in groups {
        for row in &group.rows {
            let _ = write!(out, "| {} {} |", cell(&group.name), row.metric);
            for index in 0..row.values.len() {
                let _ = write!(out, " {} |", row.cell_with_ratio(index));
            }
            let _ = writeln!(out);
        }
    }
}

fn context_line(run: &SavedRun) -> String {
    let report = &run.report;
    let mut parts = vec![
        describe_load(report),
        format!("{} requests in {}", report.requests.total, format_micros(report.elapsed_us as f64)),
        format!("started {}", cell(&run.file.started_at)),
        format!("{} on {} cores", cell(&run.file.tool), run.file.machine.cores),
    ];
    if run.file.shards() > 1 {
        parts.push(format!("merged from {} shards", run.file.shards()));
    }
    if report.interrupted {
        parts.push("**interrupted**".into());
    }
    parts.join(" · ")
}

/// Renders one run, or a comparison of several (ratios against the first).
pub fn render_markdown(runs: &[SavedRun]) -> String {
    let mut out = String::new();
    let Some(first) = runs.first() else {
        return out;
    };
    let reports: Vec<&RunReport> = runs.iter().map(|r| &r.report).collect();
    if runs.len() == 1 {
        let report = &first.report;
        let _ = writeln!(
            out,
            "## rpcbench: {} against {}",
            cell(&report.method),
            crate::util::printable::markdown_code(&report.target)
        );
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", context_line(first));
        let _ = writeln!(out);
        metric_table(&mut out, "metric", &["value".to_string()], &summary_rows(&reports), false);
        let _ = writeln!(out);
        let _ = writeln!(out, "### Latency distribution");
        let _ = writeln!(out);
        if report.is_open_loop() {
            let rows = distribution_rows(&[&report.latency, &report.latency_uncorrected]);
            metric_table(&mut out, "percentile", &["corrected".into(), "uncorrected".into()], &rows, false);
        } else {
            let rows = distribution_rows(&[&report.latency]);
            metric_table(&mut out, "percentile", &["latency".into()], &rows, false);
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "### Outcomes");
        let _ = writeln!(out);
        outcomes_table(&mut out, &["count".to_string()], &reports);
        if let Some(headers) = &report.rate_limit_headers {
            let _ = writeln!(out);
            let _ = writeln!(out, "Rate-limit headers: {}", cell(&headers.line()));
        }
        if let Some(pauses) = &report.rate_limit_pauses {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "On rate limit ({}): {} pauses, {:.1} s paused in all (summed over connections)",
                pauses.mode,
                pauses.pauses,
                pauses.paused_ms as f64 / 1000.0
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "### Resources");
        let _ = writeln!(out);
        metric_table(&mut out, "resource", &["value".to_string()], &usage_rows(&reports), false);
        if first.methods.len() > 1 {
            let _ = writeln!(out);
            let _ = writeln!(out, "### Per method");
            let _ = writeln!(out);
            methods_table(&mut out, first);
        }
    } else {
        let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
        let methods = distinct_methods(reports.iter().copied());
        let _ = writeln!(out, "## rpcbench comparison: {}", cell(&methods.join(", ")));
        let _ = writeln!(out);
        let _ = writeln!(out, "| run | target | method | load | requests | started |");
        let _ = writeln!(out, "|---|---|---|---|---:|---|");
        for run in runs {
            let report = &run.report;
            let mut load = describe_load(report);
            if run.file.shards() > 1 {
                load.push_str(&format!(", {} shards", run.file.shards()));
            }
            if report.interrupted {
                load.push_str(", interrupted");
            }
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                cell(&run.label),
                crate::util::printable::markdown_code(&report.target),
                cell(&report.method),
                cell(&load),
                report.requests.total,
                run.file.started_at
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "Ratios are against {}.", cell(&first.label));
        let _ = writeln!(out);
        metric_table(&mut out, "metric", &labels, &summary_rows(&reports), true);
        if let Some(verdicts) = crate::compare::comparison_verdicts(runs) {
            let _ = writeln!(out);
            verdicts_markdown(&mut out, &verdicts);
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "### Latency distribution");
        let _ = writeln!(out);
        let latencies: Vec<_> = reports.iter().map(|r| &r.latency).collect();
        metric_table(&mut out, "percentile", &labels, &distribution_rows(&latencies), true);
        let _ = writeln!(out);
        let _ = writeln!(out, "### Outcomes");
        let _ = writeln!(out);
        outcomes_table(&mut out, &labels, &reports);
        let _ = writeln!(out);
        let _ = writeln!(out, "### Resources");
        let _ = writeln!(out);
        metric_table(&mut out, "resource", &labels, &usage_rows(&reports), true);
        for (title, groups) in
            [("Per stage", stage_groups(&reports)), ("Per method", method_groups(&reports))]
        {
            if groups.is_empty() {
                continue;
            }
            let _ = writeln!(out);
            let _ = writeln!(out, "### {title}");
            let _ = writeln!(out);
            grouped_table(&mut out, &labels, &groups);
        }
    }
    let changed: Vec<String> = runs
        .iter()
        .flat_map(|run| {
            run.report.methods.iter().filter(|method| method.changed_responses > 0).map(move |method| {
                match runs.len() > 1 {
                    true => format!("{}: {} {}", run.label, method.name, method.changed_responses),
                    false => format!("{} {}", method.name, method.changed_responses),
                }
            })
        })
        .collect();
    if !changed.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "**Changed responses** (digest not the recorded one): {}",
            cell(&changed.join(", "))
        );
    }
    let warnings: Vec<String> = runs
        .iter()
        .flat_map(|run| {
            super::generator_warnings(&run.report).into_iter().map(move |w| (run.label.clone(), w))
        })
        .map(|(label, warning)| if runs.len() > 1 { format!("{label}: {warning}") } else { warning })
        .collect();
    if !warnings.is_empty() {
        let _ = writeln!(out);
        for warning in warnings {
            let _ = writeln!(out, "> **Warning:** {}", cell(&warning));
        }
    }
    if let Some(heads) =
        crate::heads::HeadsReport::gather(runs.iter().filter_map(|run| run.report.heads.as_ref()))
    {
        let _ = writeln!(out);
        out.push_str(&heads.render_markdown());
    }
    for run in runs.iter().filter(|run| !run.report.thresholds.is_empty()) {
        let _ = writeln!(out);
        match runs.len() > 1 {
            true => writeln!(out, "### Thresholds: {}", cell(&run.label)),
            false => writeln!(out, "### Thresholds"),
        }
        .ok();
        thresholds_markdown(&mut out, &run.report.thresholds);
    }
    out
}

/// The verdicts of a comparison in rounds as a table (a row per target and figure), then the
/// methodology as a list.
fn verdicts_markdown(out: &mut String, verdicts: &crate::compare::ComparisonVerdicts) {
    let m = &verdicts.methodology;
    let _ = writeln!(out, "### Verdicts");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Against {}: {}% intervals over {} round(s); no difference within the {}.",
        cell(&verdicts.baseline),
        crate::util::units::trim_float(m.confidence * 100.0),
        m.rounds,
        crate::verdict::tie_bands_text(m)
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "| target | metric | ratio | 95% CI | verdict |");
    let _ = writeln!(out, "|---|---|---:|---|---|");
    for target in &verdicts.targets {
        for verdict in &target.verdicts {
            let ratio = verdict.ratio.map_or("-".into(), |r| format!("{r:.3}x"));
            let interval = match (verdict.ci_low, verdict.ci_high) {
                (Some(low), Some(high)) => format!("{low:.3}x..{high:.3}x"),
                _ => "-".into(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {ratio} | {interval} | {} |",
                cell(&target.name),
                cell(&verdict.metric),
                cell(&verdict.text)
            );
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "Method:");
    let _ = writeln!(out);
    for line in crate::verdict::methodology_lines(m) {
        let _ = writeln!(out, "- {}", cell(&line));
    }
}

/// The thresholds as a Markdown table (after a blank line; each threshold as code), or nothing
/// when there are none.
pub(super) fn thresholds_markdown(out: &mut String, results: &[super::ThresholdResult]) {
    if results.is_empty() {
        return;
    }
    out.push_str("\n| threshold | verdict | measured |\n|---|---|---|\n");
    for result in results {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            crate::util::printable::markdown_code(&result.threshold),
            if result.passed { "ok" } else { "**FAILED**" },
            cell(&super::html::measured(result))
        );
    }
}
