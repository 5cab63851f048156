//! The load engine. One OS thread per worker, each with a current-thread tokio runtime and a
//! set of connection tasks that share the worker's [`Recorder`]; recorders merge once at the
//! end, so the hot path has no locks and no channels.
//!
//! A connection task loops: take a ticket, wait for its intended time (open loop), send, read,
//! classify, record. Closed loop takes tickets back to back. Open loop takes them from the
//! worker's [`pacer::Pacer`]; when a ticket is already due and no connection is idle, the
//! worker opens another connection, up to its share of `max_connections`. A ticket that waits
//! for a connection is sent late, and its latency still counts from the intended time.

pub mod config;
pub mod connect;
pub mod hires;
pub mod http;
pub mod limits;
pub mod pacer;
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

use crate::jsonrpc::{self, InvalidKind, Outcome};
use crate::metrics;
use crate::record::{Phases, Recorder, RunRecord, Series, Timing};
use config::{Load, RunConfig};
use connect::{Connector, SetupError};
use http::{Connection, ReadError};

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
    connector: Connector,
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
        let connector = Connector::new(&config).map_err(EngineError::Setup)?;
        Ok(Self {
            config: Arc::new(config),
            connector,
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
        let workers = self.config.worker_threads();
        // Give the threads a moment to start so that every worker shares one start instant.
        let start = Instant::now() + Duration::from_millis(5);
        let clock = Clock::new(&self.config, start);
        if let Some(live) = &self.config.metrics {
            live.begin_run(&self.config, workers, clock.start, clock.measure_start);
        }
        let mut handles = Vec::with_capacity(workers);
        for index in 0..workers {
            let plan = WorkerPlan::new(&self.config, index, workers);
            let shared = WorkerShared {
                config: self.config.clone(),
                workers,
                connector: self.connector.clone(),
                stop: self.stop.clone(),
                series: self.series.clone(),
                clock,
            };
            let handle = std::thread::Builder::new()
                .name(format!("rpcbench-worker-{index}"))
                .spawn(move || run_worker(shared, plan))
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
        Ok(RunRecord::new(merged, &names, elapsed, interrupted))
    }
}

/// The instants every worker shares.
#[derive(Debug, Clone, Copy)]
struct Clock {
    start: Instant,
    measure_start: Instant,
    end: Option<Instant>,
    /// In-flight requests are abandoned after this.
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
    index: usize,
    /// Connections opened at the start.
    initial_connections: usize,
    /// The most connections this worker may open.
    max_connections: usize,
    /// Measured requests this worker sends, if the run is bounded by count.
    requests: Option<u64>,
    /// Open loop only.
    pacer: Option<Box<dyn pacer::Pacer>>,
}

/// Splits `total` into `parts` shares that differ by at most one.
fn share(total: u64, index: usize, parts: usize) -> u64 {
    let parts = parts as u64;
    total / parts + u64::from((index as u64) < total % parts)
}

impl WorkerPlan {
    fn new(config: &RunConfig, index: usize, workers: usize) -> Self {
        let requests = config.length.requests.map(|n| share(n, index, workers));
        match &config.load {
            Load::Closed { connections } => {
                // With stages, every connection the busiest stage needs is opened; the ones a
                // quieter stage does not need wait.
                let most =
                    config.level_curve().map_or(*connections as u64, |curve| curve.max_level().ceil() as u64);
                let mine = share(most.max(1), index, workers) as usize;
                Self { index, initial_connections: mine, max_connections: mine, requests, pacer: None }
            }
            Load::Open { rate, arrivals, max_connections } => {
                let max_mine = (share(*max_connections as u64, index, workers) as usize).max(1);
                let rate_mine = rate / workers as f64;
                let initial = ((rate_mine / 1000.0).ceil() as usize).clamp(1, max_mine);
                let curve = std::sync::Arc::new(
                    config.level_curve().unwrap_or_else(|| stages::LevelCurve::constant(*rate)),
                );
                let pacer = pacer::pacer_for(*arrivals, curve, index, workers, config.seed);
                Self {
                    index,
                    initial_connections: initial,
                    max_connections: max_mine,
                    requests,
                    pacer: Some(pacer),
                }
            }
        }
    }
}

/// What every worker shares with the others.
#[derive(Debug)]
struct WorkerShared {
    config: Arc<RunConfig>,
    /// How many workers share the run.
    workers: usize,
    connector: Connector,
    stop: StopHandle,
    series: Arc<Mutex<Series>>,
    clock: Clock,
}

fn run_worker(shared: WorkerShared, plan: WorkerPlan) -> std::io::Result<Recorder> {
    let meter = usage::ThreadMeter::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    let mut stop_changed = shared.stop.0.sender.subscribe();
    let worker = Rc::new(Worker::new(shared, plan));
    let driver = worker.clone();
    local.block_on(&runtime, async move {
        let hard_end = driver.shared.clock.hard_end;
        if driver.pacer.borrow().is_some() {
            driver.pacing.get_or_init(hires::PacingTimer::start);
        }
        for _ in 0..driver.plan.initial_connections {
            driver.spawn_connection();
        }
        if let Some(live) = driver.shared.config.metrics.clone() {
            tokio::task::spawn_local(publish_live(driver.clone(), live));
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
    // Dropping the set cancels connections still in flight; they are not counted.
    drop(local);
    worker.count_unsent();
    // Every connection task is gone with the set, so the worker is ours alone: its recorder
    // is taken without building an empty one in its place.
    let live = worker.shared.config.metrics.clone();
    let index = worker.plan.index;
    let mut recorder = match Rc::try_unwrap(worker) {
        Ok(worker) => worker.recorder.into_inner(),
        Err(worker) => worker.recorder.replace(Recorder::new(0, worker.shared.series.clone())),
    };
    recorder.flush_second();
    if let Some(live) = &live {
        live.publish(index, &recorder.calls, 0);
    }
    recorder.usage = meter.finish();
    Ok(recorder)
}

/// With a metrics endpoint: publishes the worker's figures every [`metrics::PUBLISH_INTERVAL`],
/// from the worker's own thread (the recorder is not shared, and nothing is counted twice).
async fn publish_live(worker: Rc<Worker>, live: metrics::LiveMetrics) {
    let mut ticker = tokio::time::interval(metrics::PUBLISH_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        // Connection tasks never hold the recorder across an await; if one ever did, this
        // publication would wait for the next tick rather than panic.
        if let Ok(recorder) = worker.recorder.try_borrow() {
            live.publish(worker.plan.index, &recorder.calls, worker.in_flight.get());
        }
    }
}

/// A worker's state, shared by its connection tasks on one thread.
struct Worker {
    shared: WorkerShared,
    plan: WorkerPlan,
    recorder: RefCell<Recorder>,
    /// Picks calls and generates params; seeded per worker from the run's seed.
    rng: RefCell<SmallRng>,
    request_head: Vec<u8>,
    /// Measured tickets handed out.
    measured_taken: Cell<u64>,
    next_id: Cell<u64>,
    /// Open loop: the next ticket's offset, drawn from the pacer but not yet taken.
    pacer: RefCell<Option<Box<dyn pacer::Pacer>>>,
    /// Connections alive.
    connections: Cell<usize>,
    /// Connections sleeping until their ticket is due.
    idle: Cell<usize>,
    /// Requests sent and not yet answered (for the live metrics).
    in_flight: Cell<u64>,
    /// Open loop: the timer connections sleep on until their ticket is due.
    pacing: OnceCell<hires::PacingTimer>,
    /// Closed loop with stages: the number of connections wanted over time.
    connection_curve: Option<stages::LevelCurve>,
    /// With more than one stage: when each stage ends, seconds after measurement starts.
    stage_ends: Vec<f64>,
    all_done: Notify,
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker").field("index", &self.plan.index).finish_non_exhaustive()
    }
}

/// Permission to send one request.
#[derive(Debug, Clone, Copy)]
struct Ticket {
    /// Open loop: when the request is due.
    intended: Option<Instant>,
    /// Whether the request is recorded (not warmup).
    measured: bool,
}

impl Worker {
    fn new(shared: WorkerShared, mut plan: WorkerPlan) -> Self {
        let recorder = Recorder::new(shared.config.workload.calls().len(), shared.series.clone())
            .with_stages(stage_ends(&shared.config.stages).len());
        let rng = SmallRng::seed_from_u64(
            shared.config.seed ^ (plan.index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
        let request_head = shared.config.request_head();
        let pacer = plan.pacer.take();
        Self {
            recorder: RefCell::new(recorder),
            rng: RefCell::new(rng),
            request_head,
            measured_taken: Cell::new(0),
            // Ids are unique per run: the worker index sits in the high bits.
            next_id: Cell::new(((plan.index as u64) << 40) + 1),
            pacer: RefCell::new(pacer),
            connections: Cell::new(0),
            idle: Cell::new(0),
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

    /// Closed loop with stages: whether connection `index` of this worker is wanted now.
    fn connection_wanted(&self, index: usize, now: Instant) -> bool {
        let Some(curve) = &self.connection_curve else { return true };
        let level = curve.level_at(now.saturating_duration_since(self.shared.clock.start).as_secs_f64());
        let workers = self.shared.workers;
        (index as u64) < share(level.round() as u64, self.plan.index, workers)
    }

    fn connection_done(&self) {
        let left = self.connections.get() - 1;
        self.connections.set(left);
        if left == 0 {
            self.all_done.notify_one();
        }
    }

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
                Ticket { intended: None, measured: now >= clock.measure_start }
            }
            Some(pacer) => {
                let intended = clock.start + pacer.next_offset();
                if clock.end.is_some_and(|end| intended >= end) {
                    return None;
                }
                Ticket { intended: Some(intended), measured: intended >= clock.measure_start }
            }
        };
        if ticket.measured {
            self.measured_taken.set(self.measured_taken.get() + 1);
        }
        Some(ticket)
    }

    /// Open loop: counts the requests that were due before the run ended but never sent.
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
        loop {
            if self.plan.requests.is_some_and(|limit| taken >= limit) {
                break;
            }
            let intended = clock.start + pacer.next_offset();
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
            done_second: done.saturating_duration_since(self.shared.clock.measure_start).as_secs(),
            corrected: done.saturating_duration_since(from),
            actual: done.saturating_duration_since(sent),
            lag: ticket.intended.map(|intended| sent.saturating_duration_since(intended)),
        };
        let mut recorder = self.recorder.borrow_mut();
        if !self.stage_ends.is_empty() {
            let due = ticket.intended.unwrap_or(sent);
            let since = due.saturating_duration_since(self.shared.clock.measure_start).as_secs_f64();
            let stage = self.stage_ends.partition_point(|&end| end <= since).min(self.stage_ends.len() - 1);
            recorder.record_stage(stage, outcome, timing.corrected);
        }
        recorder.record(call, outcome, timing, || jsonrpc::error_message(body));
    }
}

/// Where a request's (corrected) latency starts. Closed loop: at the send. Open loop: at the
/// intended time when the request left late (coordinated omission correction), and at the send
/// when the pacing timer released it early (by less than [`hires::WAKE_SLACK`]): either way the
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

/// Reports a connection task finished when dropped, however it ends: the worker waits for
/// every connection, so a task that panicked without reporting would hang the run.
struct ConnectionDone(Rc<Worker>);

impl Drop for ConnectionDone {
    fn drop(&mut self) {
        self.0.connection_done();
    }
}

async fn connection_loop(worker: Rc<Worker>, index: usize) {
    let _done = ConnectionDone(worker.clone());
    let config = worker.shared.config.clone();
    let mut connection: Option<Connection> = None;
    let mut timeout_timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    let mut request = Vec::with_capacity(worker.request_head.len() + 256);
    let mut body = Vec::with_capacity(256);
    let workload = &config.workload;
    let open_loop = matches!(config.load, Load::Open { .. });
    // Every worker starts at the shared start instant; nothing before it is measured.
    tokio::time::sleep_until(worker.shared.clock.start.into()).await;
    loop {
        let mut now = Instant::now();
        while !worker.connection_wanted(index, now) {
            if worker.shared.stop.is_stopped() || worker.shared.clock.end.is_some_and(|end| now >= end) {
                break;
            }
            // Not needed by this stage: close the connection, as a departed user would.
            connection = None;
            tokio::time::sleep(IDLE_CONNECTION_CHECK).await;
            now = Instant::now();
        }
        let Some(ticket) = worker.next_ticket(now) else {
            break;
        };
        if let Some(intended) = ticket.intended {
            if intended > now {
                worker.idle.set(worker.idle.get() + 1);
                worker.pacing.get_or_init(hires::PacingTimer::coarse).sleep_until(intended).await;
                worker.idle.set(worker.idle.get() - 1);
            } else if worker.idle.get() == 0 && worker.connections.get() < worker.plan.max_connections {
                // Behind schedule with nobody waiting: open another connection.
                worker.spawn_connection();
            }
            if worker.shared.stop.is_stopped() {
                break;
            }
        }
        let call = workload.pick(&mut worker.rng.borrow_mut());
        let mut connect_time = None;
        let conn = match connection.as_mut() {
            Some(conn) => conn,
            None => {
                let connect_started = Instant::now();
                match worker.shared.connector.connect().await {
                    Ok(stream) => {
                        connect_time = Some(connect_started.elapsed());
                        connection.insert(Connection::new(stream))
                    }
                    Err(_) => {
                        let failed = Instant::now();
                        worker.record(ticket, call, failed, failed, Outcome::Connect, b"");
                        if !open_loop {
                            tokio::time::sleep(CONNECT_RETRY_PAUSE).await;
                        }
                        continue;
                    }
                }
            }
        };
        let id = match config.fixed_id {
            Some(id) => id,
            None => {
                let id = worker.next_id.get();
                worker.next_id.set(id + 1);
                id
            }
        };
        body.clear();
        workload.write_body(call, id, &mut worker.rng.borrow_mut(), &mut body);
        request.clear();
        request.extend_from_slice(&worker.request_head);
        request.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
        request.extend_from_slice(b"\r\n\r\n");
        request.extend_from_slice(&body);

        let sent = Instant::now();
        worker.in_flight.set(worker.in_flight.get() + 1);
        let send_done = Cell::new(None);
        let deadline = sent + config.timeout;
        // The connection's timer is re-armed lazily: it stays set to an earlier request's
        // deadline and is moved forward only when it fires, so a fast request costs no timer
        // registration at all.
        let timer = timeout_timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline.into())));
        let result = {
            let exchange = async {
                conn.send(&request).await.map_err(|_| ReadError::Closed)?;
                send_done.set(Some(Instant::now()));
                conn.read_response(config.max_body).await
            };
            tokio::pin!(exchange);
            loop {
                tokio::select! {
                    biased;
                    result = &mut exchange => break Ok(result),
                    () = timer.as_mut() => {
                        if Instant::now() >= deadline {
                            break Err(());
                        }
                        timer.as_mut().reset(deadline.into());
                    }
                }
            }
        };
        let done = Instant::now();
        worker.in_flight.set(worker.in_flight.get() - 1);
        let (outcome, keep) = match result {
            Err(_) => (Outcome::Timeout, false),
            Ok(Err(ReadError::Closed)) => (Outcome::Closed, false),
            Ok(Err(ReadError::Malformed)) => (Outcome::Invalid(InvalidKind::BadHttp), false),
            Ok(Err(ReadError::TooLarge)) => (Outcome::Invalid(InvalidKind::BodyTooLarge), false),
            Ok(Ok(meta)) => {
                let outcome = jsonrpc::classify(meta.status, conn.body(), id, config.check);
                if ticket.measured {
                    let mut recorder = worker.recorder.borrow_mut();
                    let written = send_done.get().unwrap_or(sent);
                    let first_byte = conn.first_byte_at().unwrap_or(done).max(written);
                    recorder.record_phases(
                        outcome.is_ok(),
                        Phases {
                            connect: connect_time,
                            send: written.saturating_duration_since(sent),
                            wait: first_byte.saturating_duration_since(written),
                            receive: done.saturating_duration_since(first_byte),
                        },
                    );
                    recorder.record_status(call, meta.status);
                    let totals = &mut recorder.calls[call];
                    totals.bytes_received += meta.wire_bytes as u64;
                    totals.bytes_sent += request.len() as u64;
                }
                (outcome, meta.keep_alive && config.keepalive)
            }
        };
        let response_body = match (&connection, result_has_body(outcome)) {
            (Some(conn), true) => conn.body(),
            _ => &[],
        };
        worker.record(ticket, call, sent, done, outcome, response_body);
        if !keep {
            connection = None;
        }
    }
}

fn result_has_body(outcome: Outcome) -> bool {
    matches!(outcome, Outcome::RpcError(_))
}

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
    fn shares_split_evenly() {
        let shares: Vec<u64> = (0..3).map(|i| share(10, i, 3)).collect();
        assert_eq!(shares, vec![4, 3, 3]);
        assert_eq!((0..4).map(|i| share(2, i, 4)).sum::<u64>(), 2);
    }
}
