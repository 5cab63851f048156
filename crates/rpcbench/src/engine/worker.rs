//! A worker: one OS thread with a current-thread runtime, its plan (its share of connections,
//! rate and requests; its pacer and pacing timer), the state its connection tasks share, the
//! recording of each ticket's outcome, and the publishing of its live figures.

use std::cell::{Cell, OnceCell, RefCell};
use std::fmt;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::sync::Notify;

use crate::jsonrpc;
use crate::outcome::Outcome;
use crate::protocol::{CallSlot, Draw, Protocol};
use crate::record::{tick_of, Recorder, Series, Timing};
use crate::slot_timer;
use crate::transport::Transport;
use config::{Load, RunConfig};

use super::*;

/// The instants every worker shares.
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    pub(super) start: Instant,
    pub(super) measure_start: Instant,
    pub(super) end: Option<Instant>,
    /// In-flight requests are abandoned after this (counted as unfinished).
    pub(super) hard_end: Option<Instant>,
}

impl Clock {
    pub(super) fn new(config: &RunConfig, start: Instant) -> Self {
        let measure_start = start + config.warmup;
        let end = config.measured_duration().map(|duration| measure_start + duration);
        let hard_end = end.map(|end| end + config.timeout + Duration::from_secs(1));
        Self { start, measure_start, end, hard_end }
    }
}

/// What one worker does: its share of connections, rate and requests.
#[derive(Debug)]
pub(super) struct WorkerPlan {
    /// The worker's index in this process (its live-metrics slot).
    pub(super) local: usize,
    /// Workers in this process.
    pub(super) workers: usize,
    /// This process's part of the whole run (`--shard`).
    pub(super) shard: Slice,
    /// The worker's part of the whole run.
    pub(super) slice: Slice,
    /// Connections opened at the start.
    pub(super) initial_connections: usize,
    /// The most connections this worker may open.
    pub(super) max_connections: usize,
    /// Measured requests this worker sends, if the run is bounded by count.
    pub(super) requests: Option<u64>,
    /// Open loop only.
    pub(super) pacer: Option<Box<dyn pacer::Pacer>>,
    /// Open loop: the width of the slots that release tickets together
    /// ([`slot_timer::slot_width`] of the worker's highest rate).
    pub(super) slot_width: Duration,
    /// Open loop at [`QUIET_READS_MIN_RATE`] or more: connections read their replies at the
    /// pacing slots ([`crate::transport::Lane::read_at_slots`]).
    pub(super) read_at_slots: bool,
}

/// The rate per worker from which its connections read replies at the pacing slots instead of
/// as they come: at this rate a slot of at most [`slot_timer::MAX_EARLY`] holds two tickets or
/// more, so the worker wakes every slot anyway. Below it, replies read at slots would wake the
/// worker in slots that send nothing.
pub(super) const QUIET_READS_MIN_RATE: f64 = 2000.0;

impl WorkerPlan {
    pub(super) fn new(config: &RunConfig, local: usize, workers: usize) -> Self {
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
pub(super) struct WorkerShared {
    pub(super) config: Arc<RunConfig>,
    pub(super) stop: StopHandle,
    pub(super) series: Arc<Mutex<Series>>,
    pub(super) clock: Clock,
    /// Open loop: the pause of the whole schedule after rate-limited answers.
    pub(super) schedule_pause: Arc<crate::ratelimit::pause::SchedulePause>,
}

pub(super) fn run_worker<T: Transport + 'static, P: Protocol + 'static>(
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
        // The timer is current on the worker's thread, where the clock handed to the
        // connections that read at its slots finds it.
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
pub(super) async fn publish_live<T: Transport, P: Protocol>(
    worker: Rc<Worker<T, P>>,
    live: Arc<dyn LiveSink>,
) {
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
pub(super) struct Worker<T, P> {
    pub(super) shared: WorkerShared,
    pub(super) plan: WorkerPlan,
    pub(super) transport: T,
    pub(super) protocol: P,
    pub(super) recorder: RefCell<Recorder>,
    /// The mix's random source, ids and turns.
    pub(super) draw: RefCell<Draw>,
    /// Measured tickets handed out.
    pub(super) measured_taken: Cell<u64>,
    /// Tickets handed out, warmup included (the k-th is ticket `slice.index + k * slice.count`
    /// of the whole run, the one the pacer's k-th offset is for); counted for replays only.
    pub(super) tickets_taken: Cell<u64>,
    /// Whether tickets carry their global index (a replay).
    pub(super) count_tickets: bool,
    /// Open loop: the next ticket's offset, drawn from the pacer but not yet taken.
    pub(super) pacer: RefCell<Option<Box<dyn pacer::Pacer>>>,
    /// Connections alive.
    pub(super) connections: Cell<usize>,
    /// Connections sleeping until their ticket is due.
    pub(super) idle: Cell<usize>,
    /// Open loop: the worker took a ticket more than a slot after its time and has not been
    /// ahead of its schedule since. Connections then read replies as they come, not quietly at
    /// the slots: a busy worker wakes for nothing anyway, and a reply read a slot late would
    /// hold its connection from the tickets that are overdue.
    pub(super) behind: Cell<bool>,
    /// Requests sent and not yet answered (for the live metrics).
    pub(super) in_flight: Cell<u64>,
    /// Open loop: the timer connections sleep on until their ticket is due.
    pub(super) pacing: OnceCell<slot_timer::PacingTimer>,
    /// Closed loop with stages: the number of connections wanted over time.
    pub(super) connection_curve: Option<stages::LevelCurve>,
    /// With more than one stage: when each stage ends, seconds after measurement starts.
    pub(super) stage_ends: Vec<f64>,
    pub(super) all_done: Notify,
}

impl<T, P> fmt::Debug for Worker<T, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker").field("slice", &self.plan.slice).finish_non_exhaustive()
    }
}

/// Permission to send one request.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ticket {
    /// Open loop: when the request is due.
    pub(super) intended: Option<Instant>,
    /// Whether the request is recorded (not warmup).
    pub(super) measured: bool,
    /// The ticket's global index in the whole run (see [`Draw::ticket`]).
    pub(super) index: u64,
    /// Open loop: how far rate-limit pauses had moved the schedule when it was taken.
    pub(super) shifted: Duration,
}

impl<T: Transport + 'static, P: Protocol + 'static> Worker<T, P> {
    pub(super) fn new(shared: WorkerShared, mut plan: WorkerPlan, transport: T, protocol: P) -> Self {
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
}

impl<T, P> Worker<T, P> {
    /// Closed loop with stages: whether connection `index` of this worker is wanted now.
    // Inlined into the connection loop by hand: with the replay protocol's instances of the
    // loop, LLVM stopped inlining it (and `next_ticket`), +40 instructions per request
    // (callgrind, bench/client_cost.sh).
    #[inline(always)]
    pub(super) fn connection_wanted(&self, index: usize, now: Instant) -> bool {
        let Some(curve) = &self.connection_curve else { return true };
        let level = curve.level_at(now.saturating_duration_since(self.shared.clock.start).as_secs_f64());
        let lanes = self.shared.config.lanes_per_connection() as u64;
        (index as u64)
            < worker_share(level.round() as u64, self.plan.shard, self.plan.local, self.plan.workers) * lanes
    }

    pub(super) fn connection_done(&self) {
        let left = self.connections.get() - 1;
        self.connections.set(left);
        if left == 0 {
            self.all_done.notify_one();
        }
    }

    #[inline(always)]
    pub(super) fn next_ticket(&self, now: Instant) -> Option<Ticket> {
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
    pub(super) fn count_unsent(&self) {
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

    pub(super) fn record(
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
    pub(super) fn stage_of(&self, ticket: Ticket, sent: Instant) -> usize {
        let due = ticket.intended.unwrap_or(sent);
        let since = due.saturating_duration_since(self.shared.clock.measure_start).as_secs_f64();
        self.stage_ends.partition_point(|&end| end <= since).min(self.stage_ends.len().saturating_sub(1))
    }

    /// A measured request the run cut off: `unfinished` for each call it carried when it was
    /// sent; `unsent` (open loop) when its ticket was taken but it never went out.
    pub(super) fn record_cut_off(&self, ticket: Ticket, sent: Option<Instant>, slots: &[CallSlot]) {
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
pub(super) fn latency_start(intended: Option<Instant>, sent: Instant) -> Instant {
    intended.map_or(sent, |intended| intended.min(sent))
}

/// With more than one stage, the end of each stage in seconds after measurement starts.
pub(super) fn stage_ends(stages: &[stages::Stage]) -> Vec<f64> {
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
}
