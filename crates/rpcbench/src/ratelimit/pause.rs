//! What a connection does after a rate-limited answer (`--on-rate-limit`): carry on and count
//! it (the default), back off exponentially, or wait as the server's `Retry-After` says. A
//! pause holds only the connection that got the answer; the run counts the pauses and the time
//! spent in them, so a report can say how much of the measured time went to waiting.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The first back-off pause.
pub const BACKOFF_START: Duration = Duration::from_millis(100);
/// The longest back-off pause (the pause doubles up to it).
pub const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// The longest pause a `Retry-After` may ask for.
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(60);

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
pub struct Backoff {
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
    pub fn after(&mut self, mode: OnRateLimit, limited: bool, retry_after: Option<u64>) -> Option<Duration> {
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
    fn retry_after_is_followed_up_to_its_cap_and_backoff_stands_in_without_it() {
        let mut backoff = Backoff::default();
        let mode = OnRateLimit::RespectRetryAfter;
        assert_eq!(backoff.after(mode, true, Some(3)), Some(Duration::from_secs(3)));
        assert_eq!(backoff.after(mode, true, Some(86_400)), Some(RETRY_AFTER_MAX));
        assert_eq!(backoff.after(mode, true, None), Some(BACKOFF_START));
        assert_eq!(backoff.after(mode, true, None), Some(BACKOFF_START * 2));
    }
}
