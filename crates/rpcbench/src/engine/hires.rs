//! A high-resolution timer for open-loop pacing. tokio's timer wheel has a granularity of one
//! millisecond, so a request due at `t` would leave up to a millisecond late, and corrected
//! latency, which counts from `t`, would charge the tool's timer to the target. On Linux each
//! worker arms one `timerfd` (CLOCK_MONOTONIC, absolute, nanosecond resolution) for the
//! earliest pending deadline; the waiting connections sit in a heap and are woken when their
//! time comes. Where a timerfd cannot be had, tokio's timer is used.
//!
//! One expiry wakes every ticket due within [`WAKE_SLACK`] of it, so that at high rates one
//! wake-up (an `epoll_wait` return and a `timerfd_settime`) serves several tickets instead of
//! one each. A ticket woken before its time is sent early by less than the slack, and its
//! latency then counts from when it was sent (see `engine::Worker::record`): never from a later
//! intended time, which would hide part of the response time.

use std::cell::{Cell, RefCell};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Tickets due within this much after a timer expiry are released by that expiry. 50 us is
/// Linux's default timer slack for ordinary threads: a timer may fire that late anyway, so
/// releasing tickets up to this early moves no ticket further from its time than the kernel
/// already does, and at 20,000 requests/s (one every 50 us) halves the wake-ups or better.
pub const WAKE_SLACK: Duration = Duration::from_micros(50);

/// A per-worker pacing timer. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PacingTimer {
    hires: Option<Rc<timerfd::Timerfd>>,
}

impl PacingTimer {
    /// A timer for the current worker. Must be called inside the worker's `LocalSet`: the
    /// timerfd's driver runs there as a local task.
    pub fn start() -> Self {
        Self { hires: timerfd::Timerfd::start() }
    }

    /// A timer backed by tokio's 1 ms timer wheel only.
    pub fn coarse() -> Self {
        Self { hires: None }
    }

    #[cfg(test)]
    /// Whether the high-resolution timer is in use.
    pub fn is_high_resolution(&self) -> bool {
        self.hires.is_some()
    }

    /// Waits until `deadline`, or up to [`WAKE_SLACK`] before it with the high-resolution
    /// timer.
    pub async fn sleep_until(&self, deadline: Instant) {
        match &self.hires {
            Some(timer) => WaitUntil { timer, deadline, registered: false }.await,
            None => tokio::time::sleep_until(deadline.into()).await,
        }
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
#[derive(Debug, Default)]
struct Waiters {
    heap: RefCell<BinaryHeap<Reverse<Waiter>>>,
    seq: Cell<u64>,
}

impl Waiters {
    fn push(&self, deadline: Instant, waker: Waker) {
        let seq = self.seq.get();
        self.seq.set(seq + 1);
        self.heap.borrow_mut().push(Reverse(Waiter { deadline, seq, waker }));
    }

    /// Wakes every waiter due by `now` plus [`WAKE_SLACK`]; returns the next deadline, if any.
    fn wake_due(&self, now: Instant) -> Option<Instant> {
        let release = now + WAKE_SLACK;
        let mut heap = self.heap.borrow_mut();
        while let Some(Reverse(first)) = heap.peek() {
            if first.deadline > release {
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
        if Instant::now() + WAKE_SLACK >= this.deadline {
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

    use super::Waiters;

    /// One timerfd and the deadlines waiting on it.
    #[derive(Debug)]
    pub(super) struct Timerfd {
        fd: AsyncFd<OwnedFd>,
        waiters: Waiters,
        /// The deadline the timerfd is armed for.
        armed: Cell<Option<Instant>>,
    }

    impl Timerfd {
        pub(super) fn start() -> Option<Rc<Self>> {
            let fd =
                timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC)
                    .ok()?;
            // `AsyncFd::new` is deprecated because an arbitrary `AsRawFd` may return a different
            // descriptor over time; an `OwnedFd` owns one descriptor for its whole life, which is
            // the condition the unsafe `register` asks for. The crate forbids `unsafe`.
            #[allow(deprecated)]
            let fd = AsyncFd::new(fd).ok()?;
            let timer = Rc::new(Self { fd, waiters: Waiters::default(), armed: Cell::new(None) });
            tokio::task::spawn_local(drive(Rc::downgrade(&timer)));
            Some(timer)
        }

        pub(super) fn wait(&self, deadline: Instant, waker: Waker) {
            self.waiters.push(deadline, waker);
            if self.armed.get().is_none_or(|armed| deadline < armed) {
                self.arm(deadline);
            }
        }

        /// Arms the timer relative to now. (An absolute CLOCK_MONOTONIC time would need
        /// `clock_gettime` through rustix's vDSO lookup, which crashes under valgrind; the
        /// nanoseconds between `Instant::now` and the system call do not matter here.)
        fn arm(&self, deadline: Instant) {
            let delay = deadline.saturating_duration_since(Instant::now());
            // A zero value would disarm the timer: a deadline already passed fires in 1 ns.
            let value = Timespec {
                tv_sec: delay.as_secs() as i64,
                tv_nsec: delay.subsec_nanos().max(u32::from(delay.as_secs() == 0)) as _,
            };
            let spec = Itimerspec { it_interval: Timespec { tv_sec: 0, tv_nsec: 0 }, it_value: value };
            if timerfd_settime(self.fd.get_ref(), TimerfdTimerFlags::empty(), &spec).is_ok() {
                self.armed.set(Some(deadline));
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
        pub(super) fn start() -> Option<Rc<Self>> {
            None
        }

        pub(super) fn wait(&self, _deadline: Instant, _waker: Waker) {}
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
            let timer = PacingTimer::start();
            assert_eq!(timer.is_high_resolution(), cfg!(target_os = "linux"));
            let start = Instant::now();
            let woke = Rc::new(RefCell::new(Vec::new()));
            let mut tasks = Vec::new();
            // Registered out of order, several sharing a deadline.
            for micros in [3000u64, 500, 1500, 1500, 250, 4000, 100] {
                let timer = timer.clone();
                let woke = woke.clone();
                tasks.push(tokio::task::spawn_local(async move {
                    let deadline = start + Duration::from_micros(micros);
                    timer.sleep_until(deadline).await;
                    let now = Instant::now();
                    assert!(now + WAKE_SLACK >= deadline, "woke {:?} early", deadline - now);
                    woke.borrow_mut().push(micros);
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
    fn one_expiry_releases_every_ticket_due_within_the_slack() {
        let waiters = Waiters::default();
        let t0 = Instant::now();
        let at = |micros: u64| t0 + Duration::from_micros(micros);
        for micros in [1000, 1000 + 30, 1000 + 50, 1000 + 51, 1200] {
            waiters.push(at(micros), Waker::noop().clone());
        }
        // The timer fires at the first deadline: the next two ride along, 1,051 waits.
        assert_eq!(waiters.wake_due(at(1000)), Some(at(1051)));
        assert_eq!(waiters.heap.borrow().len(), 2);
        assert_eq!(waiters.wake_due(at(1051)), Some(at(1200)));
        assert_eq!(waiters.wake_due(at(1150)), None);
        assert!(waiters.heap.borrow().is_empty());
    }

    #[test]
    fn a_deadline_in_the_past_is_ready_at_once() {
        in_local_set(async {
            let timer = PacingTimer::start();
            let started = Instant::now();
            timer.sleep_until(started - Duration::from_millis(5)).await;
            assert!(started.elapsed() < Duration::from_millis(100));
        });
    }

    #[test]
    fn an_earlier_deadline_rearms_the_timer() {
        in_local_set(async {
            let timer = PacingTimer::start();
            let start = Instant::now();
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
