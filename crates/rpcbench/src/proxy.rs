//! `rpcbench proxy`: a transparent JSON-RPC relay over HTTP/1.1 that measures its own cost,
//! injects faults on the way back and records the traffic it relays.
//!
//! A [`Proxy`] serves clients with the crate's HTTP/1.1 loop (`http_server.rs`: keep-alive,
//! pipelining, bounded heads and bodies) and relays every POST body unchanged to the
//! upstream URL's path and query over a bounded pool of keep-alive connections opened by the
//! HTTP/1.1 transport (`transport/http1.rs`, TLS through `transport/connect.rs`). The
//! upstream's status and body come back unchanged; a client's `Authorization` header is
//! passed on. Other methods than POST get 405.
//!
//! Per request it measures, in HDR histograms per method (a batch is the key `batch`):
//! `read` (first byte of the request to its last), `upstream` (waiting for a pooled
//! connection and the upstream's answer), `write` (writing the answer back) and `overhead`
//! (the request's whole time in the proxy minus `upstream`).
//!
//! Faults, drawn from a seeded generator (one draw per request and knob, by the request's
//! arrival number, so the counts over N requests are exact): `latency` is added before
//! answering, `error_rate` answers a JSON-RPC error -32603 with the request's id (one per
//! call of a batch) with HTTP 200 instead of the upstream's answer, and `drop_rate` closes
//! the connection without answering. An upstream that cannot be reached or answers badly
//! gets the client a 502 with a JSON-RPC error body, counted by [`UpstreamFailure`]; so does a
//! request that waited longer than the queue timeout for a free upstream connection. Client
//! connections are capped and closed after an idle timeout (`http_server::OpenConnections`).
//!
//! With `record`, one [`TrafficEntry`] per answered request goes to a writer thread through
//! a bounded channel; the answer is sent to the client only once its line was written (one
//! `write` of the whole line), so a proxy killed at any moment has every answered request in
//! its file. Nothing secret is recorded: the header's upstream URL is redacted and headers
//! are never recorded.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch, Semaphore};

use crate::compare::FieldPath;
use crate::engine::config::HttpVersion;
use crate::engine::select::{SelectError, Wire, WireSettings};
use crate::http_server::{
    self, error_body, header_value, write_json, Arrival, DateCache, Handler, Limits, Method, Next,
    OpenConnections, Request, ServerThread, StartError,
};
use crate::metrics::{MetricsServer, LATENCY_BUCKETS_SECONDS};
use crate::settings::{Target, TlsOptions};
use crate::traffic::{methods_of, response_digest, TrafficEntry, TrafficHeader, TrafficWriter};
use crate::transport::connect::SetupError;
use crate::transport::http1::{Connection, Http1};
use crate::transport::http2::{Http2, StreamSlot};
use crate::transport::{Lane, Outgoing, Reply, Transport, WireError};

/// The JSON-RPC error code of injected errors and of 502 answers (Internal error).
pub const INTERNAL_ERROR: i64 = -32603;
/// The histogram key of a batch request.
pub const BATCH_KEY: &str = "batch";
/// The histogram key of a body that names no method.
pub const UNKNOWN_KEY: &str = "unknown";
pub use crate::traffic::{MAX_METHOD_KEYS, OTHER_METHODS_KEY};
/// Entries waiting for the record writer; a full channel makes requests wait (not the runtime).
const RECORD_QUEUE: usize = 1024;

/// How to run a proxy.
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    /// Where to listen (port 0 picks a free port).
    pub listen: SocketAddr,
    /// The upstream every request goes to (its path and query are used for every request).
    pub upstream: Target,
    /// TLS settings for an `https://` upstream.
    pub tls: TlsOptions,
    /// Write one [`TrafficEntry`] per answered request here.
    pub record: Option<PathBuf>,
    /// Field paths left out of the recorded response digests.
    pub ignore_fields: Vec<FieldPath>,
    /// Added before every answer.
    pub latency: Duration,
    /// The share of requests answered with a JSON-RPC error instead of the upstream's answer.
    pub error_rate: f64,
    /// The share of requests whose connection is closed without an answer.
    pub drop_rate: f64,
    /// Seed of the fault draws.
    pub seed: u64,
    /// Runtime worker threads (1: a current-thread runtime).
    pub threads: usize,
    /// Most connections open to the upstream at once (requests beyond wait for one).
    pub upstream_connections: usize,
    /// The longest wait for the upstream's answer (connecting included).
    pub upstream_timeout: Duration,
    /// The longest connect to the upstream.
    pub connect_timeout: Duration,
    /// The upstream's HTTP version: HTTP/1.1, or HTTP/2 (h2c with prior knowledge for
    /// `http://`, ALPN h2 for `https://`), chosen by the one wire selection as for a run.
    pub upstream_http: HttpVersion,
    /// The largest request and response body relayed.
    pub max_body_bytes: usize,
    /// Most client connections open at once; one more is closed at once (`None`: the
    /// open-file limit less 64 and the upstream connections).
    pub max_connections: Option<usize>,
    /// The longest a client connection may take to send a complete request, or stay idle
    /// between requests, before it is closed (`None`: no limit).
    pub idle_timeout: Option<Duration>,
    /// The longest a request waits for a free upstream connection; past it the client gets a
    /// 502 counted as [`UpstreamFailure::QueueTimeout`].
    pub queue_timeout: Duration,
}

/// Default longest wait for a client's complete request, or idle time between requests.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default longest wait for a free upstream connection.
pub const DEFAULT_QUEUE_TIMEOUT: Duration = Duration::from_secs(10);

impl ProxyOptions {
    /// Defaults for a proxy on `listen` in front of `upstream`.
    pub fn new(listen: SocketAddr, upstream: Target) -> Self {
        ProxyOptions {
            listen,
            upstream,
            tls: TlsOptions::default(),
            record: None,
            ignore_fields: Vec::new(),
            latency: Duration::ZERO,
            error_rate: 0.0,
            drop_rate: 0.0,
            seed: 0,
            threads: 1,
            upstream_connections: 64,
            upstream_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            upstream_http: HttpVersion::Http1,
            max_body_bytes: 16 << 20,
            max_connections: None,
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            queue_timeout: DEFAULT_QUEUE_TIMEOUT,
        }
    }

    /// Checks the settings; the error names the setting.
    pub fn validate(&self) -> Result<(), ProxyError> {
        let invalid = |setting: &'static str, message: String| Err(ProxyError::Invalid { setting, message });
        for (setting, rate) in [("error-rate", self.error_rate), ("drop-rate", self.drop_rate)] {
            if !(0.0..=1.0).contains(&rate) {
                return invalid(setting, format!("{rate} is not a share between 0 and 1"));
            }
        }
        if self.upstream.websocket {
            return invalid("upstream", "the proxy relays HTTP(S) only, not WebSocket".into());
        }
        if self.threads == 0 {
            return invalid("threads", "at least one thread is needed".into());
        }
        if self.upstream_connections == 0 {
            return invalid("upstream-connections", "at least one connection is needed".into());
        }
        if self.max_connections == Some(0) {
            return invalid("max-connections", "at least one connection is needed".into());
        }
        if self.queue_timeout.is_zero() || self.idle_timeout.is_some_and(|idle| idle.is_zero()) {
            let setting = if self.queue_timeout.is_zero() { "queue-timeout" } else { "idle-timeout" };
            return invalid(setting, "must be longer than 0".into());
        }
        Ok(())
    }
}

/// Why a proxy could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProxyError {
    /// A setting is out of range.
    Invalid { setting: &'static str, message: String },
    /// The listen address could not be bound.
    Bind { addr: SocketAddr, source: io::Error },
    /// The metrics address could not be bound.
    Metrics { addr: SocketAddr, source: io::Error },
    /// The runtime or a thread could not be created.
    Runtime(io::Error),
    /// The upstream could not be resolved or its TLS set up.
    Upstream(SetupError),
    /// The record file could not be created.
    Record { path: PathBuf, source: io::Error },
}

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProxyError::Invalid { setting, message } => write!(f, "--{setting}: {message}"),
            ProxyError::Bind { addr, source } => write!(f, "--listen: cannot listen on {addr}: {source}"),
            ProxyError::Metrics { addr, source } => {
                write!(f, "--metrics-listen: cannot listen on {addr}: {source}")
            }
            ProxyError::Runtime(source) => write!(f, "cannot start the proxy's runtime: {source}"),
            ProxyError::Upstream(source) => write!(f, "--upstream: {source}"),
            ProxyError::Record { path, source } => {
                write!(f, "--record: cannot create {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for ProxyError {}

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
    fn new() -> Self {
        let histogram = || Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
        PhaseHistograms { phases: [histogram(), histogram(), histogram(), histogram()], sums_ns: [0; 4] }
    }

    fn record(&mut self, values_ns: [u64; 4]) {
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
    /// Per method key (a method name, [`BATCH_KEY`] or [`UNKNOWN_KEY`]): the answered requests'
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
                    crate::printable::one_line(name),
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
struct StatsCollector(ProxyStats);

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

/// A running proxy. Stops (joining its threads) on [`Proxy::stop`] or drop.
#[derive(Debug)]
pub struct Proxy {
    server: Option<ServerThread>,
    metrics: Option<MetricsServer>,
    state: Arc<State>,
    writer: Option<JoinHandle<()>>,
}

impl Proxy {
    /// Checks `options`, binds the listen address, creates the record file and starts
    /// relaying on a runtime and thread of its own. Returns once the socket is listening.
    pub fn start(options: ProxyOptions) -> Result<Proxy, ProxyError> {
        Self::start_with_metrics(options, None)
    }

    /// Like [`Proxy::start`], also serving the live figures on `metrics` (`GET /metrics`).
    pub fn start_with_metrics(
        options: ProxyOptions,
        metrics: Option<SocketAddr>,
    ) -> Result<Proxy, ProxyError> {
        options.validate()?;
        let settings = WireSettings {
            target: &options.upstream,
            headers: &[],
            tls: &options.tls,
            connect_timeout: options.connect_timeout,
            http: options.upstream_http,
            keepalive: true,
            // An HTTP/2 upstream: one connection, a stream per relayed request.
            streams: options.upstream_connections,
            in_flight: 1,
            max_body: options.max_body_bytes as u64,
        };
        let transport = match Wire::select(&settings, false) {
            Ok(Wire::Http1(http1)) => Upstream::Http1(http1),
            Ok(Wire::Http2(http2)) => Upstream::Http2(http2),
            // Refused by the options' checks.
            Ok(Wire::WebSocket(_)) => {
                return Err(ProxyError::Invalid {
                    setting: "upstream",
                    message: "the proxy relays HTTP(S) only, not WebSocket".into(),
                })
            }
            Err(SelectError::Setup(err)) => return Err(ProxyError::Upstream(err)),
            Err(err) => return Err(ProxyError::Invalid { setting: "upstream", message: err.to_string() }),
        };
        let (record, writer) = match &options.record {
            Some(path) => {
                let header = TrafficHeader::new(&options.upstream.redacted(), &options.ignore_fields);
                let file = TrafficWriter::create(path, &header)
                    .map_err(|source| ProxyError::Record { path: path.clone(), source })?;
                let (sender, receiver) = mpsc::channel(RECORD_QUEUE);
                let ignore = options.ignore_fields.clone();
                let writer = std::thread::Builder::new()
                    .name("rpcbench-proxy-record".into())
                    .spawn(move || write_records(file, receiver, ignore))
                    .map_err(ProxyError::Runtime)?;
                (Some(sender), Some(writer))
            }
            None => (None, None),
        };
        let state = Arc::new(State {
            transport,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(options.upstream_connections),
            upstream_timeout: options.upstream_timeout,
            queue_timeout: options.queue_timeout,
            max_body: options.max_body_bytes,
            open: OpenConnections::new(http_server::connection_cap(
                options.max_connections,
                64 + options.upstream_connections as u64,
            )),
            idle_timeout: options.idle_timeout,
            latency: options.latency,
            error_rate: options.error_rate,
            drop_rate: options.drop_rate,
            seed: options.seed,
            arrivals: AtomicU64::new(0),
            started: Instant::now(),
            stats: Mutex::new(ProxyStats::default()),
            record,
        });
        let metrics = match metrics {
            Some(addr) => {
                let live = state.clone();
                let render = Arc::new(move || live.snapshot().render_prometheus());
                Some(
                    MetricsServer::serve(addr, "rpcbench-proxy-metrics", render)
                        .map_err(|source| ProxyError::Metrics { addr, source })?,
                )
            }
            None => None,
        };
        let served = state.clone();
        let server = ServerThread::start(
            options.listen,
            options.threads,
            "rpcbench-proxy",
            Duration::from_secs(1),
            move |listener, shutdown| async move {
                let _ = tokio::spawn(accept_loop(listener, served, shutdown)).await;
            },
        )
        .map_err(|error| match error {
            StartError::Bind { addr, source } => ProxyError::Bind { addr, source },
            StartError::Runtime(source) => ProxyError::Runtime(source),
        })?;
        Ok(Proxy { server: Some(server), metrics, state, writer })
    }

    /// The address the proxy listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.as_ref().map_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)), ServerThread::local_addr)
    }

    /// The proxy's URL, e.g. `http://127.0.0.1:8546/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.local_addr())
    }

    /// The metrics endpoint's URL, when serving metrics.
    pub fn metrics_url(&self) -> Option<String> {
        self.metrics.as_ref().map(MetricsServer::url)
    }

    /// The figures so far.
    pub fn stats(&self) -> ProxyStats {
        self.state.snapshot()
    }

    /// Stops serving (requests in flight get up to a second), writes the last record lines,
    /// and returns the final figures.
    pub fn stop(mut self) -> ProxyStats {
        self.shutdown();
        self.state.snapshot()
    }

    fn shutdown(&mut self) {
        if let Some(server) = self.server.take() {
            server.stop();
        }
        if let Some(metrics) = self.metrics.take() {
            metrics.stop();
        }
        // The runtime is gone with every sender but the state's own: dropping it ends the
        // writer once it has written what is queued.
        if let Some(state) = Arc::get_mut(&mut self.state) {
            state.record = None;
            if let Some(writer) = self.writer.take() {
                let _ = writer.join();
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// What the connections share.
struct State {
    transport: Upstream,
    /// Idle upstream lanes.
    idle: Mutex<Vec<UpstreamLane>>,
    /// One permit per upstream connection that may be open.
    permits: Semaphore,
    upstream_timeout: Duration,
    queue_timeout: Duration,
    max_body: usize,
    /// Client connections: the cap, and the head and idle timeout.
    open: OpenConnections,
    idle_timeout: Option<Duration>,
    latency: Duration,
    error_rate: f64,
    drop_rate: f64,
    seed: u64,
    /// Requests so far: the index of the next request's fault draws.
    arrivals: AtomicU64,
    started: Instant,
    stats: Mutex<ProxyStats>,
    record: Option<mpsc::Sender<Recorded>>,
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("State").field("arrivals", &self.arrivals).finish_non_exhaustive()
    }
}

/// The generator streams of the fault draws.
const ERROR_STREAM: u64 = 0x7072_6f78_7965_7272;
const DROP_STREAM: u64 = 0x7072_6f78_7964_7270;

/// A uniform draw in `0.0..1.0` for request `index` from `stream`.
fn draw(seed: u64, stream: u64, index: u64) -> f64 {
    let bits = crate::mock::prng::mix(crate::mock::prng::mix(seed, stream), index);
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

impl State {
    fn snapshot(&self) -> ProxyStats {
        self.stats.lock().unwrap_or_else(|poison| poison.into_inner()).clone()
    }

    fn stats(&self) -> std::sync::MutexGuard<'_, ProxyStats> {
        self.stats.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// Relays one request; on success the upstream's status and body are handed to `answer`
    /// while the connection is held.
    async fn relay(
        &self,
        outgoing: &Outgoing,
        answer: impl FnOnce(u16, &[u8]),
    ) -> Result<(), UpstreamFailure> {
        // A bounded wait: a client holding every upstream connection with slow calls delays
        // the others by at most the queue timeout, and each of them is told so.
        let _permit = match tokio::time::timeout(self.queue_timeout, self.permits.acquire()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(UpstreamFailure::Connect),
            Err(_) => return Err(UpstreamFailure::QueueTimeout),
        };
        let attempt = async {
            // A pooled connection the upstream closed while idle fails at once: one retry on a
            // fresh connection.
            let pooled = self.idle.lock().unwrap_or_else(|poison| poison.into_inner()).pop();
            let retry = pooled.is_some();
            let mut connection = match pooled {
                Some(connection) => connection,
                None => self.open().await?,
            };
            let reply = match connection.exchange(outgoing, self.max_body as u64).await {
                Ok(reply) => reply,
                Err(WireError::Closed) if retry => {
                    connection = self.open().await?;
                    connection
                        .exchange(outgoing, self.max_body as u64)
                        .await
                        .map_err(|_| UpstreamFailure::BadResponse)?
                }
                Err(_) => return Err(UpstreamFailure::BadResponse),
            };
            answer(reply.status, connection.body());
            if reply.reusable {
                self.idle.lock().unwrap_or_else(|poison| poison.into_inner()).push(connection);
            }
            Ok(())
        };
        match tokio::time::timeout(self.upstream_timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(UpstreamFailure::Timeout),
        }
    }

    async fn open(&self) -> Result<UpstreamLane, UpstreamFailure> {
        let opened = match &self.transport {
            Upstream::Http1(http1) => http1.open(0).await.map(UpstreamLane::Http1),
            Upstream::Http2(http2) => {
                // Every lane joins the one connection (slot 0), a stream each.
                http2.open(0).await.map(UpstreamLane::Http2)
            }
        };
        opened.map_err(|error| match error.kind() {
            io::ErrorKind::TimedOut => UpstreamFailure::Timeout,
            _ => UpstreamFailure::Connect,
        })
    }
}

/// The upstream's transport, from the one wire selection ([`crate::engine::select`]). The
/// relay runs on a multi-threaded runtime, so it names the concrete lanes it can hold rather
/// than any [`Transport`].
#[derive(Debug)]
enum Upstream {
    Http1(Http1),
    Http2(Http2),
}

/// One place a relayed request goes upstream: a keep-alive HTTP/1.1 connection, or a stream
/// slot on the HTTP/2 connection.
#[derive(Debug)]
enum UpstreamLane {
    Http1(Connection),
    Http2(StreamSlot),
}

impl UpstreamLane {
    async fn exchange(&mut self, request: &Outgoing, max_body: u64) -> Result<Reply, WireError> {
        match self {
            UpstreamLane::Http1(connection) => connection.exchange(request, max_body).await,
            UpstreamLane::Http2(slot) => slot.exchange(request, max_body).await,
        }
    }

    fn body(&self) -> &[u8] {
        match self {
            UpstreamLane::Http1(connection) => connection.body(),
            UpstreamLane::Http2(slot) => slot.body(),
        }
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>, mut shutdown: watch::Receiver<bool>) {
    let live = Arc::new(());
    loop {
        let accepted = tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _peer)) = accepted else {
            // Out of file descriptors or a connection reset before accept: back off briefly.
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        // Past the cap a connection is closed at once: idle clients cannot lock others out.
        let Some(slot) = state.open.admit() else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let limits = Limits { max_body: state.max_body, head_timeout: state.idle_timeout, timed: true };
        let handler = Relay { state: state.clone(), outgoing: Outgoing::default(), body: Vec::new() };
        let shutdown = shutdown.clone();
        let token = live.clone();
        tokio::spawn(async move {
            http_server::serve_connection(stream, handler, shutdown, limits).await;
            drop(slot);
            drop(token);
        });
    }
    drop(listener);
    let deadline = Instant::now() + Duration::from_secs(1);
    while Arc::strong_count(&live) > 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// An entry for the writer thread, with the response body to digest; the sender waits for
/// `written` before answering the client.
struct Recorded {
    entry: TrafficEntry,
    response: Vec<u8>,
    written: oneshot::Sender<()>,
}

fn write_records(mut file: TrafficWriter, mut receiver: mpsc::Receiver<Recorded>, ignore: Vec<FieldPath>) {
    while let Some(mut recorded) = receiver.blocking_recv() {
        recorded.entry.response_hash = response_digest(&recorded.response, &ignore);
        let failed = file.append(&recorded.entry).is_err();
        // The sender learns of a failure by the closed channel.
        if !failed {
            let _ = recorded.written.send(());
        }
    }
}

/// One client connection's relay.
struct Relay {
    state: Arc<State>,
    outgoing: Outgoing,
    /// The answer's body (reused).
    body: Vec<u8>,
}

/// The histogram key of a request body.
/// `key`, or [`OTHER_METHODS_KEY`] when it is new and the table already has
/// [`MAX_METHOD_KEYS`] rows (or it is over 128 bytes): a client sending ever new method names
/// cannot grow the table.
fn bounded_key<V>(table: &BTreeMap<String, V>, key: String) -> String {
    if !table.contains_key(&key) && (table.len() >= MAX_METHOD_KEYS || key.len() > 128) {
        OTHER_METHODS_KEY.to_string()
    } else {
        key
    }
}

fn method_key(body: &[u8]) -> String {
    if body.trim_ascii_start().first() == Some(&b'[') {
        return BATCH_KEY.to_string();
    }
    methods_of(body).into_iter().next().unwrap_or_else(|| UNKNOWN_KEY.to_string())
}

/// The JSON-RPC error answer to `body`: one error per call with the call's id (null when it
/// has none or the body is not JSON-RPC), in an array for a batch.
fn injected_error(body: &[u8], out: &mut Vec<u8>) {
    #[derive(serde::Deserialize)]
    struct Call<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
    }
    let one = |out: &mut Vec<u8>, id: Option<&RawValue>| {
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        out.extend_from_slice(id.map_or("null", RawValue::get).as_bytes());
        out.extend_from_slice(b",\"error\":{\"code\":");
        out.extend_from_slice(itoa::Buffer::new().format(INTERNAL_ERROR).as_bytes());
        out.extend_from_slice(b",\"message\":\"Internal error (injected by rpcbench proxy)\"}}");
    };
    out.clear();
    if let Ok(calls) = serde_json::from_slice::<Vec<Call<'_>>>(body) {
        out.push(b'[');
        for (at, call) in calls.iter().enumerate() {
            if at > 0 {
                out.push(b',');
            }
            one(out, call.id);
        }
        out.push(b']');
    } else {
        let call = serde_json::from_slice::<Call<'_>>(body).ok();
        one(out, call.and_then(|call| call.id));
    }
}

/// The status line of `status` (`200 OK`).
fn status_line(status: u16) -> Vec<u8> {
    let reason =
        http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Unknown");
    format!("{status} {reason}").into_bytes()
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Handler<S> for Relay {
    type TakeOver = ();

    // Written out to state the Send bound the trait asks for.
    #[allow(clippy::manual_async_fn)]
    fn answer<'a>(
        &'a mut self,
        stream: &'a mut S,
        out: &'a mut Vec<u8>,
        request: &'a Request,
        bytes: &'a [u8],
        arrival: Option<Arrival>,
        date: &'a mut DateCache,
    ) -> impl std::future::Future<Output = Next<()>> + Send + 'a {
        async move {
            let close = request.closes();
            if request.method != Method::Post {
                error_body(&mut self.body, -32600, "only POST requests with a JSON-RPC body are relayed");
                write_json(
                    out,
                    b"405 Method Not Allowed",
                    b"allow: POST\r\n",
                    &self.body,
                    Some(request),
                    close,
                    &date.text,
                );
                return Next::Continue;
            }
            let state = &*self.state;
            let complete = arrival.map_or_else(Instant::now, |arrival| arrival.complete);
            let first = arrival.map_or(complete, |arrival| arrival.first);
            let body = request.body(bytes);
            let index = state.arrivals.fetch_add(1, Ordering::Relaxed);
            // The client's Authorization goes on to the upstream; nothing else of its head.
            self.outgoing.clear();
            self.outgoing.body.extend_from_slice(body);
            if let Some(authorization) = header_value(&bytes[..request.head_len], b"authorization") {
                self.outgoing.headers.extend_from_slice(b"Authorization: ");
                self.outgoing.headers.extend_from_slice(authorization);
                self.outgoing.headers.extend_from_slice(b"\r\n");
            }
            let upstream_started = Instant::now();
            let mut status = 0u16;
            let answer_body = &mut self.body;
            let relayed = state
                .relay(&self.outgoing, |code, upstream_body| {
                    status = code;
                    answer_body.clear();
                    answer_body.extend_from_slice(upstream_body);
                })
                .await;
            let upstream_done = Instant::now();
            let upstream = upstream_done - upstream_started;
            let mut injected = false;
            match relayed {
                Ok(()) => {
                    if state.error_rate > 0.0 && draw(state.seed, ERROR_STREAM, index) < state.error_rate {
                        injected_error(body, answer_body);
                        status = 200;
                        injected = true;
                    }
                }
                Err(failure) => {
                    status = 502;
                    error_body(
                        answer_body,
                        INTERNAL_ERROR,
                        &format!("upstream failed: {}", failure.as_str()),
                    );
                    *state.stats().upstream_failures.entry(failure).or_default() += 1;
                }
            }
            let dropped = state.drop_rate > 0.0 && draw(state.seed, DROP_STREAM, index) < state.drop_rate;
            {
                let mut stats = state.stats();
                stats.requests += 1;
                stats.injected_errors += u64::from(injected && !dropped);
                stats.dropped += u64::from(dropped);
            }
            if !state.latency.is_zero() || dropped {
                // Answers already computed are not held back by this request.
                if !out.is_empty() {
                    if stream.write_all(out).await.is_err() {
                        return Next::Drop;
                    }
                    out.clear();
                }
            }
            if !state.latency.is_zero() {
                tokio::time::sleep(state.latency).await;
                date.refresh();
            }
            if let Some(record) = &state.record {
                let mut entry = TrafficEntry::for_request(
                    u64::try_from(first.saturating_duration_since(state.started).as_micros())
                        .unwrap_or(u64::MAX),
                    body,
                );
                entry.status = if dropped { 0 } else { status };
                entry.response_bytes = if dropped { 0 } else { answer_body.len() as u64 };
                entry.upstream_us = u64::try_from(upstream.as_micros()).unwrap_or(u64::MAX);
                let response = if dropped { Vec::new() } else { answer_body.clone() };
                let (written, done) = oneshot::channel();
                let sent = record.send(Recorded { entry, response, written }).await.is_ok();
                if !sent || done.await.is_err() {
                    state.stats().record_failures += 1;
                }
            }
            if dropped {
                return Next::Drop;
            }
            let write_started = Instant::now();
            let line = status_line(status);
            write_json(out, &line, b"", answer_body, Some(request), close, &date.text);
            let written = stream.write_all(out).await;
            out.clear();
            let done = Instant::now();
            let total = done - first;
            let read = complete - first;
            let write = done - write_started;
            let overhead = total.saturating_sub(upstream);
            let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            let mut stats = state.stats();
            let key = bounded_key(&stats.methods, method_key(body));
            stats.methods.entry(key).or_insert_with(PhaseHistograms::new).record([
                nanos(read),
                nanos(upstream),
                nanos(write),
                nanos(overhead),
            ]);
            drop(stats);
            if written.is_err() {
                return Next::Drop;
            }
            Next::Continue
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_sending_new_method_names_cannot_grow_the_per_method_table() {
        let mut table: BTreeMap<String, ()> = BTreeMap::new();
        for n in 0..1000 {
            let key = bounded_key(&table, format!("method{n}"));
            table.insert(key, ());
        }
        assert_eq!(table.len(), MAX_METHOD_KEYS + 1);
        assert!(table.contains_key(OTHER_METHODS_KEY));
        // Known names keep their row; long names share the other row.
        assert_eq!(bounded_key(&table, "method7".into()), "method7");
        let empty: BTreeMap<String, ()> = BTreeMap::new();
        assert_eq!(bounded_key(&empty, "x".repeat(200)), OTHER_METHODS_KEY);
    }

    #[test]
    fn injected_errors_echo_ids() {
        let mut out = Vec::new();
        injected_error(br#"{"jsonrpc":"2.0","id":"a7","method":"x"}"#, &mut out);
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["id"], "a7");
        assert_eq!(value["error"]["code"], INTERNAL_ERROR);
        injected_error(
            br#"[{"jsonrpc":"2.0","id":1,"method":"x"},{"jsonrpc":"2.0","id":2,"method":"y"}]"#,
            &mut out,
        );
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value[0]["id"], 1);
        assert_eq!(value[1]["id"], 2);
        injected_error(b"not json", &mut out);
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert!(value["id"].is_null());
    }

    #[test]
    fn batches_have_their_own_key() {
        assert_eq!(method_key(br#" [{"jsonrpc":"2.0","id":1,"method":"x"}]"#), BATCH_KEY);
        assert_eq!(method_key(br#"{"jsonrpc":"2.0","id":1,"method":"getSlot"}"#), "getSlot");
        assert_eq!(method_key(b"garbage"), UNKNOWN_KEY);
    }

    #[test]
    fn fault_draws_are_seeded() {
        let hits = |seed| (0..10_000).filter(|i| draw(seed, ERROR_STREAM, *i) < 0.1).count();
        assert_eq!(hits(7), hits(7));
        assert!((800..1200).contains(&hits(7)), "{}", hits(7));
    }

    #[test]
    fn rates_out_of_range_name_the_flag() {
        let mut options =
            ProxyOptions::new("127.0.0.1:0".parse().unwrap(), Target::parse("http://127.0.0.1:1/").unwrap());
        options.error_rate = 2.0;
        assert!(options.validate().unwrap_err().to_string().starts_with("--error-rate"));
        options.error_rate = 0.0;
        options.drop_rate = -1.0;
        assert!(options.validate().unwrap_err().to_string().starts_with("--drop-rate"));
    }

    #[test]
    fn a_clients_method_name_cannot_forge_a_row_of_the_proxy_table() {
        let mut stats = ProxyStats::default();
        stats
            .methods
            .entry("getSlot\nrelayed: 999999".into())
            .or_insert_with(PhaseHistograms::new)
            .record([1_000, 50_000, 2_000, 9_000]);
        let text = stats.render_text();
        assert_eq!(text.lines().filter(|line| line.starts_with("relayed:")).count(), 1, "{text}");
        assert!(text.contains("getSlot\\nrelayed: 999999"), "{text}");
    }

    #[test]
    fn stats_render_every_phase() {
        let mut stats = ProxyStats::default();
        stats
            .methods
            .entry("getSlot".into())
            .or_insert_with(PhaseHistograms::new)
            .record([1_000, 50_000, 2_000, 9_000]);
        let text = stats.render_text();
        assert!(text.contains("getSlot") && text.contains("overhead"), "{text}");
        let prometheus = stats.render_prometheus();
        assert!(
            prometheus.contains(
                "rpcbench_proxy_phase_seconds_bucket{le=\"0.01\",phase=\"overhead\",method=\"getSlot\"} 1"
            ),
            "{prometheus}"
        );
        assert_eq!(stats.to_json()["methods"]["getSlot"]["upstream"]["count"], 1);
    }

    #[test]
    fn a_read_phase_of_requests_that_came_in_one_read_is_left_out_of_the_table() {
        let mut stats = ProxyStats::default();
        let methods = &mut stats.methods;
        methods
            .entry("getSlot".into())
            .or_insert_with(PhaseHistograms::new)
            .record([0, 50_000, 2_000, 9_000]);
        let text = stats.render_text();
        assert!(!text.lines().any(|line| line.split_whitespace().nth(1) == Some("read")), "{text}");
        assert!(text.contains("read: not shown, every request arrived whole in one read"), "{text}");
        // A request that took two reads: the phase is measured and shown.
        let methods = &mut stats.methods;
        methods
            .entry("getSlot".into())
            .or_insert_with(PhaseHistograms::new)
            .record([700_000, 50_000, 2_000, 9_000]);
        let text = stats.render_text();
        let read =
            text.lines().find(|line| line.split_whitespace().nth(1) == Some("read")).expect("a read row");
        assert!(read.contains("700."), "{text}");
        assert!(!text.contains("read: not shown"), "{text}");
    }
}
