//! The CSV report: one row per method of each run, every figure in plain units (latencies in
//! microseconds, memory and disk in bytes), for spreadsheets and scripts. RFC 4180 quoting.
//! The resources of the target process(es) and of the generator belong to the whole run and
//! repeat on each of its method rows; a figure that was not measured is an empty cell.

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
    "bytes_per_response",
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

/// Writes the header and the rows as CSV with the `csv` crate: RFC 4180 quoting where a cell
/// needs it, `\n` line ends, a cell's control characters (server text can carry them)
/// escaped first, as everywhere rpcbench shows such text, and a cell a spreadsheet would run as
/// a formula (`=`, `+`, `-`, `@` first) opened with `'`.
pub(crate) fn csv_text(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut writer =
        ::csv::WriterBuilder::new().terminator(::csv::Terminator::Any(b'\n')).from_writer(Vec::new());
    // Writing into memory cannot fail.
    let _ = writer.write_record(header);
    for row in rows {
        let _ = writer.write_record(row.iter().map(|cell| {
            let shown = crate::util::printable::escape_controls(cell);
            crate::util::printable::spreadsheet_cell(&shown).into_owned()
        }));
    }
    let bytes = writer.into_inner().map_err(|err| err.into_error()).unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// Renders the runs as CSV with a header line.
pub fn render_csv(runs: &[SavedRun]) -> String {
    let mut rows = Vec::new();
    for run in runs {
        add_rows(&mut rows, run);
    }
    csv_text(CSV_COLUMNS, &rows)
}

fn add_rows(rows: &mut Vec<Vec<String>>, run: &SavedRun) {
    for row in method_rows(std::slice::from_ref(run)) {
        let report = &run.report;
        let elapsed = run.record.elapsed.as_secs_f64();
        let totals = run.methods.get(&row.method);
        let bytes_received: u64 = totals.map_or(0, |t| t.bytes_received);
        // Responses: those with an HTTP status, or (WebSocket) every request answered.
        let responses: u64 = totals.map_or(0, |t| super::responses_of(&t.status_counts, &t.counts));
        let mut cells = vec![
            row.run.clone(),
            report.target.clone(),
            row.method.clone(),
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
        cells.push(optional(
            (responses > 0).then(|| format!("{:.1}", bytes_received as f64 / responses as f64)),
        ));
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
        rows.push(cells);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_text_formula_reaches_a_spreadsheet_as_text() {
        let rows =
            vec![vec!["=HYPERLINK(\"http://x\",\"y\")".to_string(), "@cmd".to_string(), "-1.5".to_string()]];
        assert_eq!(
            csv_text(&["a", "b", "c"], &rows),
            "a,b,c\n\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",'@cmd,-1.5\n"
        );
    }

    #[test]
    fn cells_are_quoted_only_where_rfc_4180_needs_it() {
        let rows = vec![
            vec!["plain".to_string(), "a,b".to_string(), "say \"hi\"".to_string(), String::new()],
            vec!["two\nlines".to_string(), "bell\u{7}".to_string(), "1.5".to_string(), "x".to_string()],
        ];
        assert_eq!(
            csv_text(&["w", "x", "y", "z"], &rows),
            "w,x,y,z\nplain,\"a,b\",\"say \"\"hi\"\"\",\n\"two\nlines\",bell\\u0007,1.5,x\n"
        );
    }
}
