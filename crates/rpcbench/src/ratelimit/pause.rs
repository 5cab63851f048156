//! What a connection does after a rate-limited answer (`--on-rate-limit`): carry on and count
//! it (the default), back off exponentially, or wait as the server's `Retry-After` says. A
//! pause holds only the connection that got the answer; the run counts the pauses and the time
//! spent in them, so a report can say how much of the measured time went to waiting.
//!
//! In an open loop the pause is the run's, not one connection's: the schedule itself moves
//! later ([`SchedulePause`]), so no other connection sends the tickets that fell due while the
//! server asked for quiet, and the load resumes at its rate once the pause is over. The time
//! reported is then how long the load paused (overlapping pauses counted once).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The first back-off pause.
pub(crate) const BACKOFF_START: Duration = Duration::from_millis(100);
/// The longest back-off pause (the pause doubles up to it).
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// The longest pause a `Retry-After` may ask for.
pub(crate) const RETRY_AFTER_MAX: Duration = Duration::from_secs(60);

/// What a connection does after a rate-limited answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnRateLimit {
    /// Goes on at once; the answer is counted (`rate_limited`).
    #[default]
    Continue,
    /// Pauses 100 ms, doubling on each rate-limited answer up to 10 s; a success resets it.
    Backoff,
    /// Pauses as `Retry-After` says (capped at 60 s); without the header, as `Backoff`.
    RespectRetryAfter,
}

impl OnRateLimit {
    /// The name on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            OnRateLimit::Continue => "continue",
            OnRateLimit::Backoff => "backoff",
            OnRateLimit::RespectRetryAfter => "respect-retry-after",
        }
    }
}

/// One connection's back-off: the pause the next rate-limited answer would cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { next: BACKOFF_START }
    }
}

impl Backoff {
    /// The pause after an exchange, if any: `limited` when one of its answers was rate
    /// limited, `retry_after` the seconds the server asked for.
    pub(crate) fn after(
        &mut self,
        mode: OnRateLimit,
        limited: bool,
        retry_after: Option<u64>,
    ) -> Option<Duration> {
        if !limited {
            self.next = BACKOFF_START;
            return None;
        }
        match (mode, retry_after) {
            (OnRateLimit::Continue, _) => None,
            (OnRateLimit::RespectRetryAfter, Some(seconds)) => {
                Some(Duration::from_secs(seconds).min(RETRY_AFTER_MAX))
            }
            (OnRateLimit::Backoff | OnRateLimit::RespectRetryAfter, _) => {
                let pause = self.next;
                self.next = (self.next * 2).min(BACKOFF_MAX);
                Some(pause)
            }
        }
    }
}

/// An open loop's pause of its whole schedule, shared by every worker of a run: each ticket's
/// intended time is moved later by the pauses so far, and a pause asked for while one is under
/// way extends it only by what goes beyond it.
#[derive(Debug, Default)]
pub(crate) struct SchedulePause {
    /// How far the schedule has moved, nanoseconds.
    shift_ns: AtomicU64,
    /// Until when the load is paused, nanoseconds after the run's start.
    until_ns: AtomicU64,
}

impl SchedulePause {
    /// How far the schedule has moved so far.
    pub(crate) fn shift(&self) -> Duration {
        Duration::from_nanos(self.shift_ns.load(Ordering::Acquire))
    }

    /// Pauses the load from `now` for `pause` (`start`: the run's start); returns how much
    /// this moved the schedule (zero when a pause under way already covers it).
    pub(crate) fn pause(&self, start: Instant, now: Instant, pause: Duration) -> Duration {
        let now_ns = u64::try_from(now.saturating_duration_since(start).as_nanos()).unwrap_or(u64::MAX);
        let wanted = now_ns.saturating_add(u64::try_from(pause.as_nanos()).unwrap_or(u64::MAX));
        loop {
            let until = self.until_ns.load(Ordering::Acquire);
            let from = until.max(now_ns);
            if wanted <= from {
                return Duration::ZERO;
            }
            if self.until_ns.compare_exchange(until, wanted, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                self.shift_ns.fetch_add(wanted - from, Ordering::AcqRel);
                return Duration::from_nanos(wanted - from);
            }
        }
    }
}

/// The pauses of a run, as reports give them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RatePauses {
    /// `backoff` or `respect-retry-after`.
    pub mode: String,
    /// Pauses taken.
    pub pauses: u64,
    /// Time spent in them, over all connections, milliseconds.
    pub paused_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap_and_a_success_resets_it() {
        let mut backoff = Backoff::default();
        let pauses: Vec<_> =
            (0..9).map(|_| backoff.after(OnRateLimit::Backoff, true, Some(1)).unwrap().as_millis()).collect();
        assert_eq!(pauses, [100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000]);
        assert_eq!(backoff.after(OnRateLimit::Backoff, false, None), None);
        assert_eq!(backoff.after(OnRateLimit::Backoff, true, None), Some(BACKOFF_START));
        assert_eq!(Backoff::default().after(OnRateLimit::Continue, true, Some(5)), None);
    }

    #[test]
    fn overlapping_pauses_of_the_schedule_move_it_once_by_their_union() {
        let pause = SchedulePause::default();
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        assert_eq!(pause.pause(start, at(100), Duration::from_secs(1)), Duration::from_secs(1));
        // Asked again by another connection inside the pause: only what goes beyond it counts.
        assert_eq!(pause.pause(start, at(600), Duration::from_secs(1)), Duration::from_millis(500));
        assert_eq!(pause.pause(start, at(700), Duration::from_millis(100)), Duration::ZERO);
        assert_eq!(pause.shift(), Duration::from_millis(1500));
        assert_eq!(pause.pause(start, at(5000), Duration::from_millis(200)), Duration::from_millis(200));
        assert_eq!(pause.shift(), Duration::from_millis(1700));
    }

    #[test]
    fn retry_after_is_followed_up_to_its_cap_and_backoff_stands_in_without_it() {
        let mut backoff = Backoff::default();
        let mode = OnRateLimit::RespectRetryAfter;
        assert_eq!(backoff.after(mode, true, Some(3)), Some(Duration::from_secs(3)));
        assert_eq!(backoff.after(mode, true, Some(86_400)), Some(RETRY_AFTER_MAX));
        assert_eq!(backoff.after(mode, true, None), Some(BACKOFF_START));
        assert_eq!(backoff.after(mode, true, None), Some(BACKOFF_START * 2));
    }
}
