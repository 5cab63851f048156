//! The load engine. One OS thread per worker, each with a current-thread tokio runtime and a
//! set of connection tasks that share the worker's [`Recorder`]; recorders merge once at the
//! end, so the hot path has no locks and no channels.
//!
//! A connection task loops: take a ticket, wait for its intended time (open loop), have the
//! protocol write the request's calls, exchange it on a lane of the transport, have the
//! protocol classify the reply into one outcome per call, record. The loop is generic over the
//! [`Transport`] (HTTP/1.1 today) and the [`Protocol`] (one call, or a JSON-RPC batch), both
//! chosen once per run and monomorphised: no dynamic dispatch per request. Closed loop takes
//! tickets back to back. Open loop takes them from the worker's [`pacer::Pacer`]; when a
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
pub mod limits;
pub(crate) mod pacer;
pub mod select;
pub mod stages;
pub mod usage;

use std::cell::{Cell, OnceCell, RefCell};
use std::fmt;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::sync::{watch, Notify};

use crate::jsonrpc;
use crate::outcome::{InvalidKind, Outcome};
use crate::protocol::batch::JsonRpcBatch;
use crate::protocol::replay::Replayed;
use crate::protocol::single::SingleCall;
use crate::protocol::{CallSlot, Draw, Protocol};
use crate::record::{tick_of, Phases, Recorder, RunRecord, Series, Timing, Totals};
use crate::slot_timer;
use crate::transport::connect::SetupError;
use crate::transport::{Lane, Outgoing, Transport, WireError};
use config::{Load, RunConfig};
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
    Config(config::ConfigError),
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
        let transport = Wire::select(&settings, true).map_err(|err| match err {
            select::SelectError::Setup(err) => EngineError::Setup(err),
            select::SelectError::Runtime(err) => EngineError::Runtime(err),
            select::SelectError::Headers(err) => {
                EngineError::Config(config::ConfigError::new("--header", err.to_string()))
            }
            select::SelectError::Refused { chosen_by, reason } => {
                let setting = match chosen_by {
                    select::ChosenBy::Url => "URL",
                    select::ChosenBy::Http2 => "--http2",
                    select::ChosenBy::H2c => "--h2c",
                };
                EngineError::Config(config::ConfigError::new(setting, reason))
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
        let schedule_pause = Arc::new(crate::rate_pause::SchedulePause::default());
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

/// A failed call's outcome after the rate-limit rules, and the part of its answer the recorder
/// reads a message from (a JSON-RPC error's; nothing for the rest). Out of line: the path of
/// successes does not carry it.
#[cold]
#[inline(never)]
fn judge_failure<'a>(
    rules: &crate::rate_limit::RateLimitRules,
    outcome: Outcome,
    answer: &'a [u8],
) -> (Outcome, &'a [u8]) {
    let outcome = match outcome {
        Outcome::HttpStatus(429) | Outcome::RpcError(_) => rules.judge(outcome, answer),
        other => other,
    };
    let detail = if matches!(outcome, Outcome::RpcError(_) | Outcome::RateLimited(_)) { answer } else { b"" };
    (outcome, detail)
}

/// The instants every worker shares.
#[derive(Debug, Clone, Copy)]
struct Clock {
    start: Instant,
    measure_start: Instant,
    end: Option<Instant>,
    /// In-flight requests are abandoned after this (counted as unfinished).
    hard_end: Option<Instant>,
}

impl Clock {
    fn new(config: &RunConfig, start: Instant) -> Self {
        let measure_start = start + config.warmup;
        let end = config.measured_duration().map(|duration| measure_start + duration);
        let hard_end = end.map(|end| end + config.timeout + Duration::from_secs(1));
        Self { start, measure_start, end, hard_end }
    }
}

/// What one worker does: its share of connections, rate and requests.
#[derive(Debug)]
struct WorkerPlan {
    /// The worker's index in this process (its live-metrics slot).
    local: usize,
    /// Workers in this process.
    workers: usize,
    /// This process's part of the whole run (`--shard`).
    shard: Slice,
    /// The worker's part of the whole run.
    slice: Slice,
    /// Connections opened at the start.
    initial_connections: usize,
    /// The most connections this worker may open.
    max_connections: usize,
    /// Measured requests this worker sends, if the run is bounded by count.
    requests: Option<u64>,
    /// Open loop only.
    pacer: Option<Box<dyn pacer::Pacer>>,
    /// Open loop: the width of the slots that release tickets together
    /// ([`slot_timer::slot_width`] of the worker's highest rate).
    slot_width: Duration,
    /// Open loop at [`QUIET_READS_MIN_RATE`] or more: connections read their replies at the
    /// pacing slots ([`Lane::read_at_slots`]).
    read_at_slots: bool,
}

/// The rate per worker from which its connections read replies at the pacing slots instead of
/// as they come: at this rate a slot of at most [`slot_timer::MAX_EARLY`] holds two tickets or
/// more, so the worker wakes every slot anyway. Below it, replies read at slots would wake the
/// worker in slots that send nothing.
const QUIET_READS_MIN_RATE: f64 = 2000.0;

/// Splits `total` into `parts` shares that differ by at most one.
fn share(total: u64, index: usize, parts: usize) -> u64 {
    let parts = parts as u64;
    total / parts + u64::from((index as u64) < total % parts)
}

impl WorkerPlan {
    fn new(config: &RunConfig, local: usize, workers: usize) -> Self {
        let shard = config.shard;
        let slice = shard.split(local, workers);
        let mine_of = |total: u64| worker_share(total, shard, local, workers);
        let requests = config.length.requests.map(mine_of);
        // A lane per HTTP/2 stream: a worker's connections times the streams on each.
        let lanes = config.lanes_per_connection();
        match &config.load {
            Load::Closed { connections } => {
                // With stages, every connection the busiest stage needs is opened; the ones a
                // quieter stage does not need wait.
                let most =
                    config.level_curve().map_or(*connections as u64, |curve| curve.max_level().ceil() as u64);
                let mine = mine_of(most.max(1)) as usize * lanes;
                Self {
                    local,
                    workers,
                    shard,
                    slice,
                    initial_connections: mine,
                    max_connections: mine,
                    requests,
                    pacer: None,
                    slot_width: slot_timer::WAKE_SLACK,
                    read_at_slots: false,
                }
            }
            Load::Open { rate, arrivals, max_connections } => {
                let max_mine = (mine_of(*max_connections as u64) as usize).max(1) * lanes;
                let rate_mine = rate / slice.count as f64;
                let initial = if config.hold_connections {
                    max_mine
                } else {
                    ((rate_mine / 1000.0).ceil() as usize).clamp(1, max_mine)
                };
                let curve = std::sync::Arc::new(
                    config.level_curve().unwrap_or_else(|| stages::LevelCurve::constant(*rate)),
                );
                // The slots follow the busiest stage: the narrowest slots of the run.
                let busiest = curve.max_level() / slice.count as f64;
                let slot_width = slot_timer::slot_width(busiest);
                let schedule = config.replay.as_ref().and_then(|replay| replay.schedule.clone());
                let pacer: Box<dyn pacer::Pacer> = match schedule {
                    Some(schedule) => Box::new(pacer::RecordedPacer::new(schedule, slice.index, slice.count)),
                    None => pacer::pacer_for(*arrivals, curve, slice.index, slice.count, config.seed),
                };
                Self {
                    local,
                    workers,
                    shard,
                    slice,
                    initial_connections: initial,
                    max_connections: max_mine,
                    requests,
                    pacer: Some(pacer),
                    slot_width,
                    read_at_slots: busiest >= QUIET_READS_MIN_RATE,
                }
            }
        }
    }
}

/// What every worker shares with the others.
#[derive(Debug)]
struct WorkerShared {
    config: Arc<RunConfig>,
    stop: StopHandle,
    series: Arc<Mutex<Series>>,
    clock: Clock,
    /// Open loop: the pause of the whole schedule after rate-limited answers.
    schedule_pause: Arc<crate::rate_pause::SchedulePause>,
}

fn run_worker<T: Transport + 'static, P: Protocol + 'static>(
    shared: WorkerShared,
    plan: WorkerPlan,
    transport: T,
    protocol: P,
) -> std::io::Result<Recorder> {
    let meter = usage::ThreadMeter::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    let mut stop_changed = shared.stop.0.sender.subscribe();
    let worker = Rc::new(Worker::new(shared, plan, transport, protocol));
    let driver = worker.clone();
    local.block_on(&runtime, async move {
        let hard_end = driver.shared.clock.hard_end;
        if driver.pacer.borrow().is_some() {
            let (origin, width) = (driver.shared.clock.start, driver.plan.slot_width);
            driver.pacing.get_or_init(|| slot_timer::PacingTimer::start(origin, width));
        }
        // Connections that read at the pacing slots find the timer through the thread.
        let _current_timer = driver.pacing.get().map(slot_timer::PacingTimer::make_current);
        for _ in 0..driver.plan.initial_connections {
            driver.spawn_connection();
        }
        if let Some(live) = driver.shared.config.metrics.clone() {
            tokio::task::spawn_local(publish_live(driver.clone(), live));
        }
        if driver.plan.initial_connections == 0 {
            // Nothing to run (no connection fell to this worker): nothing to wait for.
            return;
        }
        let all_done = driver.all_done.notified();
        tokio::select! {
            _ = all_done => {}
            _ = stop_changed.changed() => {}
            _ = async {
                match hard_end {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            } => {}
        }
    });
    // Dropping the set cancels connections still in flight: each one's guard counts what it
    // held (a request sent: unfinished; a ticket not yet sent: unsent).
    drop(local);
    worker.count_unsent();
    // Every connection task is gone with the set, so the worker is ours alone: its recorder
    // is taken without building an empty one in its place.
    let live = worker.shared.config.metrics.clone();
    let index = worker.plan.local;
    let transport_stats = worker.transport.stats();
    let mut recorder = match Rc::try_unwrap(worker) {
        Ok(worker) => worker.recorder.into_inner(),
        Err(worker) => worker.recorder.replace(Recorder::new(0, worker.shared.series.clone())),
    };
    recorder.flush_interval();
    recorder.wire = transport_stats;
    if let Some(live) = &live {
        live.publish(index, &recorder.calls, 0);
    }
    recorder.usage = meter.finish();
    Ok(recorder)
}

/// With a live sink: publishes the worker's figures every [`PUBLISH_INTERVAL`], from the
/// worker's own thread (the recorder is not shared, and nothing is counted twice).
async fn publish_live<T: Transport, P: Protocol>(worker: Rc<Worker<T, P>>, live: Arc<dyn LiveSink>) {
    let mut ticker = tokio::time::interval(PUBLISH_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        // Connection tasks never hold the recorder across an await; if one ever did, this
        // publication would wait for the next tick rather than panic.
        if let Ok(recorder) = worker.recorder.try_borrow() {
            live.publish(worker.plan.local, &recorder.calls, worker.in_flight.get());
        }
    }
}

/// A worker's state, shared by its connection tasks on one thread.
struct Worker<T, P> {
    shared: WorkerShared,
    plan: WorkerPlan,
    transport: T,
    protocol: P,
    recorder: RefCell<Recorder>,
    /// The mix's random source, ids and turns.
    draw: RefCell<Draw>,
    /// Measured tickets handed out.
    measured_taken: Cell<u64>,
    /// Tickets handed out, warmup included (the k-th is ticket `slice.index + k * slice.count`
    /// of the whole run, the one the pacer's k-th offset is for); counted for replays only.
    tickets_taken: Cell<u64>,
    /// Whether tickets carry their global index (a replay).
    count_tickets: bool,
    /// Open loop: the next ticket's offset, drawn from the pacer but not yet taken.
    pacer: RefCell<Option<Box<dyn pacer::Pacer>>>,
    /// Connections alive.
    connections: Cell<usize>,
    /// Connections sleeping until their ticket is due.
    idle: Cell<usize>,
    /// Open loop: the worker took a ticket more than a slot after its time and has not been
    /// ahead of its schedule since. Connections then read replies as they come, not quietly at
    /// the slots: a busy worker wakes for nothing anyway, and a reply read a slot late would
    /// hold its connection from the tickets that are overdue.
    behind: Cell<bool>,
    /// Requests sent and not yet answered (for the live metrics).
    in_flight: Cell<u64>,
    /// Open loop: the timer connections sleep on until their ticket is due.
    pacing: OnceCell<slot_timer::PacingTimer>,
    /// Closed loop with stages: the number of connections wanted over time.
    connection_curve: Option<stages::LevelCurve>,
    /// With more than one stage: when each stage ends, seconds after measurement starts.
    stage_ends: Vec<f64>,
    all_done: Notify,
}

impl<T, P> fmt::Debug for Worker<T, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker").field("slice", &self.plan.slice).finish_non_exhaustive()
    }
}

/// Permission to send one request.
#[derive(Debug, Clone, Copy)]
struct Ticket {
    /// Open loop: when the request is due.
    intended: Option<Instant>,
    /// Whether the request is recorded (not warmup).
    measured: bool,
    /// The ticket's global index in the whole run (see [`Draw::ticket`]).
    index: u64,
    /// Open loop: how far rate-limit pauses had moved the schedule when it was taken.
    shifted: Duration,
}

impl<T: Transport + 'static, P: Protocol + 'static> Worker<T, P> {
    fn new(shared: WorkerShared, mut plan: WorkerPlan, transport: T, protocol: P) -> Self {
        let recorder = Recorder::new(shared.config.workload.calls().len(), shared.series.clone())
            .with_stages(stage_ends(&shared.config.stages).len());
        let index = plan.slice.index as u64;
        let draw = Draw {
            rng: SmallRng::seed_from_u64(shared.config.seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            // Ids are unique per run: the worker's global index sits in the high bits.
            next_id: (index << 40) + 1,
            fixed_id: shared.config.fixed_id,
            turn: index,
            turn_stride: plan.slice.count as u64,
            ticket: 0,
        };
        let pacer = plan.pacer.take();
        Self {
            recorder: RefCell::new(recorder),
            draw: RefCell::new(draw),
            transport,
            protocol,
            measured_taken: Cell::new(0),
            tickets_taken: Cell::new(0),
            count_tickets: shared.config.replay.is_some(),
            pacer: RefCell::new(pacer),
            connections: Cell::new(0),
            idle: Cell::new(0),
            behind: Cell::new(false),
            in_flight: Cell::new(0),
            pacing: OnceCell::new(),
            connection_curve: match shared.config.load {
                Load::Closed { .. } => shared.config.level_curve(),
                Load::Open { .. } => None,
            },
            stage_ends: stage_ends(&shared.config.stages),
            all_done: Notify::new(),
            shared,
            plan,
        }
    }

    fn spawn_connection(self: &Rc<Self>) {
        let index = self.connections.get();
        self.connections.set(index + 1);
        tokio::task::spawn_local(connection_loop(self.clone(), index));
    }
}

impl<T, P> Worker<T, P> {
    /// Closed loop with stages: whether connection `index` of this worker is wanted now.
    // Inlined into the connection loop by hand: with the replay protocol's instances of the
    // loop, LLVM stopped inlining it (and `next_ticket`), +40 instructions per request
    // (callgrind, bench/client_cost.sh).
    #[inline(always)]
    fn connection_wanted(&self, index: usize, now: Instant) -> bool {
        let Some(curve) = &self.connection_curve else { return true };
        let level = curve.level_at(now.saturating_duration_since(self.shared.clock.start).as_secs_f64());
        let lanes = self.shared.config.lanes_per_connection() as u64;
        (index as u64)
            < worker_share(level.round() as u64, self.plan.shard, self.plan.local, self.plan.workers) * lanes
    }

    fn connection_done(&self) {
        let left = self.connections.get() - 1;
        self.connections.set(left);
        if left == 0 {
            self.all_done.notify_one();
        }
    }

    #[inline(always)]
    fn next_ticket(&self, now: Instant) -> Option<Ticket> {
        if self.shared.stop.is_stopped() {
            return None;
        }
        let clock = &self.shared.clock;
        let limit_reached = self.plan.requests.is_some_and(|limit| self.measured_taken.get() >= limit);
        if limit_reached {
            return None;
        }
        let mut pacer = self.pacer.borrow_mut();
        let ticket = match pacer.as_mut() {
            None => {
                if clock.end.is_some_and(|end| now >= end) {
                    return None;
                }
                Ticket {
                    intended: None,
                    measured: now >= clock.measure_start,
                    index: 0,
                    shifted: Duration::ZERO,
                }
            }
            Some(pacer) => {
                let shifted = self.shared.schedule_pause.shift();
                let intended = clock.start + pacer.next_offset() + shifted;
                if clock.end.is_some_and(|end| intended >= end) {
                    return None;
                }
                Ticket {
                    intended: Some(intended),
                    measured: intended >= clock.measure_start,
                    index: 0,
                    shifted,
                }
            }
        };
        // Only a replay needs each ticket's global index: other runs skip the count.
        let ticket = match self.count_tickets {
            true => {
                let taken = self.tickets_taken.get();
                self.tickets_taken.set(taken + 1);
                Ticket {
                    index: self.plan.slice.index as u64 + taken * self.plan.slice.count as u64,
                    ..ticket
                }
            }
            false => ticket,
        };
        if ticket.measured {
            self.measured_taken.set(self.measured_taken.get() + 1);
        }
        Some(ticket)
    }

    /// Open loop: counts the requests that were due before the run ended but never taken.
    fn count_unsent(&self) {
        let mut pacer = self.pacer.borrow_mut();
        let Some(pacer) = pacer.as_mut() else { return };
        let clock = &self.shared.clock;
        let stopped_at = Instant::now();
        let until = match clock.end {
            Some(end) => end.min(stopped_at),
            None => stopped_at,
        };
        let mut unsent = 0;
        let mut taken = self.measured_taken.get();
        let shifted = self.shared.schedule_pause.shift();
        loop {
            if self.plan.requests.is_some_and(|limit| taken >= limit) {
                break;
            }
            let intended = clock.start + pacer.next_offset() + shifted;
            if intended >= until {
                break;
            }
            if intended >= clock.measure_start {
                unsent += 1;
                taken += 1;
            }
        }
        self.recorder.borrow_mut().unsent += unsent;
    }

    fn record(
        &self,
        ticket: Ticket,
        call: usize,
        sent: Instant,
        done: Instant,
        outcome: Outcome,
        body: &[u8],
    ) {
        if !ticket.measured {
            return;
        }
        let from = latency_start(ticket.intended, sent);
        let timing = Timing {
            done_tick: tick_of(done.saturating_duration_since(self.shared.clock.measure_start)),
            corrected: done.saturating_duration_since(from),
            actual: done.saturating_duration_since(sent),
            lag: ticket.intended.map(|intended| sent.saturating_duration_since(intended)),
        };
        let mut recorder = self.recorder.borrow_mut();
        if !self.stage_ends.is_empty() {
            let stage = self.stage_of(ticket, sent);
            recorder.record_stage(stage, outcome, timing.corrected);
        }
        recorder.record(call, outcome, timing, || jsonrpc::error_message(body));
    }

    /// The stage a ticket was due in.
    fn stage_of(&self, ticket: Ticket, sent: Instant) -> usize {
        let due = ticket.intended.unwrap_or(sent);
        let since = due.saturating_duration_since(self.shared.clock.measure_start).as_secs_f64();
        self.stage_ends.partition_point(|&end| end <= since).min(self.stage_ends.len().saturating_sub(1))
    }

    /// A measured request the run cut off: `unfinished` for each call it carried when it was
    /// sent; `unsent` (open loop) when its ticket was taken but it never went out.
    fn record_cut_off(&self, ticket: Ticket, sent: Option<Instant>, slots: &[CallSlot]) {
        if !ticket.measured {
            return;
        }
        let mut recorder = self.recorder.borrow_mut();
        match sent {
            Some(sent) => {
                for slot in slots {
                    if !self.stage_ends.is_empty() {
                        let stage = self.stage_of(ticket, sent);
                        recorder.record_stage(stage, Outcome::Unfinished, Duration::ZERO);
                    }
                    recorder.record_unfinished(slot.call);
                }
            }
            None if ticket.intended.is_some() => recorder.unsent += 1,
            None => {}
        }
    }
}

/// Where a request's (corrected) latency starts. Closed loop: at the send. Open loop: at the
/// intended time when the request left late (coordinated omission correction), and at the send
/// when the pacing timer released it early (within its slot, [`slot_timer::slot_width`]): either way the
/// earlier instant, so a latency is never shorter than the exchange itself.
fn latency_start(intended: Option<Instant>, sent: Instant) -> Instant {
    intended.map_or(sent, |intended| intended.min(sent))
}

/// A connection that failed to connect waits this long before trying again in closed loop, so
/// that a dead server is not hammered in a tight loop.
const CONNECT_RETRY_PAUSE: Duration = Duration::from_millis(10);

/// With more than one stage, the end of each stage in seconds after measurement starts.
fn stage_ends(stages: &[stages::Stage]) -> Vec<f64> {
    if stages.len() < 2 {
        return Vec::new();
    }
    let mut end = 0.0;
    stages
        .iter()
        .map(|stage| {
            end += stage.duration.as_secs_f64();
            end
        })
        .collect()
}

/// A closed-loop connection that a stage does not need checks again this often.
const IDLE_CONNECTION_CHECK: Duration = Duration::from_millis(10);

/// What a connection task holds, accounted for however the task ends: the worker waits for
/// every connection (so a task that ended without reporting would hang the run), and a ticket
/// held when the run cuts the task off still gets its one outcome (unsent or unfinished).
struct ConnectionGuard<T, P> {
    worker: Rc<Worker<T, P>>,
    /// The ticket taken and not yet recorded, and when its request was sent.
    held: Option<(Ticket, Option<Instant>)>,
    /// The calls of the request being sent.
    slots: Vec<CallSlot>,
}

impl<T, P> Drop for ConnectionGuard<T, P> {
    fn drop(&mut self) {
        if let Some((ticket, sent)) = self.held.take() {
            self.worker.record_cut_off(ticket, sent, &self.slots);
        }
        self.worker.connection_done();
    }
}

async fn connection_loop<T: Transport + 'static, P: Protocol + 'static>(
    worker: Rc<Worker<T, P>>,
    index: usize,
) {
    let mut guard = ConnectionGuard { worker: worker.clone(), held: None, slots: Vec::with_capacity(1) };
    let config = worker.shared.config.clone();
    let mut lane: Option<T::Lane> = None;
    let mut timeout_timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    let mut request = Outgoing::default();
    let mut backoff = crate::rate_pause::Backoff::default();
    let open_loop = matches!(config.load, Load::Open { .. });
    if open_loop && config.hold_connections {
        // Held connections open before the run's start; one that cannot is opened again (and
        // its failure counted) when its first ticket comes.
        if let Ok(mut opened) = worker.transport.open(index).await {
            let _ = opened.take_connect_time();
            lane = Some(opened);
        }
    }
    // Every worker starts at the shared start instant; nothing before it is measured.
    tokio::time::sleep_until(worker.shared.clock.start.into()).await;
    loop {
        let mut now = Instant::now();
        while !worker.connection_wanted(index, now) {
            if worker.shared.stop.is_stopped() || worker.shared.clock.end.is_some_and(|end| now >= end) {
                break;
            }
            // Not needed by this stage: close the connection, as a departed user would.
            lane = None;
            tokio::time::sleep(IDLE_CONNECTION_CHECK).await;
            now = Instant::now();
        }
        let Some(mut ticket) = worker.next_ticket(now) else {
            break;
        };
        guard.held = Some((ticket, None));
        if let Some(mut intended) = ticket.intended {
            if intended > now {
                worker.behind.set(false);
                worker.idle.set(worker.idle.get() + 1);
                worker.pacing.get_or_init(slot_timer::PacingTimer::coarse).sleep_until(intended).await;
                // A rate-limit pause that began meanwhile moves this ticket too.
                if config.on_rate_limit != crate::rate_pause::OnRateLimit::Continue {
                    while let Some(later) = moved_by_pause(&worker.shared, &mut ticket) {
                        if worker.shared.clock.end.is_some_and(|end| later >= end) {
                            // Moved past the run's end: never due, so never sent (as a ticket
                            // the schedule does not reach).
                            guard.held = None;
                            break;
                        }
                        intended = later;
                        guard.held = Some((ticket, None));
                        worker
                            .pacing
                            .get_or_init(slot_timer::PacingTimer::coarse)
                            .sleep_until(intended)
                            .await;
                    }
                    if guard.held.is_none() {
                        worker.idle.set(worker.idle.get() - 1);
                        break;
                    }
                }
                worker.idle.set(worker.idle.get() - 1);
            } else if now.saturating_duration_since(intended) > worker.plan.slot_width {
                worker.behind.set(true);
            }
            // This ticket is due (now, after the wait, or already). With no other connection
            // waiting for the next one, every connection is busy: open another, so that the
            // next ticket is sent on time however long this exchange takes (a stalled server
            // holds every connection it has). Checked after the wait: a `now` read before it
            // would never see a ticket that had to wait as due.
            if worker.idle.get() == 0 {
                if worker.connections.get() < worker.plan.max_connections {
                    worker.spawn_connection();
                } else if ticket.measured
                    && now.saturating_duration_since(intended) > crate::record::LATE_THRESHOLD
                {
                    // Taken late with every allowed connection busy: the cap made it late.
                    // (Counted here, in the open loop's branch, not per recorded call: the
                    // closed loop's path stays as it was.)
                    worker.recorder.borrow_mut().late_at_cap += 1;
                }
            }
            if worker.shared.stop.is_stopped() {
                break;
            }
        }
        request.clear();
        guard.slots.clear();
        {
            let mut draw = worker.draw.borrow_mut();
            if P::USES_TICKETS {
                draw.ticket = ticket.index;
            }
            worker.protocol.encode(&mut draw, &mut guard.slots, &mut request);
        }
        let mut connect_time = None;
        let current = match lane.as_mut() {
            Some(current) => current,
            None => {
                let connect_started = Instant::now();
                match worker.transport.open(index).await {
                    Ok(mut opened) => {
                        connect_time = if T::Lane::MEASURES_CONNECT {
                            opened.take_connect_time()
                        } else {
                            Some(connect_started.elapsed())
                        };
                        lane.insert(opened)
                    }
                    Err(err) => {
                        let failed = Instant::now();
                        // Counted as the outcomes are: the warm-up's failures are not the run's.
                        if ticket.measured {
                            worker.recorder.borrow_mut().connect_causes.note(&err);
                        }
                        guard.held = None;
                        for slot in &guard.slots {
                            worker.record(ticket, slot.call, failed, failed, Outcome::Connect, b"");
                        }
                        if !open_loop {
                            tokio::time::sleep(CONNECT_RETRY_PAUSE).await;
                        }
                        continue;
                    }
                }
            }
        };

        if worker.plan.read_at_slots {
            current.read_at_slots(!worker.behind.get());
        }
        let sent = Instant::now();
        guard.held = Some((ticket, Some(sent)));
        worker.in_flight.set(worker.in_flight.get() + 1);
        let deadline = sent + config.timeout;
        // The connection's timer is re-armed lazily: it stays set to an earlier request's
        // deadline and is moved forward only when it fires, so a fast request costs no timer
        // registration at all.
        let timer = timeout_timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline.into())));
        let result = {
            let exchange = current.exchange(&request, config.max_body);
            tokio::pin!(exchange);
            loop {
                tokio::select! {
                    biased;
                    result = &mut exchange => break Some(result),
                    () = timer.as_mut() => {
                        if Instant::now() >= deadline {
                            break None;
                        }
                        timer.as_mut().reset(deadline.into());
                    }
                }
            }
        };
        let now = Instant::now();
        if open_loop {
            // Awake for this reply anyway: what is due next goes out on this wake-up.
            if let Some(pacing) = worker.pacing.get() {
                pacing.release_due(now);
            }
        }
        let done = now;
        worker.in_flight.set(worker.in_flight.get() - 1);
        guard.held = None;
        let slots = &guard.slots;
        let failed = match result {
            None => Some(Outcome::Timeout),
            Some(Err(WireError::Closed)) => Some(Outcome::Closed),
            Some(Err(WireError::Malformed)) => Some(Outcome::Invalid(InvalidKind::BadHttp)),
            Some(Err(WireError::TooLarge)) => Some(Outcome::Invalid(InvalidKind::BodyTooLarge)),
            Some(Err(WireError::Connect)) => Some(Outcome::Connect),
            Some(Err(WireError::GoAway)) => Some(Outcome::GoAway),
            Some(Err(WireError::StreamReset(7))) => Some(Outcome::RefusedStream),
            Some(Err(WireError::StreamReset(code))) => Some(Outcome::StreamReset(code)),
            Some(Err(WireError::WsClosed(code))) => Some(Outcome::WsClosed(code)),
            Some(Err(WireError::WsProtocol)) => Some(Outcome::WsProtocol),
            Some(Ok(_)) => None,
        };
        if T::Lane::MEASURES_CONNECT {
            // An exchange that had to re-open its connection (after a GOAWAY) measured it.
            if let Some(reconnected) = lane.as_mut().and_then(Lane::take_connect_time) {
                connect_time = Some(reconnected);
            }
        }
        if let Some(outcome) = failed {
            for slot in slots {
                worker.record(ticket, slot.call, sent, done, outcome, b"");
            }
            lane = None;
            continue;
        }
        let (Some(Ok(reply)), Some(current)) = (result, lane.as_ref()) else { continue };
        // A reply read at a pacing slot ended when it arrived, by the kernel's stamp.
        let done = match reply.arrived_at {
            Some(arrived) => arrived.max(reply.first_byte_at).min(now),
            None => done,
        };
        let calls = slots.len() as u64;
        let mut desynchronised = false;
        let mut limited = false;
        worker.protocol.classify(reply.status, current.body(), slots, |position, outcome, detail| {
            // A reply followed by bytes nobody asked for: the fault counts once, here.
            let outcome = if reply.extra_bytes && position == 0 {
                Outcome::Invalid(InvalidKind::ExtraBytes)
            } else {
                outcome
            };
            // A failure is judged off the successes' path: over the server's rate limit (a
            // 429, or a JSON-RPC error that says so), and the answer kept for its message.
            let (outcome, detail) = if outcome.is_ok() {
                (outcome, &b""[..])
            } else {
                judge_failure(&config.rate_limits, outcome, detail)
            };
            // An answer to another request means the connection is out of step (a reply sent
            // twice): it is not used again, so one stray reply costs one outcome.
            desynchronised |= outcome == Outcome::Invalid(InvalidKind::IdMismatch);
            limited |= matches!(outcome, Outcome::RateLimited(_));
            let call = slots[position].call;
            if ticket.measured {
                let mut recorder = worker.recorder.borrow_mut();
                recorder.record_phases(
                    outcome.is_ok(),
                    Phases {
                        connect: connect_time,
                        send: reply.written_at.saturating_duration_since(sent),
                        wait: reply.first_byte_at.saturating_duration_since(reply.written_at),
                        receive: done.saturating_duration_since(reply.first_byte_at),
                    },
                );
                if T::Lane::HAS_STATUS {
                    recorder.record_status(call, reply.status);
                }
                let totals = &mut recorder.calls[call];
                if calls == 1 {
                    totals.bytes_received += reply.wire_bytes as u64;
                    totals.bytes_sent += reply.request_bytes as u64;
                } else {
                    // Bytes split evenly over the calls of a batch (the first takes the rest).
                    let first = u64::from(position == 0);
                    let (received, sent_bytes) = (reply.wire_bytes as u64, reply.request_bytes as u64);
                    totals.bytes_received += received / calls + first * (received % calls);
                    totals.bytes_sent += sent_bytes / calls + first * (sent_bytes % calls);
                }
            }
            worker.record(ticket, call, sent, done, outcome, detail);
        });
        if ticket.measured && calls > 1 {
            worker.recorder.borrow_mut().exchanges += 1;
        }
        // Rate-limit headers: looked at only when the answer had one.
        if ticket.measured && reply.rate.any() {
            worker.recorder.borrow_mut().rate_headers.note(&reply.rate);
        }
        if !(reply.reusable && config.keepalive) || desynchronised {
            lane = None;
        }
        if config.on_rate_limit != crate::rate_pause::OnRateLimit::Continue {
            if let Some(pause) = backoff.after(config.on_rate_limit, limited, reply.rate.retry_after()) {
                // Open loop: the whole schedule pauses (other connections must not send the
                // tickets due meanwhile); the time counted is what this moved it by.
                let paused = if open_loop {
                    let shared = &worker.shared;
                    shared.schedule_pause.pause(shared.clock.start, Instant::now(), pause)
                } else {
                    pause_for(&worker.shared, pause).await
                };
                if ticket.measured {
                    let mut recorder = worker.recorder.borrow_mut();
                    recorder.rate_pauses += 1;
                    recorder.rate_paused += paused;
                }
            }
        }
    }
}

/// Open loop: when a rate-limit pause moved the schedule after `ticket` was taken, moves the
/// ticket by as much and returns its new intended time.
fn moved_by_pause(shared: &WorkerShared, ticket: &mut Ticket) -> Option<Instant> {
    let shift = shared.schedule_pause.shift();
    let intended = ticket.intended?;
    if shift <= ticket.shifted || shared.stop.is_stopped() {
        return None;
    }
    let later = intended + (shift - ticket.shifted);
    ticket.shifted = shift;
    ticket.intended = Some(later);
    Some(later)
}

/// Pauses this connection for `pause` after a rate-limited answer, or until the run ends or is
/// stopped; returns the time it paused.
async fn pause_for(shared: &WorkerShared, pause: Duration) -> Duration {
    let started = Instant::now();
    let mut until = started + pause;
    if let Some(end) = shared.clock.end {
        until = until.min(end);
    }
    // In slices, so that a stop is seen within one.
    while !shared.stop.is_stopped() {
        let now = Instant::now();
        if now >= until {
            break;
        }
        tokio::time::sleep_until((now + (until - now).min(PAUSE_SLICE)).into()).await;
    }
    started.elapsed()
}

/// How often a pause after a rate-limited answer looks whether the run was stopped.
const PAUSE_SLICE: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_starts_at_the_earlier_of_intended_and_sent() {
        let t = Instant::now();
        let later = t + Duration::from_micros(40);
        assert_eq!(latency_start(None, t), t);
        // Sent late: from the intended time.
        assert_eq!(latency_start(Some(t), later), t);
        // Released early by the pacing timer's slack: from the send.
        assert_eq!(latency_start(Some(later), t), t);
    }

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
