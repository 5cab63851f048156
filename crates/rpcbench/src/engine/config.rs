//! The validated description of one load run. The CLI (or a scenario file) builds a
//! [`RunConfig`]; the engine trusts it. Validation errors name the setting at fault.

use std::fmt;
use std::time::Duration;

use crate::jsonrpc::CheckMode;
#[cfg(test)]
use crate::jsonrpc::RequestTemplate;
use crate::util::redact;
use crate::workload::Workload;

use super::stages::{LevelCurve, Stage};
use crate::settings::HeaderProblem;
pub use crate::settings::{Field, Scheme, SettingError, Target, TlsOptions};

/// Request headers as `Debug` shows them: secret values masked.
struct RedactedHeaders<'a>(&'a [(String, String)]);

impl fmt::Debug for RedactedHeaders<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, value)| (name, redact::header_value(name, value))))
            .finish()
    }
}

/// How arrivals are spaced in open loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Arrivals {
    /// Evenly spaced, 1/rate apart.
    #[default]
    Uniform,
    /// A Poisson process: exponential gaps with mean 1/rate.
    Poisson,
}

/// How load is applied.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// Each of `connections` sends its next request as soon as the previous one completes.
    Closed {
        /// Number of connections.
        connections: usize,
    },
    /// Requests are due at a constant rate, whatever the server does; latency is measured
    /// from each request's intended send time.
    Open {
        /// Requests per second.
        rate: f64,
        /// Spacing of arrivals.
        arrivals: Arrivals,
        /// The most connections opened to keep up with the rate.
        max_connections: usize,
    },
}

/// When a run ends. At least one of the two is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Length {
    /// Measured duration (after warmup).
    pub duration: Option<Duration>,
    /// Number of measured requests.
    pub requests: Option<u64>,
}

/// One validated load run. Its `Debug` form hides the URL's keys and secret header values.
#[derive(Clone)]
pub struct RunConfig {
    /// Where requests go.
    pub target: Target,
    /// What each request calls: one fixed request, or a weighted mix with generated params.
    pub workload: Workload,
    /// Extra request headers (name, value).
    pub headers: Vec<(String, String)>,
    /// Closed or open loop.
    pub load: Load,
    /// When the run ends.
    pub length: Length,
    /// Load that changes over the run: levels of `load`'s kind (connections or requests per
    /// second), each held for a duration after a linear ramp. Empty: `load` holds for the whole
    /// run. With stages the measured duration is their sum.
    pub stages: Vec<Stage>,
    /// Time before measurement starts, during which requests are sent but not recorded.
    pub warmup: Duration,
    /// Time allowed for one request, from send to the last byte.
    pub timeout: Duration,
    /// Time allowed for a TCP (and TLS) connection to be established.
    pub connect_timeout: Duration,
    /// Reuse connections (HTTP keep-alive). When false, every request opens a connection.
    pub keepalive: bool,
    /// TLS settings.
    pub tls: TlsOptions,
    /// Worker threads (one current-thread runtime each). 0 means one per core.
    pub threads: usize,
    /// Response bodies larger than this are counted as invalid and the connection closed.
    pub max_body: u64,
    /// How much of each response is checked.
    pub check: CheckMode,
    /// Send this id in every request (and expect it back) instead of a fresh one per request:
    /// for static baseline servers, such as nginx returning a fixed body, that always answer
    /// the same id.
    pub fixed_id: Option<u64>,
    /// Seed for everything random in the run (arrivals, the mix, generated params), so reruns
    /// send the same requests.
    pub seed: u64,
    /// Open loop: open all `max_connections` at the start (before the warmup's first request)
    /// and pace the rate across them, as wrk2 does with `-c N -R R`, instead of opening
    /// connections only as the rate needs them.
    pub hold_connections: bool,
    /// Where workers publish live figures for a metrics endpoint (`--metrics-listen`). `None`
    /// (the default) publishes nothing.
    pub metrics: Option<std::sync::Arc<dyn super::LiveSink>>,
    /// JSON-RPC calls per HTTP request (`--batch`): 1 sends single calls; more sends batches
    /// (an array of calls, each with its own id). `-n` and the rate count HTTP requests.
    pub batch: usize,
    /// The part of the whole run this process does (`--shard`): every worker's global index
    /// is taken within it.
    pub shard: super::Slice,
    /// Wait until this wall-clock instant before starting (`--start-at`), so that the shards
    /// of a split run start together without a coordinator.
    pub start_at: Option<std::time::SystemTime>,
    /// The HTTP version and how it is reached (`--h2c`, `--http2`).
    pub http: HttpVersion,
    /// HTTP/2: concurrent streams per connection (`--streams`); each is a lane of the engine,
    /// so `connections x streams` requests are in flight in closed loop.
    pub streams: usize,
    /// WebSocket: requests outstanding per socket (`--in-flight`), answered in any order and
    /// matched by id; each is a lane of the engine.
    pub in_flight: usize,
    /// A replay (`rpcbench replay`): ticket i sends request i of the recording, instead of a
    /// call drawn from the workload (which then only names the replay's calls); with a
    /// recorded schedule, open loop follows the recorded offsets instead of the rate.
    pub replay: Option<std::sync::Arc<crate::replay::Replay>>,
    /// Which answers count as rate limited (HTTP 429, JSON-RPC codes and messages).
    pub rate_limits: crate::ratelimit::signs::RateLimitRules,
    /// What a connection does after a rate-limited answer (`--on-rate-limit`).
    pub on_rate_limit: crate::ratelimit::pause::OnRateLimit,
    /// Signed transactions (`rpcbench tx`): every request is an `eth_sendRawTransaction` of
    /// the next one signed ahead, its answer kept in the shared ledger.
    pub tx_sends: Option<std::sync::Arc<crate::protocol::send_raw::TxSends>>,
    /// Signed Solana transactions (`rpcbench tx` on Solana): every request is a
    /// `sendTransaction` of the next one ready, its answer kept in the shared ledger.
    pub solana_sends: Option<std::sync::Arc<crate::protocol::send_solana::SolanaSends>>,
    /// The `x-token` a `grpc://` target's calls carry (a secret: never shown).
    pub x_token: Option<crate::transport::grpc::XToken>,
}

/// The HTTP version a run speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpVersion {
    /// HTTP/1.1 (over TLS for https).
    #[default]
    Http1,
    /// Cleartext HTTP/2 with prior knowledge (`--h2c`, http URLs).
    H2c,
    /// HTTP/2 over TLS, negotiated with ALPN `h2` (`--http2`, https URLs).
    Http2,
}

impl HttpVersion {
    /// The protocol's name as reports give it: `http/1.1`, `h2c` or `h2`.
    pub fn name(self) -> &'static str {
        match self {
            HttpVersion::Http1 => "http/1.1",
            HttpVersion::H2c => "h2c",
            HttpVersion::Http2 => "h2",
        }
    }

    /// Whether this is HTTP/2 (either way).
    pub fn is_http2(self) -> bool {
        self != HttpVersion::Http1
    }
}

/// The most streams per connection `--streams` takes (HTTP/2's stream limit is a 31-bit
/// number, but a client-chosen 65,535 is far past any server's advertised limit).
pub const MAX_STREAMS: usize = 65_535;

impl fmt::Debug for RunConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunConfig")
            .field("target", &self.target)
            .field("workload", &self.workload)
            .field("headers", &RedactedHeaders(&self.headers))
            .field("load", &self.load)
            .field("length", &self.length)
            .field("stages", &self.stages)
            .field("warmup", &self.warmup)
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("keepalive", &self.keepalive)
            .field("tls", &self.tls)
            .field("threads", &self.threads)
            .field("max_body", &self.max_body)
            .field("check", &self.check)
            .field("fixed_id", &self.fixed_id)
            .field("seed", &self.seed)
            .field("metrics", &self.metrics.is_some())
            .field("batch", &self.batch)
            .field("shard", &self.shard)
            .field("start_at", &self.start_at)
            .field("http", &self.http)
            .field("streams", &self.streams)
            .field("in_flight", &self.in_flight)
            .field("replay", &self.replay.as_ref().map(|replay| replay.len()))
            .field("rate_limits", &self.rate_limits)
            .field("on_rate_limit", &self.on_rate_limit)
            .field("x_token", &self.x_token.is_some())
            .finish()
    }
}

impl RunConfig {
    /// A closed-loop run with the defaults of [`crate::defaults`]: 10 seconds on 50
    /// connections, as `rpcbench run` without load flags.
    pub fn new(target: Target, workload: impl Into<Workload>) -> Self {
        Self {
            target,
            workload: workload.into(),
            headers: Vec::new(),
            load: Load::Closed { connections: crate::defaults::CONNECTIONS },
            length: Length { duration: Some(crate::defaults::DURATION), requests: None },
            stages: Vec::new(),
            warmup: Duration::ZERO,
            timeout: crate::defaults::TIMEOUT,
            connect_timeout: crate::defaults::CONNECT_TIMEOUT,
            keepalive: true,
            tls: TlsOptions::default(),
            threads: 0,
            max_body: crate::defaults::MAX_BODY,
            check: CheckMode::Scan,
            fixed_id: None,
            seed: crate::defaults::SEED,
            hold_connections: false,
            metrics: None,
            batch: 1,
            shard: super::Slice::WHOLE,
            start_at: None,
            http: HttpVersion::Http1,
            streams: crate::defaults::STREAMS,
            in_flight: crate::defaults::IN_FLIGHT,
            replay: None,
            tx_sends: None,
            solana_sends: None,
            x_token: None,
            rate_limits: crate::ratelimit::signs::RateLimitRules::default(),
            on_rate_limit: crate::ratelimit::pause::OnRateLimit::Continue,
        }
    }

    /// A run of `replay` against `target`: open loop at the recorded pace, or closed loop
    /// (50 connections, as `run`) until the run's settings say otherwise; one pass of the file
    /// unless it loops (10 s then, as `run`). Settings applied later should end with
    /// [`RunConfig::bound_to_one_pass`].
    pub fn for_replay(replay: crate::replay::Replay, target: Target) -> RunConfig {
        let mut config = RunConfig::new(target, replay.workload());
        config.load = match &replay.schedule {
            Some(schedule) => Load::Open {
                rate: schedule.mean_rate(),
                arrivals: Arrivals::Uniform,
                max_connections: crate::defaults::MAX_CONNECTIONS,
            },
            None => Load::Closed { connections: crate::defaults::CONNECTIONS },
        };
        config.length = match replay.looped {
            true => Length { duration: Some(crate::defaults::DURATION), requests: None },
            false => Length { duration: None, requests: Some(replay.len() as u64) },
        };
        config.replay = Some(std::sync::Arc::new(replay));
        config
    }

    /// Without `--loop`, a replay sends each request once at most: its count is the file's (or
    /// a smaller `-n`), whatever its duration says. Nothing for a run that is no replay.
    pub fn bound_to_one_pass(&mut self) {
        let Some(replay) = &self.replay else { return };
        if replay.looped {
            return;
        }
        let one_pass = replay.len() as u64;
        self.length.requests = Some(self.length.requests.map_or(one_pass, |n| n.min(one_pass)));
    }

    /// Every secret the run sends (URL key, query values, credentials, header values), to scrub
    /// out of what a server sends back.
    pub fn secrets(&self) -> redact::Secrets {
        let mut secrets = self.target.secrets();
        for (name, value) in &self.headers {
            secrets.add_header(name, value);
        }
        secrets
    }

    /// Publishes the run's live figures to `sink` (a metrics endpoint's store).
    pub fn publish_to(&mut self, sink: impl super::LiveSink + 'static) {
        self.metrics = Some(std::sync::Arc::new(sink));
    }

    /// The measured duration: the stages' total, or the configured duration.
    pub fn measured_duration(&self) -> Option<Duration> {
        if self.stages.is_empty() {
            self.length.duration
        } else {
            Some(self.stages.iter().map(|stage| stage.duration).sum())
        }
    }

    /// Lanes of the engine per connection: the streams of an HTTP/2 connection, the requests
    /// in flight on a WebSocket, else 1.
    pub fn lanes_per_connection(&self) -> usize {
        if self.target.websocket {
            self.in_flight
        } else if self.http.is_http2() || self.target.grpc {
            self.streams
        } else {
            1
        }
    }

    /// The protocol's name as reports give it: `http/1.1`, `h2c`, `h2`, `websocket` or `grpc`
    /// (unary gRPC calls over HTTP/2).
    pub fn protocol_name(&self) -> &'static str {
        if self.target.websocket {
            "websocket"
        } else if self.target.grpc {
            "grpc"
        } else {
            self.http.name()
        }
    }

    /// The load level over time (from the start, warmup included) when the run has stages.
    pub fn level_curve(&self) -> Option<LevelCurve> {
        (!self.stages.is_empty()).then(|| LevelCurve::from_stages(&self.stages, self.warmup))
    }

    /// A `grpc://` target takes unary Geyser calls one per request: each call of the workload
    /// must name one, and what only JSON-RPC has (batches, replays, signed transactions) is
    /// refused.
    fn validate_grpc(&self) -> Result<(), SettingError> {
        crate::protocol::geyser_unary::GeyserCalls::new(&self.workload)
            .map_err(|err| SettingError::new(Field::Method, err.to_string()))?;
        if self.workload.calls().iter().enumerate().any(|(index, _)| {
            self.workload.sample_request(index).get("params").is_some_and(|params| !params.is_null())
        }) {
            return Err(SettingError::new(
                Field::Params,
                "a unary Geyser call is sent with its request's default fields: it takes no params",
            ));
        }
        if let Some(token) = &self.x_token {
            token.check().map_err(|err| SettingError::new(Field::XToken, err.to_string()))?;
        }
        // gRPC is HTTP/2 always: cleartext for grpc://, TLS for grpcs://. A flag that says the
        // same is no error; one that says otherwise is.
        match (self.http, self.target.scheme) {
            (HttpVersion::H2c, crate::settings::Scheme::Https) => {
                return Err(SettingError::new(
                    Field::H2c,
                    "is cleartext HTTP/2, but a grpcs:// URL is gRPC over TLS (HTTP/2 already): leave it out",
                ))
            }
            (HttpVersion::Http2, crate::settings::Scheme::Http) => {
                return Err(SettingError::new(
                    Field::Http2,
                    "is HTTP/2 over TLS, but a grpc:// URL is gRPC over cleartext HTTP/2: leave it out, or give grpcs:// for TLS",
                ))
            }
            _ => {}
        }
        if self.batch > 1 {
            return Err(SettingError::new(Field::Batch, "a grpc:// target's calls are unary: no batches"));
        }
        if self.replay.is_some() || self.tx_sends.is_some() || self.solana_sends.is_some() {
            return Err(SettingError::new(
                Field::Url,
                "a grpc:// target takes unary Geyser calls (--method GetSlot), not JSON-RPC requests",
            ));
        }
        Ok(())
    }

    /// Checks the settings that types alone cannot.
    pub fn validate(&self) -> Result<(), SettingError> {
        if self.target.grpc {
            self.validate_grpc()?;
        }
        for (index, stage) in self.stages.iter().enumerate() {
            let setting = Field::Stage(index);
            if !stage.level.is_finite() || stage.level < 0.0 {
                return Err(SettingError::new(setting, "the level must be zero or more"));
            }
            if stage.duration.is_zero() {
                return Err(SettingError::new(setting, "the duration must be longer than zero"));
            }
            if stage.ramp > stage.duration {
                return Err(SettingError::new(setting, "the ramp must fit in the stage's duration"));
            }
        }
        if !self.stages.is_empty() && self.length.duration.is_some() {
            return Err(SettingError::new(Field::Duration, "a run with stages lasts as long as its stages"));
        }
        if !self.stages.is_empty() && self.stages.iter().all(|stage| stage.level == 0.0) {
            return Err(SettingError::new(Field::Stage(0), "every stage has a level of zero"));
        }
        match &self.load {
            Load::Closed { connections } => {
                if *connections == 0 {
                    return Err(SettingError::new(Field::Connections, "must be at least 1"));
                }
            }
            Load::Open { rate, max_connections, .. } => {
                if !rate.is_finite() || *rate <= 0.0 {
                    return Err(SettingError::new(
                        Field::Rate,
                        "must be a positive number of requests per second",
                    ));
                }
                if *rate > 10_000_000.0 {
                    return Err(SettingError::new(
                        Field::Rate,
                        "must be at most 10000000 requests per second",
                    ));
                }
                if *max_connections == 0 {
                    return Err(SettingError::new(Field::MaxConnections, "must be at least 1"));
                }
            }
        }
        match (self.measured_duration(), self.length.requests) {
            (None, None) => {
                return Err(SettingError::new(Field::Duration, "a run needs a duration or a request count"))
            }
            (Some(duration), _) if duration.is_zero() => {
                return Err(SettingError::new(Field::Duration, "must be longer than zero"))
            }
            (_, Some(0)) => return Err(SettingError::new(Field::Requests, "must be at least 1")),
            _ => {}
        }
        if self.timeout.is_zero() {
            return Err(SettingError::new(Field::Timeout, "must be longer than zero"));
        }
        if self.connect_timeout.is_zero() {
            return Err(SettingError::new(Field::ConnectTimeout, "must be longer than zero"));
        }
        for (index, (name, value)) in self.headers.iter().enumerate() {
            let message = match crate::settings::header_problem(name, value) {
                None => continue,
                // Not echoed: a name with spaces in it may be a whole `Authorization Bearer …`.
                Some(HeaderProblem::BadName) => format!(
                    "the name of header #{} is not a valid header name (visible ASCII characters \
                     other than ':'; not shown: it may hold a secret)",
                    index + 1
                ),
                Some(HeaderProblem::LineBreak) => format!("the value of '{name}' contains a line break"),
                Some(HeaderProblem::SetByRpcbench) => format!("'{name}' is set by rpcbench"),
            };
            return Err(SettingError::new(Field::Headers, message));
        }
        if self.max_body == 0 {
            return Err(SettingError::new(Field::MaxBody, "must be at least 1 byte"));
        }
        let most = crate::protocol::batch::MAX_BATCH;
        if self.batch == 0 || self.batch > most {
            return Err(SettingError::new(Field::Batch, format!("must be from 1 to {most} calls")));
        }
        if self.batch > 1 && self.workload.has_http_calls() {
            return Err(SettingError::mentioning(
                Field::Batch,
                "batches carry JSON-RPC calls, not HTTP calls ({})",
                &[Field::HttpCalls],
            ));
        }
        if self.batch > 1 && self.fixed_id.is_some() {
            return Err(SettingError::mentioning(
                Field::Batch,
                "the calls of a batch are told apart by their ids: it cannot go with {}",
                &[Field::FixedId],
            ));
        }
        if self.streams == 0 || self.streams > MAX_STREAMS {
            return Err(SettingError::new(Field::Streams, format!("must be from 1 to {MAX_STREAMS}")));
        }
        if self.streams > 1 && !self.http.is_http2() && !self.target.websocket && !self.target.grpc {
            return Err(SettingError::mentioning(
                Field::Streams,
                "streams are HTTP/2's: use it with {} (http://) or {} (https://)",
                &[Field::H2c, Field::Http2],
            ));
        }
        match (self.http, self.target.scheme) {
            (HttpVersion::H2c, crate::settings::Scheme::Https) => {
                return Err(SettingError::new(
                    Field::H2c,
                    "is cleartext HTTP/2, for http:// URLs; for https:// use --http2",
                ))
            }
            (HttpVersion::Http2, crate::settings::Scheme::Http) => {
                return Err(SettingError::new(
                    Field::Http2,
                    "is HTTP/2 over TLS, for https:// URLs; for http:// use --h2c",
                ))
            }
            _ => {}
        }
        if self.in_flight == 0 || self.in_flight > MAX_STREAMS {
            return Err(SettingError::new(Field::InFlight, format!("must be from 1 to {MAX_STREAMS}")));
        }
        if self.target.websocket {
            if self.http.is_http2() {
                let flag = if self.http == HttpVersion::H2c { Field::H2c } else { Field::Http2 };
                return Err(SettingError::new(flag, "a ws:// or wss:// URL speaks WebSocket, not HTTP/2"));
            }
            if self.batch > 1 {
                return Err(SettingError::new(Field::Batch, "batches are not sent over WebSocket yet"));
            }
            if self.workload.has_http_calls() {
                return Err(SettingError::new(Field::HttpCalls, "plain HTTP calls cannot go over WebSocket"));
            }
            if self.in_flight > 1 && self.fixed_id.is_some() {
                return Err(SettingError::mentioning(
                    Field::InFlight,
                    "answers are matched to requests by id: more than one in flight cannot go with {}",
                    &[Field::FixedId],
                ));
            }
            if !self.keepalive {
                return Err(SettingError::new(Field::Keepalive, "a WebSocket is one long-lived connection"));
            }
        } else if self.in_flight > 1 {
            return Err(SettingError::new(Field::InFlight, "is for WebSocket (ws:// or wss://) targets"));
        }
        if let Some(replay) = &self.replay {
            if self.target.websocket {
                return Err(SettingError::new(
                    Field::Url,
                    "a replay sends HTTP requests: use an http:// or https:// URL",
                ));
            }
            if self.batch > 1 {
                return Err(SettingError::new(
                    Field::Batch,
                    "a replay sends the recorded bodies as they are",
                ));
            }
            if self.fixed_id.is_some() {
                return Err(SettingError::new(Field::FixedId, "a replay sends the recorded ids as they are"));
            }
            if !replay.looped && !self.warmup.is_zero() {
                return Err(SettingError::mentioning(
                    Field::Warmup,
                    "a replay without {} sends each request once: warmup would take the first ones",
                    &[Field::Loop],
                ));
            }
            if let Some(schedule) = &replay.schedule {
                if !schedule.speed.is_finite() || schedule.speed <= 0.0 {
                    return Err(SettingError::new(
                        Field::Speed,
                        "must be a positive factor such as 0.5x, 1x or 2x",
                    ));
                }
            }
        }
        if self.shard.count == 0 || self.shard.index >= self.shard.count {
            return Err(SettingError::new(Field::Shard, "must be i/N with i from 1 to N"));
        }
        let connections = match &self.load {
            Load::Closed { connections } => *connections as u64,
            Load::Open { max_connections, .. } => *max_connections as u64,
        };
        if self.shard.share(connections) == 0 {
            return Err(SettingError::new(
                Field::Shard,
                format!(
                    "{} shards need at least {} connections, one each",
                    self.shard.count, self.shard.count
                ),
            ));
        }
        Ok(())
    }

    /// The number of worker threads this run uses.
    pub fn worker_threads(&self) -> usize {
        let cores = if self.threads == 0 {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
        } else {
            self.threads
        };
        let most_useful = match &self.load {
            Load::Closed { connections } => *connections,
            Load::Open { max_connections, .. } => *max_connections,
        };
        // A shard's workers share its part of the connections: no worker without one.
        let mine = self.shard.share(most_useful as u64) as usize;
        cores.min(mine).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> RunConfig {
        let target = Target::parse("http://127.0.0.1:8899/").unwrap();
        RunConfig::new(target, RequestTemplate::from_method("getSlot", None).unwrap())
    }

    #[test]
    fn urls_are_parsed_into_request_parts() {
        let target =
            Target::parse("https://rpc.example.com/v3/0123456789abcdef0123456789abcdef?x=1").unwrap();
        assert_eq!(target.scheme, Scheme::Https);
        assert_eq!(target.port, 443);
        assert_eq!(target.host_header, "rpc.example.com");
        assert_eq!(target.path_and_query, "/v3/0123456789abcdef0123456789abcdef?x=1");
        assert_eq!(target.redacted(), "https://rpc.example.com/v3/***?x=***");
        let v6 = Target::parse("http://[::1]:8545").unwrap();
        assert_eq!((v6.host.as_str(), v6.port, v6.host_header.as_str()), ("::1", 8545, "[::1]:8545"));
        assert_eq!(v6.path_and_query, "/");
    }

    #[test]
    fn bad_urls_are_rejected_with_the_reason() {
        for (url, message) in [
            ("127.0.0.1:8899", "has no scheme: add http:// or https://"),
            ("ftp://127.0.0.1/", "scheme 'ftp'"),
            ("http://", "not a valid URL"),
        ] {
            let err = Target::parse(url).unwrap_err();
            assert!(err.to_string().contains(message), "{url}: {err}");
        }
    }

    #[test]
    fn validation_names_the_setting() {
        let mut bad = config();
        bad.load = Load::Closed { connections: 0 };
        assert_eq!(bad.validate().unwrap_err().field, Field::Connections);
        let mut bad = config();
        bad.load = Load::Open { rate: -1.0, arrivals: Arrivals::Uniform, max_connections: 10 };
        assert_eq!(bad.validate().unwrap_err().field, Field::Rate);
        let mut bad = config();
        bad.headers.push(("Bad Name".into(), "x".into()));
        assert_eq!(bad.validate().unwrap_err().field, Field::Headers);
        let mut bad = config();
        bad.length = Length { duration: None, requests: None };
        assert_eq!(bad.validate().unwrap_err().field, Field::Duration);
        assert!(config().validate().is_ok());
    }

    #[test]
    fn debug_forms_hide_keys_and_secret_headers() {
        let key = "9aa3d95b3bc440fa88ea12eaa4456161";
        let mut config = config();
        config.target =
            Target::parse(&format!("https://rpc.example.com/v3/{key}?apikey=hunter2&x=1")).unwrap();
        config.headers.push(("Authorization".into(), "Bearer topsecret".into()));
        config.headers.push(("X-Api-Key".into(), "abc123".into()));
        config.headers.push(("Accept".into(), "application/json".into()));
        let shown = format!("{config:?} {:?}", config.target);
        for secret in [key, "hunter2", "topsecret", "abc123"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("/v3/***?apikey=***&x=***"), "{shown}");
        assert!(shown.contains("application/json"), "{shown}");
    }

    #[test]
    fn invalid_header_names_are_not_echoed() {
        let mut bad = config();
        bad.headers.push(("Authorization Bearer sk_live_0123456789".into(), "x".into()));
        let err = bad.validate().unwrap_err();
        assert_eq!(err.field, Field::Headers);
        assert!(!err.to_string().contains("sk_live"), "{err}");
        assert!(err.message().contains("header #1"), "{err}");
    }
}
