//! The load engine. One OS thread per worker, each with a current-thread tokio runtime and a
//! set of connection tasks that share the worker's [`Recorder`]; recorders merge once at the
//! end, so the hot path has no locks and no channels.
//!
//! A connection task loops: take a ticket, wait for its intended time (open loop), have the
//! protocol write the request's calls, exchange it on a lane of the transport, have the
//! protocol classify the reply into one outcome per call, record. The loop is generic over the
//! transport (HTTP/1.1, HTTP/2 or WebSocket) and the protocol (one call, or a JSON-RPC batch), both
//! chosen once per run and monomorphised: no dynamic dispatch per request. Closed loop takes
//! tickets back to back. Open loop takes them from the worker's pacer; when a
//! ticket is already due and no connection is idle, the worker opens another connection, up to
//! its share of `max_connections`. A ticket that waits for a connection is sent late, and its
//! latency still counts from the intended time.
//!
//! Every measured ticket ends in exactly one place: one outcome per call it carried, or, when
//! the run is cut off, `unsent` (open loop, never sent) or `unfinished` (sent, no reply yet).
//!
//! Each worker is one [`Slice`] of the whole run: its index among all workers (of all shards)
//! sets its share of connections, rate and requests, its pacer stride, its random seed and the
//! high bits of its ids.

pub mod config;
mod exchange;
pub(crate) mod limits;
pub(crate) mod pacer;
mod request_timeout;
pub(crate) mod select;
pub mod stages;
pub(crate) mod usage;
mod worker;

pub use limits::TooManyConnections;
pub use usage::{peak_rss_bytes, process_cpu_time, ThreadUsage};
use worker::{run_worker, Clock, WorkerPlan, WorkerShared};

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::protocol::batch::JsonRpcBatch;
use crate::protocol::geyser_unary::{GeyserCalls, GeyserUnary};
use crate::protocol::replay::Replayed;
use crate::protocol::send_raw::SendRawTx;
use crate::protocol::send_solana::SendSolanaTx;
use crate::protocol::single::SingleCall;
use crate::protocol::Protocol;
use crate::record::{Recorder, RunRecord, Series, Totals};
use crate::transport::connect::SetupError;
use crate::transport::Transport;
use config::RunConfig;
use select::{UseTransport, Wire, WireSettings};

/// How often each worker publishes its figures to a [`LiveSink`].
/// Publishing walks each call's latency histogram (about 0.4 M instructions for a busy call,
/// callgrind), so once a second is the right trade.
pub const PUBLISH_INTERVAL: Duration = Duration::from_secs(1);

/// Where a run's live figures go while it runs (the metrics endpoint's store). Workers publish
/// a summary of their own recorder every [`PUBLISH_INTERVAL`], from their own thread; nothing
/// is published per request.
pub trait LiveSink: Send + Sync + fmt::Debug {
    /// A run starts: `workers` workers will publish; measurement starts at `measure_start`.
    fn begin_run(&self, config: &RunConfig, workers: usize, start: Instant, measure_start: Instant);
    /// Worker `worker`'s figures so far: its per-call totals (in the workload's order) and its
    /// requests in flight.
    fn publish(&self, worker: usize, calls: &[Totals], in_flight: u64);
    /// The run ended.
    fn end_run(&self);
}

/// One part of a run: this worker's index among `count` workers (of every shard).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    /// Index, from 0.
    pub index: usize,
    /// How many parts there are.
    pub count: usize,
}

impl Slice {
    /// The whole run.
    pub const WHOLE: Slice = Slice { index: 0, count: 1 };

    /// Worker `local` of `parts` in this slice (a shard): its pacing slice among every worker
    /// of every shard. Shard i of N takes the tickets i, i + N, i + 2N, ... of the whole run,
    /// and its worker l of W the tickets i + N*l, i + N*(l + W), ...: the shards' tickets
    /// interleave exactly, even when shards run different numbers of workers.
    pub fn split(self, local: usize, parts: usize) -> Slice {
        Slice { index: self.index + self.count * local, count: self.count * parts }
    }

    /// This part's share of `total`: shares differ by at most one.
    pub fn share(self, total: u64) -> u64 {
        share(total, self.index, self.count)
    }
}

/// Splits `total` into `parts` shares that differ by at most one.
fn share(total: u64, index: usize, parts: usize) -> u64 {
    let parts = parts as u64;
    total / parts + u64::from((index as u64) < total % parts)
}

/// A worker's exact share of `total` (connections, requests): the shard's share first, then
/// the worker's within it, so the shares add up to `total` whatever each shard's worker count.
fn worker_share(total: u64, shard: Slice, local: usize, workers: usize) -> u64 {
    share(shard.share(total), local, workers)
}

impl Default for Slice {
    fn default() -> Self {
        Slice::WHOLE
    }
}

/// Why a run could not start.
#[derive(Debug)]
pub enum EngineError {
    /// A setting is not usable.
    Config(config::SettingError),
    /// The target could not be resolved or TLS could not be prepared.
    Setup(SetupError),
    /// A worker thread or runtime could not be started.
    Runtime(std::io::Error),
    /// More connections than the open-file limit allows.
    TooManyConnections(limits::TooManyConnections),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Config(err) => err.fmt(f),
            EngineError::Setup(err) => err.fmt(f),
            EngineError::Runtime(err) => write!(f, "cannot start the load workers: {err}"),
            EngineError::TooManyConnections(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for EngineError {}

/// Stops a run from another thread (Ctrl-C). The run then reports what completed.
#[derive(Debug, Clone)]
pub struct StopHandle(Arc<StopSignal>);

#[derive(Debug)]
struct StopSignal {
    stopped: AtomicBool,
    sender: watch::Sender<bool>,
}

impl Default for StopHandle {
    fn default() -> Self {
        Self::new()
    }
}

impl StopHandle {
    /// A handle not yet stopped. One handle may serve several runs in turn: once stopped, every
    /// run using it stops (or ends at once).
    pub fn new() -> Self {
        let (sender, _) = watch::channel(false);
        Self(Arc::new(StopSignal { stopped: AtomicBool::new(false), sender }))
    }

    /// Asks the run to stop now. In-flight requests are abandoned, not counted.
    pub fn stop(&self) {
        self.0.stopped.store(true, Ordering::SeqCst);
        self.0.sender.send_replace(true);
    }

    /// Whether [`StopHandle::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.0.stopped.load(Ordering::SeqCst)
    }

    /// Resolves once [`StopHandle::stop`] is called (at once if it was): for one-off work
    /// outside a run (a probe's request) that must not outlive an interrupt.
    pub async fn stopped(&self) {
        let mut stopped = self.0.sender.subscribe();
        // The sender lives as long as `self`: `wait_for` ends only when the value is true.
        let _ = stopped.wait_for(|stopped| *stopped).await;
    }
}

/// A live view of a run's progress, updated about once a second.
#[derive(Debug, Clone)]
pub struct Progress {
    series: Arc<Mutex<Series>>,
}

impl Progress {
    /// Responses and errors recorded so far.
    pub fn totals(&self) -> (u64, u64) {
        self.series.lock().map(|series| series.totals()).unwrap_or_default()
    }
}

/// A prepared run: validated, resolved, ready to execute.
#[derive(Debug)]
pub struct Run {
    config: Arc<RunConfig>,
    transport: Wire,
    stop: StopHandle,
    series: Arc<Mutex<Series>>,
}

impl Run {
    /// Validates the configuration and resolves the target.
    pub fn new(config: RunConfig) -> Result<Self, EngineError> {
        Self::with_stop(config, StopHandle::new())
    }

    /// Like [`Run::new`], stopped by an existing handle.
    pub fn with_stop(config: RunConfig, stop: StopHandle) -> Result<Self, EngineError> {
        config.validate().map_err(EngineError::Config)?;
        limits::check_open_files(&config).map_err(EngineError::TooManyConnections)?;
        let settings = WireSettings {
            target: &config.target,
            headers: &config.headers,
            tls: &config.tls,
            connect_timeout: config.connect_timeout,
            http: config.http,
            keepalive: config.keepalive,
            streams: config.streams,
            in_flight: config.in_flight,
            max_body: config.max_body,
        };
        let transport =
            Wire::select_with_token(&settings, true, config.x_token.as_ref()).map_err(|err| match err {
                select::SelectError::Setup(err) => match err.as_setting() {
                    Some(setting) => EngineError::Config(setting),
                    None => EngineError::Setup(err),
                },
                select::SelectError::Runtime(err) => EngineError::Runtime(err),
                select::SelectError::Setting(err) => EngineError::Config(err),
                select::SelectError::Headers(err) => {
                    EngineError::Config(config::SettingError::new(config::Field::Headers, err.to_string()))
                }
                select::SelectError::Refused { chosen_by, reason } => {
                    let setting = match chosen_by {
                        select::ChosenBy::Url => config::Field::Url,
                        select::ChosenBy::Http2 => config::Field::Http2,
                        select::ChosenBy::H2c => config::Field::H2c,
                    };
                    EngineError::Config(config::SettingError::new(setting, reason))
                }
            })?;
        Ok(Self {
            config: Arc::new(config),
            transport,
            stop,
            series: Arc::new(Mutex::new(Series::default())),
        })
    }

    /// A handle that stops the run.
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// A live view of the run's progress.
    pub fn progress(&self) -> Progress {
        Progress { series: self.series.clone() }
    }

    /// The configuration being run.
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    /// Runs to the end (or until stopped) and returns what was measured. Blocks the caller.
    pub fn execute(self) -> Result<RunRecord, EngineError> {
        let wire = self.transport.clone();
        wire.with(Execute(self))
    }

    /// Runs over `transport` with a protocol made by `protocol` for each worker.
    fn execute_with<T: Transport + Send + 'static, P: Protocol + Send + 'static>(
        self,
        transport: T,
        protocol: impl Fn() -> P,
    ) -> Result<RunRecord, EngineError> {
        let late_start = self.wait_for_start();
        let workers = self.config.worker_threads();
        // Give the threads a moment to start so that every worker shares one start instant.
        let start = Instant::now() + Duration::from_millis(5);
        let clock = Clock::new(&self.config, start);
        if let Some(live) = &self.config.metrics {
            live.begin_run(&self.config, workers, clock.start, clock.measure_start);
        }
        let mut handles = Vec::with_capacity(workers);
        let schedule_pause = Arc::new(crate::ratelimit::pause::SchedulePause::default());
        for index in 0..workers {
            let plan = WorkerPlan::new(&self.config, index, workers);
            let shared = WorkerShared {
                config: self.config.clone(),
                stop: self.stop.clone(),
                series: self.series.clone(),
                clock,
                schedule_pause: schedule_pause.clone(),
            };
            let transport = transport.for_worker();
            let protocol = protocol();
            let handle = std::thread::Builder::new()
                .name(format!("rpcbench-worker-{index}"))
                .spawn(move || run_worker(shared, plan, transport, protocol))
                .map_err(EngineError::Runtime)?;
            handles.push(handle);
        }
        // The first worker's recorder is the merged one: no extra set of histograms.
        let mut merged: Option<Recorder> = None;
        let mut first_error = None;
        for handle in handles {
            match handle.join() {
                Ok(Ok(mut recorder)) => match merged.as_mut() {
                    Some(merged) => merged.merge(&mut recorder),
                    None => merged = Some(recorder),
                },
                Ok(Err(err)) => first_error = first_error.or(Some(err)),
                Err(_) => {
                    first_error = first_error.or(Some(std::io::Error::other("a worker thread panicked")))
                }
            }
        }
        if let Some(live) = &self.config.metrics {
            live.end_run();
        }
        if let Some(err) = first_error {
            return Err(EngineError::Runtime(err));
        }
        let merged =
            merged.unwrap_or_else(|| Recorder::new(self.config.workload.calls().len(), self.series.clone()));
        let finished = Instant::now();
        let interrupted = self.stop.is_stopped();
        let elapsed = finished.saturating_duration_since(clock.measure_start);
        drop(self.series);
        let names: Vec<(String, String)> = self
            .config
            .workload
            .calls()
            .iter()
            .map(|call| (call.name().to_string(), call.method().to_string()))
            .collect();
        let mut record = RunRecord::new(merged, &names, elapsed, interrupted);
        record.late_start = late_start;
        Ok(record)
    }

    /// With `start_at`: sleeps until that wall-clock instant (waking early when stopped) and
    /// returns how late the start is past it.
    fn wait_for_start(&self) -> Duration {
        let Some(at) = self.config.start_at else { return Duration::ZERO };
        loop {
            let now = std::time::SystemTime::now();
            match at.duration_since(now) {
                Ok(wait) if !wait.is_zero() && !self.stop.is_stopped() => {
                    std::thread::sleep(wait.min(Duration::from_millis(50)));
                }
                _ => return now.duration_since(at).unwrap_or(Duration::ZERO),
            }
        }
    }
}

/// Runs a prepared run over the transport its wire selection chose, with the protocol its
/// configuration asks for (a replay, JSON-RPC batches, or one call per request).
struct Execute(Run);

impl UseTransport for Execute {
    type Output = Result<RunRecord, EngineError>;

    fn use_transport<T: Transport + Send + 'static>(self, transport: T) -> Self::Output {
        let Execute(run) = self;
        let config = run.config.clone();
        if let Some(replay) = &config.replay {
            return run.execute_with(transport, || Replayed::new(replay.clone(), config.check));
        }
        if let Some(sends) = &config.tx_sends {
            return run.execute_with(transport, || SendRawTx::new(sends.clone(), config.check));
        }
        if let Some(sends) = &config.solana_sends {
            return run.execute_with(transport, || SendSolanaTx::new(sends.clone(), config.check));
        }
        if config.target.grpc {
            // Checked by the configuration's validation (every call names a unary call).
            let calls = GeyserCalls::new(&config.workload).map_err(|err| {
                EngineError::Config(config::SettingError::new(config::Field::Method, err.to_string()))
            })?;
            return run.execute_with(transport, || GeyserUnary::new(config.workload.clone(), calls.clone()));
        }
        if config.batch > 1 {
            // Refused over WebSocket by the configuration's checks.
            run.execute_with(transport, || {
                JsonRpcBatch::new(config.workload.clone(), config.check, config.batch)
            })
        } else {
            run.execute_with(transport, || SingleCall::new(config.workload.clone(), config.check))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_with_different_worker_counts_split_exactly() {
        // 3 shards of 2, 1 and 4 workers: every count adds up, and the pacing slices partition
        // the tickets of the whole run.
        let workers = [2usize, 1, 4];
        for total in [0u64, 1, 7, 1000, 1001] {
            let sum: u64 = (0..3)
                .flat_map(|shard| {
                    let slice = Slice { index: shard, count: 3 };
                    (0..workers[shard]).map(move |local| worker_share(total, slice, local, workers[shard]))
                })
                .sum();
            assert_eq!(sum, total);
        }
        let mut taken = std::collections::BTreeMap::new();
        for (shard, &count) in workers.iter().enumerate() {
            for local in 0..count {
                let slice = Slice { index: shard, count: 3 }.split(local, count);
                // Tickets of this worker among the first 120 of the whole run.
                for ticket in (slice.index..120).step_by(slice.count) {
                    *taken.entry(ticket).or_insert(0) += 1;
                }
            }
        }
        // Shard 0's two workers take residues 0 and 3 mod 6; shard 1's one worker 1 mod 3;
        // shard 2's four workers 2, 5, 8, 11 mod 12: each ticket exactly once.
        assert_eq!(taken.len(), 120);
        assert!(taken.values().all(|&n| n == 1), "{taken:?}");
        assert_eq!(Slice::WHOLE.split(3, 4), Slice { index: 3, count: 4 }, "one shard: as before");
    }

    #[test]
    fn shares_split_evenly() {
        let shares: Vec<u64> = (0..3).map(|i| share(10, i, 3)).collect();
        assert_eq!(shares, vec![4, 3, 3]);
        assert_eq!((0..4).map(|i| share(2, i, 4)).sum::<u64>(), 2);
    }
}
