//! The overhead table of `rpcbench run URL --via-proxy`: the same workload run directly and
//! through an in-process [`crate::proxy::Proxy`], side by side per percentile and per method,
//! with the difference, and the proxy's own measured overhead (its `overhead` phase: time in
//! the proxy minus time waiting for the upstream) at the same percentiles.
//!
//! Built from the two runs' [`RunReport`]s and the proxy's [`ProxyStats`]; rendered as text,
//! Markdown or JSON.

use serde::Serialize;

use crate::proxy::ProxyStats;
use crate::report::{LatencyReport, RunReport};

/// The percentiles of the table (then `max`).
pub const OVERHEAD_PERCENTILES: [(&str, f64); 4] =
    [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)];

/// One line of the table: a method (or `all`) at one percentile, microseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverheadRow {
    /// The method, or `all` for the whole run.
    pub method: String,
    /// `p50`, `p90`, `p99`, `p99.9` or `max`.
    pub percentile: String,
    /// The direct run's latency.
    pub direct_us: u64,
    /// The proxied run's latency.
    pub proxied_us: u64,
    /// Proxied minus direct.
    pub difference_us: i64,
    /// The proxy's own overhead at that percentile (its histogram, not a difference), when
    /// it saw the method.
    pub proxy_overhead_us: Option<f64>,
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverheadReport {
    /// The target, redacted.
    pub target: String,
    /// Requests with an outcome, direct and proxied.
    pub direct_requests: u64,
    /// Requests with an outcome through the proxy.
    pub proxied_requests: u64,
    /// Failed requests, direct and proxied.
    pub direct_errors: u64,
    /// Failed requests through the proxy.
    pub proxied_errors: u64,
    /// `all` first, then each method the two runs share, by name.
    pub rows: Vec<OverheadRow>,
}

fn latency_at(latency: &LatencyReport, percentile: &str) -> u64 {
    if percentile == "max" {
        latency.max_us
    } else {
        latency.percentiles.get(percentile).copied().unwrap_or(0)
    }
}

impl OverheadReport {
    /// The table of a direct run, the same run through the proxy, and the proxy's figures.
    pub fn new(direct: &RunReport, proxied: &RunReport, proxy: &ProxyStats) -> Self {
        let mut rows = Vec::new();
        let total = proxy.total();
        let mut add = |method: &str,
                       direct: &LatencyReport,
                       proxied: &LatencyReport,
                       own: Option<&hdrhistogram::Histogram<u64>>| {
            let names = OVERHEAD_PERCENTILES.iter().map(|(name, q)| (*name, Some(*q))).chain([("max", None)]);
            for (percentile, quantile) in names {
                let (direct_us, proxied_us) =
                    (latency_at(direct, percentile), latency_at(proxied, percentile));
                let proxy_overhead_us = own.filter(|h| !h.is_empty()).map(|h| match quantile {
                    Some(q) => h.value_at_quantile(q) as f64 / 1000.0,
                    None => h.max() as f64 / 1000.0,
                });
                rows.push(OverheadRow {
                    method: method.to_string(),
                    percentile: percentile.to_string(),
                    direct_us,
                    proxied_us,
                    difference_us: proxied_us as i64 - direct_us as i64,
                    proxy_overhead_us,
                });
            }
        };
        add("all", &direct.latency, &proxied.latency, total.phase("overhead"));
        let mut methods: Vec<_> = direct.methods.iter().collect();
        methods.sort_by(|a, b| a.name.cmp(&b.name));
        for method in methods {
            let Some(other) = proxied.methods.iter().find(|m| m.name == method.name) else { continue };
            let own = proxy.methods.get(&method.method).and_then(|h| h.phase("overhead"));
            add(&method.name, &method.latency, &other.latency, own);
        }
        OverheadReport {
            target: direct.target.clone(),
            direct_requests: direct.requests.total,
            proxied_requests: proxied.requests.total,
            direct_errors: direct.requests.errors,
            proxied_errors: proxied.requests.errors,
            rows,
        }
    }

    fn own(row: &OverheadRow) -> String {
        row.proxy_overhead_us.map_or_else(|| "-".to_string(), |us| format!("{us:.1}"))
    }

    /// A text table.
    pub fn render_text(&self) -> String {
        let mut text = format!(
            "Proxy overhead for {} (microseconds; direct {} requests, {} errors; proxied {} requests, {} errors)\n",
            self.target, self.direct_requests, self.direct_errors, self.proxied_requests, self.proxied_errors
        );
        text.push_str(&format!(
            "{:<28} {:<6} {:>10} {:>10} {:>10} {:>14}\n",
            "method", "pct", "direct", "proxied", "difference", "proxy overhead"
        ));
        for row in &self.rows {
            text.push_str(&format!(
                "{:<28} {:<6} {:>10} {:>10} {:>+10} {:>14}\n",
                row.method,
                row.percentile,
                row.direct_us,
                row.proxied_us,
                row.difference_us,
                Self::own(row)
            ));
        }
        text
    }

    /// A Markdown table.
    pub fn render_markdown(&self) -> String {
        let mut text = format!(
            "## Proxy overhead for {}\n\nDirect: {} requests, {} errors. Proxied: {} requests, {} errors. Microseconds.\n\n",
            crate::util::printable::markdown_code(&self.target), self.direct_requests, self.direct_errors, self.proxied_requests, self.proxied_errors
        );
        text.push_str("| method | percentile | direct | proxied | difference | proxy overhead |\n");
        text.push_str("|---|---|---:|---:|---:|---:|\n");
        for row in &self.rows {
            text.push_str(&format!(
                "| {} | {} | {} | {} | {:+} | {} |\n",
                crate::util::printable::markdown(&row.method),
                row.percentile,
                row.direct_us,
                row.proxied_us,
                row.difference_us,
                Self::own(row)
            ));
        }
        text
    }

    /// The table as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}
