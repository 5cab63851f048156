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
//! With `record`, one [`TrafficEntry`](crate::traffic::TrafficEntry) per answered request goes to a writer thread through
//! a bounded channel; the answer is sent to the client only once its line was written (one
//! `write` of the whole line), so a proxy killed at any moment has every answered request in
//! its file. Nothing secret is recorded: the header's upstream URL is redacted and headers
//! are never recorded.

mod relay;
mod stats;

use relay::{accept_loop, write_records, State, Upstream};
pub use stats::{PhaseHistograms, ProxyStats, UpstreamFailure, PHASES};

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Semaphore};

use crate::compare::FieldPath;
use crate::engine::config::HttpVersion;
use crate::engine::select::{SelectError, Wire, WireSettings};
use crate::field::{Field, SettingError};
use crate::metrics::MetricsServer;
use crate::server::http1::{self as http_server, OpenConnections, ServerThread, StartError};
use crate::settings::{Target, TlsOptions};
use crate::traffic::{TrafficHeader, TrafficWriter};
use crate::transport::connect::SetupError;

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
    /// Write one [`TrafficEntry`](crate::traffic::TrafficEntry) per answered request here.
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
    pub fn validate(&self) -> Result<(), SettingError> {
        let invalid = |field: Field, message: String| Err(SettingError::new(field, message));
        for (setting, rate) in [(Field::ErrorRate, self.error_rate), (Field::DropRate, self.drop_rate)] {
            if !(0.0..=1.0).contains(&rate) {
                return invalid(setting, format!("{rate} is not a share between 0 and 1"));
            }
        }
        if self.upstream.websocket {
            return invalid(Field::Upstream, "the proxy relays HTTP(S) only, not WebSocket".into());
        }
        if self.threads == 0 {
            return invalid(Field::Threads, "at least one thread is needed".into());
        }
        if self.upstream_connections == 0 {
            return invalid(Field::UpstreamConnections, "at least one connection is needed".into());
        }
        if self.max_connections == Some(0) {
            return invalid(Field::MaxConnections, "at least one connection is needed".into());
        }
        if self.queue_timeout.is_zero() || self.idle_timeout.is_some_and(|idle| idle.is_zero()) {
            let setting = if self.queue_timeout.is_zero() { Field::QueueTimeout } else { Field::IdleTimeout };
            return invalid(setting, "must be longer than 0".into());
        }
        Ok(())
    }
}

/// Why a proxy could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProxyError {
    /// A setting is out of range (or the upstream is not one the proxy can relay to).
    Invalid(SettingError),
    /// An address could not be bound.
    Bind {
        /// Which address: the proxy's ([`Field::Listen`]) or its metrics' ([`Field::MetricsListen`]).
        field: Field,
        /// The address.
        addr: SocketAddr,
        /// Why it could not be bound.
        source: io::Error,
    },
    /// The runtime or a thread could not be created.
    Runtime(io::Error),
    /// The upstream could not be resolved or its TLS set up.
    Upstream(SetupError),
    /// The record file could not be created.
    Record {
        /// The file.
        path: PathBuf,
        /// Why it could not be created.
        source: io::Error,
    },
}

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProxyError::Invalid(err) => err.fmt(f),
            ProxyError::Bind { field, addr, source } => {
                write!(f, "{field}: cannot listen on {addr}: {source}")
            }
            ProxyError::Runtime(source) => write!(f, "cannot start the proxy's runtime: {source}"),
            ProxyError::Upstream(source) => write!(f, "{}: {source}", Field::Upstream),
            ProxyError::Record { path, source } => {
                write!(f, "{}: cannot create {}: {source}", Field::RecordFile, path.display())
            }
        }
    }
}

impl std::error::Error for ProxyError {}

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
        options.validate().map_err(ProxyError::Invalid)?;
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
                return Err(ProxyError::Invalid(SettingError::new(
                    Field::Upstream,
                    "the proxy relays HTTP(S) only, not WebSocket",
                )))
            }
            Ok(Wire::Grpc(_)) => {
                return Err(ProxyError::Invalid(SettingError::new(
                    Field::Upstream,
                    "the proxy relays HTTP(S) only, not gRPC",
                )))
            }
            Err(SelectError::Setup(err)) => return Err(ProxyError::Upstream(err)),
            Err(err) => return Err(ProxyError::Invalid(SettingError::new(Field::Upstream, err.to_string()))),
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
                        .map_err(|source| ProxyError::Bind { field: Field::MetricsListen, addr, source })?,
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
            StartError::Bind { addr, source } => ProxyError::Bind { field: Field::Listen, addr, source },
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
