//! The text of a race between feeds (`subscribe --race`): per kind, each endpoint's first-seen
//! share and delay behind the first, then each endpoint's verdict against the first.

use std::fmt::Write as _;

use crate::subscribe::race::RaceReport;

/// A race as text.
pub fn render_race_text(report: &RaceReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "rpcbench {} race between {} over {:.2}s (tie band {:.2} ms)",
        env!("CARGO_PKG_VERSION"),
        report.endpoints.join(", "),
        report.duration_us as f64 / 1e6,
        report.tie_us as f64 / 1e3
    );
    for kind in &report.kinds {
        let _ = writeln!(out, "  {}: {} items, {} seen by all", kind.kind, kind.items, kind.seen_by_all);
        let _ = writeln!(
            out,
            "    {:<16} {:>8} {:>12} {:>10} {:>10} {:>10}",
            "endpoint", "seen", "first-seen", "p50 behind", "p90", "p99"
        );
        for row in &kind.rows {
            let _ = writeln!(
                out,
                "    {:<16} {:>8} {:>11.1}% {:>8.2}ms {:>8.2}ms {:>8.2}ms",
                row.endpoint,
                row.seen,
                row.first_share * 100.0,
                row.delay_p50_us as f64 / 1e3,
                row.delay_p90_us as f64 / 1e3,
                row.delay_p99_us as f64 / 1e3
            );
            if let Some(failure) = &row.failure {
                let _ =
                    writeln!(out, "      {}: {}", row.endpoint, crate::util::printable::one_line(failure));
            }
        }
        for verdict in &kind.verdicts {
            let interval = verdict
                .interval_us
                .map_or("n/a".to_string(), |(low, high)| format!("[{:.2}, {:.2}] ms", low / 1e3, high / 1e3));
            let _ = writeln!(
                out,
                "    {} against {}: {} (mean {:+.2} ms, 95% interval {interval}, {} items)",
                verdict.endpoint,
                verdict.against,
                verdict.judgement,
                verdict.mean_us / 1e3,
                verdict.items
            );
        }
    }
    out
}
