//! The report of a subscription run (`rpcbench subscribe`): its figures as text and JSON
//! (`schema/subscribe.schema.json`), and the thresholds judged against it. The run itself is
//! `crate::subscribe`.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::{LatencyReport, ThresholdResult};
use crate::conditions::{self, ConditionError, Limit, MetricWord, Operator, Quantity, Vocabulary};

/// Per-second figures.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SubscribeSecond {
    /// Seconds since the subscriptions were requested.
    pub second: u64,
    /// Notifications received in that second.
    pub notifications: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Subscriptions active at the end of the second.
    pub active: u64,
    /// The largest fan-out lag seen in that second, microseconds.
    pub lag_max_us: u64,
    /// The p99 lag behind production of the items that arrived in that second, microseconds
    /// (when they carry a production time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub produced_lag_p99_us: Option<u64>,
}

/// Whether the feed kept up under the run's load: the p99 lag behind production in the first
/// whole second that had items, against the last whole second.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LagGrowth {
    /// The first second's index.
    pub first_second: u64,
    /// Its p99 lag behind production, microseconds.
    pub first_p99_us: u64,
    /// The last whole second's index.
    pub last_second: u64,
    /// Its p99 lag behind production, microseconds.
    pub last_p99_us: u64,
    /// The last second's p99 is within [`KEEPS_UP_FACTOR`] times the first's plus
    /// [`KEEPS_UP_SLACK_US`]: the lag did not grow with time.
    pub keeps_up: bool,
}

/// How much a feed's p99 lag may grow from the first second to the last and still keep up.
pub const KEEPS_UP_FACTOR: u64 = 2;
/// Growth under this many microseconds is never falling behind (timer and scheduling noise).
pub const KEEPS_UP_SLACK_US: u64 = 10_000;

impl LagGrowth {
    /// Judges the per-second p99 lags of `series` over the whole seconds before `elapsed_us`;
    /// `None` with fewer than two such seconds that have a lag.
    pub fn from_series(series: &[SubscribeSecond], elapsed_us: u64) -> Option<LagGrowth> {
        let whole = elapsed_us / 1_000_000;
        let mut lags = series
            .iter()
            .filter(|point| point.second < whole)
            .filter_map(|point| point.produced_lag_p99_us.map(|p99| (point.second, p99)));
        let (first_second, first_p99_us) = lags.next()?;
        let (last_second, last_p99_us) = lags.next_back()?;
        let keeps_up = last_p99_us <= first_p99_us.saturating_mul(KEEPS_UP_FACTOR) + KEEPS_UP_SLACK_US;
        Some(LagGrowth { first_second, first_p99_us, last_second, last_p99_us, keeps_up })
    }
}

/// Everything a subscription run reports.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SubscribeReport {
    /// Layout version.
    pub subscribe_report_version: u32,
    /// The tool that made it.
    pub tool: String,
    /// The target URL, secrets redacted.
    pub target: String,
    /// The subscriptions of each subscriber, by kind.
    pub kinds: Vec<String>,
    /// When the run started (RFC 3339): with the figures, the run's identity, so that `merge`
    /// refuses the same run twice.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub started_at: String,
    /// The identities of the runs merged into this report (empty for one run's own report).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<String>,
    /// Subscribers.
    pub subscribers: u64,
    /// Subscriptions in all, and per socket.
    pub subscriptions: u64,
    /// Subscriptions per socket.
    pub subs_per_socket: u64,
    /// Requested duration, microseconds.
    pub duration_us: u64,
    /// Measured time, microseconds.
    pub elapsed_us: u64,
    /// Stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Subscriptions the server confirmed (each once, however often it was re-subscribed
    /// after a reconnect; the subscribe latency counts every confirmation).
    pub subscribed: u64,
    /// Subscribe requests answered with an error, by JSON-RPC code (`invalid answer`: not a
    /// subscription id; `id too long`: an id over the kept size).
    pub subscribe_errors: BTreeMap<String, u64>,
    /// The first refusal, `KIND: CODE MESSAGE` as the server said it (escaped, redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_subscribe_error: Option<String>,
    /// Subscribe request to subscription id.
    pub subscribe_latency: LatencyReport,
    /// Subscriptions active when the run ended.
    pub active_at_end: u64,
    /// Notifications received.
    pub notifications: u64,
    /// Of the notifications, those that arrived after the measured time, while each socket
    /// unsubscribed: judged for gaps, duplicates and reorders, not in the rates and lags.
    #[serde(default)]
    pub notifications_after_end: u64,
    /// Notifications per second over the measured time.
    pub notifications_per_sec: f64,
    /// Per subscription and second, on average.
    pub notifications_per_sub_per_sec: f64,
    /// Bytes of notifications.
    pub bytes: u64,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// Bytes per second per subscription, on average.
    #[serde(default)]
    pub bytes_per_sub_per_sec: f64,
    /// Fan-out lag: from the earliest arrival of an item at any subscriber to its arrival here.
    pub lag: LatencyReport,
    /// Production lag: arrival minus the item's production time, when it carries one.
    pub produced_lag: Option<LatencyReport>,
    /// `exact` (the mock's `rpcbenchProducedAt`) or `seconds` (a block header's timestamp).
    pub produced_lag_precision: Option<String>,
    /// Items produced after they arrived, by our clock (the node's clock runs ahead): not in
    /// the production lag.
    #[serde(default)]
    pub produced_clock_ahead: u64,
    /// Block numbers or slots never received, over every subscription: those missing between
    /// two a subscription received, plus [`SubscribeReport::gaps_at_edges`].
    pub gaps: u64,
    /// Of the gaps, those before a subscription's first notification or after its last one:
    /// items that other subscribers of the same kind received in that time.
    #[serde(default)]
    pub gaps_at_edges: u64,
    /// Whether any kind of the run is a sequence (blocks, slots) whose gaps are judged.
    #[serde(default = "judged")]
    pub gaps_apply: bool,
    /// Subscriptions that went silent: confirmed and never closed, they received nothing of the
    /// last items other subscribers of their kind received (at least
    /// [`SILENT_AFTER_ITEMS`]), as when a server ends a subscription without a word.
    #[serde(default)]
    pub went_silent: u64,
    /// Subscriptions the server confirmed ending when the run ended (each socket unsubscribes
    /// and reads what was sent before the answer, so a drop just before the end is a gap too).
    #[serde(default)]
    pub unsubscribed: u64,
    /// Unsubscribe requests refused or not answered in time.
    #[serde(default)]
    pub unsubscribe_failed: u64,
    /// Items received twice by one subscription.
    pub duplicates: u64,
    /// Items received after a later one.
    pub reorders: u64,
    /// Whether any kind of the run has an order on the wire (reorders judged).
    #[serde(default = "judged")]
    pub reorders_apply: bool,
    /// Items of a numbered kind whose number is missing or does not parse (not judged).
    #[serde(default)]
    pub unnumbered: u64,
    /// Notifications for a subscription id nobody holds, and answers to no request.
    pub unknown_subscription: u64,
    /// Messages that were not JSON.
    pub not_json: u64,
    /// Sockets the server closed, by close code (1006: without a close frame).
    pub closed_by_server: BTreeMap<String, u64>,
    /// Sockets rpcbench closed because the server stopped reading (the answers to its PINGs
    /// backed up).
    #[serde(default)]
    pub closed_not_reading: u64,
    /// Sockets opened.
    pub sockets_opened: u64,
    /// Sockets that could not be opened (connect or upgrade failed).
    pub connect_errors: u64,
    /// Why the first socket that could not be opened was not (such as a refused upgrade's
    /// HTTP status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_connect_error: Option<String>,
    /// Re-opened sockets (`--reconnect`).
    pub reconnects: u64,
    /// Per kind: notifications, gaps, duplicates.
    pub per_kind: Vec<KindFigures>,
    /// Per second.
    pub series: Vec<SubscribeSecond>,
    /// Whether the lag behind production grew from the first second to the last (the feed
    /// fell behind under the load) or stayed (it kept up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_growth: Option<LagGrowth>,
    /// Per-slot stage timings (`geyser-stages`): download, replay, processed -> confirmed,
    /// confirmed -> finalized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_stages: Option<super::slot_stages::SlotStagesReport>,
    /// Items replayed after a reconnect that resubscribed `from_slot` (backfill): judged for
    /// gaps and duplicates, counted, never in the lags or rates.
    #[serde(default)]
    pub backfill: u64,
    /// Resubscriptions `from_slot` the server refused (then subscribed again without it).
    #[serde(default)]
    pub from_slot_refused: u64,
    /// Connections that received nothing for the idle timeout (`--idle-timeout`): closed by
    /// rpcbench and counted as stalls.
    #[serde(default)]
    pub stalls: u64,
    /// The latency histograms, losslessly (base64 of HdrHistogram's V2 encoding), so that the
    /// HTML page draws the percentile curves and a saved report can be drawn again.
    #[serde(default)]
    pub histograms: SubscribeHistograms,
    /// Threshold verdicts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdResult>,
}

/// A subscription run's histograms, each base64 of HdrHistogram's V2 encoding (microseconds);
/// `None` when nothing was recorded.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SubscribeHistograms {
    /// Subscribe latency.
    pub subscribe: Option<String>,
    /// Fan-out lag.
    pub lag: Option<String>,
    /// Lag behind production.
    pub produced_lag: Option<String>,
}

/// One kind's figures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KindFigures {
    /// The kind.
    pub kind: String,
    /// Its subscriptions.
    pub subscriptions: u64,
    /// Of them, those the server confirmed.
    #[serde(default)]
    pub subscribed: u64,
    /// Their notifications.
    pub notifications: u64,
    /// Their gaps.
    pub gaps: u64,
    /// Their duplicates.
    pub duplicates: u64,
    /// Their reorders.
    pub reorders: u64,
    /// Their items whose number did not parse.
    #[serde(default)]
    pub unnumbered: u64,
    /// Whether its gaps are judged (a sequence).
    #[serde(default = "judged")]
    pub gaps_apply: bool,
    /// Whether its reorders are judged (an order on the wire).
    #[serde(default = "judged")]
    pub reorders_apply: bool,
}

/// A figure of `latency`, microseconds: `n/a` when it has no samples (a percentile of nothing
/// is not 0).
pub(crate) fn micros_or_na(latency: &LatencyReport, value: u64) -> String {
    if latency.count == 0 {
        "n/a".into()
    } else {
        crate::util::units::format_micros(value as f64)
    }
}

/// A lag behind production at the resolution its source allows: whole-second timestamps give
/// whole seconds, never 10 µs.
pub(crate) fn produced_micros(value: u64, precision: &str) -> String {
    if precision == "seconds" {
        format!("{}s", value.saturating_add(500_000) / 1_000_000)
    } else {
        crate::util::units::format_micros(value as f64)
    }
}

/// Reports written before a kind said whether its gaps and reorders apply judged both.
fn judged() -> bool {
    true
}

/// A count, or `n/a` when it does not apply.
pub(crate) fn count_or_na(count: u64, applies: bool) -> String {
    if applies {
        count.to_string()
    } else {
        "n/a".into()
    }
}

/// The items a subscription must have missed at its end to count as gone silent.
pub const SILENT_AFTER_ITEMS: u64 = 3;

impl SubscribeReport {
    /// The identities of the runs in this report: its own (start time and figures), or the
    /// parts' of a merged one.
    pub fn run_identities(&self) -> Vec<String> {
        if !self.merged_from.is_empty() {
            return self.merged_from.clone();
        }
        let started = if self.started_at.is_empty() { "at an unknown time" } else { &self.started_at };
        vec![format!(
            "started {started} ({} us, {} notifications, {} bytes, {} sockets)",
            self.elapsed_us, self.notifications, self.bytes, self.sockets_opened
        )]
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        let json = serde_json::to_string_pretty(self).expect("a report always serializes");
        crate::util::printable::escape_controls(&json).into_owned()
    }

    /// Judges `thresholds` (`lag p99 < 500ms`, `produced-lag p50 < 2s`, `subscribe p99 < 100ms`,
    /// `gaps < 1`, `duplicates < 1`, `reorders < 1`) and keeps the verdicts; whether all passed.
    pub fn judge(&mut self, thresholds: &[SubscribeThreshold]) -> bool {
        self.thresholds = thresholds.iter().map(|threshold| threshold.judge(self)).collect();
        self.thresholds.iter().all(|result| result.passed)
    }

    /// The text report.
    pub fn render_text(&self) -> String {
        use crate::util::units::format_micros;
        use std::fmt::Write as _;
        let mut out = String::new();
        let us = |v: u64| format_micros(v as f64);
        let of = micros_or_na;
        let _ = writeln!(out, "{} subscribe {} against {}", self.tool, self.kinds.join(", "), self.target);
        let _ = writeln!(
            out,
            "{} subscriber(s), {} subscription(s), {} per socket, {}",
            self.subscribers,
            self.subscriptions,
            self.subs_per_socket,
            us(self.duration_us)
        );
        if self.interrupted {
            let _ = writeln!(out, "INTERRUPTED: figures cover the {} before the stop", us(self.elapsed_us));
        }
        let _ = writeln!(
            out,
            "  Subscribed: {} of {} (errors {}), active at the end {}; subscribe latency p50 {} p99 {} max {}",
            self.subscribed,
            self.subscriptions,
            self.subscribe_errors.values().sum::<u64>(),
            self.active_at_end,
            of(&self.subscribe_latency, self.subscribe_latency.percentile("p50")),
            of(&self.subscribe_latency, self.subscribe_latency.percentile("p99")),
            of(&self.subscribe_latency, self.subscribe_latency.max_us)
        );
        if let Some(reason) = &self.first_subscribe_error {
            let _ = writeln!(out, "  First subscribe error: {reason}");
        }
        let _ = writeln!(
            out,
            "  Notifications: {} ({:.2}/s, {:.3}/s per subscription), {:.2} KB/s; {} of them while unsubscribing at the end (judged, not in the rates)",
            self.notifications,
            self.notifications_per_sec,
            self.notifications_per_sub_per_sec,
            self.bytes_per_sec / 1e3,
            self.notifications_after_end
        );
        let _ = writeln!(
            out,
            "  Fan-out lag (from the first subscriber's arrival): p50 {} p90 {} p99 {} max {}",
            of(&self.lag, self.lag.percentile("p50")),
            of(&self.lag, self.lag.percentile("p90")),
            of(&self.lag, self.lag.percentile("p99")),
            of(&self.lag, self.lag.max_us)
        );
        if let (Some(lag), Some(precision)) = (&self.produced_lag, &self.produced_lag_precision) {
            let shown = |v: u64| produced_micros(v, precision);
            let _ = writeln!(
                out,
                "  Lag behind production ({precision}): p50 {} p90 {} p99 {} max {}",
                shown(lag.percentile("p50")),
                shown(lag.percentile("p90")),
                shown(lag.percentile("p99")),
                shown(lag.max_us)
            );
        }
        if self.produced_clock_ahead > 0 {
            let _ = writeln!(
                out,
                "  Lag behind production: {} item(s) produced after they arrived by our clock (the node's clock runs ahead), not in the figures",
                self.produced_clock_ahead
            );
        }
        let gaps = if self.gaps_apply {
            format!(
                "gaps {} ({} between received notifications, {} at a subscription's start or end)",
                self.gaps,
                self.gaps - self.gaps_at_edges.min(self.gaps),
                self.gaps_at_edges
            )
        } else {
            "gaps n/a (no kind is a sequence)".to_string()
        };
        let unnumbered =
            if self.unnumbered > 0 { format!(", unnumbered {}", self.unnumbered) } else { String::new() };
        let _ = writeln!(
            out,
            "  Correctness: {gaps}, duplicates {}, reorders {}{unnumbered}, unknown subscription {}, not JSON {}",
            self.duplicates,
            if self.reorders_apply { self.reorders.to_string() } else { "n/a (no kind has an order)".into() },
            self.unknown_subscription,
            self.not_json
        );
        let _ = writeln!(
            out,
            "  Subscriptions: {} went silent, {} unsubscribed at the end, {} unsubscribe requests failed",
            self.went_silent, self.unsubscribed, self.unsubscribe_failed
        );
        let closes: Vec<String> =
            self.closed_by_server.iter().map(|(code, n)| format!("{code}: {n}")).collect();
        let not_reading = if self.closed_not_reading > 0 {
            format!(", closed by rpcbench as the server did not read {}", self.closed_not_reading)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  Sockets: {} opened, {} failed to open, closed by the server {}{not_reading}, reconnects {}",
            self.sockets_opened,
            self.connect_errors,
            if closes.is_empty() { "0".to_string() } else { closes.join(", ") },
            self.reconnects
        );
        if let Some(reason) = &self.first_connect_error {
            let _ = writeln!(out, "  First socket that could not be opened: {reason}");
        }
        if self.backfill > 0 || self.from_slot_refused > 0 || self.stalls > 0 {
            let _ = writeln!(
                out,
                "  Feed: {} backfilled item(s) replayed from_slot after reconnects (not in the lags), {} from_slot refusal(s), {} stall(s) (nothing received for the idle timeout)",
                self.backfill, self.from_slot_refused, self.stalls
            );
        }
        if let Some(growth) = &self.lag_growth {
            let _ = writeln!(
                out,
                "  Lag growth: p99 behind production {} in second {}, {} in second {}: {}",
                us(growth.first_p99_us),
                growth.first_second,
                us(growth.last_p99_us),
                growth.last_second,
                if growth.keeps_up { "the feed keeps up" } else { "the feed falls behind" }
            );
        }
        if let Some(stages) = &self.slot_stages {
            stages.render_text(&mut out);
        }
        if self.per_kind.len() > 1 {
            for kind in &self.per_kind {
                let _ = writeln!(
                    out,
                    "    {:<24} {} subscriptions, {} notifications, gaps {}, duplicates {}, reorders {}",
                    kind.kind,
                    kind.subscriptions,
                    kind.notifications,
                    count_or_na(kind.gaps, kind.gaps_apply),
                    kind.duplicates,
                    count_or_na(kind.reorders, kind.reorders_apply)
                );
            }
        }
        if !self.thresholds.is_empty() {
            let _ = writeln!(out, "  Thresholds:");
            for result in &self.thresholds {
                let verdict = if result.passed { "ok    " } else { "FAILED" };
                let _ = writeln!(out, "    {verdict}  {} (measured {})", result.threshold, result.actual);
            }
        }
        out
    }
}

/// A condition on a subscription run.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscribeThreshold {
    text: String,
    metric: SubscribeMetric,
    limit: f64,
}

#[derive(Debug, Clone, PartialEq)]
enum SubscribeMetric {
    Lag(String),
    ProducedLag(String),
    Subscribe(String),
    Gaps,
    Duplicates,
    Reorders,
}

/// What a subscription condition measures, as the grammar names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SubscribeWord {
    Lag,
    ProducedLag,
    Subscribe,
    Gaps,
    Duplicates,
    Reorders,
}

const SUBSCRIBE_PERCENTILES: &[&str] = &["p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99"];

/// The metrics of `subscribe --threshold`: latencies with a percentile (p99 when none is
/// written) and counts; only `<`.
const SUBSCRIBE_WORDS: Vocabulary<SubscribeWord> = {
    const fn latency(id: SubscribeWord, names: &'static [&'static str]) -> MetricWord<SubscribeWord> {
        MetricWord {
            id,
            names,
            quantity: Quantity::Latency,
            stats: SUBSCRIBE_PERCENTILES,
            default_stat: Some("p99"),
        }
    }
    const fn count(id: SubscribeWord, names: &'static [&'static str]) -> MetricWord<SubscribeWord> {
        MetricWord { id, names, quantity: Quantity::Count, stats: &[], default_stat: None }
    }
    Vocabulary {
        metrics: &[
            latency(SubscribeWord::Lag, &["lag"]),
            latency(SubscribeWord::ProducedLag, &["produced-lag"]),
            latency(SubscribeWord::Subscribe, &["subscribe"]),
            count(SubscribeWord::Gaps, &["gaps"]),
            count(SubscribeWord::Duplicates, &["duplicates"]),
            count(SubscribeWord::Reorders, &["reorders"]),
        ],
        bare_stats: None,
        operators: &[Operator::Below],
        scopes: false,
        limits_above_zero: false,
    }
};

impl SubscribeThreshold {
    /// Parses `lag p99 < 500ms`, `produced-lag p50 < 2s`, `subscribe p99 < 100ms`, `gaps < 1`,
    /// `duplicates < 1` or `reorders < 1` (the grammar of [`crate::conditions`]).
    pub fn parse(text: &str) -> Result<Self, ConditionError> {
        let condition = conditions::parse(text, &SUBSCRIBE_WORDS)?;
        let stat = || condition.stat.unwrap_or("p99").to_string();
        let metric = match condition.metric {
            SubscribeWord::Lag => SubscribeMetric::Lag(stat()),
            SubscribeWord::ProducedLag => SubscribeMetric::ProducedLag(stat()),
            SubscribeWord::Subscribe => SubscribeMetric::Subscribe(stat()),
            SubscribeWord::Gaps => SubscribeMetric::Gaps,
            SubscribeWord::Duplicates => SubscribeMetric::Duplicates,
            SubscribeWord::Reorders => SubscribeMetric::Reorders,
        };
        // Latencies are judged in whole microseconds, as they are recorded.
        let limit = match condition.limit {
            Limit::Latency(limit) => limit.as_micros() as f64,
            other => other.value(),
        };
        Ok(Self { text: condition.text, metric, limit })
    }

    /// Why this condition cannot be judged on subscriptions of these kinds' orders
    /// (`(name, has gaps, has order)`), if it cannot: gaps need a sequence, reorders an order.
    pub fn not_applicable(&self, kinds: &[(&str, bool, bool)]) -> Option<String> {
        let names = || kinds.iter().map(|(name, _, _)| *name).collect::<Vec<_>>().join(", ");
        match self.metric {
            SubscribeMetric::Gaps if !kinds.iter().any(|(_, gaps, _)| *gaps) => Some(format!(
                "'{}': gaps are judged only on a sequence (newHeads, slot), not on {}",
                self.text,
                names()
            )),
            SubscribeMetric::Reorders if !kinds.iter().any(|(_, _, order)| *order) => Some(format!(
                "'{}': reorders are judged only where items are numbered, not on {} (no order on the wire)",
                self.text,
                names()
            )),
            _ => None,
        }
    }

    fn judge(&self, report: &SubscribeReport) -> ThresholdResult {
        use crate::util::units::format_micros;
        let (actual, shown) = match &self.metric {
            SubscribeMetric::Lag(p) => {
                let v = report.lag.percentile(p) as f64;
                (v, format_micros(v))
            }
            SubscribeMetric::ProducedLag(p) => {
                let v = report.produced_lag.as_ref().map_or(f64::INFINITY, |lag| lag.percentile(p) as f64);
                (
                    v,
                    if v.is_finite() {
                        format_micros(v)
                    } else {
                        "none (no item said when it was produced)".into()
                    },
                )
            }
            SubscribeMetric::Subscribe(p) => {
                let v = report.subscribe_latency.percentile(p) as f64;
                (v, format_micros(v))
            }
            SubscribeMetric::Gaps if !report.gaps_apply => {
                (f64::INFINITY, "n/a (no kind of the run is a sequence)".into())
            }
            SubscribeMetric::Reorders if !report.reorders_apply => {
                (f64::INFINITY, "n/a (no kind of the run has an order)".into())
            }
            SubscribeMetric::Gaps => (report.gaps as f64, report.gaps.to_string()),
            SubscribeMetric::Duplicates => (report.duplicates as f64, report.duplicates.to_string()),
            SubscribeMetric::Reorders => (report.reorders as f64, report.reorders.to_string()),
        };
        let passed = actual < self.limit;
        let exceeded_by = if passed {
            String::new()
        } else if !actual.is_finite() {
            "no value".to_string()
        } else if matches!(
            self.metric,
            SubscribeMetric::Gaps | SubscribeMetric::Duplicates | SubscribeMetric::Reorders
        ) {
            format!("{}", actual - self.limit + 1.0)
        } else if actual.is_finite() {
            format_micros(actual - self.limit)
        } else {
            "no value".to_string()
        };
        ThresholdResult { threshold: self.text.clone(), passed, actual: shown, exceeded_by }
    }
}

/// Whether the file at `path` is a subscription report (`subscribe -f json` or `--save`).
pub fn is_subscribe_report(path: &std::path::Path) -> bool {
    #[derive(Deserialize)]
    struct Version {
        subscribe_report_version: Option<u32>,
    }
    crate::util::files::read_text_limited(path, crate::util::files::MAX_RESULTS)
        .ok()
        .and_then(|text| serde_json::from_str::<Version>(&text).ok())
        .is_some_and(|version| version.subscribe_report_version.is_some())
}

/// A saved subscription report that cannot be read, with its file.
#[derive(Debug)]
pub enum SubscribeReportError {
    /// The file cannot be read.
    Read(std::path::PathBuf, std::io::Error),
    /// The file is not a subscription report's JSON.
    NotAReport(std::path::PathBuf, serde_json::Error),
    /// A version this build does not know.
    Version(std::path::PathBuf, u32),
    /// One of its histograms does not decode.
    Histogram(std::path::PathBuf, crate::util::hdr_codec::HistogramTextError),
}

impl fmt::Display for SubscribeReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubscribeReportError::Read(path, err) => write!(f, "{}: {err}", path.display()),
            SubscribeReportError::NotAReport(path, err) => write!(
                f,
                "{}:{}:{}: not a subscription report: {err}",
                path.display(),
                err.line(),
                err.column()
            ),
            SubscribeReportError::Version(path, version) => {
                write!(f, "{}: subscription report version {version} is not known", path.display())
            }
            SubscribeReportError::Histogram(path, err) => {
                write!(f, "{}: a histogram does not decode: {err}", path.display())
            }
        }
    }
}

impl std::error::Error for SubscribeReportError {}

impl SubscribeReport {
    /// Reads a saved report, checking that its histograms decode.
    pub fn load(path: &std::path::Path) -> Result<Self, SubscribeReportError> {
        let text = crate::util::files::read_text_limited(path, crate::util::files::MAX_RESULTS)
            .map_err(|err| SubscribeReportError::Read(path.to_path_buf(), err))?;
        let report: SubscribeReport = serde_json::from_str(&text)
            .map_err(|err| SubscribeReportError::NotAReport(path.to_path_buf(), err))?;
        if report.subscribe_report_version != 1 {
            return Err(SubscribeReportError::Version(path.to_path_buf(), report.subscribe_report_version));
        }
        for text in [&report.histograms.subscribe, &report.histograms.lag, &report.histograms.produced_lag]
            .into_iter()
            .flatten()
        {
            crate::util::hdr_codec::decode_histogram(text)
                .map_err(|err| SubscribeReportError::Histogram(path.to_path_buf(), err))?;
        }
        Ok(report)
    }
}

/// Merges the reports of subscription runs side by side (the same target and kinds, from
/// several processes or machines) into one: counts add up, the per-second series add up by
/// second, and the percentiles come from the merged histograms. The fan-out lag of each
/// part counts from the first arrival within that part.
pub fn merge_subscribe_reports(
    parts: &[(std::path::PathBuf, SubscribeReport)],
) -> Result<SubscribeReport, String> {
    let Some(((_, first), rest)) = parts.split_first() else { return Err("nothing to merge".into()) };
    // The same run twice (one file given twice, or a part already inside a merged report)
    // would count its subscriptions twice: refused, by the runs' identities.
    let mut seen: BTreeMap<String, &std::path::Path> = BTreeMap::new();
    let mut identities = Vec::new();
    for (path, part) in parts {
        for identity in part.run_identities() {
            if let Some(earlier) = seen.insert(identity.clone(), path) {
                return Err(format!(
                    "{}: the run {identity} is already in {}: the same run given twice",
                    path.display(),
                    earlier.display()
                ));
            }
            identities.push(identity);
        }
    }
    let mut merged = first.clone();
    merged.merged_from = identities;
    // One part's stage timings and lag growth are not the whole's: left out of a merge.
    merged.slot_stages = None;
    merged.lag_growth = None;
    for point in &mut merged.series {
        point.produced_lag_p99_us = None;
    }
    for (path, part) in rest {
        if part.target != first.target || part.kinds != first.kinds {
            return Err(format!(
                "{}: another target or other subscriptions ({} {}) than the first file ({} {})",
                path.display(),
                part.target,
                part.kinds.join(","),
                first.target,
                first.kinds.join(",")
            ));
        }
        let overflow =
            || format!("{}: its counts added to the others' do not fit a 64-bit count", path.display());
        for (ours, theirs) in [
            (&mut merged.subscribers, part.subscribers),
            (&mut merged.subscriptions, part.subscriptions),
            (&mut merged.subscribed, part.subscribed),
            (&mut merged.active_at_end, part.active_at_end),
            (&mut merged.notifications, part.notifications),
            (&mut merged.notifications_after_end, part.notifications_after_end),
            (&mut merged.bytes, part.bytes),
            (&mut merged.gaps, part.gaps),
            (&mut merged.gaps_at_edges, part.gaps_at_edges),
            (&mut merged.went_silent, part.went_silent),
            (&mut merged.unsubscribed, part.unsubscribed),
            (&mut merged.unsubscribe_failed, part.unsubscribe_failed),
            (&mut merged.duplicates, part.duplicates),
            (&mut merged.reorders, part.reorders),
            (&mut merged.unknown_subscription, part.unknown_subscription),
            (&mut merged.not_json, part.not_json),
            (&mut merged.sockets_opened, part.sockets_opened),
            (&mut merged.connect_errors, part.connect_errors),
            (&mut merged.reconnects, part.reconnects),
            (&mut merged.produced_clock_ahead, part.produced_clock_ahead),
            (&mut merged.unnumbered, part.unnumbered),
            (&mut merged.closed_not_reading, part.closed_not_reading),
            (&mut merged.backfill, part.backfill),
            (&mut merged.from_slot_refused, part.from_slot_refused),
            (&mut merged.stalls, part.stalls),
        ] {
            *ours = ours.checked_add(theirs).ok_or_else(overflow)?;
        }
        for (code, count) in &part.subscribe_errors {
            *merged.subscribe_errors.entry(code.clone()).or_default() += count;
        }
        for (code, count) in &part.closed_by_server {
            *merged.closed_by_server.entry(code.clone()).or_default() += count;
        }
        for kind in &part.per_kind {
            match merged.per_kind.iter_mut().find(|ours| ours.kind == kind.kind) {
                Some(ours) => {
                    ours.subscriptions = ours.subscriptions.saturating_add(kind.subscriptions);
                    ours.subscribed = ours.subscribed.saturating_add(kind.subscribed);
                    ours.notifications = ours.notifications.saturating_add(kind.notifications);
                    ours.gaps = ours.gaps.saturating_add(kind.gaps);
                    ours.duplicates = ours.duplicates.saturating_add(kind.duplicates);
                    ours.reorders = ours.reorders.saturating_add(kind.reorders);
                    ours.unnumbered = ours.unnumbered.saturating_add(kind.unnumbered);
                }
                None => merged.per_kind.push(kind.clone()),
            }
        }
        let mut by_second: BTreeMap<u64, SubscribeSecond> =
            merged.series.drain(..).map(|p| (p.second, p)).collect();
        for point in &part.series {
            let ours = by_second
                .entry(point.second)
                .or_insert_with(|| SubscribeSecond { second: point.second, ..SubscribeSecond::default() });
            ours.notifications += point.notifications;
            ours.bytes += point.bytes;
            ours.active += point.active;
            ours.lag_max_us = ours.lag_max_us.max(point.lag_max_us);
        }
        merged.series = by_second.into_values().collect();
        merged.subs_per_socket = merged.subs_per_socket.max(part.subs_per_socket);
        merged.duration_us = merged.duration_us.max(part.duration_us);
        merged.elapsed_us = merged.elapsed_us.max(part.elapsed_us);
        merged.interrupted |= part.interrupted;
        merged.first_subscribe_error =
            merged.first_subscribe_error.take().or(part.first_subscribe_error.clone());
        merged.produced_lag_precision =
            match (merged.produced_lag_precision.take(), part.produced_lag_precision.clone()) {
                (Some(a), Some(b)) if a != b => Some("seconds".to_string()),
                (a, b) => a.or(b),
            };
    }
    let combine = |pick: fn(&SubscribeHistograms) -> &Option<String>| -> Result<Option<String>, String> {
        let mut sum: Option<hdrhistogram::Histogram<u64>> = None;
        for (path, part) in parts {
            if let Some(text) = pick(&part.histograms) {
                let histogram = crate::util::hdr_codec::decode_histogram(text)
                    .map_err(|err| format!("{}: {err}", path.display()))?;
                match sum.as_mut() {
                    Some(sum) => sum.add(&histogram).map_err(|err| format!("{}: {err:?}", path.display()))?,
                    None => sum = Some(histogram),
                }
            }
        }
        Ok(sum.as_ref().map(crate::util::hdr_codec::encode_histogram))
    };
    merged.histograms = SubscribeHistograms {
        subscribe: combine(|h| &h.subscribe)?,
        lag: combine(|h| &h.lag)?,
        produced_lag: combine(|h| &h.produced_lag)?,
    };
    let latency = |text: &Option<String>| -> Option<LatencyReport> {
        let histogram = crate::util::hdr_codec::decode_histogram(text.as_deref()?).ok()?;
        Some(LatencyReport::from_histogram(&histogram))
    };
    let empty = LatencyReport::from_histogram(&crate::record::new_histogram());
    merged.subscribe_latency = latency(&merged.histograms.subscribe).unwrap_or_else(|| empty.clone());
    merged.lag = latency(&merged.histograms.lag).unwrap_or(empty);
    merged.produced_lag = latency(&merged.histograms.produced_lag);
    let seconds = (merged.elapsed_us as f64 / 1e6).max(1e-9);
    merged.notifications_per_sec = merged.notifications as f64 / seconds;
    merged.notifications_per_sub_per_sec = merged.notifications_per_sec / merged.subscriptions.max(1) as f64;
    merged.bytes_per_sec = merged.bytes as f64 / seconds;
    merged.bytes_per_sub_per_sec = merged.bytes_per_sec / merged.subscriptions.max(1) as f64;
    // A part's verdicts do not hold for the whole.
    merged.thresholds.clear();
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_and_judge() {
        assert!(SubscribeThreshold::parse("lag p99 < 500ms").is_ok());
        assert!(SubscribeThreshold::parse("gaps < 1").is_ok());
        assert!(SubscribeThreshold::parse("lag p42 < 1s")
            .unwrap_err()
            .to_string()
            .contains("unknown percentile"));
        assert!(SubscribeThreshold::parse("speed < 1").unwrap_err().to_string().contains("unknown metric"));
        assert!(SubscribeThreshold::parse("lag p99").is_err());
    }
}
