//! The CSV report: one row per method of each run, every figure in plain units (latencies in
//! microseconds, memory and disk in bytes), for spreadsheets and scripts. RFC 4180 quoting.
//! The resources of the target process(es) and of the generator belong to the whole run and
//! repeat on each of its method rows; a figure that was not measured is an empty cell.

use std::fmt::Write;

use super::tables::method_rows;
use super::PERCENTILES;
use crate::results::SavedRun;

/// The columns, in order.
pub const CSV_COLUMNS: &[&str] = &[
    "run",
    "target",
    "method",
    "mode",
    "connections",
    "rate",
    "started_at",
    "elapsed_s",
    "interrupted",
    "shards",
    "requests",
    "ok",
    "errors",
    "req_per_s",
    "ok_pct",
    "mean_us",
    "p50_us",
    "p75_us",
    "p90_us",
    "p95_us",
    "p99_us",
    "p99.9_us",
    "p99.99_us",
    "max_us",
    "bytes_received",
    "mb_per_s",
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

/// The text of a figure that may not have been measured: empty if not.
fn optional<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

fn field(text: &str) -> String {
    let text = crate::printable::escape_controls(text);
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Renders the runs as CSV with a header line.
pub fn render_csv(runs: &[SavedRun]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", CSV_COLUMNS.join(","));
    for run in runs {
        write_rows(&mut out, run);
    }
    out
}

fn write_rows(out: &mut String, run: &SavedRun) {
    for row in method_rows(std::slice::from_ref(run)) {
        let report = &run.report;
        let elapsed = run.record.elapsed.as_secs_f64();
        let bytes_received: u64 = run.methods.get(&row.method).map_or(0, |t| t.bytes_received);
        let mut cells = vec![
            field(&row.run),
            field(&report.target),
            field(&row.method),
            report.load.mode.clone(),
            report.load.connections.map(|c| c.to_string()).unwrap_or_default(),
            report.load.rate.map(|r| r.to_string()).unwrap_or_default(),
            run.file.started_at.clone(),
            format!("{elapsed:.6}"),
            report.interrupted.to_string(),
            run.file.shards().to_string(),
            row.requests.to_string(),
            row.ok.to_string(),
            row.errors.to_string(),
            format!("{:.3}", row.rate),
            format!("{:.3}", row.ok_percent()),
            row.latency.mean_us.to_string(),
        ];
        for (name, _) in PERCENTILES {
            cells.push(row.latency.percentile(name).to_string());
        }
        cells.push(row.latency.max_us.to_string());
        cells.push(bytes_received.to_string());
        cells.push(format!("{:.6}", if elapsed > 0.0 { bytes_received as f64 / elapsed / 1e6 } else { 0.0 }));
        let target = report.target_resources.as_ref();
        cells.push(optional(target.map(|t| format!("{:.2}", t.cpu_percent_avg))));
        cells.push(optional(target.map(|t| format!("{:.2}", t.cpu_percent_peak))));
        cells.push(optional(target.map(|t| t.rss_bytes_avg)));
        cells.push(optional(target.map(|t| t.rss_bytes_peak)));
        cells.push(optional(target.and_then(|t| t.disk_read_bytes)));
        cells.push(optional(target.and_then(|t| t.disk_write_bytes)));
        cells.push(optional(target.and_then(|t| t.tcp_connections_avg).map(|n| format!("{n:.2}"))));
        cells.push(optional(target.and_then(|t| t.tcp_connections_peak)));
        cells.push(optional(report.generator.cpu_percent.map(|p| format!("{p:.2}"))));
        cells.push(optional(report.generator.peak_rss_bytes));
        let _ = writeln!(out, "{}", cells.join(","));
    }
}
