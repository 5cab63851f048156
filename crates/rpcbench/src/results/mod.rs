//! Results files: what `rpcbench run --save FILE` writes and `report`, `merge` and
//! `compare` read back. One JSON object, written compactly on one line, versioned by
//! `format` and `version`:
//!
//! - metadata: the tool, an optional label, the start time (RFC 3339, UTC), the machine's
//!   cores, OS and architecture, the target with secrets redacted;
//! - `workload`: how load was applied and every option that shapes a run (header values that
//!   look secret are redacted);
//! - `elapsed_ns`, `interrupted`;
//! - `methods`: one entry per JSON-RPC method, keyed by name (one today; several once runs mix
//!   methods), each with the request object (without `jsonrpc` and `id`), the outcome counts
//!   in the JSON report's layout (JSON-RPC errors carry the first message seen, the sample
//!   error messages), responses per HTTP status, bytes, pacing counts and the four HDR
//!   histograms (`latency`, `latency_uncorrected`, `latency_ok`, `send_lag`);
//! - `series`: the time series, `interval_ms` wide (100 ms for a run measured for less than
//!   3 s, else whole seconds), each point `[start_ms, requests, errors, p50_us, p99_us]` with
//!   `start_ms` the milliseconds from the start of measurement to the start of the interval
//!   (version 1 files, read as well, have `interval_s` and points from their whole second);
//! - `merged_from`: for a merged file, one entry per shard;
//! - `target_resources`: what the monitored target process(es) used (`--monitor-pid`,
//!   `--monitor-cmd`), absent when nothing was monitored (and in files written before it was
//!   kept; such files still load).
//!
//! Histograms are lossless: HdrHistogram's V2 encoding (uncompressed, cookie `0x1c849303`,
//! the format every HdrHistogram implementation decodes) in standard base64. The encoding is
//! deterministic, so the same run always gives the same bytes. Files are written atomically
//! (a temporary file in the same directory, then a rename).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::config::{Arrivals, Length, Load, RunConfig, Target};
use crate::engine::stages::Stage;
use crate::engine::usage::ThreadUsage;
use crate::jsonrpc::CheckMode;
use crate::monitor::ResourceReport;
use crate::record::{
    CallTotals, GeneratorUsage, OutcomeCounts, PhaseTotals, RunRecord, SeriesPoint, StageTotals, Totals,
};
use crate::report::{Http2Figures, RunReport, RunShape, WebSocketFigures};
use crate::util::redact;
use crate::util::units::trim_float;

mod convert;
mod decode_error;
mod merge;

pub use decode_error::DecodeError;
pub use merge::{merge, merge_shards};

/// The value of `format` in every results file.
pub const RESULTS_FORMAT: &str = "rpcbench-results";

/// The `format` of a capacity file (`capacity --save`), told apart from results files.
pub const CAPACITY_FORMAT: &str = "rpcbench-capacity";

/// The layout version written; bumped when a field changes meaning or goes away. Version 2
/// gives the series in milliseconds (`interval_ms`, points from their start in ms), as a short
/// run has 100 ms points; version 1 files (whole seconds) are read as well.
pub const RESULTS_VERSION: u32 = 2;

/// The oldest layout version read: version 1's series is in whole seconds, converted on reading.
const OLDEST_RESULTS_VERSION: u32 = 1;

/// A results file, as written and read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultsFile {
    /// Always [`RESULTS_FORMAT`].
    pub format: String,
    /// The layout version, [`RESULTS_VERSION`].
    pub version: u32,
    /// The tool that measured the run, `rpcbench 0.1.0`.
    pub tool: String,
    /// A name for the run (the NAME of `compare NAME=URL`), shown in comparisons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// When the run started, RFC 3339 in UTC (the earliest shard's, for a merged file).
    pub started_at: String,
    /// The machine that ran the load (the first shard's, for a merged file).
    pub machine: Machine,
    /// The target URL with secrets redacted.
    pub target: String,
    /// How load was applied (per shard, for a merged file).
    pub workload: RunSettings,
    /// Measured time in nanoseconds, from the end of warmup to the last completion (the
    /// longest shard's, for a merged file: shards run side by side).
    pub elapsed_ns: u64,
    /// The run was stopped early (any shard, for a merged file).
    pub interrupted: bool,
    /// Per method, keyed by method name.
    pub methods: BTreeMap<String, MethodResults>,
    /// The per-interval series of the whole run.
    pub series: SeriesData,
    /// What the generator itself used (worker threads, their CPU and wall time, peak memory);
    /// absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<GeneratorData>,
    /// Phase timings (connect, send, wait, receive) of successful responses and of the others,
    /// as HdrHistogram V2 in base64; absent in files written before they were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<[PhaseData; 2]>,
    /// The shards a merged file was made of; empty for a single run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<Shard>,
    /// CPU, memory, disk and connections of the monitored target process(es); absent when
    /// none was monitored, and in files written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_resources: Option<ResourceReport>,
    /// With batches: the HTTP requests that completed (outcomes count calls).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub exchanges: u64,
    /// The calls in the workload's order (`methods` is keyed, so sorted, by name); absent in
    /// older files, whose reports list the calls by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub method_order: Vec<String>,
    /// With more than one stage: each stage's level and figures, so that `report` shows the
    /// per-stage table and the staged load as the run did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageData>,
    /// The run's thresholds and their verdicts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<crate::report::ThresholdResult>,
    /// HTTP/2 runs: the protocol, the streams per connection and what the connections saw;
    /// absent for HTTP/1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Figures>,
    /// WebSocket runs: requests in flight per socket, sockets opened, stray messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<WebSocketFigures>,
    /// A comparison in rounds (`compare --rounds`): how it was run (the methodology) and this
    /// target's figures of each round; absent for a single run, and in files written before
    /// comparisons had rounds (such files still load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<crate::verdict::RoundsRecord>,
    /// The rate-limit headers the answers carried (`Retry-After`, `X-RateLimit-*`,
    /// `RateLimit-*`); absent when none did, and in files written before they were kept.
    #[serde(default, skip_serializing_if = "crate::ratelimit::headers::RateHeaderSummary::is_empty")]
    pub rate_headers: crate::ratelimit::headers::RateHeaderSummary,
    /// With `--heads`: the heads of the targets followed beside the load; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heads: Option<crate::heads::HeadsReport>,
}

/// One stage of a staged run, as a results file keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageData {
    /// The level held: connections (closed loop) or requests per second (open loop).
    pub level: f64,
    /// Its length, microseconds.
    pub duration_us: u64,
    /// The ramp at its start, microseconds.
    pub ramp_us: u64,
    /// Outcomes of the requests due in it.
    pub outcomes: OutcomeCounts,
    /// Their latency, HdrHistogram V2 in base64.
    pub latency: String,
}

impl StageData {
    fn new(stage: &Stage, totals: &StageTotals) -> Self {
        Self {
            level: stage.level,
            duration_us: micros(stage.duration),
            ramp_us: micros(stage.ramp),
            outcomes: totals.counts.clone(),
            latency: encode_histogram(&totals.latency),
        }
    }

    fn stage(&self) -> Stage {
        Stage {
            level: self.level,
            duration: Duration::from_micros(self.duration_us),
            ramp: Duration::from_micros(self.ramp_us),
        }
    }

    fn totals(&self) -> Result<StageTotals, DecodeError> {
        self.outcomes.checked_total()?;
        let latency = decode_histogram(&self.latency).map_err(DecodeError::histogram("stage latency"))?;
        Ok(StageTotals { latency, counts: self.outcomes.clone() })
    }
}

/// What the generator used, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeneratorData {
    /// Worker threads.
    pub threads: u64,
    /// Their CPU time, microseconds; null when it could not be read.
    pub cpu_us: Option<u64>,
    /// Their wall time added up, nanoseconds.
    pub wall_ns: u64,
    /// Peak resident memory of the process, bytes.
    pub peak_rss_bytes: Option<u64>,
}

impl GeneratorData {
    /// What a run's generator used, as stored.
    pub fn new(usage: &GeneratorUsage) -> Self {
        Self {
            threads: usage.workers.threads,
            cpu_us: usage.workers.cpu.map(micros),
            wall_ns: u64::try_from(usage.workers.wall.as_nanos()).unwrap_or(u64::MAX),
            peak_rss_bytes: usage.peak_rss_bytes,
        }
    }

    /// The usage back, as the recorder measured it.
    pub fn usage(&self) -> GeneratorUsage {
        GeneratorUsage {
            workers: ThreadUsage {
                threads: self.threads,
                cpu: self.cpu_us.map(Duration::from_micros),
                wall: Duration::from_nanos(self.wall_ns),
            },
            peak_rss_bytes: self.peak_rss_bytes,
        }
    }
}

/// The phase histograms of one class of responses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseData {
    /// Connecting, for requests that opened a connection.
    pub connect: String,
    /// Writing the request.
    pub send: String,
    /// Request written to first byte.
    pub wait: String,
    /// First byte to last.
    pub receive: String,
}

impl PhaseData {
    fn new(phases: &PhaseTotals) -> Self {
        Self {
            connect: encode_histogram(&phases.connect),
            send: encode_histogram(&phases.send),
            wait: encode_histogram(&phases.wait),
            receive: encode_histogram(&phases.receive),
        }
    }

    fn totals(&self) -> Result<PhaseTotals, DecodeError> {
        Ok(PhaseTotals {
            connect: decode_histogram(&self.connect).map_err(DecodeError::histogram("connect"))?,
            send: decode_histogram(&self.send).map_err(DecodeError::histogram("send"))?,
            wait: decode_histogram(&self.wait).map_err(DecodeError::histogram("wait"))?,
            receive: decode_histogram(&self.receive).map_err(DecodeError::histogram("receive"))?,
        })
    }
}

/// The machine that ran the load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// Logical cores available to the process.
    pub cores: u64,
    /// `linux`, `macos`, ...
    pub os: String,
    /// `x86_64`, `aarch64`, ...
    pub arch: String,
}

impl Machine {
    /// This machine.
    pub fn current() -> Self {
        Self {
            cores: std::thread::available_parallelism().map(|n| n.get() as u64).unwrap_or(1),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
        }
    }
}

/// How load was applied.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum LoadSpec {
    /// Closed loop.
    Closed {
        /// Connections sending back to back.
        connections: u64,
    },
    /// Open loop.
    Open {
        /// Requests per second.
        rate: f64,
        /// `uniform` or `poisson`.
        arrivals: ArrivalsSpec,
        /// The connection cap.
        max_connections: u64,
        /// All `max_connections` were opened at the start and held (`--rate R -c N`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        held: bool,
    },
}

/// Spacing of open-loop arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalsSpec {
    /// Evenly spaced.
    Uniform,
    /// A Poisson process.
    Poisson,
}

impl LoadSpec {
    fn of(load: &Load, held: bool) -> Self {
        match load {
            Load::Closed { connections } => LoadSpec::Closed { connections: *connections as u64 },
            Load::Open { rate, arrivals, max_connections } => LoadSpec::Open {
                rate: *rate,
                arrivals: match arrivals {
                    Arrivals::Uniform => ArrivalsSpec::Uniform,
                    Arrivals::Poisson => ArrivalsSpec::Poisson,
                },
                max_connections: *max_connections as u64,
                held,
            },
        }
    }

    /// The engine's load, scaled by `shards` (the load the target saw from all of them).
    fn to_load(self, shards: u64) -> Load {
        let shards = shards.max(1);
        match self {
            LoadSpec::Closed { connections } => Load::Closed { connections: (connections * shards) as usize },
            LoadSpec::Open { rate, arrivals, max_connections, .. } => Load::Open {
                rate: if shards == 1 { rate } else { rate * shards as f64 },
                arrivals: match arrivals {
                    ArrivalsSpec::Uniform => Arrivals::Uniform,
                    ArrivalsSpec::Poisson => Arrivals::Poisson,
                },
                max_connections: (max_connections * shards) as usize,
            },
        }
    }

    /// `closed loop, 8 connection(s)` or `open loop, 5000 req/s poisson`.
    pub fn describe(&self) -> String {
        match self {
            LoadSpec::Closed { connections } => format!("closed loop, {connections} connection(s)"),
            LoadSpec::Open { rate, arrivals, max_connections, held } => {
                let arrivals = match arrivals {
                    ArrivalsSpec::Uniform => "uniform",
                    ArrivalsSpec::Poisson => "poisson",
                };
                let held = if *held {
                    format!(" over {max_connections} connection(s) held open")
                } else {
                    String::new()
                };
                format!("open loop, {} req/s {arrivals}{held}", trim_float(*rate))
            }
        }
    }
}

/// Every option that shapes a run, as a results file keeps it (the `workload` object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// Closed or open loop.
    pub load: LoadSpec,
    /// Configured measured duration, microseconds.
    pub duration_us: Option<u64>,
    /// Configured number of measured requests.
    pub requests: Option<u64>,
    /// Warmup before measurement, microseconds.
    pub warmup_us: u64,
    /// Request timeout, microseconds.
    pub timeout_us: u64,
    /// Connect timeout, microseconds.
    pub connect_timeout_us: u64,
    /// HTTP keep-alive.
    pub keepalive: bool,
    /// Extra headers, `Name: value`, secret values as `***`.
    pub headers: Vec<String>,
    /// Any TLS certificate accepted.
    pub tls_insecure: bool,
    /// `scan` or `full`.
    pub check: String,
    /// Worker threads used.
    pub threads: u64,
    /// Largest response body accepted, bytes.
    pub max_body: u64,
    /// Seed of random choices.
    pub seed: u64,
    /// JSON-RPC calls per HTTP request (`--batch`); absent for single calls.
    #[serde(default = "one_call", skip_serializing_if = "is_one_call")]
    pub batch: usize,
    /// A shard of a run split with `--shard`: which one, of how many. The load, length and
    /// request count above are then the whole run's, not this shard's share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardSpec>,
}

/// Which shard of a split run a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardSpec {
    /// 0-based index.
    pub index: u64,
    /// How many shards the run was split into.
    pub count: u64,
    /// How late the shard started after `--start-at`, milliseconds (0: on time or no start).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late_start_ms: u64,
}

fn one_call() -> usize {
    1
}

fn is_one_call(batch: &usize) -> bool {
    *batch == 1
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// What one method measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodResults {
    /// The request object as sent, without `jsonrpc` and `id`.
    pub request: Value,
    /// Counts per outcome class; JSON-RPC errors with the first message seen.
    pub outcomes: OutcomeCounts,
    /// Responses per HTTP status, whatever their class.
    pub http_status: BTreeMap<String, u64>,
    /// Request bytes sent.
    pub bytes_sent: u64,
    /// Response bytes received.
    pub bytes_received: u64,
    /// Open loop: requests sent more than 2 ms late.
    pub late: u64,
    /// Open loop: of the late requests, those that waited with every allowed connection busy.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late_at_cap: u64,
    /// Open loop: requests due but never sent.
    pub unsent: u64,
    /// The HDR histograms, microseconds, V2-encoded in base64.
    pub histograms: EncodedHistograms,
}

/// The four histograms of a method, each HdrHistogram V2 in base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncodedHistograms {
    /// Latency from the intended send time.
    pub latency: String,
    /// Latency from the actual send time.
    pub latency_uncorrected: String,
    /// Latency of successes.
    pub latency_ok: String,
    /// Open loop: send lag.
    pub send_lag: String,
}

/// The time series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesData {
    /// Width of one point, milliseconds: 100 for a run measured for less than 3 s, else whole
    /// seconds.
    pub interval_ms: u64,
    /// `[start_ms, requests, errors, p50_us, p99_us]` per point, `start_ms` from the start of
    /// measurement to the start of the interval.
    pub points: Vec<[u64; 5]>,
    /// Each point's latency histogram (2 significant digits, V2 in base64; `""` for a point
    /// without responses), so that merged intervals get exact percentiles. Absent in older
    /// files, whose merged intervals keep the worse of the shards' percentiles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency: Vec<String>,
}

impl SeriesData {
    /// The point's latency histogram, when the file has it.
    fn point_latency(&self, index: usize) -> Option<Histogram<u64>> {
        let text = self.latency.get(index)?;
        if text.is_empty() {
            return None;
        }
        let bytes = base64::engine::general_purpose::STANDARD.decode(text).ok()?;
        crate::record::deserialize_histogram(&bytes)
    }
}

/// One shard of a merged file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// The file it came from (file name only).
    pub source: String,
    /// Its tool.
    pub tool: String,
    /// Its start time.
    pub started_at: String,
    /// Its machine.
    pub machine: Machine,
    /// Its measured time, nanoseconds.
    pub elapsed_ns: u64,
    /// Whether it was stopped early.
    pub interrupted: bool,
    /// Its request count.
    pub requests: u64,
}

/// Why a results file could not be read, written or merged. Messages name the file.
#[derive(Debug)]
pub enum ResultsError {
    /// Reading or writing failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not a results file this version reads.
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The file is not JSON: where it stops being so.
    Syntax {
        /// The file.
        path: PathBuf,
        /// Its line (from 1).
        line: usize,
        /// Its column (from 1).
        column: usize,
        /// What the JSON reader expected there.
        message: String,
    },
    /// Files that do not belong together were to be merged.
    Mismatch {
        /// The file that does not match the first.
        path: PathBuf,
        /// What differs.
        message: String,
    },
}

impl fmt::Display for ResultsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResultsError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ResultsError::Invalid { path, message } => {
                write!(f, "{}: not a usable results file: {message}", path.display())
            }
            ResultsError::Syntax { path, line, column, message } => {
                write!(
                    f,
                    "{}:{line}:{column}: not a usable results file: not JSON: {message}",
                    path.display()
                )
            }
            ResultsError::Mismatch { path, message } => {
                write!(f, "{}: does not belong with the other files: {message}", path.display())
            }
        }
    }
}

impl ResultsError {
    /// `path` is not JSON, as `err` says (its line and column named as file:line:col).
    pub(crate) fn not_json(path: &Path, err: &serde_json::Error) -> Self {
        let said = err.to_string();
        // serde_json ends its message with " at line L column C" when it knows where.
        let message = said.rsplit_once(" at line ").map_or(said.as_str(), |(message, _)| message).to_string();
        if err.line() == 0 {
            return ResultsError::Invalid {
                path: path.to_path_buf(),
                message: format!("not JSON: {message}"),
            };
        }
        ResultsError::Syntax {
            path: path.to_path_buf(),
            line: err.line(),
            column: err.column().max(1),
            message,
        }
    }
}

impl std::error::Error for ResultsError {}

pub use crate::util::units::rfc3339;

pub use crate::util::hdr_codec::{decode_histogram, encode_histogram};

/// Rewrites a version 1 file's series (whole seconds: `interval_s`, points from their second)
/// in version 2's milliseconds, in place; the rest of the layout is the same in both.
fn series_in_milliseconds(value: &mut Value) -> Result<(), String> {
    let Some(series) = value.get_mut("series").and_then(Value::as_object_mut) else {
        return Err("no series".into());
    };
    let in_ms = |seconds: &Value| seconds.as_u64().and_then(|seconds| seconds.checked_mul(1000));
    let interval = series.remove("interval_s").ok_or("series without interval_s")?;
    let interval_ms = in_ms(&interval).ok_or("series interval_s is not a whole number of seconds")?;
    series.insert("interval_ms".into(), interval_ms.into());
    if let Some(points) = series.get_mut("points").and_then(Value::as_array_mut) {
        for point in points {
            if let Some(second) = point.get_mut(0) {
                *second = in_ms(second).ok_or("a series point's second is not a whole number")?.into();
            }
        }
    }
    Ok(())
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// The request object of a template: its body without `jsonrpc` and `id`.
impl MethodResults {
    /// The entry of one method's totals.
    pub fn new(request: Value, totals: &Totals) -> Self {
        Self {
            request,
            outcomes: totals.counts.clone(),
            http_status: totals.status_counts.iter().map(|(s, n)| (s.to_string(), *n)).collect(),
            bytes_sent: totals.bytes_sent,
            bytes_received: totals.bytes_received,
            late: totals.late,
            late_at_cap: totals.late_at_cap,
            unsent: totals.unsent,
            histograms: EncodedHistograms {
                latency: encode_histogram(&totals.latency),
                latency_uncorrected: encode_histogram(&totals.latency_uncorrected),
                latency_ok: encode_histogram(&totals.latency_ok),
                send_lag: encode_histogram(&totals.send_lag),
            },
        }
    }

    /// Decodes the entry back into totals, exactly as they were recorded.
    pub fn totals(&self) -> Result<Totals, DecodeError> {
        let decode =
            |name: &'static str, text: &str| decode_histogram(text).map_err(DecodeError::histogram(name));
        let mut status_counts = BTreeMap::new();
        for (status, count) in &self.http_status {
            let status: u16 = status.parse().map_err(|_| DecodeError::HttpStatus(status.clone()))?;
            status_counts.insert(status, *count);
        }
        // `..Totals::default()` keeps this compiling when the recorder gains figures.
        self.outcomes.checked_total()?;
        #[allow(clippy::needless_update)]
        let totals = Totals {
            latency: decode("latency", &self.histograms.latency)?,
            latency_uncorrected: decode("latency_uncorrected", &self.histograms.latency_uncorrected)?,
            latency_ok: decode("latency_ok", &self.histograms.latency_ok)?,
            send_lag: decode("send_lag", &self.histograms.send_lag)?,
            counts: self.outcomes.clone(),
            status_counts,
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            late: self.late,
            late_at_cap: self.late_at_cap,
            unsent: self.unsent,
            ..Totals::default()
        };
        Ok(totals)
    }

    /// Requests with an outcome: every class of the one outcome table.
    pub fn total_requests(&self) -> u64 {
        self.outcomes.total()
    }
}

/// Writes `bytes` to `path` atomically: a temporary file beside it, flushed, then renamed over
/// it. A reader sees the old file or the new one, never half of one. A path that exists and
/// is not a regular file (`/dev/null`, `/dev/stdout`, a pipe, a symbolic link) is written in
/// place instead, never replaced.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    if let Ok(metadata) = std::fs::symlink_metadata(path) {
        if !metadata.file_type().is_file() {
            return std::fs::OpenOptions::new().write(true).truncate(true).open(path)?.write_all(bytes);
        }
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let temp = dir.join(format!(".{name}.tmp-{}-{nanos}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        std::fs::remove_file(&temp).ok();
    }
    result
}

impl ResultsFile {
    /// The compact JSON text of the file, newline-terminated.
    pub fn to_json(&self) -> String {
        let json = serde_json::to_string(self).expect("a results file always serializes");
        // serde writes DEL and C1 controls raw (a server's error message may hold them).
        let mut text = crate::util::printable::escape_controls(&json).into_owned();
        text.push('\n');
        text
    }

    /// Parses a results file's text; `path` names it in errors.
    pub fn from_json(text: &str, path: &Path) -> Result<Self, ResultsError> {
        let invalid = |message: String| ResultsError::Invalid { path: path.to_path_buf(), message };
        let value: Value = serde_json::from_str(text).map_err(|err| ResultsError::not_json(path, &err))?;
        match value.get("format").and_then(Value::as_str) {
            Some(RESULTS_FORMAT) => {}
            Some(CAPACITY_FORMAT) => {
                return Err(invalid(
                    "this is a capacity file (capacity --save); it renders on its own: rpcbench report FILE"
                        .into(),
                ))
            }
            Some(other) => return Err(invalid(format!("format is '{other}', not '{RESULTS_FORMAT}'"))),
            None if value.get("report_version").is_some() => {
                return Err(invalid(
                    "this is a JSON report (-f json), not a results file (write one with run --save)".into(),
                ))
            }
            None => return Err(invalid(format!("no \"format\": \"{RESULTS_FORMAT}\""))),
        }
        let mut value = value;
        match value.get("version").and_then(Value::as_u64) {
            Some(version) if version == u64::from(RESULTS_VERSION) => {}
            Some(version) if version == u64::from(OLDEST_RESULTS_VERSION) => {
                series_in_milliseconds(&mut value).map_err(invalid)?;
                value["version"] = RESULTS_VERSION.into();
            }
            Some(version) => {
                return Err(invalid(format!(
                    "version {version}; this rpcbench reads versions {OLDEST_RESULTS_VERSION} to {RESULTS_VERSION}"
                )))
            }
            None => return Err(invalid("no version".into())),
        }
        let file: ResultsFile = serde_json::from_value(value).map_err(|err| invalid(err.to_string()))?;
        if file.methods.is_empty() {
            return Err(invalid("no methods".into()));
        }
        if file.series.interval_ms == 0 {
            return Err(invalid("series interval_ms is 0".into()));
        }
        for (name, method) in &file.methods {
            method.totals().map_err(|err| invalid(format!("method {name}: {err}")))?;
        }
        Ok(file)
    }

    /// Reads and checks a results file.
    pub fn load(path: &Path) -> Result<Self, ResultsError> {
        let text = crate::util::files::read_text_limited(path, crate::util::files::MAX_RESULTS)
            .map_err(|source| ResultsError::Io { path: path.to_path_buf(), source })?;
        Self::from_json(&text, path)
    }

    /// Writes the file atomically.
    pub fn save(&self, path: &Path) -> Result<(), ResultsError> {
        write_atomically(path, self.to_json().as_bytes())
            .map_err(|source| ResultsError::Io { path: path.to_path_buf(), source })
    }

    /// The number of shards the file holds (1 for a single run).
    pub fn shards(&self) -> u64 {
        (self.merged_from.len() as u64).max(1)
    }

    /// The method names joined by `+` (one name today).
    pub fn method_names(&self) -> String {
        self.methods_in_order().into_iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>().join("+")
    }

    /// Total requests with an outcome over all methods.
    pub fn total_requests(&self) -> u64 {
        self.methods.values().map(MethodResults::total_requests).sum()
    }

    /// Measured time.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.elapsed_ns)
    }

    /// Decodes every method's totals, by method name.
    pub fn method_totals(&self) -> Result<BTreeMap<String, Totals>, DecodeError> {
        self.methods
            .iter()
            .map(|(name, method)| {
                let totals = method
                    .totals()
                    .map_err(|error| DecodeError::Method { name: name.clone(), error: Box::new(error) })?;
                Ok((name.clone(), totals))
            })
            .collect()
    }
}

/// A results file read back, with its histograms decoded and its report computed.
#[derive(Debug)]
pub struct SavedRun {
    /// How the run is named in comparisons.
    pub label: String,
    /// The file.
    pub file: ResultsFile,
    /// Each method's totals, decoded.
    pub methods: BTreeMap<String, Totals>,
    /// The whole run.
    pub record: RunRecord,
    /// The report of the whole run.
    pub report: RunReport,
}

impl SavedRun {
    /// Decodes a file. The label is the file's own, else `fallback`.
    pub fn new(file: ResultsFile, fallback: &str) -> Result<Self, DecodeError> {
        let methods = file.method_totals()?;
        let record = file.to_record()?;
        let report = file.report_of(&record);
        let label = file.label.clone().unwrap_or_else(|| fallback.to_string());
        Ok(Self { label, file, methods, record, report })
    }

    /// Reads a file; the label is the file's own, else the file name without `.json` (or
    /// `.results.json`).
    pub fn load(path: &Path) -> Result<Self, ResultsError> {
        let file = ResultsFile::load(path)?;
        let stem = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let stem = stem
            .strip_suffix(".results.json")
            .or_else(|| stem.strip_suffix(".json"))
            .unwrap_or(&stem)
            .to_string();
        Self::new(file, &stem)
            .map_err(|err| ResultsError::Invalid { path: path.to_path_buf(), message: err.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::new_histogram;

    #[test]
    fn a_saved_run_reports_from_its_own_shape_as_the_live_run_did() {
        // A WebSocket run, open loop, 4 requests in flight per socket: the report of its results
        // file is the live one, built from the file's own figures (no stand-in configuration).
        let target = Target::parse("ws://127.0.0.1:1/").unwrap();
        let mut config =
            RunConfig::new(target, crate::jsonrpc::RequestTemplate::from_method("getSlot", None).unwrap());
        config.load = Load::Open { rate: 100.0, arrivals: Arrivals::Poisson, max_connections: 8 };
        config.in_flight = 4;
        config.length = Length { duration: Some(Duration::from_secs(3)), requests: None };
        let series = std::sync::Arc::new(std::sync::Mutex::new(crate::record::Series::default()));
        let recorder = crate::record::Recorder::new(1, series);
        let calls = [("getSlot".to_string(), "getSlot".to_string())];
        let record = RunRecord::new(recorder, &calls, Duration::from_secs(3), false);
        let live = RunReport::new(&config, &record);
        let saved = ResultsFile::from_run(&config, &record, UNIX_EPOCH).to_report().unwrap();
        assert_eq!(saved.protocol, "websocket");
        assert_eq!(saved.websocket.as_ref().map(|figures| figures.in_flight_per_socket), Some(4));
        assert_eq!(saved.to_json(), live.to_json());
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(1_700_000_000)), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(4_107_542_399)), "2100-02-28T23:59:59Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_millis(1_700_000_000_750)), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(u64::MAX / 2)), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn atomic_writes_replace_files_but_not_devices() {
        let dir = std::env::temp_dir().join(format!("rpcbench-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file left");
        std::fs::remove_dir_all(&dir).ok();
        #[cfg(unix)]
        {
            write_atomically(Path::new("/dev/null"), b"discarded").unwrap();
            let kind = std::fs::symlink_metadata("/dev/null").unwrap().file_type();
            assert!(!kind.is_file(), "/dev/null is still a device");
        }
    }

    #[test]
    fn histograms_round_trip_exactly() {
        let mut histogram = new_histogram();
        for i in 1..5000u64 {
            histogram.record(i * i % 1_000_003 + 1).unwrap();
        }
        histogram.record(crate::record::MAX_TRACKABLE_US).unwrap();
        let text = encode_histogram(&histogram);
        let decoded = decode_histogram(&text).unwrap();
        assert_eq!(decoded, histogram);
        assert_eq!(decoded.len(), histogram.len());
        assert_eq!(decoded.max(), histogram.max());
        assert_eq!(decode_histogram(&encode_histogram(&new_histogram())).unwrap(), new_histogram());
        assert!(decode_histogram("not base64!").is_err());
        assert!(decode_histogram("AAAA").is_err());
    }
}
