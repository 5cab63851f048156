//! Reports of a finished run. [`RunReport`] holds every figure a report shows, computed once
//! from a [`RunRecord`]; the text and JSON renderers only lay it out. Durations in the JSON
//! form are integer microseconds; counts are keyed by JSON-RPC code and HTTP status.
//!
//! The Markdown, HTML and CSV renderers work from saved runs ([`crate::results::SavedRun`]),
//! which keep the histograms as well, and lay out one run or a comparison of several; those of
//! a capacity search work from its [`crate::capacity_file::CapacityFile`], and compare several
//! searches side by side ([`LabelledSearch`]).

mod capacity;
mod capacity_axes;
mod capacity_compare;
mod capacity_heads;
mod csv;
mod html;
mod limits_html;
mod markdown;
mod race;
mod shape;
pub mod slot_stages;
pub mod subscribe;
mod subscribe_html;
pub mod tables;
mod text;
pub mod tx;
mod tx_html;
pub mod tx_merge;
pub mod tx_outcomes;

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::engine::config::{Arrivals, Load, RunConfig};
use crate::engine::stages::LevelCurve;
use crate::monitor::ResourceReport;
use crate::outcome::OutcomeCounts;
use crate::record::RunRecord;

pub use capacity::{
    render_capacity_csv, render_capacity_html, render_capacity_markdown, CAPACITY_CSV_COLUMNS,
};
pub use capacity_compare::{
    capacity_comparison_json, check_comparable, render_capacity_comparison_csv,
    render_capacity_comparison_html, render_capacity_comparison_markdown, render_capacity_comparison_text,
    LabelledSearch, MixedSearches,
};
pub use csv::{render_csv, CSV_COLUMNS};
pub use html::render_html;
pub use limits_html::render_limits_html;
pub use markdown::render_markdown;
pub use race::render_race_text;
pub use shape::RunShape;
pub use subscribe_html::{render_subscribe_html, render_subscribe_markdown};
pub use text::{generator_warnings, render_text, SATURATED_CPU_PERCENT};
pub use tx_html::{render_tx_html, render_tx_markdown};

/// Version of the JSON report layout; bumped when a field changes meaning or goes away.
pub const REPORT_VERSION: u32 = 1;

/// The percentiles every latency distribution reports.
pub const PERCENTILES: [(&str, f64); 7] = [
    ("p50", 50.0),
    ("p75", 75.0),
    ("p90", 90.0),
    ("p95", 95.0),
    ("p99", 99.0),
    ("p99.9", 99.9),
    ("p99.99", 99.99),
];

fn http1_name() -> String {
    "http/1.1".to_string()
}

/// Everything a report says about one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Layout version of this report.
    pub report_version: u32,
    /// The tool that made it.
    pub tool: String,
    /// The target URL with secrets redacted.
    pub target: String,
    /// The JSON-RPC method called.
    pub method: String,
    /// How load was applied.
    pub load: LoadReport,
    /// Configured measured duration, if the run was bounded by time.
    pub duration_us: Option<u64>,
    /// Configured request count, if the run was bounded by count.
    pub requests_limit: Option<u64>,
    /// Warmup before measurement.
    pub warmup_us: u64,
    /// Measured time, from the end of warmup to the last completion.
    pub elapsed_us: u64,
    /// The run was stopped early (Ctrl-C); the figures cover what completed.
    pub interrupted: bool,
    /// Request counts and rates.
    pub requests: RequestsReport,
    /// Latency of all requests that were sent, from the intended send time in open loop.
    #[serde(with = "no_latency_as_null")]
    pub latency: LatencyReport,
    /// Latency of the same requests from the actual send time.
    #[serde(with = "no_latency_as_null")]
    pub latency_uncorrected: LatencyReport,
    /// Latency of successful requests only.
    #[serde(with = "no_latency_as_null")]
    pub latency_ok: LatencyReport,
    /// Open loop: how far behind its intended time each request was sent.
    pub send_lag: Option<LatencyReport>,
    /// A count per outcome class.
    pub outcomes: OutcomeCounts,
    /// Responses per HTTP status, whatever their class.
    pub http_status: BTreeMap<String, u64>,
    /// Bytes on the wire.
    pub bytes: BytesReport,
    /// The per-interval series.
    pub series: SeriesReport,
    /// One row per call of the workload, in the workload's order (one row for a single request).
    pub methods: Vec<MethodReport>,
    /// One row per stage when the load changed over the run (empty for a single stage).
    #[serde(default)]
    pub stages: Vec<StageReport>,
    /// Where requests' time went (connect, send, wait for the first byte, receive), for
    /// successful responses and for the others; classes without responses are left out.
    #[serde(default)]
    pub phases: Vec<PhaseReport>,
    /// Verdicts on the run's thresholds (empty when none were given).
    #[serde(default)]
    pub thresholds: Vec<ThresholdResult>,
    /// CPU, memory, disk and connections of the target process(es), when monitored
    /// (`--monitor-pid`, `--monitor-cmd`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_resources: Option<ResourceReport>,
    /// What the generator itself used: a saturated generator measures itself, not the target.
    pub generator: GeneratorReport,
    /// The protocol spoken: `http/1.1`, `h2c` (cleartext HTTP/2) or `h2` (HTTP/2 over TLS).
    #[serde(default = "http1_name")]
    pub protocol: String,
    /// HTTP/2 runs: streams per connection, the server's advertised limit, connections opened
    /// and GOAWAYs received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Figures>,
    /// WebSocket runs: requests in flight per socket, sockets opened, and the messages that
    /// answered no request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<WebSocketFigures>,
    /// With JSON-RPC batches (`--batch N`): what the wire carried. Everything else in the report
    /// (outcomes, rates, tables, latency) counts calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<BatchReport>,
    /// The rate-limit headers the answers carried (`Retry-After`, `X-RateLimit-*`,
    /// `RateLimit-*`): the limit announced, the remaining count at its lowest, the resets, the
    /// Retry-After values. Absent when no answer carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_headers: Option<crate::ratelimit::headers::RateHeaderSummary>,
    /// With `--on-rate-limit backoff|respect-retry-after`: the pauses connections took after
    /// rate-limited answers and the time spent in them (the rate still counts responses over
    /// the whole measured time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_pauses: Option<crate::ratelimit::pause::RatePauses>,
    /// With `--heads`: each target's head beside the load (lag behind the highest head seen,
    /// share at the tip, stale samples, visibility delays); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heads: Option<crate::heads::HeadsReport>,
}

/// What an HTTP/2 run's connections saw, as reports and results files give them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Http2Figures {
    /// `h2c` (cleartext, prior knowledge) or `h2` (TLS, ALPN).
    pub protocol: String,
    /// Streams per connection asked for (`--streams`).
    pub streams_per_connection: u64,
    /// The lowest SETTINGS_MAX_CONCURRENT_STREAMS a server advertised; absent when it
    /// advertised no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_max_streams: Option<u64>,
    /// Connections opened, the first ones and every re-open.
    pub connections_opened: u64,
    /// Connections the server ended with a GOAWAY.
    pub goaways_received: u64,
    /// Requests sent again on a new connection because a graceful GOAWAY left them
    /// unprocessed (not errors: each has the outcome of its retry).
    #[serde(default)]
    pub retried_after_goaway: u64,
}

impl Http2Figures {
    /// The figures of `config`'s run as `record` has them; `None` for HTTP/1.1.
    pub fn of(config: &RunConfig, record: &RunRecord) -> Option<Self> {
        Self::of_shape(&RunShape::of(config), record)
    }

    /// The figures of a run of this shape as `record` has them; `None` for HTTP/1.1.
    pub fn of_shape(config: &RunShape, record: &RunRecord) -> Option<Self> {
        config.http.is_http2().then(|| Http2Figures {
            protocol: config.http.name().to_string(),
            streams_per_connection: config.streams as u64,
            server_max_streams: record.wire.server_max_streams,
            connections_opened: record.wire.connections_opened,
            goaways_received: record.wire.goaways_received,
            retried_after_goaway: record.wire.retried_after_goaway,
        })
    }

    /// The transport figures for a record.
    pub fn wire(&self) -> crate::transport::WireStats {
        crate::transport::WireStats {
            connections_opened: self.connections_opened,
            goaways_received: self.goaways_received,
            retried_after_goaway: self.retried_after_goaway,
            server_max_streams: self.server_max_streams,
            ..crate::transport::WireStats::default()
        }
    }
}

/// What a WebSocket run's sockets saw, as reports and results files give them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSocketFigures {
    /// Requests outstanding per socket (`--in-flight`).
    pub in_flight_per_socket: u64,
    /// Sockets opened (upgraded), the first ones and every re-open.
    pub sockets_opened: u64,
    /// Messages that were not JSON; no request was charged for them.
    pub stray_not_json: u64,
    /// Answers with an id no request waited for (late answers to requests that timed out,
    /// answers sent twice).
    pub stray_unknown_id: u64,
    /// Notifications (a `method`, no id) on the request/response sockets.
    pub stray_notifications: u64,
}

impl WebSocketFigures {
    /// The figures of `config`'s run as `record` has them; `None` unless it ran over WebSocket.
    pub fn of(config: &RunConfig, record: &RunRecord) -> Option<Self> {
        Self::of_shape(&RunShape::of(config), record)
    }

    /// The figures of a run of this shape as `record` has them; `None` unless it ran over
    /// WebSocket.
    pub fn of_shape(config: &RunShape, record: &RunRecord) -> Option<Self> {
        config.websocket.then_some(WebSocketFigures {
            in_flight_per_socket: config.in_flight as u64,
            sockets_opened: record.wire.connections_opened,
            stray_not_json: record.wire.stray_not_json,
            stray_unknown_id: record.wire.stray_unknown_id,
            stray_notifications: record.wire.stray_notifications,
        })
    }

    /// The transport figures for a record.
    pub fn wire(&self) -> crate::transport::WireStats {
        crate::transport::WireStats {
            connections_opened: self.sockets_opened,
            stray_not_json: self.stray_not_json,
            stray_unknown_id: self.stray_unknown_id,
            stray_notifications: self.stray_notifications,
            ..crate::transport::WireStats::default()
        }
    }
}

/// What a run of JSON-RPC batches carried on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchReport {
    /// Calls per HTTP request.
    pub calls_per_request: u64,
    /// HTTP requests that completed (each with a reply, whatever it said).
    pub http_requests: u64,
    /// HTTP requests per second over the measured time.
    pub http_requests_per_sec: f64,
    /// Calls per second over the measured time (every call counted, whatever its outcome).
    pub calls_per_sec: f64,
}

/// The phases of one class of responses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// `ok` or `error`.
    pub class: String,
    /// Connecting, for the requests that opened a connection.
    pub connect: PhaseStat,
    /// Writing the request.
    pub send: PhaseStat,
    /// From the request written to the first byte of the response (the server's time plus the
    /// network's).
    pub wait: PhaseStat,
    /// From the first byte to the last.
    pub receive: PhaseStat,
}

/// A summary of one phase, microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseStat {
    /// Samples.
    pub count: u64,
    /// Mean.
    pub mean_us: u64,
    /// Median.
    pub p50_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Largest.
    pub max_us: u64,
}

impl PhaseStat {
    fn from_histogram(histogram: &Histogram<u64>) -> Self {
        if histogram.is_empty() {
            return Self { count: 0, mean_us: 0, p50_us: 0, p99_us: 0, max_us: 0 };
        }
        Self {
            count: histogram.len(),
            mean_us: histogram.mean().round() as u64,
            p50_us: histogram.value_at_quantile(0.5),
            p99_us: histogram.value_at_quantile(0.99),
            max_us: histogram.max(),
        }
    }
}

/// One stage of a staged run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageReport {
    /// 1-based position.
    pub stage: u64,
    /// The level held: connections (closed loop) or requests per second (open loop).
    pub level: f64,
    /// Seconds from the start of measurement to the start of the stage.
    pub start_s: f64,
    /// The stage's length, seconds.
    pub duration_s: f64,
    /// The ramp at its start, seconds.
    pub ramp_s: f64,
    /// Requests due in the stage that got an outcome.
    pub requests: u64,
    /// Successes.
    pub ok: u64,
    /// Everything else.
    pub errors: u64,
    /// Requests per second over the stage.
    pub rate: f64,
    /// Latency of the stage's requests (corrected in open loop).
    pub latency: LatencyReport,
}

/// One call of the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodReport {
    /// The call's label (the method, unless a scenario named it).
    pub name: String,
    /// The JSON-RPC method.
    pub method: String,
    /// Requests with an outcome.
    pub requests: u64,
    /// Successes.
    pub ok: u64,
    /// Everything else.
    pub errors: u64,
    /// Requests per second over the measured time.
    pub rate: f64,
    /// Latency of this call's requests (corrected in open loop).
    pub latency: LatencyReport,
    /// A replay with response checks: answers whose digest is not the recorded one (counted
    /// among the errors as the invalid kind `changed_response`); absent when none.
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub changed_responses: u64,
    /// Calls the server refused for its rate limit (counted among the errors); absent when
    /// none.
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub rate_limited: u64,
}

fn is_zero_count(count: &u64) -> bool {
    *count == 0
}

/// What the generator itself used during the run. Figures it could not measure (outside
/// Linux) are null.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratorReport {
    /// Worker threads (one runtime each).
    pub threads: u64,
    /// User and system CPU time of the worker threads, microseconds.
    pub cpu_us: Option<u64>,
    /// That CPU time as a percentage of the worker threads' capacity (threads x wall time);
    /// 100 means every worker was busy all the time.
    pub cpu_percent: Option<f64>,
    /// Worker CPU time per request with an outcome, microseconds.
    pub cpu_us_per_request: Option<f64>,
    /// Peak resident memory of the process, bytes.
    pub peak_rss_bytes: Option<u64>,
}

/// How load was applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// `closed` or `open`.
    pub mode: String,
    /// Closed loop: the number of connections.
    pub connections: Option<u64>,
    /// Open loop: the target rate, requests per second.
    pub rate: Option<f64>,
    /// Open loop: `uniform` or `poisson`, or `recorded` for a replay at its recorded pace (the
    /// rate is then the recording's mean).
    pub arrivals: Option<String>,
    /// Open loop: the connection cap.
    pub max_connections: Option<u64>,
    /// Open loop: every one of `max_connections` was opened at the start and held (`--rate R
    /// -c N`, as wrk2 does), rather than opened as the rate needed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held_connections: bool,
}

/// Request counts and rates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestsReport {
    /// Every request with an outcome.
    pub total: u64,
    /// Successes.
    pub ok: u64,
    /// Everything else.
    pub errors: u64,
    /// Requests per second over the measured time.
    pub rate: f64,
    /// Mean of the series' rates, requests per second (each point's count over its width: a
    /// 100 ms point's count times ten).
    pub per_second_mean: f64,
    /// Standard deviation of the series' rates, requests per second.
    pub per_second_stdev: f64,
    /// Largest of the series' rates, requests per second.
    pub per_second_max: f64,
    /// Open loop: requests sent more than 2 ms after their intended time.
    pub late: Option<u64>,
    /// Open loop: of the late requests, those that waited with every allowed connection busy
    /// (the connection cap made them late, not the generator); left out when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_at_cap: Option<u64>,
    /// Open loop: requests due in the run that were never sent.
    pub unsent: Option<u64>,
    /// The time the rate is measured over, microseconds (see [`measured_seconds`]).
    #[serde(default)]
    pub measured_us: u64,
    /// Open loop: the rate asked for over the measured window (with stages: the
    /// stage-weighted rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rate: Option<f64>,
    /// Requests that got a response of any kind (ok, a JSON-RPC error, an HTTP status, an
    /// invalid body); 0 means the target never answered (a dead target).
    #[serde(default = "unknown_responded")]
    pub responded: u64,
}

/// Files written before `responded` was kept: taken as answered.
fn unknown_responded() -> u64 {
    u64::MAX
}

/// A latency distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyReport {
    /// Number of samples.
    pub count: u64,
    /// Mean, microseconds.
    pub mean_us: u64,
    /// Standard deviation, microseconds.
    pub stdev_us: u64,
    /// Smallest, microseconds.
    pub min_us: u64,
    /// Largest, microseconds.
    pub max_us: u64,
    /// Percentiles (`p50` … `p99.99`), microseconds.
    pub percentiles: BTreeMap<String, u64>,
}

impl LatencyReport {
    /// Summarises a histogram of microseconds.
    pub fn from_histogram(histogram: &Histogram<u64>) -> Self {
        let empty = histogram.is_empty();
        let percentiles = PERCENTILES
            .iter()
            .map(|(name, q)| (name.to_string(), if empty { 0 } else { histogram.value_at_percentile(*q) }))
            .collect();
        Self {
            count: histogram.len(),
            mean_us: if empty { 0 } else { histogram.mean().round() as u64 },
            stdev_us: if empty { 0 } else { histogram.stdev().round() as u64 },
            min_us: if empty { 0 } else { histogram.min() },
            max_us: if empty { 0 } else { histogram.max() },
            percentiles,
        }
    }

    /// A percentile by name (`p99`), 0 if absent.
    pub fn percentile(&self, name: &str) -> u64 {
        self.percentiles.get(name).copied().unwrap_or(0)
    }
}

/// The window a run's figures are measured over: the configured measured duration (all of it
/// when the run went its full length, even if its last request completed earlier), or the time
/// to the stop when it ended early (stopped, or its request count reached), or the time to the
/// last completion when it had no duration.
pub fn measured_window(config: &RunConfig, record: &RunRecord) -> Duration {
    window_of(config.measured_duration(), config.length.requests, record)
}

/// [`measured_window`] of a run of this shape.
fn shape_window(shape: &RunShape, record: &RunRecord) -> Duration {
    window_of(shape.measured_duration(), shape.length.requests, record)
}

fn window_of(measured: Option<Duration>, requests: Option<u64>, record: &RunRecord) -> Duration {
    match measured {
        Some(duration) if record.interrupted || requests.is_some() => record.elapsed.min(duration),
        Some(duration) => duration,
        None => record.elapsed,
    }
}

/// The time a rate is measured over, seconds: the window plus how far sends slipped behind
/// schedule by its end (open loop). A generator that cannot keep up sends every due request
/// late (open loop never drops them); it falls steadily behind, from no lag to twice its mean
/// send lag at the end, so the window is stretched by that much. The one definition of
/// "achieved" for `run`, `report` and `capacity`: responses over this time.
pub fn measured_seconds(window: Duration, send_lag_mean_us: u64) -> f64 {
    window.as_secs_f64() + 2.0 * send_lag_mean_us as f64 / 1e6
}

/// [`measured_seconds`] of a run that lasted `ran` after its warmup (to its last answer): the
/// stretch for late sends never makes the window longer than the run was (a lag that did not
/// grow steadily, a stall at the start, would stretch it past the run's end).
pub fn run_window_seconds(window: Duration, send_lag_mean_us: u64, ran: Duration) -> f64 {
    measured_seconds(window, send_lag_mean_us).min(window.max(ran).as_secs_f64())
}

/// What a run's rate window is, in words, from the report's figures.
pub fn window_description(report: &RunReport) -> String {
    let measured = report.requests.measured_us;
    // Within the 10 ms a window is printed to, a stretch is not worth a word.
    let stretched = |duration: u64| measured >= duration.saturating_add(10_000);
    match report.duration_us {
        _ if report.interrupted => "from the end of warmup to the stop".into(),
        Some(duration) if stretched(duration) && measured >= report.elapsed_us => format!(
            "the {} duration and the time the late sends took, to the last answer",
            crate::util::units::format_micros(duration as f64)
        ),
        Some(duration) if stretched(duration) => format!(
            "the {} duration plus twice the mean send lag (the sends fell behind)",
            crate::util::units::format_micros(duration as f64)
        ),
        Some(duration) if measured < duration => {
            "from the end of warmup to the last answer (the request count was reached)".into()
        }
        Some(_) => "the measured duration, after warmup".into(),
        None => "from the end of warmup to the last answer".into(),
    }
}

/// A latency distribution with no sample (a target that never answered) is `null` in JSON:
/// no figures rather than zeros that read as "instant".
mod no_latency_as_null {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::LatencyReport;

    pub(super) fn serialize<S: Serializer>(
        latency: &LatencyReport,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match latency.count {
            0 => serializer.serialize_none(),
            _ => latency.serialize(serializer),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<LatencyReport, D::Error> {
        let latency = Option::<LatencyReport>::deserialize(deserializer)?;
        Ok(latency.unwrap_or_else(|| LatencyReport::from_histogram(&crate::record::new_histogram())))
    }
}

/// The verdict on one threshold (`crate::thresholds` evaluates them against a report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdResult {
    /// The threshold as written.
    pub threshold: String,
    /// Whether the run met it.
    pub passed: bool,
    /// The measured value, formatted with its unit.
    pub actual: String,
    /// How far past the limit a failed threshold went, formatted (empty when passed).
    pub exceeded_by: String,
}

/// Bytes on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BytesReport {
    /// Request bytes sent.
    pub sent: u64,
    /// Response bytes received.
    pub received: u64,
    /// Response bytes per second.
    pub received_per_sec: f64,
    /// Mean bytes per response (`None` without a response).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_response: Option<f64>,
}

/// Responses among `counts`: those with an HTTP status, or (WebSocket, no statuses) every
/// request that got an answer.
pub fn responses_of(statuses: &BTreeMap<u16, u64>, counts: &OutcomeCounts) -> u64 {
    if statuses.is_empty() {
        counts.total().saturating_sub(counts.unanswered())
    } else {
        statuses.values().sum()
    }
}

/// The time series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesReport {
    /// Width of one point in whole seconds; 0 when the points are 100 ms wide (`interval_ms`
    /// gives the width exactly).
    pub interval_s: u64,
    /// Width of one point, milliseconds: 100 for a run measured for less than 3 s, else whole
    /// seconds.
    #[serde(default)]
    pub interval_ms: u64,
    /// The points.
    pub points: Vec<SeriesPointReport>,
}

/// One interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesPointReport {
    /// The whole second the interval starts in, from the start of measurement (ten 100 ms
    /// points share a second; `start_ms` tells them apart).
    pub second: u64,
    /// Start of the interval, milliseconds from the start of measurement.
    #[serde(default)]
    pub start_ms: u64,
    /// Responses completed.
    pub requests: u64,
    /// Of which errors.
    pub errors: u64,
    /// Median latency, microseconds.
    pub p50_us: u64,
    /// 99th percentile latency, microseconds.
    pub p99_us: u64,
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

impl RunReport {
    /// Mean bytes per response: received bytes over the responses (requests with an HTTP
    /// status, or over WebSocket those answered); `None` without any.
    pub fn mean_response_bytes(&self) -> Option<f64> {
        self.bytes.per_response
    }

    /// Computes the report of a finished run.
    pub fn new(config: &RunConfig, record: &RunRecord) -> Self {
        Self::of_shape(&RunShape::of(config), record)
    }

    /// Computes the report of a run of this shape (a live run's, or a results file's).
    pub fn of_shape(shape: &RunShape, record: &RunRecord) -> Self {
        let config = shape;
        let counts = &record.totals.counts;
        let open_loop = matches!(config.load, Load::Open { .. });
        let load = match &config.load {
            Load::Closed { connections } => LoadReport {
                mode: "closed".into(),
                connections: Some(*connections as u64),
                rate: None,
                arrivals: None,
                max_connections: None,
                held_connections: false,
            },
            Load::Open { rate, arrivals, max_connections } => LoadReport {
                mode: "open".into(),
                connections: None,
                rate: Some(*rate),
                arrivals: Some(match arrivals {
                    // A replay at its recorded pace: the rate is the recording's mean.
                    _ if config.recorded_pace => "recorded".into(),
                    Arrivals::Uniform => "uniform".into(),
                    Arrivals::Poisson => "poisson".into(),
                }),
                max_connections: Some(*max_connections as u64),
                held_connections: config.hold_connections,
            },
        };
        let window = shape_window(config, record);
        let send_lag_mean_us = match open_loop && !record.totals.send_lag.is_empty() {
            true => record.totals.send_lag.mean().round() as u64,
            false => 0,
        };
        let elapsed_secs = run_window_seconds(window, send_lag_mean_us, record.elapsed);
        let responses = counts.total() - counts.unfinished;
        let rate = if elapsed_secs > 0.0 { responses as f64 / elapsed_secs } else { 0.0 };
        // Open loop: the rate asked for over the window, stage-weighted when the level changed.
        let offered_rate = match &config.load {
            Load::Open { rate, .. } => {
                let curve = config.level_curve().unwrap_or_else(|| LevelCurve::constant(*rate));
                let from = config.warmup.as_secs_f64();
                Some(curve.mean_between(from, from + window.as_secs_f64()))
            }
            Load::Closed { .. } => None,
        };
        let workers = &record.generator.workers;
        let generator = GeneratorReport {
            threads: workers.threads,
            cpu_us: workers.cpu.map(micros),
            cpu_percent: workers.cpu_percent(),
            cpu_us_per_request: match (workers.cpu, counts.total()) {
                (Some(cpu), total) if total > 0 => Some(cpu.as_secs_f64() * 1e6 / total as f64),
                _ => None,
            },
            peak_rss_bytes: record.generator.peak_rss_bytes,
        };
        // Rates in requests per second, whatever the series' interval (a 100 ms point's is its
        // count times ten), over the whole intervals inside the measured time.
        let interval_ms = record.series_interval_ms.max(1);
        let whole = (u64::try_from(record.elapsed.as_millis()).unwrap_or(u64::MAX) / interval_ms) as usize;
        let per_second: Vec<f64> = record
            .series
            .iter()
            .take(whole)
            .map(|p| p.requests as f64 * 1000.0 / interval_ms as f64)
            .collect();
        let (per_second_mean, per_second_stdev, per_second_max) = if per_second.is_empty() {
            (rate, 0.0, rate)
        } else {
            let n = per_second.len() as f64;
            let mean = per_second.iter().sum::<f64>() / n;
            let variance = per_second.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
            (mean, variance.sqrt(), per_second.iter().copied().fold(0.0, f64::max))
        };
        let mut report = Self {
            report_version: REPORT_VERSION,
            tool: concat!("rpcbench ", env!("CARGO_PKG_VERSION")).into(),
            target: config.target.clone(),
            method: config.method.clone(),
            load,
            duration_us: config.measured_duration().map(micros),
            requests_limit: config.length.requests,
            warmup_us: micros(config.warmup),
            elapsed_us: micros(record.elapsed),
            interrupted: record.interrupted,
            requests: RequestsReport {
                total: counts.total(),
                ok: counts.ok,
                errors: counts.errors(),
                rate,
                per_second_mean,
                per_second_stdev,
                per_second_max,
                late: open_loop.then_some(record.totals.late),
                late_at_cap: open_loop.then_some(record.totals.late_at_cap).filter(|&count| count > 0),
                unsent: open_loop.then_some(record.totals.unsent),
                offered_rate,
                measured_us: (elapsed_secs * 1e6).round() as u64,
                responded: counts.ok
                    + counts.rpc_errors.values().map(|e| e.count).sum::<u64>()
                    + counts.rpc_errors_other
                    + counts.http_errors.values().sum::<u64>()
                    + counts.invalid.values().sum::<u64>(),
            },
            latency: LatencyReport::from_histogram(&record.totals.latency),
            latency_uncorrected: LatencyReport::from_histogram(&record.totals.latency_uncorrected),
            latency_ok: LatencyReport::from_histogram(&record.totals.latency_ok),
            send_lag: open_loop.then(|| LatencyReport::from_histogram(&record.totals.send_lag)),
            outcomes: counts.clone(),
            http_status: record.totals.status_counts.iter().map(|(s, n)| (s.to_string(), *n)).collect(),
            bytes: BytesReport {
                sent: record.totals.bytes_sent,
                received: record.totals.bytes_received,
                received_per_sec: if elapsed_secs > 0.0 {
                    record.totals.bytes_received as f64 / elapsed_secs
                } else {
                    0.0
                },
                per_response: match responses_of(&record.totals.status_counts, counts) {
                    0 => None,
                    responses => Some(record.totals.bytes_received as f64 / responses as f64),
                },
            },
            methods: record
                .calls
                .iter()
                .map(|call| MethodReport {
                    name: call.name.clone(),
                    method: call.method.clone(),
                    requests: call.totals.counts.total(),
                    ok: call.totals.counts.ok,
                    errors: call.totals.counts.errors(),
                    changed_responses: call
                        .totals
                        .counts
                        .invalid
                        .get(&crate::outcome::InvalidKind::ChangedResponse)
                        .copied()
                        .unwrap_or(0),
                    rate_limited: call.totals.counts.class_total(crate::outcome::OutcomeClass::RateLimited),
                    rate: if elapsed_secs > 0.0 {
                        call.totals.counts.total() as f64 / elapsed_secs
                    } else {
                        0.0
                    },
                    latency: LatencyReport::from_histogram(&call.totals.latency),
                })
                .collect(),
            thresholds: Vec::new(),
            phases: record
                .phases
                .iter()
                .zip(["ok", "error"])
                .filter(|(phases, _)| !phases.send.is_empty())
                .map(|(phases, class)| PhaseReport {
                    class: class.to_string(),
                    connect: PhaseStat::from_histogram(&phases.connect),
                    send: PhaseStat::from_histogram(&phases.send),
                    wait: PhaseStat::from_histogram(&phases.wait),
                    receive: PhaseStat::from_histogram(&phases.receive),
                })
                .collect(),
            stages: {
                let mut start = 0.0;
                config
                    .stages
                    .iter()
                    .zip(&record.stages)
                    .enumerate()
                    .map(|(index, (stage, totals))| {
                        let duration = stage.duration.as_secs_f64();
                        let row = StageReport {
                            stage: index as u64 + 1,
                            level: stage.level,
                            start_s: start,
                            duration_s: duration,
                            ramp_s: stage.ramp.as_secs_f64(),
                            requests: totals.counts.total(),
                            ok: totals.counts.ok,
                            errors: totals.counts.errors(),
                            rate: totals.counts.total() as f64 / duration,
                            latency: LatencyReport::from_histogram(&totals.latency),
                        };
                        start += duration;
                        row
                    })
                    .collect()
            },
            series: SeriesReport {
                interval_s: record.series_interval_ms / 1000,
                interval_ms: record.series_interval_ms,
                points: record
                    .series
                    .iter()
                    .map(|p| SeriesPointReport {
                        second: p.start_ms / 1000,
                        start_ms: p.start_ms,
                        requests: p.requests,
                        errors: p.errors,
                        p50_us: p.p50_us,
                        p99_us: p.p99_us,
                    })
                    .collect(),
            },
            target_resources: None,
            heads: None,
            generator,
            protocol: config.protocol_name().to_string(),
            http2: Http2Figures::of_shape(config, record),
            websocket: WebSocketFigures::of_shape(config, record),
            rate_limit_headers: (!record.rate_headers.is_empty()).then(|| record.rate_headers.clone()),
            rate_limit_pauses: (config.on_rate_limit != crate::ratelimit::pause::OnRateLimit::Continue).then(
                || crate::ratelimit::pause::RatePauses {
                    mode: config.on_rate_limit.as_str().to_string(),
                    pauses: record.rate_pauses,
                    paused_ms: record.rate_paused.as_millis() as u64,
                },
            ),
            batch: (config.batch > 1).then(|| BatchReport {
                calls_per_request: config.batch as u64,
                http_requests: record.exchanges,
                http_requests_per_sec: if elapsed_secs > 0.0 {
                    record.exchanges as f64 / elapsed_secs
                } else {
                    0.0
                },
                calls_per_sec: rate,
            }),
        };
        // A server's error message may quote the key or the Authorization header it was sent.
        config.secrets.scrub_outcomes(&mut report.outcomes);
        report
    }

    /// Whether the run was open loop.
    pub fn is_open_loop(&self) -> bool {
        self.load.mode == "open"
    }

    /// Pretty JSON, every control character escaped.
    pub fn to_json(&self) -> String {
        // serde writes DEL and C1 controls raw; JSON escapes them as well.
        let json = serde_json::to_string_pretty(self).expect("a report always serializes");
        crate::util::printable::escape_controls(&json).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_window_is_never_longer_than_the_run() {
        let s = Duration::from_secs_f64;
        // (window, mean send lag us, time from warmup to the last answer) -> seconds
        let table = [
            // On time: the window itself, even if the last answer came early.
            (s(30.0), 0, s(30.0), 30.0),
            (s(3.0), 0, s(2.0), 3.0),
            // Sends fell steadily behind: the window stretched by twice the mean lag.
            (s(10.0), 500_000, s(11.2), 11.0),
            // A lag that did not grow steadily (a 30 s run whose process ran 36 s, mean lag
            // 12.5 s): the stretch stops at the last answer, not at 55 s.
            (s(30.0), 12_500_000, s(36.0), 36.0),
            // A replay at 2x: 2.33 s of run, never 2.70 s.
            (s(2.0), 350_000, s(2.33), 2.33),
        ];
        for (i, (window, lag, ran, expected)) in table.into_iter().enumerate() {
            let got = run_window_seconds(window, lag, ran);
            assert!((got - expected).abs() < 1e-9, "row {i}: {got} s, expected {expected} s");
        }
    }
}
