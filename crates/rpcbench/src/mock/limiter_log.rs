//! The mock's own record of what its rate limiter decided, on its own clock: the truth a test
//! holds a measured sustained rate to, so that a machine that stops the process for a while
//! changes the truth the same way it changes the measurement.

use std::collections::VecDeque;
use std::time::Instant;

/// One decision of the token bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimiterDecision {
    /// When the bucket decided (its own clock, the instant it refilled to).
    pub at: Instant,
    /// Whether the request was let through (a token taken) or rate limited.
    pub allowed: bool,
    /// The tokens the bucket held right after the decision.
    pub tokens: f64,
}

/// The last [`LimiterLog::CAPACITY`] decisions of a mock's rate limiter, oldest first, with the
/// bucket's rate and size. It counts every request (or, for a limiter that counts batch calls
/// one by one, every call) the limiter decided on: what it admitted, when, and what it held.
#[derive(Debug, Clone, PartialEq)]
pub struct LimiterLog {
    rate: f64,
    burst: f64,
    started: Instant,
    decisions: VecDeque<LimiterDecision>,
    dropped: u64,
}

impl LimiterLog {
    /// Decisions kept (about 1.5 MB): the oldest go first beyond it, so a long-lived mock does
    /// not grow without bound.
    pub const CAPACITY: usize = 1 << 16;

    /// An empty log of a bucket of `burst` tokens refilled at `rate` a second, full at `started`.
    pub(crate) fn new(rate: f64, burst: f64, started: Instant) -> Self {
        LimiterLog { rate, burst, started, decisions: VecDeque::new(), dropped: 0 }
    }

    pub(crate) fn push(&mut self, decision: LimiterDecision) {
        if self.decisions.len() == Self::CAPACITY {
            self.decisions.pop_front();
            self.dropped += 1;
        }
        self.decisions.push_back(decision);
    }

    /// Decisions made so far, the dropped ones included.
    pub(crate) fn total(&self) -> u64 {
        self.decisions.len() as u64 + self.dropped
    }

    /// The configured rate, tokens per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The decisions kept, oldest first.
    pub fn decisions(&self) -> impl Iterator<Item = &LimiterDecision> {
        self.decisions.iter()
    }

    /// Requests let through at or after `from` and before `until`.
    pub fn admitted_between(&self, from: Instant, until: Instant) -> u64 {
        self.decisions.iter().filter(|d| d.allowed && d.at >= from && d.at < until).count() as u64
    }

    /// The tokens the bucket held at `at`: what the last decision before it left, refilled
    /// since (up to the burst). `None` when the decisions before `at` were dropped.
    pub fn tokens_at(&self, at: Instant) -> Option<f64> {
        let (since, tokens) = match self.decisions.iter().rev().find(|d| d.at <= at) {
            Some(last) => (last.at, last.tokens),
            None if self.dropped == 0 => (self.started, self.burst),
            None => return None,
        };
        Some((tokens + at.saturating_duration_since(since).as_secs_f64() * self.rate).min(self.burst))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_log_counts_admissions_in_a_window_and_refills_between_decisions() {
        let t0 = Instant::now();
        let mut log = LimiterLog::new(10.0, 5.0, t0);
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        log.push(LimiterDecision { at: at(100), allowed: true, tokens: 0.2 });
        log.push(LimiterDecision { at: at(150), allowed: false, tokens: 0.7 });
        log.push(LimiterDecision { at: at(200), allowed: true, tokens: 0.2 });
        assert_eq!(log.admitted_between(at(100), at(200)), 1, "from inclusive, until exclusive");
        assert_eq!(log.admitted_between(at(0), at(201)), 2);
        assert_eq!(log.tokens_at(at(50)), Some(5.0), "full before the first decision");
        let refilled = log.tokens_at(at(180)).unwrap();
        assert!((refilled - 1.0).abs() < 1e-9, "0.7 and 30 ms at 10/s: {refilled}");
        assert_eq!(log.tokens_at(at(60_000)), Some(5.0), "never past the burst");
    }

    #[test]
    fn the_log_keeps_its_last_decisions_and_says_when_it_cannot_tell() {
        let t0 = Instant::now();
        let mut log = LimiterLog::new(1.0, 1.0, t0);
        for i in 0..=LimiterLog::CAPACITY as u64 {
            log.push(LimiterDecision { at: t0 + Duration::from_micros(i + 1), allowed: true, tokens: 0.0 });
        }
        assert_eq!(log.decisions().count(), LimiterLog::CAPACITY);
        assert_eq!(log.tokens_at(t0), None, "the decisions before were dropped");
    }
}
