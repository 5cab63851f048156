//! What a proxy measured and counted: per method, the phases of each request's time in HDR
//! histograms, the upstream's failures by cause, injected faults; and their Prometheus
//! collector.

use std::collections::BTreeMap;
use std::fmt;

use hdrhistogram::Histogram;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;
use serde::Serialize;

use crate::metrics::LATENCY_BUCKETS_SECONDS;

/// Why the upstream gave no usable answer (the client got a 502).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UpstreamFailure {
    /// The connection was refused or could not be opened.
    Connect,
    /// No complete answer within the upstream timeout (connecting included).
    Timeout,
    /// No upstream connection came free within the queue timeout (the pool was busy with
    /// other requests, perhaps slow ones of another client).
    QueueTimeout,
    /// The upstream closed the connection early or sent something that is not HTTP/1.1, or a
    /// body over the limit.
    BadResponse,
}

impl UpstreamFailure {
    /// The label of this cause in reports and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamFailure::Connect => "connect",
            UpstreamFailure::Timeout => "timeout",
            UpstreamFailure::QueueTimeout => "queue_timeout",
            UpstreamFailure::BadResponse => "bad_response",
        }
    }
}

/// The phases a request's time in the proxy is split into.
pub const PHASES: [&str; 4] = ["read", "upstream", "write", "overhead"];

/// One method's histograms (nanoseconds), one per [`PHASES`] entry, with exact sums.
#[derive(Debug, Clone)]
pub struct PhaseHistograms {
    /// Per phase, in [`PHASES`] order.
    pub phases: [Histogram<u64>; 4],
    /// Per phase, the sum of the recorded values (nanoseconds).
    pub sums_ns: [u64; 4],
}

impl PhaseHistograms {
    pub(super) fn new() -> Self {
        let histogram = || Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
        PhaseHistograms { phases: [histogram(), histogram(), histogram(), histogram()], sums_ns: [0; 4] }
    }

    pub(super) fn record(&mut self, values_ns: [u64; 4]) {
        for ((histogram, sum), value) in self.phases.iter_mut().zip(&mut self.sums_ns).zip(values_ns) {
            histogram.saturating_record(value.max(1));
            *sum = sum.saturating_add(value);
        }
    }

    /// The requests recorded.
    pub fn count(&self) -> u64 {
        self.phases[0].len()
    }

    /// The histogram of one phase (`read`, `upstream`, `write`, `overhead`).
    pub fn phase(&self, name: &str) -> Option<&Histogram<u64>> {
        PHASES.iter().position(|phase| *phase == name).map(|at| &self.phases[at])
    }
}

/// What a proxy measured and counted.
#[derive(Debug, Clone, Default)]
pub struct ProxyStats {
    /// Per method key (a method name, [`BATCH_KEY`](super::BATCH_KEY) or [`UNKNOWN_KEY`](super::UNKNOWN_KEY)): the answered requests'
    /// phases (502 answers included, dropped ones not).
    pub methods: BTreeMap<String, PhaseHistograms>,
    /// Requests relayed to the upstream (whatever came back).
    pub requests: u64,
    /// Requests answered 502, by cause.
    pub upstream_failures: BTreeMap<UpstreamFailure, u64>,
    /// Requests answered with an injected JSON-RPC error.
    pub injected_errors: u64,
    /// Connections closed without an answer by the drop knob.
    pub dropped: u64,
    /// Entries the record file could not take (a write failed).
    pub record_failures: u64,
}

impl ProxyStats {
    /// All methods' phases merged.
    pub fn total(&self) -> PhaseHistograms {
        let mut total = PhaseHistograms::new();
        for histograms in self.methods.values() {
            for at in 0..4 {
                let _ = total.phases[at].add(&histograms.phases[at]);
                total.sums_ns[at] = total.sums_ns[at].saturating_add(histograms.sums_ns[at]);
            }
        }
        total
    }

    /// A text table: per method and phase, the count and p50/p90/p99/p99.9/max in
    /// microseconds, then the counters.
    pub fn render_text(&self) -> String {
        let mut text = String::from("Proxy overhead per request (microseconds)\n");
        text.push_str(&format!(
            "{:<28} {:<9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
            "method", "phase", "count", "p50", "p90", "p99", "p99.9", "max"
        ));
        let total = self.total();
        let rows = self.methods.iter().map(|(name, h)| (name.as_str(), h)).chain([("all", &total)]);
        // `read` spans the reads that brought a request (its first bytes to the end of its
        // body); a request that came whole in one read has nothing to measure there, so while
        // every request did, the phase says nothing and is left out.
        let read_measured = total.sums_ns[0] > 0;
        for (name, histograms) in rows {
            for (phase, histogram) in PHASES.iter().zip(&histograms.phases) {
                if *phase == "read" && !read_measured {
                    continue;
                }
                let us = |q: f64| histogram.value_at_quantile(q) as f64 / 1000.0;
                // A client's method name on one line: its line feeds cannot forge a row.
                text.push_str(&format!(
                    "{:<28} {:<9} {:>9} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}\n",
                    crate::util::printable::one_line(name),
                    phase,
                    histogram.len(),
                    us(0.5),
                    us(0.9),
                    us(0.99),
                    us(0.999),
                    histogram.max() as f64 / 1000.0
                ));
            }
        }
        if !read_measured && total.count() > 0 {
            text.push_str("read: not shown, every request arrived whole in one read\n");
        }
        text.push_str(&format!("relayed: {}\n", self.requests));
        for (cause, count) in &self.upstream_failures {
            text.push_str(&format!("upstream failures ({}): {count}\n", cause.as_str()));
        }
        text.push_str(&format!(
            "injected errors: {}\ndropped connections: {}\n",
            self.injected_errors, self.dropped
        ));
        if self.record_failures > 0 {
            text.push_str(&format!("record write failures: {}\n", self.record_failures));
        }
        text
    }

    /// The figures as JSON: per method and phase the count and percentiles in microseconds.
    pub fn to_json(&self) -> serde_json::Value {
        let summary = |histograms: &PhaseHistograms| {
            let mut phases = serde_json::Map::new();
            for (phase, histogram) in PHASES.iter().zip(&histograms.phases) {
                let us = |q: f64| histogram.value_at_quantile(q) as f64 / 1000.0;
                phases.insert(
                    phase.to_string(),
                    serde_json::json!({
                        "count": histogram.len(),
                        "p50_us": us(0.5), "p90_us": us(0.9), "p99_us": us(0.99), "p999_us": us(0.999),
                        "max_us": histogram.max() as f64 / 1000.0,
                    }),
                );
            }
            serde_json::Value::Object(phases)
        };
        let methods: serde_json::Map<String, serde_json::Value> =
            self.methods.iter().map(|(name, h)| (name.clone(), summary(h))).collect();
        serde_json::json!({
            "methods": methods,
            "all": summary(&self.total()),
            "relayed": self.requests,
            "upstream_failures": self.upstream_failures.iter()
                .map(|(cause, count)| (cause.as_str().to_string(), serde_json::json!(count)))
                .collect::<serde_json::Map<_, _>>(),
            "injected_errors": self.injected_errors,
            "dropped": self.dropped,
            "record_failures": self.record_failures,
        })
    }

    /// The figures in the Prometheus text format (prefix `rpcbench_proxy_`).
    pub fn render_prometheus(&self) -> String {
        crate::metrics::render_collector("rpcbench_proxy", StatsCollector(self.clone()))
    }
}

/// Encodes one [`ProxyStats`] at scrape time.
#[derive(Debug)]
pub(super) struct StatsCollector(ProxyStats);

impl Collector for StatsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let stats = &self.0;
        {
            let mut metric = encoder.encode_descriptor(
                "phase",
                "Time of each phase of a request in the proxy (read, upstream, write, overhead = total minus upstream).",
                Some(&Unit::Seconds),
                MetricType::Histogram,
            )?;
            for (method, histograms) in &stats.methods {
                for (at, phase) in PHASES.iter().enumerate() {
                    let histogram = &histograms.phases[at];
                    // The encoder adds the buckets up: each gets the values above the one before.
                    let mut below = 0;
                    let buckets: Vec<(f64, u64)> = LATENCY_BUCKETS_SECONDS
                        .iter()
                        .map(|bound| (*bound, histogram.count_between(0, (bound * 1e9) as u64)))
                        .chain([(f64::INFINITY, histogram.len())])
                        .map(|(bound, cumulative)| {
                            let count = cumulative.saturating_sub(below);
                            below = below.max(cumulative);
                            (bound, count)
                        })
                        .collect();
                    let labels = [("phase", *phase), ("method", method.as_str())];
                    metric.encode_family(&labels)?.encode_histogram::<NoLabelSet>(
                        histograms.sums_ns[at] as f64 / 1e9,
                        histogram.len(),
                        &buckets,
                        None,
                    )?;
                }
            }
        }
        {
            let mut metric = encoder.encode_descriptor(
                "relayed_requests",
                "Requests relayed to the upstream.",
                None,
                MetricType::Counter,
            )?;
            metric.encode_counter::<NoLabelSet, _, u64>(&stats.requests, None)?;
        }
        {
            let mut metric = encoder.encode_descriptor(
                "upstream_failures",
                "Requests answered 502 because the upstream failed, by cause.",
                None,
                MetricType::Counter,
            )?;
            for (cause, count) in &stats.upstream_failures {
                let labels = [("cause", cause.as_str())];
                metric.encode_family(&labels)?.encode_counter::<NoLabelSet, _, u64>(count, None)?;
            }
        }
        {
            let mut metric = encoder.encode_descriptor(
                "faults",
                "Injected faults by kind (error, drop).",
                None,
                MetricType::Counter,
            )?;
            for (kind, count) in [("error", stats.injected_errors), ("drop", stats.dropped)] {
                metric
                    .encode_family(&[("kind", kind)])?
                    .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
            }
        }
        Ok(())
    }
}
