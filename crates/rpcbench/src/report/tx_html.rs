//! A tx run's report (either chain) as an HTML page, with sent vs included transactions per
//! second and the inclusion-latency distribution drawn from the report's lossless histograms,
//! and as Markdown tables. Both read the JSON report of [`super::tx`].

use std::fmt::Write;

use plotters::prelude::*;
use serde_json::Value;

use super::html::thresholds_html;
use super::html::{
    color, esc, house_style, legend_items, nice_max, page_start, percentile_curves, seconds_label, spectrum,
    svg, LatencyScale,
};
use super::markdown::thresholds_markdown;
use super::tx::{
    count, figure, final_meaning, final_rows, number, shard_text, stages_text, tx_histogram, verdicts,
    TxChainWords, SOLANA_WORDS,
};

fn card(label: &str, value: &str, bad: bool) -> String {
    let class = if bad { " bad" } else { "" };
    format!("<div class=\"card{class}\"><span>{}</span><b>{}</b></div>", esc(label), esc(value))
}

/// The outcome rows: (outcome, count, what it means), one per final outcome the report holds,
/// in the table's order (the order they add up to sent).
fn outcomes(report: &Value) -> Vec<(&'static str, u64, String)> {
    final_rows(report)
        .into_iter()
        .map(|(spec, key, n)| (key, n, final_meaning(report, spec.outcome)))
        .collect()
}

/// The latency rows: (label, table key).
fn latency_rows(report: &Value) -> [(&'static str, &'static str); 2] {
    let words = TxChainWords::of(report);
    let label = if words == SOLANA_WORDS { "send -> landed" } else { "send -> included" };
    [("send -> ack", "send_to_ack_ms"), (label, words.latency)]
}

fn resolution_note(report: &Value) -> Option<String> {
    let words = TxChainWords::of(report);
    report[words.resolution].as_u64().map(|ms| format!("polled: inclusion figures are late by up to {ms} ms"))
}

/// Sent and included transactions per second, one line each.
fn per_second_chart(report: &Value) -> String {
    let seconds = report["per_second"].as_array().cloned().unwrap_or_default();
    if seconds.is_empty() {
        return "<p class=\"note\">Nothing was sent.</p>".to_string();
    }
    let line = |key: &str| -> Vec<(f64, f64)> {
        seconds
            .iter()
            .map(|s| (s["second"].as_f64().unwrap_or(0.0) + 0.5, s[key].as_f64().unwrap_or(0.0)))
            .collect()
    };
    let lines = [line("sent"), line("included")];
    let x_max = seconds.len() as f64;
    let y_max = nice_max(lines.iter().flatten().map(|p| p.1).fold(0.0, f64::max));
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(44)
            .x_label_area_size(40)
            .y_label_area_size(78)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
        house_style(&mut chart.configure_mesh(), "seconds since the first send", "transactions per second")
            .x_label_formatter(&|x| seconds_label(*x))
            .y_label_formatter(&|y| if y_max < 10.0 { format!("{y:.1}") } else { format!("{y:.0}") })
            .draw()?;
        for (index, points) in lines.iter().enumerate() {
            chart.draw_series(LineSeries::new(points.iter().copied(), color(index).stroke_width(2)))?;
        }
        Ok(())
    })
}

/// The percentile curves of send -> ack and send -> inclusion.
fn latency_chart(report: &Value) -> String {
    let lines: Vec<(usize, Vec<(f64, f64)>)> = ["ack", "inclusion"]
        .into_iter()
        .enumerate()
        .filter_map(|(index, which)| Some((index, spectrum(&tx_histogram(report, which)?))))
        .filter(|(_, line)| !line.is_empty())
        .collect();
    if lines.is_empty() {
        return "<p class=\"note\">Nothing was acknowledged or included: no latency to draw.</p>".to_string();
    }
    let scale = LatencyScale::log(
        lines.iter().flat_map(|(_, l)| l).map(|p| p.1).fold(f64::INFINITY, f64::min),
        lines.iter().flat_map(|(_, l)| l).map(|p| p.1).fold(0.0, f64::max),
    );
    percentile_curves(&lines, &scale, "latency (log scale)")
}

fn title(report: &Value) -> String {
    let words = TxChainWords::of(report);
    format!("rpcbench tx: {} against {}", words.chain, report["target"].as_str().unwrap_or(""))
}

/// The run's setting rows: (name, value).
fn details(report: &Value) -> Vec<(&'static str, String)> {
    let mut rows = Vec::new();
    if TxChainWords::of(report) == SOLANA_WORDS {
        rows.push(("genesis hash", report["genesis_hash"].as_str().unwrap_or("").to_string()));
        rows.push(("payers", count(report, "senders").to_string()));
        rows.push(("commitment", report["commitment"].as_str().unwrap_or("").to_string()));
        rows.push(("landings seen by", report["landing_seen_by"].as_str().unwrap_or("").to_string()));
    } else {
        rows.push(("chain id", count(report, "chain_id").to_string()));
        rows.push(("senders", count(report, "senders").to_string()));
        rows.push(("kind", report["kind"].as_str().unwrap_or("").to_string()));
        rows.push(("gas limit", count(report, "gas_limit").to_string()));
        rows.push(("fees", report["fees"]["source"].as_str().unwrap_or("").to_string()));
        rows.push(("heads from", report["heads_from"].as_str().unwrap_or("").to_string()));
        // Reports written before `--receipts` have no field (they read every receipt): no row.
        if let Some(checked) = report["receipts_checked"].as_str() {
            rows.push(("receipts checked", checked.to_string()));
        }
    }
    if let Some(stages) = stages_text(report) {
        rows.push(("stages", stages));
    }
    if let Some(shard) = shard_text(report) {
        rows.push(("shard", shard));
    }
    rows.push((
        "sending",
        format!(
            "{:.3} s at {:.1}/s",
            report["send_seconds"].as_f64().unwrap_or(0.0),
            report["sent_per_second"].as_f64().unwrap_or(0.0)
        ),
    ));
    rows.push(("inclusion timeout", format!("{} ms", count(report, "inclusion_timeout_ms"))));
    rows
}

/// The report as an HTML page.
pub fn render_tx_html(report: &Value) -> String {
    let words = TxChainWords::of(report);
    let title = title(report);
    let mut out = String::new();
    page_start(&mut out, &title);
    let _ = writeln!(out, "<h1>{}</h1>", esc(&title));
    if report["interrupted"].as_bool() == Some(true) {
        out.push_str(
            "<p class=\"sub\"><b>interrupted</b>: sending stopped; what was not included within the grace is pending</p>",
        );
    }
    if let Some(note) = resolution_note(report) {
        let _ = writeln!(out, "<p class=\"sub\">{}</p>", esc(&note));
    }
    let sent = count(report, "sent");
    let included = count(report, words.included);
    out.push_str("<section class=\"cards\">");
    out.push_str(&card("sent", &sent.to_string(), false));
    out.push_str(&card(words.included, &format!("{included} / {sent}"), included < sent));
    out.push_str(&card("rejected", &count(report, "rejected").to_string(), count(report, "rejected") > 0));
    out.push_str(&card(words.lost, &count(report, words.lost).to_string(), count(report, words.lost) > 0));
    out.push_str(&card("inclusion p50 ms", &figure(&report[words.latency]["p50"]), false));
    out.push_str(&card("inclusion p99 ms", &figure(&report[words.latency]["p99"]), false));
    out.push_str("</section>");
    out.push_str(
        "<section><h2>Outcomes</h2><table><tr><th>outcome</th><th>transactions</th><th>meaning</th></tr>",
    );
    for (name, n, meaning) in outcomes(report) {
        let _ = write!(out, "<tr><td>{name}</td><td>{n}</td><td>{}</td></tr>", esc(&meaning));
    }
    let holds = report["identity_holds"].as_bool().unwrap_or(false);
    let _ = write!(
        out,
        "<tr><th>sum</th><th>{}</th><th>{}</th></tr></table>",
        final_rows(report).iter().filter(|(spec, _, _)| spec.in_identity).map(|(_, _, n)| n).sum::<u64>(),
        if holds { "equals sent" } else { "does NOT equal sent" }
    );
    if let Some(reasons) = report["rejected_by_reason"].as_object().filter(|r| !r.is_empty()) {
        out.push_str("<table><tr><th>rejected because</th><th>transactions</th></tr>");
        for (reason, n) in reasons {
            let _ = write!(out, "<tr><td>{}</td><td>{}</td></tr>", esc(reason), n.as_u64().unwrap_or(0));
        }
        out.push_str("</table>");
    }
    out.push_str("</section>");
    let _ = writeln!(
        out,
        "<section><h2>Sent vs included per second</h2>{}{}</section>",
        legend_items(&[("sent", 0), (words.included, 1)], ""),
        per_second_chart(report)
    );
    let _ = writeln!(
        out,
        "<section><h2>Latency by percentile</h2>{}{}</section>",
        legend_items(&[("send -> ack", 0), ("send -> inclusion", 1)], ""),
        latency_chart(report)
    );
    out.push_str("<section><h2>Latency (ms)</h2><table><tr><th></th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>");
    for (label, key) in latency_rows(report) {
        let row = &report[key];
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(label),
            figure(&row["p50"]),
            figure(&row["p90"]),
            figure(&row["p99"]),
            figure(&row["max"])
        );
    }
    out.push_str("</table></section>");
    out.push_str(&thresholds_html(&verdicts(report), None));
    out.push_str("<section><h2>Run</h2><table class=\"kv\">");
    for (name, value) in details(report) {
        let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(name), esc(&value));
    }
    out.push_str("</table></section>");
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// The report as Markdown: outcomes, latencies, thresholds and the run's settings.
pub fn render_tx_markdown(report: &Value) -> String {
    let mut out = format!("# {}\n\n", title(report));
    if report["interrupted"].as_bool() == Some(true) {
        out.push_str(
            "**Interrupted**: sending stopped; what was not included within the grace is pending.\n\n",
        );
    }
    if let Some(note) = resolution_note(report) {
        let _ = writeln!(out, "_{note}_\n");
    }
    out.push_str("| outcome | transactions | meaning |\n|---|---:|---|\n");
    let _ = writeln!(
        out,
        "| sent | {} | {:.1}/s over {:.3} s |",
        count(report, "sent"),
        report["sent_per_second"].as_f64().unwrap_or(0.0),
        report["send_seconds"].as_f64().unwrap_or(0.0)
    );
    for (name, n, meaning) in outcomes(report) {
        let _ = writeln!(out, "| {name} | {n} | {meaning} |");
    }
    let holds = report["identity_holds"].as_bool().unwrap_or(false);
    let _ = writeln!(
        out,
        "\n{} {} sent.\n",
        final_rows(report)
            .iter()
            .filter(|(spec, _, _)| spec.in_identity)
            .map(|(_, key, _)| *key)
            .collect::<Vec<_>>()
            .join(" + "),
        if holds { "equals" } else { "does **not** equal" }
    );
    if let Some(reasons) = report["rejected_by_reason"].as_object().filter(|r| !r.is_empty()) {
        out.push_str("| rejected because | transactions |\n|---|---:|\n");
        for (reason, n) in reasons {
            let _ = writeln!(out, "| {reason} | {} |", n.as_u64().unwrap_or(0));
        }
        out.push('\n');
    }
    out.push_str("| latency (ms) | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|\n");
    for (label, key) in latency_rows(report) {
        let row = &report[key];
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} |",
            figure(&row["p50"]),
            figure(&row["p90"]),
            figure(&row["p99"]),
            figure(&row["max"])
        );
    }
    let (after, key) = if TxChainWords::of(report) == SOLANA_WORDS {
        ("slots after send", "slots_after_send")
    } else {
        ("blocks after the head at send", "blocks_after_head_at_send")
    };
    let row = &report[key];
    let _ = writeln!(
        out,
        "| {after} | {} | | {} | {} |",
        number(&row["p50"]),
        number(&row["p99"]),
        number(&row["max"])
    );
    thresholds_markdown(&mut out, &verdicts(report));
    out.push_str("\n| setting | value |\n|---|---|\n");
    for (name, value) in details(report) {
        let _ = writeln!(out, "| {name} | {value} |");
    }
    out
}
