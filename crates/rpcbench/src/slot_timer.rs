//! A high-resolution timer for open-loop pacing. tokio's timer wheel has a granularity of one
//! millisecond, so a request due at `t` would leave up to a millisecond late, and corrected
//! latency, which counts from `t`, would charge the tool's timer to the target. On Linux each
//! worker arms one `timerfd` (CLOCK_MONOTONIC, absolute, nanosecond resolution) for the
//! earliest pending deadline; the waiting connections sit in a heap and are woken when their
//! time comes. Where a timerfd cannot be had, tokio's timer is used.
//!
//! Tickets are released by time slots, as wrk2 does with its millisecond timer events: the
//! schedule is cut into slots of [`slot_width`] (a few of the worker's gaps, at most
//! [`MAX_EARLY`]), counted from the run's start, and the timer fires at the start of the next
//! slot that holds a ticket, releasing every ticket due in that slot at once. A reply that wakes
//! the worker also releases what is due in the current slot. So one wake-up sends several
//! tickets, their replies come back together, and the wake-ups per request fall with the batch,
//! instead of each ticket waking the worker on its own and each reply again. A ticket is sent
//! early by less than one slot, never late for the slot's sake, and its latency then counts from
//! when it was sent (see `engine::latency_start`): never from a later intended time, which would
//! hide part of the response time. The rate is exact over every slot.
//!
//! A connection whose socket holds its replies back (`transport::quiet_reads`) is given the
//! worker's [`SlotClock`], a handle it waits on for the next slot ([`SlotClock::next_slot`]) to
//! read them then, so a reply does not wake the worker on its own either. The handle is `Send`
//! (lanes are) while the timer it names is not: it finds its timer on the worker's thread, where
//! the worker made it current ([`PacingTimer::make_current`]); anywhere else (a lane outliving
//! its worker) it is never current and the lane reads as bytes come.

use std::cell::{Cell, RefCell};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::future::Future;
use std::num::NonZeroU64;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// The narrowest slot: 50 us is Linux's default timer slack for ordinary threads, so a timer
/// may fire that late anyway.
pub(crate) const WAKE_SLACK: Duration = Duration::from_micros(50);

/// The widest slot: a ticket is never sent a millisecond or more before its time (the
/// granularity wrk2 and tokio's timer pace at).
pub(crate) const MAX_EARLY: Duration = Duration::from_millis(1);

/// How many of the worker's gaps one slot holds. Every slot that sends is a wake-up of the
/// worker and of the target (its requests arrive together), and a wake-up costs a virtual
/// machine more than a request: 32 gaps put the open loop's CPU per request at or below
/// wrk2's at 5,000-60,000 req/s, where 8 cost 1.05-1.41x (bench/ANALYSIS.md).
const SLOT_GAPS: f64 = 32.0;

/// The slot width for a worker that paces `rate` requests per second: [`SLOT_GAPS`] gaps of
/// its schedule, within [`WAKE_SLACK`] and [`MAX_EARLY`].
pub(crate) fn slot_width(rate: f64) -> Duration {
    if rate.is_nan() || rate <= 0.0 {
        return MAX_EARLY;
    }
    Duration::from_secs_f64((SLOT_GAPS / rate).min(MAX_EARLY.as_secs_f64())).clamp(WAKE_SLACK, MAX_EARLY)
}

/// The schedule cut into slots of `width` from `origin`: what a wake-up at an instant releases
/// and when the timer fires for a deadline. Pure, tested by tables.
#[derive(Debug, Clone, Copy)]
struct Slots {
    origin: Instant,
    width: Duration,
}

impl Slots {
    /// The start of the slot `at` falls in (the origin for anything before it).
    fn start_of(&self, at: Instant) -> Instant {
        let since = at.saturating_duration_since(self.origin).as_nanos();
        let width = self.width.as_nanos().max(1);
        let start = since - since % width;
        self.origin + Duration::from_nanos(u64::try_from(start).unwrap_or(u64::MAX))
    }

    /// The start of the slot after the one `at` falls in.
    fn next_start(&self, at: Instant) -> Instant {
        self.start_of(at) + self.width
    }

    /// Whether a ticket due at `deadline` is released by a wake-up at `now`: it is due in the
    /// slot of `now` or before.
    fn is_due(&self, deadline: Instant, now: Instant) -> bool {
        self.start_of(deadline) <= now.max(self.origin)
    }
}

/// A per-worker pacing timer. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct PacingTimer {
    hires: Option<Rc<timerfd::Timerfd>>,
    /// Names this timer in the [`SlotClock`]s it hands out.
    id: NonZeroU64,
}

/// The ids of pacing timers, unique in the process.
static NEXT_TIMER_ID: AtomicU64 = AtomicU64::new(1);

fn next_timer_id() -> NonZeroU64 {
    NonZeroU64::new(NEXT_TIMER_ID.fetch_add(1, AtomicOrdering::Relaxed)).unwrap_or(NonZeroU64::MIN)
}

impl PacingTimer {
    /// A timer for the current worker that releases tickets by slots of `width` counted from
    /// `origin`. Must be called inside the worker's `LocalSet`: the timerfd's driver runs there
    /// as a local task.
    pub(crate) fn start(origin: Instant, width: Duration) -> Self {
        Self { hires: timerfd::Timerfd::start(Slots { origin, width }), id: next_timer_id() }
    }

    /// A timer backed by tokio's 1 ms timer wheel only.
    pub(crate) fn coarse() -> Self {
        Self { hires: None, id: next_timer_id() }
    }

    /// The handle a lane reading at the slots is given; `None` without a high-resolution timer
    /// (there are no slots to read at).
    pub(crate) fn clock(&self) -> Option<SlotClock> {
        self.hires.as_ref().map(|_| SlotClock { id: self.id })
    }

    #[cfg(test)]
    /// Whether the high-resolution timer is in use.
    pub(crate) fn is_high_resolution(&self) -> bool {
        self.hires.is_some()
    }

    /// Waits until `deadline`, or with the high-resolution timer until the start of its slot.
    pub(crate) async fn sleep_until(&self, deadline: Instant) {
        match &self.hires {
            Some(timer) => WaitUntil { timer, deadline, registered: false }.await,
            None => tokio::time::sleep_until(deadline.into()).await,
        }
    }

    /// Makes this the timer its [`SlotClock`]s find on this thread, until the guard drops.
    pub(crate) fn make_current(&self) -> CurrentTimerGuard {
        CURRENT.with(|current| *current.borrow_mut() = self.hires.clone().map(|timer| (self.id, timer)));
        CurrentTimerGuard { _not_send: std::marker::PhantomData }
    }

    /// The worker is awake anyway (a reply came in): releases the tickets due in the slot of
    /// `now`, so that they go out on this wake-up rather than on an expiry of their own.
    pub(crate) fn release_due(&self, now: Instant) {
        if let Some(timer) = &self.hires {
            timer.release_due(now);
        }
    }
}

thread_local! {
    /// The high-resolution pacing timer of the worker that runs on this thread, if any, by id.
    static CURRENT: RefCell<Option<(NonZeroU64, Rc<timerfd::Timerfd>)>> = const { RefCell::new(None) };
}

/// While alive, this thread's current timer is set ([`PacingTimer::make_current`]).
#[derive(Debug)]
pub(crate) struct CurrentTimerGuard {
    _not_send: std::marker::PhantomData<Rc<()>>,
}

impl Drop for CurrentTimerGuard {
    fn drop(&mut self) {
        CURRENT.with(|current| current.borrow_mut().take());
    }
}

/// A handle on a worker's pacing slots, given to the lanes that read at them
/// ([`PacingTimer::clock`]). Copy and `Send`; it reaches its timer only on the thread where the
/// timer is current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotClock {
    id: NonZeroU64,
}

impl SlotClock {
    /// Whether its timer is current on this thread: false for a lane that outlived its worker
    /// or moved off the worker's thread, which must then read as bytes come.
    pub(crate) fn is_here(self) -> bool {
        CURRENT.with(|current| matches!(&*current.borrow(), Some((id, _)) if *id == self.id))
    }

    /// Waits for the start of the next slot of its timer: the next instant the worker wakes
    /// anyway while it paces. Ready at once where the timer is not here ([`Self::is_here`]).
    /// The future holds no reference to the timer, so that a lane's exchange stays `Send`; it
    /// finds the timer when polled.
    pub(crate) fn next_slot(self) -> NextSlot {
        NextSlot { clock: self, deadline: None, registered: false }
    }
}

/// See [`SlotClock::next_slot`].
#[derive(Debug)]
pub(crate) struct NextSlot {
    clock: SlotClock,
    deadline: Option<Instant>,
    registered: bool,
}

impl Future for NextSlot {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        CURRENT.with(|current| {
            let current = current.borrow();
            let Some((id, timer)) = current.as_ref() else { return Poll::Ready(()) };
            if *id != this.clock.id {
                return Poll::Ready(());
            }
            let deadline = *this.deadline.get_or_insert_with(|| timer.next_slot(Instant::now()));
            if timer.is_due(deadline) {
                return Poll::Ready(());
            }
            if !this.registered {
                this.registered = true;
                timer.wait(deadline, cx.waker().clone());
            }
            Poll::Pending
        })
    }
}

/// One waiter in the heap, ordered by deadline, then by arrival.
#[derive(Debug)]
struct Waiter {
    deadline: Instant,
    seq: u64,
    waker: Waker,
}

impl PartialEq for Waiter {
    fn eq(&self, other: &Self) -> bool {
        (self.deadline, self.seq) == (other.deadline, other.seq)
    }
}

impl Eq for Waiter {}

impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Waiter {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.deadline, self.seq).cmp(&(other.deadline, other.seq))
    }
}

/// Deadlines waiting for the timer, earliest first.
#[derive(Debug)]
struct Waiters {
    /// The slots that release tickets.
    slots: Slots,
    heap: RefCell<BinaryHeap<Reverse<Waiter>>>,
    seq: Cell<u64>,
}

impl Waiters {
    fn new(slots: Slots) -> Self {
        Self { slots, heap: RefCell::default(), seq: Cell::default() }
    }

    fn push(&self, deadline: Instant, waker: Waker) {
        let seq = self.seq.get();
        self.seq.set(seq + 1);
        self.heap.borrow_mut().push(Reverse(Waiter { deadline, seq, waker }));
    }

    /// Wakes every waiter due in the slot of `now` or before; returns the next deadline, if any.
    fn wake_due(&self, now: Instant) -> Option<Instant> {
        let mut heap = self.heap.borrow_mut();
        while let Some(Reverse(first)) = heap.peek() {
            if !self.slots.is_due(first.deadline, now) {
                return Some(first.deadline);
            }
            if let Some(Reverse(waiter)) = heap.pop() {
                waiter.waker.wake();
            }
        }
        None
    }
}

struct WaitUntil<'a> {
    timer: &'a timerfd::Timerfd,
    deadline: Instant,
    registered: bool,
}

impl Future for WaitUntil<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        // The same test as `Waiters::wake_due`: a waiter it wakes is ready.
        if this.timer.is_due(this.deadline) {
            return Poll::Ready(());
        }
        if !this.registered {
            this.registered = true;
            this.timer.wait(this.deadline, cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(target_os = "linux")]
mod timerfd {
    use std::cell::Cell;
    use std::os::fd::OwnedFd;
    use std::rc::Rc;
    use std::task::Waker;
    use std::time::Instant;

    use rustix::time::{
        timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
        Timespec,
    };
    use tokio::io::unix::AsyncFd;

    use super::{Slots, Waiters};

    /// One timerfd and the deadlines waiting on it.
    #[derive(Debug)]
    pub(super) struct Timerfd {
        fd: AsyncFd<OwnedFd>,
        waiters: Waiters,
        /// The slot start the timerfd is armed for.
        armed: Cell<Option<Instant>>,
    }

    impl Timerfd {
        pub(super) fn start(slots: Slots) -> Option<Rc<Self>> {
            let fd =
                timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC)
                    .ok()?;
            // `AsyncFd::new` is deprecated because an arbitrary `AsRawFd` may return a different
            // descriptor over time; an `OwnedFd` owns one descriptor for its whole life, which is
            // the condition the unsafe `register` asks for. The crate denies `unsafe` here.
            #[allow(deprecated)]
            let fd = AsyncFd::new(fd).ok()?;
            let timer = Rc::new(Self { fd, waiters: Waiters::new(slots), armed: Cell::new(None) });
            tokio::task::spawn_local(drive(Rc::downgrade(&timer)));
            Some(timer)
        }

        pub(super) fn is_due(&self, deadline: Instant) -> bool {
            self.waiters.slots.is_due(deadline, Instant::now())
        }

        pub(super) fn next_slot(&self, now: Instant) -> Instant {
            self.waiters.slots.next_start(now)
        }

        pub(super) fn wait(&self, deadline: Instant, waker: Waker) {
            self.waiters.push(deadline, waker);
            if self.armed.get().is_none_or(|armed| self.waiters.slots.start_of(deadline) < armed) {
                self.arm(deadline);
            }
        }

        #[cfg(test)]
        /// Tickets waiting for the timer.
        pub(super) fn waiting(&self) -> usize {
            self.waiters.heap.borrow().len()
        }

        /// Releases what is due at `now` outside an expiry. When that emptied the slot the
        /// timerfd is armed for, the timer moves to the next deadline's slot (a system call
        /// instead of an expiry that would release nothing); with nothing left it stays armed
        /// and its expiry finds nothing to do.
        pub(super) fn release_due(&self, now: Instant) {
            let next = self.waiters.wake_due(now);
            if let (Some(armed), Some(next)) = (self.armed.get(), next) {
                if armed < self.waiters.slots.start_of(next) {
                    self.arm(next);
                }
            }
        }

        /// Arms the timer for the start of `deadline`'s slot, relative to now. (An absolute CLOCK_MONOTONIC time would need
        /// `clock_gettime` through rustix's vDSO lookup, which crashes under valgrind; the
        /// nanoseconds between `Instant::now` and the system call do not matter here.)
        fn arm(&self, deadline: Instant) {
            let at = self.waiters.slots.start_of(deadline);
            let delay = at.saturating_duration_since(Instant::now());
            // A zero value would disarm the timer: a deadline already passed fires in 1 ns.
            let value = Timespec {
                tv_sec: delay.as_secs() as i64,
                tv_nsec: delay.subsec_nanos().max(u32::from(delay.as_secs() == 0)) as _,
            };
            let spec = Itimerspec { it_interval: Timespec { tv_sec: 0, tv_nsec: 0 }, it_value: value };
            if timerfd_settime(self.fd.get_ref(), TimerfdTimerFlags::empty(), &spec).is_ok() {
                self.armed.set(Some(at));
            }
        }
    }

    /// Waits for the timerfd to fire, wakes the waiters that are due, re-arms for the next.
    /// Ends when the worker drops the timer.
    ///
    /// The expiration count is never read: re-arming with `timerfd_settime` resets it, and
    /// tokio's registration is edge-triggered, so each expiry is one readiness event. That
    /// saves a `read` per wake-up. A readiness event without an expiry (tokio may report one at
    /// registration) only wakes what is due, which is nothing early.
    async fn drive(timer: std::rc::Weak<Timerfd>) {
        loop {
            let Some(strong) = timer.upgrade() else { return };
            {
                let Ok(mut guard) = strong.fd.readable().await else { return };
                guard.clear_ready();
            }
            strong.armed.set(None);
            if let Some(next) = strong.waiters.wake_due(Instant::now()) {
                strong.arm(next);
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod timerfd {
    use std::rc::Rc;
    use std::task::Waker;
    use std::time::Instant;

    /// No timerfd here: [`super::PacingTimer`] falls back to tokio's timer.
    #[derive(Debug)]
    pub(super) struct Timerfd;

    impl Timerfd {
        pub(super) fn start(_slots: super::Slots) -> Option<Rc<Self>> {
            None
        }

        pub(super) fn is_due(&self, _deadline: Instant) -> bool {
            true
        }

        pub(super) fn next_slot(&self, now: Instant) -> Instant {
            now
        }

        pub(super) fn wait(&self, _deadline: Instant, _waker: Waker) {}

        pub(super) fn release_due(&self, _now: Instant) {}
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn in_local_set<F: Future>(future: F) -> F::Output {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        tokio::task::LocalSet::new().block_on(&runtime, future)
    }

    #[test]
    fn sleepers_wake_at_or_after_their_deadline_in_order() {
        in_local_set(async {
            let start = Instant::now();
            let timer = PacingTimer::start(start, WAKE_SLACK);
            assert_eq!(timer.is_high_resolution(), cfg!(target_os = "linux"));
            let woke = Rc::new(RefCell::new(Vec::new()));
            let mut tasks = Vec::new();
            // Deadlines from 20 ms on: the sleepers are all registered before the first is due
            // unless the machine stalls the test that long. A sleeper polled after its deadline
            // does not sleep and is not ordered: in the debug build on a loaded 2-core machine
            // (load 7) the 250 µs and 100 µs sleepers were both polled late and came back in
            // the order polled, [250, 100, ...].
            let base = start + Duration::from_millis(20);
            // Registered out of order, several sharing a deadline.
            for micros in [3000u64, 500, 1500, 1500, 250, 4000, 100] {
                let timer = timer.clone();
                let woke = woke.clone();
                tasks.push(tokio::task::spawn_local(async move {
                    let deadline = base + Duration::from_micros(micros);
                    let sleeps = Instant::now() < deadline;
                    timer.sleep_until(deadline).await;
                    let now = Instant::now();
                    assert!(now + WAKE_SLACK >= deadline, "woke {:?} early", deadline - now);
                    if sleeps {
                        woke.borrow_mut().push(micros);
                    }
                }));
            }
            for task in tasks {
                task.await.unwrap();
            }
            let order = woke.borrow().clone();
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(order, sorted);
        });
    }

    #[test]
    fn slots_are_a_few_gaps_wide_within_the_bounds() {
        let cases = [
            // (rate per worker, slot width in µs)
            (1000.0, 1000),
            (5000.0, 1000),
            (32_000.0, 1000),
            (40_000.0, 800),
            (60_000.0, 533),
            (100_000.0, 320),
            (640_000.0, 50),
            (1_000_000.0, 50),
            (0.0, 1000),
            (f64::NAN, 1000),
        ];
        for (rate, micros) in cases {
            assert_eq!(slot_width(rate).as_micros(), micros, "rate {rate}");
        }
    }

    #[test]
    fn a_wake_up_releases_every_ticket_of_its_slot_and_no_later_one() {
        let t0 = Instant::now();
        let at = |micros: u64| t0 + Duration::from_micros(micros);
        let slots = Slots { origin: t0, width: Duration::from_micros(100) };
        let cases = [
            // (deadline µs, wake-up µs, released)
            (0, 0, true),
            (99, 0, true),
            (100, 99, false),
            (100, 100, true),
            (199, 100, true),
            (250, 199, false),
            (150, 300, true),
        ];
        for (deadline, now, released) in cases {
            assert_eq!(slots.is_due(at(deadline), at(now)), released, "due {deadline} at {now}");
        }
        assert_eq!(slots.start_of(at(250)), at(200));
        assert_eq!(slots.start_of(t0 - Duration::from_micros(5)), t0, "before the origin: its slot");

        let waiters = Waiters::new(slots);
        for micros in [1000, 1030, 1099, 1100, 1250] {
            waiters.push(at(micros), Waker::noop().clone());
        }
        // The timer fires at the slot's start: the slot's three tickets go, 1,100 waits.
        assert_eq!(waiters.wake_due(at(1000)), Some(at(1100)));
        assert_eq!(waiters.heap.borrow().len(), 2);
        // A reply late in the slot releases nothing more.
        assert_eq!(waiters.wake_due(at(1090)), Some(at(1100)));
        assert_eq!(waiters.wake_due(at(1100)), Some(at(1250)));
        assert_eq!(waiters.wake_due(at(1200)), None);
        assert!(waiters.heap.borrow().is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_reply_releases_the_tickets_due_in_its_slot() {
        in_local_set(async {
            let origin = Instant::now();
            let width = Duration::from_millis(100);
            let timer = PacingTimer::start(origin, width);
            let sleeper = {
                let timer = timer.clone();
                tokio::task::spawn_local(async move { timer.sleep_until(origin + width * 3 / 2).await })
            };
            tokio::task::yield_now().await;
            let hires = timer.hires.clone().unwrap();
            assert_eq!(hires.waiting(), 1);
            // A reply in the slot before the ticket's releases nothing.
            timer.release_due(origin);
            assert_eq!(hires.waiting(), 1);
            // A reply in the ticket's slot releases it, before the worker handles any expiry
            // (the thread blocks here, so the timer's driver cannot run).
            while Instant::now() < origin + width {
                std::thread::sleep(width / 10);
            }
            timer.release_due(Instant::now());
            assert_eq!(hires.waiting(), 0);
            sleeper.await.unwrap();
        });
    }

    #[test]
    fn a_deadline_in_the_past_is_ready_at_once() {
        in_local_set(async {
            let started = Instant::now();
            let timer = PacingTimer::start(started, WAKE_SLACK);
            timer.sleep_until(started - Duration::from_millis(5)).await;
            assert!(started.elapsed() < Duration::from_millis(100));
        });
    }

    #[test]
    fn an_earlier_deadline_rearms_the_timer() {
        in_local_set(async {
            let start = Instant::now();
            let timer = PacingTimer::start(start, WAKE_SLACK);
            let late = {
                let timer = timer.clone();
                tokio::task::spawn_local(async move {
                    timer.sleep_until(start + Duration::from_millis(200)).await
                })
            };
            tokio::task::yield_now().await;
            // Armed for 200 ms; a 5 ms sleeper must not wait for it.
            timer.sleep_until(start + Duration::from_millis(5)).await;
            assert!(start.elapsed() < Duration::from_millis(150), "waited {:?}", start.elapsed());
            late.await.unwrap();
            assert!(start.elapsed() >= Duration::from_millis(200));
        });
    }
}
