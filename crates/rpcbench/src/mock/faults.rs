//! Fault knobs of the mock nodes: their configuration ([`Faults`], [`Latency`], [`Stall`],
//! [`parse_rate_limit`]) and the per-server state that applies them to each request
//! (token bucket, stall schedule, deterministic error and jitter draws).

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::util::units::{parse_duration, parse_rate, UnitError};

use super::limiter_log::{LimiterDecision, LimiterLog};
use super::prng::mix;
use super::read_log::ReadLog;

/// Faults applied before a request is answered. All are off by default and they combine.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// Asynchronous delay (`tokio::time::sleep`) of every HTTP request (the default when
    /// [`Faults::latency_by_method`] names some methods).
    pub latency: Option<Latency>,
    /// Asynchronous delay by JSON-RPC method, instead of `latency` for those methods; a batch
    /// waits for the longest of its calls' delays.
    pub latency_by_method: Vec<(String, Latency)>,
    /// Synchronous delay (`std::thread::sleep`) inside the handler, which blocks the
    /// runtime worker thread: with one thread the server then serves at most
    /// `1 / blocking_latency` requests per second.
    pub blocking_latency: Option<Duration>,
    /// Blocking delay by JSON-RPC method, instead of `blocking_latency` for those methods.
    pub blocking_latency_by_method: Vec<(String, Duration)>,
    /// Requests served one at a time in the order they were read, each taking this long,
    /// without blocking a thread: each one's service ends this long after the previous one's
    /// was due to end (or after it was read, when the node was idle), so the node saturates at
    /// exactly `1 / serial_service_time` requests per second whatever the machine does. A
    /// thread blocked by [`Faults::blocking_latency`] serves fewer when it gets less of a core
    /// or wakes late.
    pub serial_service_time: Option<Duration>,
    /// Fraction (0.0..=1.0) of JSON-RPC calls answered with -32603 "Internal error
    /// (injected)", chosen deterministically from the seed.
    pub error_rate: f64,
    /// Requests per second allowed over all connections; the excess gets HTTP 429 (or a
    /// JSON-RPC error, by [`Faults::rate_limit_style`]).
    pub rate_limit: Option<f64>,
    /// Requests the rate limiter lets through at once after a quiet spell (its bucket's
    /// size); `None`: a tenth of a second's worth, at least 1.
    pub rate_limit_burst: Option<f64>,
    /// The rate limiter's decision this many (from 1) is a refusal whatever its bucket holds,
    /// no token taken: one stray 429, as a provider gives when a node behind it is busy, or
    /// as a stalled client's bunched sends meet (what `limits` must not take for the limit).
    pub rate_limit_stray: Option<u64>,
    /// How requests over the rate limit are answered.
    pub rate_limit_style: RateLimitStyle,
    /// Whether answers announce the rate limiter's state in headers (`X-RateLimit-Limit`,
    /// `-Remaining`, `-Reset` and the IETF draft's `RateLimit-*`), as some providers do.
    pub announce_headers: bool,
    /// A periodic full pause of the server.
    pub stall: Option<Stall>,
}

impl Faults {
    /// Whether a knob delays every answer (a latency, a blocking latency or a serial service
    /// time): then the mock keeps when it read each request ([`crate::mock::ReadLog`]).
    pub(crate) fn serves_slowly(&self) -> bool {
        self.latency.is_some()
            || !self.latency_by_method.is_empty()
            || self.blocking_latency.is_some()
            || !self.blocking_latency_by_method.is_empty()
            || self.serial_service_time.is_some()
    }

    /// Checks the ranges, returning the name of the bad knob and what is wrong.
    pub(crate) fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(0.0..=1.0).contains(&self.error_rate) {
            return Err(("error_rate", format!("{} is not a fraction between 0 and 1", self.error_rate)));
        }
        if let Some(rate) = self.rate_limit {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(("rate_limit", format!("{rate} is not a positive rate")));
            }
        }
        if let Some(burst) = self.rate_limit_burst {
            if !(burst.is_finite() && burst >= 1.0) {
                return Err(("rate_limit_burst", format!("{burst} is not a burst of at least 1 request")));
            }
        }
        if let Some(stall) = self.stall {
            stall.check().map_err(|reason| ("stall", reason))?;
        }
        Ok(())
    }
}

/// How the mock answers a request over its rate limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RateLimitStyle {
    /// HTTP 429 with `Retry-After` and a JSON-RPC error body (-32005 "rate limit exceeded").
    #[default]
    Http429,
    /// HTTP 200 with the JSON-RPC error -32005 "rate limit exceeded" and no header, as many
    /// hosted providers answer.
    JsonRpc,
    /// Every call takes a token, those inside a batch one by one: a call over the budget gets
    /// the JSON-RPC error -32005 "rate limit exceeded" with its own id, inside a valid array
    /// for a batch, while the calls within the budget are answered (QuickNode's behaviour).
    BatchItems,
}

impl FromStr for RateLimitStyle {
    type Err = FaultParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "429" | "http" => Ok(RateLimitStyle::Http429),
            "jsonrpc" => Ok(RateLimitStyle::JsonRpc),
            "batch-items" => Ok(RateLimitStyle::BatchItems),
            other => Err(FaultParseError {
                input: other.to_string(),
                expected: "429, jsonrpc or batch-items".to_string(),
            }),
        }
    }
}

/// A delay of `base` plus a uniform draw in `-jitter..=+jitter` (never below zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latency {
    /// The mean delay.
    pub base: Duration,
    /// The largest deviation from `base`, either way.
    pub jitter: Duration,
}

impl Latency {
    /// A fixed delay without jitter.
    pub fn fixed(base: Duration) -> Self {
        Latency { base, jitter: Duration::ZERO }
    }

    /// The delay for a uniform draw `unit` in `0.0..1.0`.
    fn sample(&self, unit: f64) -> Duration {
        if self.jitter.is_zero() {
            return self.base;
        }
        let offset = (unit * 2.0 - 1.0) * self.jitter.as_secs_f64();
        Duration::from_secs_f64((self.base.as_secs_f64() + offset).max(0.0))
    }
}

/// The error of parsing a fault knob: the rejected text and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultParseError {
    /// The text that was rejected.
    pub input: String,
    /// What was expected instead.
    pub expected: String,
}

impl fmt::Display for FaultParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid value '{}': expected {}", self.input, self.expected)
    }
}

impl std::error::Error for FaultParseError {}

impl From<UnitError> for FaultParseError {
    fn from(err: UnitError) -> Self {
        FaultParseError { input: err.input, expected: err.expected.to_string() }
    }
}

const LATENCY_EXPECTED: &str = "a latency such as 5ms, or base:jitter such as 5ms:2ms";

/// A latency knob's value: one for every method, or some per method with a default
/// (`getBlock=50ms,default=1ms`; each may be `base:jitter`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MethodLatencies<T> {
    /// The latency of methods not named (`default=`, or the whole value without names).
    pub default: Option<T>,
    /// The named methods' latencies.
    pub by_method: Vec<(String, T)>,
}

impl<T: FromStr<Err = FaultParseError>> FromStr for MethodLatencies<T> {
    type Err = FaultParseError;

    /// Parses `5ms`, or `METHOD=LATENCY` pairs separated by commas, `default=` for the rest.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if !s.contains('=') {
            return Ok(MethodLatencies { default: Some(s.parse()?), by_method: Vec::new() });
        }
        let mut latencies = MethodLatencies { default: None, by_method: Vec::new() };
        for pair in s.split(',') {
            let err =
                |expected: &str| FaultParseError { input: pair.to_string(), expected: expected.to_string() };
            let (method, value) =
                pair.split_once('=').ok_or_else(|| err("METHOD=LATENCY, such as getBlock=50ms"))?;
            let method = method.trim();
            if method.is_empty() {
                return Err(err("a method name before '='"));
            }
            let value: T = value.trim().parse()?;
            if method == "default" {
                if latencies.default.replace(value).is_some() {
                    return Err(err("one default"));
                }
            } else if latencies.by_method.iter().any(|(name, _)| name == method) {
                return Err(err("each method once"));
            } else {
                latencies.by_method.push((method.to_string(), value));
            }
        }
        Ok(latencies)
    }
}

impl<T: fmt::Display> fmt::Display for MethodLatencies<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.by_method.is_empty() {
            return match &self.default {
                Some(latency) => latency.fmt(f),
                None => Ok(()),
            };
        }
        let mut pairs: Vec<String> =
            self.by_method.iter().map(|(method, latency)| format!("{method}={latency}")).collect();
        if let Some(latency) = &self.default {
            pairs.push(format!("default={latency}"));
        }
        f.write_str(&pairs.join(","))
    }
}

/// A blocking latency: a plain duration (no jitter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockingLatency(pub Duration);

impl fmt::Display for BlockingLatency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl FromStr for BlockingLatency {
    type Err = FaultParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(BlockingLatency(parse_duration(s)?))
    }
}

impl FromStr for Latency {
    type Err = FaultParseError;

    /// Parses `5ms` (fixed) or `5ms:2ms` (base and jitter).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || FaultParseError { input: s.to_string(), expected: LATENCY_EXPECTED.to_string() };
        let (base, jitter) = match s.split_once(':') {
            Some((base, jitter)) => (base, Some(jitter)),
            None => (s, None),
        };
        let base = parse_duration(base).map_err(|_| err())?;
        let jitter = match jitter {
            Some(jitter) => parse_duration(jitter).map_err(|_| err())?,
            None => Duration::ZERO,
        };
        Ok(Latency { base, jitter })
    }
}

impl fmt::Display for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.base)?;
        if !self.jitter.is_zero() {
            write!(f, ":{:?}", self.jitter)?;
        }
        Ok(())
    }
}

/// The latency of the longest-waiting call in `body` (by its method, `default` for methods not
/// named); `default` when the body names no method.
fn longest<T: Copy>(
    body: &[u8],
    by_method: &[(String, T)],
    default: Option<T>,
    length: impl Fn(&T) -> Duration,
) -> Option<T> {
    let methods = crate::traffic::methods_of(body);
    let mut chosen: Option<T> = None;
    for method in &methods {
        let latency =
            by_method.iter().find(|(name, _)| name == method).map(|(_, latency)| *latency).or(default);
        if let Some(latency) = latency {
            if chosen.as_ref().is_none_or(|current| length(&latency) > length(current)) {
                chosen = Some(latency);
            }
        }
    }
    if methods.is_empty() {
        default
    } else {
        chosen
    }
}

/// A full pause of `pause` out of every `every`; the first pause starts `every - pause`
/// after the server starts. Requests arriving during a pause wait until it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    /// How long each pause lasts.
    pub pause: Duration,
    /// The period of the pauses.
    pub every: Duration,
}

impl Stall {
    /// `elapsed` with the pauses held: during a pause, the time its pause began.
    pub fn held(&self, elapsed: Duration) -> Duration {
        if self.every.is_zero() || self.pause >= self.every {
            return elapsed;
        }
        let into = Duration::from_nanos((elapsed.as_nanos() % self.every.as_nanos()) as u64);
        let runs = self.every - self.pause;
        if into >= runs {
            elapsed - (into - runs)
        } else {
            elapsed
        }
    }

    fn check(&self) -> Result<(), String> {
        if self.pause.is_zero() {
            return Err("the pause must be longer than zero".into());
        }
        if self.pause >= self.every {
            return Err(format!(
                "the pause ({:?}) must be shorter than its period ({:?})",
                self.pause, self.every
            ));
        }
        Ok(())
    }

    /// How long a request arriving `elapsed` after start must wait (zero outside pauses).
    pub(crate) fn wait_at(&self, elapsed: Duration) -> Duration {
        let every = self.every.as_nanos();
        let phase = elapsed.as_nanos() % every;
        let pause_start = every - self.pause.as_nanos();
        if phase >= pause_start {
            Duration::from_nanos((every - phase) as u64)
        } else {
            Duration::ZERO
        }
    }
}

const STALL_EXPECTED: &str = "pause/period such as 2s/10s, with the pause shorter than the period";

impl FromStr for Stall {
    type Err = FaultParseError;

    /// Parses `2s/10s`: a pause of 2 s every 10 s.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || FaultParseError { input: s.to_string(), expected: STALL_EXPECTED.to_string() };
        let (pause, every) = s.split_once('/').ok_or_else(err)?;
        let stall = Stall {
            pause: parse_duration(pause).map_err(|_| err())?,
            every: parse_duration(every).map_err(|_| err())?,
        };
        stall.check().map_err(|_| err())?;
        Ok(stall)
    }
}

/// Parses a rate limit such as `50/s`, `600/m` or `50` (requests per second).
pub fn parse_rate_limit(input: &str) -> Result<f64, FaultParseError> {
    parse_rate(input).map_err(FaultParseError::from)
}

/// Parses an error rate: a fraction `0.25` or a percentage `25%`.
pub fn parse_error_rate(input: &str) -> Result<f64, FaultParseError> {
    let err = || FaultParseError {
        input: input.to_string(),
        expected: "a fraction between 0 and 1 such as 0.05, or a percentage such as 5%".to_string(),
    };
    let text = input.trim();
    let value = match text.strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map_err(|_| err())? / 100.0,
        None => text.parse::<f64>().map_err(|_| err())?,
    };
    if !(0.0..=1.0).contains(&value) {
        return Err(err());
    }
    Ok(value)
}

/// What the rate limiter decided for one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Admission {
    Allowed,
    /// Rejected; the next token is due after this long.
    Limited {
        retry_after: Duration,
        allowed_rps: f64,
        burst: f64,
    },
}

#[derive(Debug)]
struct TokenBucket {
    rate: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
    /// Every decision, on the bucket's clock ([`LimiterLog`]).
    log: Mutex<LimiterLog>,
    /// The decision (from 1) refused whatever the bucket holds ([`Faults::rate_limit_stray`]).
    stray: Option<u64>,
}

impl TokenBucket {
    fn new(rate: f64, burst: Option<f64>, now: Instant) -> Self {
        let burst = burst.unwrap_or((rate / 10.0).floor()).max(1.0);
        TokenBucket {
            rate,
            burst,
            state: Mutex::new((burst, now)),
            log: Mutex::new(LimiterLog::new(rate, burst, now)),
            stray: None,
        }
    }

    fn admit(&self, now: Instant) -> Admission {
        let mut guard = self.state.lock().unwrap_or_else(|poison| poison.into_inner());
        let (tokens, last) = &mut *guard;
        let refill = now.saturating_duration_since(*last).as_secs_f64() * self.rate;
        *tokens = (*tokens + refill).min(self.burst);
        *last = now;
        // Logged under the bucket's lock, so the log's order (and count) is the decisions'.
        let mut log = self.log.lock().unwrap_or_else(|poison| poison.into_inner());
        let allowed = *tokens >= 1.0 && self.stray != Some(log.total() + 1);
        if allowed {
            *tokens -= 1.0;
        }
        log.push(LimiterDecision { at: now, allowed, tokens: *tokens });
        if allowed {
            Admission::Allowed
        } else {
            let retry_after = Duration::from_secs_f64((1.0 - *tokens).max(0.0) / self.rate);
            Admission::Limited { retry_after, allowed_rps: self.rate, burst: self.burst }
        }
    }

    /// What the bucket holds at `now`, without taking a token.
    fn announce(&self, now: Instant) -> RateAnnouncement {
        let guard = self.state.lock().unwrap_or_else(|poison| poison.into_inner());
        let (tokens, last) = *guard;
        let tokens = (tokens + now.saturating_duration_since(last).as_secs_f64() * self.rate).min(self.burst);
        RateAnnouncement {
            limit: self.burst as u64,
            remaining: tokens.floor() as u64,
            reset_secs: ((self.burst - tokens) / self.rate).ceil() as u64,
        }
    }
}

/// The rate limiter's state as `--announce-headers` tells it: the bucket's size (the burst),
/// the whole requests it holds now, and the seconds until it is full again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RateAnnouncement {
    pub(crate) limit: u64,
    pub(crate) remaining: u64,
    pub(crate) reset_secs: u64,
}

impl RateAnnouncement {
    /// The HTTP/1.1 header lines, each ending in CRLF: `X-RateLimit-*` and `RateLimit-*`.
    pub(crate) fn header_lines(&self, out: &mut Vec<u8>) {
        for (name, value) in self.headers() {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }

    /// The headers, by name (lower case) and value.
    pub(crate) fn headers(&self) -> [(&'static str, u64); 6] {
        [
            ("x-ratelimit-limit", self.limit),
            ("x-ratelimit-remaining", self.remaining),
            ("x-ratelimit-reset", self.reset_secs),
            ("ratelimit-limit", self.limit),
            ("ratelimit-remaining", self.remaining),
            ("ratelimit-reset", self.reset_secs),
        ]
    }
}

/// The live state of a server's faults.
#[derive(Debug)]
pub(crate) struct FaultState {
    faults: Faults,
    seed: u64,
    started: Instant,
    bucket: Option<TokenBucket>,
    error_draws: AtomicU64,
    jitter_draws: AtomicU64,
    /// When the last request's serial service is due to end ([`Faults::serial_service_time`]).
    serial_end: Mutex<Option<Instant>>,
    /// When each request was read, kept when the knobs make the mock serve slowly
    /// ([`FaultState::read_log`]).
    reads: Option<Mutex<ReadLog>>,
}

const ERROR_STREAM: u64 = 0x6572_726f_7273;
const JITTER_STREAM: u64 = 0x6a69_7474_6572;

impl FaultState {
    pub(crate) fn new(faults: Faults, seed: u64, started: Instant) -> Self {
        let bucket = faults.rate_limit.map(|rate| {
            let mut bucket = TokenBucket::new(rate, faults.rate_limit_burst, started);
            bucket.stray = faults.rate_limit_stray;
            bucket
        });
        FaultState {
            seed,
            started,
            bucket,
            error_draws: AtomicU64::new(0),
            jitter_draws: AtomicU64::new(0),
            serial_end: Mutex::new(None),
            reads: faults.serves_slowly().then(Mutex::default),
            faults,
        }
    }

    /// When the serial service of a request read at `read_at` ends: a service time after the
    /// previous request's was due to end, or after `read_at` when that is later (the node was
    /// idle). Counted from when the previous one was due, not from when it was answered, so a
    /// late timer does not lower the node's rate. `None` without the knob.
    pub(crate) fn serial_service_end(&self, read_at: Instant) -> Option<Instant> {
        let service = self.faults.serial_service_time.filter(|time| !time.is_zero())?;
        let mut last = self.serial_end.lock().unwrap_or_else(|poison| poison.into_inner());
        let start = last.map_or(read_at, |end| end.max(read_at));
        let end = start + service;
        *last = Some(end);
        Some(end)
    }

    /// Notes that a request was read at `at`, when the mock keeps its reads.
    pub(crate) fn note_read(&self, at: Instant) {
        if let Some(reads) = &self.reads {
            reads.lock().unwrap_or_else(|poison| poison.into_inner()).push(at);
        }
    }

    /// Notes that the request read at `read` is answered now, its delays over, when the mock
    /// keeps its reads.
    pub(crate) fn note_answered(&self, read: Instant) {
        if let Some(reads) = &self.reads {
            reads.lock().unwrap_or_else(|poison| poison.into_inner()).push_served(read, Instant::now());
        }
    }

    /// When the mock read its last [`ReadLog::CAPACITY`] requests; `None` unless it serves
    /// slowly ([`Faults::serves_slowly`]).
    pub(crate) fn read_log(&self) -> Option<ReadLog> {
        Some(self.reads.as_ref()?.lock().unwrap_or_else(|poison| poison.into_inner()).clone())
    }

    /// Takes a rate-limit token, if a limit is set.
    pub(crate) fn admit(&self) -> Admission {
        match &self.bucket {
            Some(bucket) => bucket.admit(Instant::now()),
            None => Admission::Allowed,
        }
    }

    /// What the rate limiter decided so far (its last [`LimiterLog::CAPACITY`] decisions);
    /// `None` without a limit.
    pub(crate) fn limiter_log(&self) -> Option<LimiterLog> {
        let bucket = self.bucket.as_ref()?;
        Some(bucket.log.lock().unwrap_or_else(|poison| poison.into_inner()).clone())
    }

    /// The limiter's state for `--announce-headers`; `None` without a limit or the flag.
    pub(crate) fn announcement(&self) -> Option<RateAnnouncement> {
        let bucket = self.bucket.as_ref().filter(|_| self.faults.announce_headers)?;
        Some(bucket.announce(Instant::now()))
    }

    /// How long to wait for a stall in progress to end.
    pub(crate) fn stall_wait(&self) -> Duration {
        match self.faults.stall {
            Some(stall) => stall.wait_at(self.started.elapsed()),
            None => Duration::ZERO,
        }
    }

    /// The asynchronous latency for a request with this body: its methods' latencies (the
    /// longest, for a batch) when some are named, else the default.
    pub(crate) fn latency(&self, body: &[u8]) -> Duration {
        let faults = &self.faults;
        let latency = if faults.latency_by_method.is_empty() {
            faults.latency
        } else {
            longest(body, &faults.latency_by_method, faults.latency, |latency| latency.base + latency.jitter)
        };
        match latency {
            Some(latency) => {
                let draw = self.jitter_draws.fetch_add(1, Ordering::Relaxed);
                latency.sample(unit_float(mix(self.seed ^ JITTER_STREAM, draw)))
            }
            None => Duration::ZERO,
        }
    }

    /// The blocking latency for a request with this body, if any.
    pub(crate) fn blocking_latency(&self, body: &[u8]) -> Option<Duration> {
        let faults = &self.faults;
        let blocking = if faults.blocking_latency_by_method.is_empty() {
            faults.blocking_latency
        } else {
            longest(body, &faults.blocking_latency_by_method, faults.blocking_latency, |d| *d)
        };
        blocking.filter(|d| !d.is_zero())
    }

    /// Whether the next call gets an injected error.
    pub(crate) fn inject_error(&self) -> bool {
        let rate = self.faults.error_rate;
        if rate <= 0.0 {
            return false;
        }
        if rate >= 1.0 {
            return true;
        }
        let draw = self.error_draws.fetch_add(1, Ordering::Relaxed);
        unit_float(mix(self.seed ^ ERROR_STREAM, draw)) < rate
    }

    /// How requests over the rate limit are answered.
    pub(crate) fn rate_limit_style(&self) -> RateLimitStyle {
        self.faults.rate_limit_style
    }

    /// Whether each call takes its own token (`batch-items`), rather than each HTTP request.
    pub(crate) fn limits_per_call(&self) -> bool {
        self.bucket.is_some() && self.faults.rate_limit_style == RateLimitStyle::BatchItems
    }

    pub(crate) fn has_error_rate(&self) -> bool {
        self.faults.error_rate > 0.0
    }
}

/// Maps 64 random bits to a float in `0.0..1.0`.
pub(crate) fn unit_float(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// How a mock node shows its head: `lag` blocks (slots) behind the true one, each new one
/// `delay` after it is produced, held still by `stall`, and answered `phantom` ahead of what
/// is served. One for every chain, so Solana and Ethereum lag alike.
#[derive(Debug, Clone, Default)]
pub(crate) struct HeadView {
    pub(crate) lag: u64,
    pub(crate) delay: Duration,
    pub(crate) phantom: u64,
    pub(crate) stall: Option<Stall>,
    /// More lag while the node is loaded, with the meter of the requests it answers.
    pub(crate) under_load: Option<(HeadLagUnderLoad, std::sync::Arc<RequestMeter>)>,
}

/// A node that falls behind under load (`--head-lag-under-load N@RATE`): while it answered
/// more than `above` requests a second over the last 250 ms (a window sliding by 50 ms), its
/// head is `extra` more blocks (slots) behind, so that a capacity
/// search's head lag grows with the load, against known truth. A load shorter than the window
/// (a capacity step of less than 250 ms, warm-up included) is diluted by the quiet before it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadLagUnderLoad {
    /// Blocks (slots) further behind while loaded.
    pub extra: u64,
    /// Requests a second above which the node counts as loaded.
    pub above: f64,
}

const HEAD_LAG_UNDER_LOAD_EXPECTED: &str =
    "N@RATE: N more blocks behind while answering more than RATE requests a second, such as 5@200";

impl FromStr for HeadLagUnderLoad {
    type Err = FaultParseError;

    /// Parses `5@200`: 5 blocks more behind above 200 requests a second.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err =
            || FaultParseError { input: s.to_string(), expected: HEAD_LAG_UNDER_LOAD_EXPECTED.to_string() };
        let (extra, above) = s.split_once('@').ok_or_else(err)?;
        let extra: u64 = extra.trim().parse().map_err(|_| err())?;
        let above: f64 = above.trim().trim_end_matches("/s").parse().map_err(|_| err())?;
        if extra == 0 || !(above.is_finite() && above >= 0.0) {
            return Err(err());
        }
        Ok(HeadLagUnderLoad { extra, above })
    }
}

/// The window over which a node's recent rate is counted for `--head-lag-under-load`.
pub(crate) const LOAD_WINDOW: Duration = Duration::from_millis(250);
/// The buckets the window slides by: the rate is that of the last whole buckets.
pub(crate) const LOAD_BUCKETS: usize = 5;

/// Requests answered per bucket of [`LOAD_WINDOW`] / [`LOAD_BUCKETS`] of the node's life: the
/// last [`LOAD_BUCKETS`] whole buckets give its recent rate, so that steps of a fraction of a
/// second (not only whole seconds) count as load.
#[derive(Debug)]
pub(crate) struct RequestMeter {
    started: Instant,
    buckets: std::sync::Mutex<MeterBuckets>,
}

/// The bucket being counted and the counts of the ones before it, in a ring.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MeterBuckets {
    /// The bucket being counted (its number since the node started).
    current: u64,
    /// Counts by bucket number modulo the ring's length: the current one and the whole ones
    /// before it.
    counts: [u64; LOAD_BUCKETS + 1],
}

impl MeterBuckets {
    fn new() -> Self {
        Self { current: 0, counts: [0; LOAD_BUCKETS + 1] }
    }

    /// Rolls on to `bucket`: the buckets passed over are emptied (no requests in them).
    fn roll(&mut self, bucket: u64) {
        let ring = self.counts.len() as u64;
        if bucket <= self.current {
            return;
        }
        for passed in (self.current + 1)..=bucket.min(self.current + ring) {
            self.counts[(passed % ring) as usize] = 0;
        }
        self.current = bucket;
    }

    /// Requests in the last [`LOAD_BUCKETS`] whole buckets (the current one left out).
    fn recent(&self) -> u64 {
        let ring = self.counts.len() as u64;
        (1..=LOAD_BUCKETS as u64)
            .filter(|back| *back <= self.current)
            .map(|back| self.counts[((self.current - back) % ring) as usize])
            .sum()
    }
}

impl RequestMeter {
    pub(crate) fn new(started: Instant) -> Self {
        Self { started, buckets: std::sync::Mutex::new(MeterBuckets::new()) }
    }

    /// The bucket `now` falls in.
    fn bucket(&self) -> u64 {
        let width = (LOAD_WINDOW / LOAD_BUCKETS as u32).as_nanos().max(1);
        (self.started.elapsed().as_nanos() / width) as u64
    }

    /// Counts one request answered now.
    pub(crate) fn count(&self) {
        let bucket = self.bucket();
        let mut buckets = self.buckets.lock().unwrap_or_else(|poison| poison.into_inner());
        buckets.roll(bucket);
        let at = (bucket % buckets.counts.len() as u64) as usize;
        buckets.counts[at] += 1;
    }

    /// Requests a second over the last [`LOAD_WINDOW`].
    pub(crate) fn recent_rate(&self) -> f64 {
        let bucket = self.bucket();
        let mut buckets = self.buckets.lock().unwrap_or_else(|poison| poison.into_inner());
        buckets.roll(bucket);
        buckets.recent() as f64 / LOAD_WINDOW.as_secs_f64()
    }
}

impl HeadView {
    /// The head knobs of `options`.
    pub(crate) fn of(options: &super::MockOptions) -> Self {
        HeadView {
            lag: options.head_lag,
            delay: options.head_delay,
            phantom: options.head_phantom,
            stall: options.head_stall,
            under_load: options
                .head_lag_under_load
                .map(|knob| (knob, std::sync::Arc::new(RequestMeter::new(Instant::now())))),
        }
    }

    /// Counts a request answered, for the lag under load.
    pub(crate) fn count_request(&self) {
        if let Some((_, meter)) = &self.under_load {
            meter.count();
        }
    }

    /// The blocks behind now: the fixed lag, plus the lag under load while loaded.
    fn lag_now(&self) -> u64 {
        let loaded = self.under_load.as_ref().filter(|(knob, meter)| meter.recent_rate() > knob.above);
        self.lag + loaded.map_or(0, |(knob, _)| knob.extra)
    }

    /// The head shown `elapsed` after the chain began at `first`, one block (slot) per `slot_time`.
    pub(crate) fn shown(&self, first: u64, elapsed: Duration, slot_time: Duration) -> u64 {
        let mut shown = elapsed.saturating_sub(self.delay);
        if let Some(stall) = &self.stall {
            shown = stall.held(shown);
        }
        (first + (shown.as_nanos() / slot_time.as_nanos()) as u64).saturating_sub(self.lag_now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_lagging_under_load_counts_a_sliding_window_shorter_than_a_second_and_parses_n_at_rate() {
        assert_eq!("5@200".parse::<HeadLagUnderLoad>().unwrap(), HeadLagUnderLoad { extra: 5, above: 200.0 });
        assert_eq!("3@50/s".parse::<HeadLagUnderLoad>().unwrap().above, 50.0);
        for bad in ["5", "0@200", "x@200", "5@-1", "5@"] {
            let err = bad.parse::<HeadLagUnderLoad>().unwrap_err();
            assert!(err.to_string().contains("N@RATE"), "{bad}: {err}");
        }
        // 100 requests in each of five 50 ms buckets: 500 in the last 250 ms, 2,000/s, seen
        // as soon as the fifth bucket has ended (a step of 300 ms is load, not only a whole
        // second of it).
        let mut buckets = MeterBuckets::new();
        for bucket in 0..5u64 {
            buckets.roll(bucket);
            buckets.counts[(bucket % 6) as usize] += 100;
        }
        assert_eq!(buckets.recent(), 400, "the bucket being counted is left out");
        buckets.roll(5);
        assert_eq!(buckets.recent(), 500);
        assert!((buckets.recent() as f64 / LOAD_WINDOW.as_secs_f64() - 2000.0).abs() < 1e-9);
        // The window slides: a bucket later, the first one has left it.
        buckets.roll(6);
        assert_eq!(buckets.recent(), 400);
        // A silent stretch longer than the window: no load, whatever came before.
        buckets.roll(100);
        assert_eq!(buckets.recent(), 0);
        assert_eq!(LOAD_WINDOW / LOAD_BUCKETS as u32, Duration::from_millis(50));
        // Unloaded, the head is where the chain is.
        let meter = std::sync::Arc::new(RequestMeter::new(Instant::now()));
        assert_eq!(meter.recent_rate(), 0.0);
        let view = HeadView { under_load: Some(("2@10".parse().unwrap(), meter)), ..HeadView::default() };
        assert_eq!(view.shown(100, Duration::ZERO, Duration::from_secs(3600)), 100);
    }

    #[test]
    fn latencies_by_method_apply_to_their_methods_and_a_batch_waits_for_its_slowest() {
        let latency: MethodLatencies<Latency> = "getBlock=50ms,getSlot=2ms:1ms,default=1ms".parse().unwrap();
        assert_eq!(latency.default, Some(Latency::fixed(Duration::from_millis(1))));
        assert_eq!(latency.to_string(), "getBlock=50ms,getSlot=2ms:1ms,default=1ms");
        let blocking: MethodLatencies<BlockingLatency> = "getBlock=20ms".parse().unwrap();
        let faults = Faults {
            latency: latency.default,
            latency_by_method: latency.by_method,
            blocking_latency_by_method: blocking.by_method.iter().map(|(m, b)| (m.clone(), b.0)).collect(),
            ..Faults::default()
        };
        let state = FaultState::new(faults, 7, Instant::now());
        let ms = Duration::from_millis;
        let block = br#"{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[1]}"#;
        let balance = br#"{"jsonrpc":"2.0","id":1,"method":"getBalance"}"#;
        let batch = br#"[{"id":1,"method":"getSlot"},{"id":2,"method":"getBlock"}]"#;
        assert_eq!(state.latency(block), ms(50));
        assert_eq!(state.latency(balance), ms(1));
        assert_eq!(state.latency(batch), ms(50));
        assert_eq!(state.latency(b"not json"), ms(1));
        let slot = state.latency(br#"{"id":1,"method":"getSlot"}"#);
        assert!((ms(1)..=ms(3)).contains(&slot), "{slot:?}");
        assert_eq!(state.blocking_latency(block), Some(ms(20)));
        assert_eq!(state.blocking_latency(balance), None);
        assert_eq!(state.blocking_latency(batch), Some(ms(20)));
        // One value for every method, as before.
        let plain: MethodLatencies<Latency> = "5ms:2ms".parse().unwrap();
        assert!(plain.by_method.is_empty() && plain.default.is_some());
        for bad in
            ["getBlock=", "=5ms", "getBlock=5ms,getBlock=6ms", "default=1ms,default=2ms", "getBlock=fast"]
        {
            assert!(bad.parse::<MethodLatencies<Latency>>().is_err(), "{bad}");
        }
    }

    #[test]
    fn latency_parses_base_and_jitter() {
        assert_eq!("5ms".parse::<Latency>(), Ok(Latency::fixed(Duration::from_millis(5))));
        assert_eq!(
            "5ms:2ms".parse::<Latency>(),
            Ok(Latency { base: Duration::from_millis(5), jitter: Duration::from_millis(2) })
        );
        let err = "5 parsecs".parse::<Latency>().unwrap_err();
        assert!(err.to_string().contains("'5 parsecs'"), "{err}");
        assert!(err.to_string().contains("5ms:2ms"), "{err}");
        assert!("5ms:".parse::<Latency>().is_err());
    }

    #[test]
    fn a_serial_service_ends_each_request_a_service_time_after_the_previous_one_was_due() {
        let ms = Duration::from_millis;
        let faults = Faults { serial_service_time: Some(ms(10)), ..Faults::default() };
        let t0 = Instant::now();
        let state = FaultState::new(faults, 7, t0);
        // Idle: 10 ms after it was read.
        assert_eq!(state.serial_service_end(t0), Some(t0 + ms(10)));
        // Read while earlier ones are served: queued behind their due ends, whenever their
        // timers fire, so a timer that wakes late costs the node no rate.
        assert_eq!(state.serial_service_end(t0 + ms(3)), Some(t0 + ms(20)));
        assert_eq!(state.serial_service_end(t0 + ms(5)), Some(t0 + ms(30)));
        // Read after the node went idle: from when it was read.
        assert_eq!(state.serial_service_end(t0 + ms(45)), Some(t0 + ms(55)));
        // Without the knob, no service time.
        assert_eq!(FaultState::new(Faults::default(), 7, t0).serial_service_end(t0), None);
    }

    #[test]
    fn jitter_stays_within_bounds() {
        let latency = Latency { base: Duration::from_millis(10), jitter: Duration::from_millis(4) };
        for i in 0..1000 {
            let d = latency.sample(unit_float(mix(7, i)));
            assert!(d >= Duration::from_millis(6) && d <= Duration::from_millis(14), "{d:?}");
        }
        let wide = Latency { base: Duration::from_millis(1), jitter: Duration::from_millis(5) };
        assert_eq!(wide.sample(0.0), Duration::ZERO);
    }

    #[test]
    fn stall_parses_and_schedules() {
        let stall: Stall = "2s/10s".parse().unwrap();
        assert_eq!(stall, Stall { pause: Duration::from_secs(2), every: Duration::from_secs(10) });
        assert_eq!(stall.wait_at(Duration::from_secs(1)), Duration::ZERO);
        assert_eq!(stall.wait_at(Duration::from_secs(8)), Duration::from_secs(2));
        assert_eq!(stall.wait_at(Duration::from_millis(9500)), Duration::from_millis(500));
        assert_eq!(stall.wait_at(Duration::from_secs(10)), Duration::ZERO);
        assert_eq!(stall.wait_at(Duration::from_secs(19)), Duration::from_secs(1));
        for bad in ["2s", "10s/2s", "2s/2s", "x/10s", "0/1s"] {
            let err = bad.parse::<Stall>().unwrap_err();
            assert!(err.to_string().contains("2s/10s"), "{bad}: {err}");
        }
    }

    #[test]
    fn rate_limits_and_error_rates_parse() {
        assert_eq!(parse_rate_limit("50/s"), Ok(50.0));
        assert_eq!(parse_rate_limit("600/m"), Ok(10.0));
        let err = parse_rate_limit("fast").unwrap_err();
        assert!(err.to_string().contains("'fast'") && err.to_string().contains("50/s"), "{err}");
        assert_eq!(parse_error_rate("0.25"), Ok(0.25));
        assert_eq!(parse_error_rate("5%"), Ok(0.05));
        assert!(parse_error_rate("1.5").is_err());
        assert!(parse_error_rate("-0.1").is_err());
    }

    #[test]
    fn token_bucket_allows_burst_then_refills() {
        let start = Instant::now();
        let bucket = TokenBucket::new(20.0, None, start);
        assert_eq!(bucket.burst, 2.0);
        assert_eq!(bucket.admit(start), Admission::Allowed);
        assert_eq!(bucket.admit(start), Admission::Allowed);
        assert!(matches!(bucket.admit(start), Admission::Limited { .. }));
        assert_eq!(bucket.admit(start + Duration::from_millis(60)), Admission::Allowed);
        assert!(matches!(bucket.admit(start + Duration::from_millis(60)), Admission::Limited { .. }));
    }

    #[test]
    fn error_draws_are_deterministic_and_near_the_rate() {
        let faults = Faults { error_rate: 0.3, ..Faults::default() };
        let a = FaultState::new(faults.clone(), 42, Instant::now());
        let b = FaultState::new(faults, 42, Instant::now());
        let draws_a: Vec<bool> = (0..2000).map(|_| a.inject_error()).collect();
        let draws_b: Vec<bool> = (0..2000).map(|_| b.inject_error()).collect();
        assert_eq!(draws_a, draws_b);
        let errors = draws_a.iter().filter(|e| **e).count();
        assert!((450..750).contains(&errors), "{errors}");
    }
}
