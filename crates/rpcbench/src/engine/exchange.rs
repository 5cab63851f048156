//! The connection loop, the hot path of every run over every wire: take a ticket, wait for its
//! time, have the protocol write the request, exchange it on a lane, have the protocol classify
//! the reply, judge failures (rate limits), record one outcome per call, pause when asked.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::outcome::{InvalidKind, Outcome};
use crate::protocol::{CallSlot, Protocol};
use crate::record::Phases;
use crate::slot_timer;
use crate::transport::{Lane, Outgoing, Transport, WireError};
use config::Load;

use super::request_timeout::RequestTimeout;
use super::worker::{Ticket, Worker, WorkerShared};
use super::*;

/// A failed call's outcome after the rate-limit rules, and the part of its answer the recorder
/// reads a message from (a JSON-RPC error's; nothing for the rest). Out of line: the path of
/// successes does not carry it.
#[cold]
#[inline(never)]
fn judge_failure<'a>(
    rules: &crate::ratelimit::signs::RateLimitRules,
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

/// A connection that failed to connect waits this long before trying again in closed loop, so
/// that a dead server is not hammered in a tight loop.
const CONNECT_RETRY_PAUSE: Duration = Duration::from_millis(10);

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

impl<T: Transport + 'static, P: Protocol + 'static> Worker<T, P> {
    /// Opens the worker's next connection: a task running [`connection_loop`].
    pub(super) fn spawn_connection(self: &Rc<Self>) {
        let index = self.connections.get();
        self.connections.set(index + 1);
        tokio::task::spawn_local(connection_loop(self.clone(), index));
    }
}

async fn connection_loop<T: Transport + 'static, P: Protocol + 'static>(
    worker: Rc<Worker<T, P>>,
    index: usize,
) {
    let mut guard = ConnectionGuard { worker: worker.clone(), held: None, slots: Vec::with_capacity(1) };
    let config = worker.shared.config.clone();
    let mut lane: Option<T::Lane> = None;
    let mut timeout_timer: Option<RequestTimeout> = None;
    let mut request = Outgoing::default();
    let mut backoff = crate::ratelimit::pause::Backoff::default();
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
                if config.on_rate_limit != crate::ratelimit::pause::OnRateLimit::Continue {
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
            let clock = if worker.behind.get() {
                None
            } else {
                worker.pacing.get().and_then(slot_timer::PacingTimer::clock)
            };
            current.read_at_slots(clock);
        }
        let sent = Instant::now();
        guard.held = Some((ticket, Some(sent)));
        worker.in_flight.set(worker.in_flight.get() + 1);
        let deadline = sent + config.timeout;
        // The connection's timer is re-armed lazily and polled only when it can have fired
        // (see [`RequestTimeout`]): a fast request costs no timer work at all.
        let timer = timeout_timer.get_or_insert_with(|| RequestTimeout::new(deadline));
        let result = {
            let exchange = current.exchange(&request, config.max_body);
            tokio::pin!(exchange);
            std::future::poll_fn(|cx| timer.poll_exchange(exchange.as_mut(), deadline, cx)).await
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
            Some(Err(WireError::GrpcStatus(code))) => Some(Outcome::GrpcStatus(code)),
            Some(Err(WireError::BadGrpc)) => Some(Outcome::Invalid(InvalidKind::BadGrpc)),
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
        if config.on_rate_limit != crate::ratelimit::pause::OnRateLimit::Continue {
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
