//! The mock's own record of when it read the requests it was set to serve slowly and when it
//! answered them, on its own clock: a test that holds a latency or a rate to what a step or a
//! round should have met can tell from it whether the mock was kept from reading or answering
//! (the process stopped, or the generator starved of a core) during that step.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The instants a mock read its last [`ReadLog::CAPACITY`] requests, oldest first, and (for
/// as many) when it read and answered the ones it let through. It counts every HTTP POST
/// request the fault knobs decided on (rate limited or not), when [`crate::mock::Faults`] sets
/// a latency, a blocking latency or a serial service time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadLog {
    reads: VecDeque<Instant>,
    /// (read, answered) of the requests let through, in the order answered.
    served: VecDeque<(Instant, Instant)>,
    dropped: u64,
}

impl ReadLog {
    /// Reads kept (about 1 MB): the oldest go first beyond it.
    pub const CAPACITY: usize = 1 << 16;

    pub(crate) fn push(&mut self, at: Instant) {
        if self.reads.len() == Self::CAPACITY {
            self.reads.pop_front();
            self.dropped += 1;
        }
        self.reads.push_back(at);
    }

    pub(crate) fn push_served(&mut self, read: Instant, answered: Instant) {
        if self.served.len() == Self::CAPACITY {
            self.served.pop_front();
        }
        self.served.push_back((read, answered));
    }

    /// The longest a request read at or after `from` and before `until` was held, from when
    /// it was read to when its delays ended and its answer was written (zero without one).
    pub fn longest_hold_between(&self, from: Instant, until: Instant) -> Duration {
        let inside = self.served.iter().filter(|(read, _)| *read >= from && *read < until);
        inside.map(|(read, answered)| answered.saturating_duration_since(*read)).max().unwrap_or_default()
    }

    /// The median time the mock held the requests it let through (kept ones), from when it
    /// read each to when its delays ended: what its latency knobs really added, timer overshoot
    /// included (`None` before any was answered).
    pub fn median_hold(&self) -> Option<Duration> {
        let mut holds: Vec<Duration> =
            self.served.iter().map(|(read, answered)| answered.saturating_duration_since(*read)).collect();
        if holds.is_empty() {
            return None;
        }
        let middle = holds.len() / 2;
        Some(*holds.select_nth_unstable(middle).1)
    }

    /// The reads kept, oldest first.
    pub fn reads(&self) -> impl Iterator<Item = &Instant> {
        self.reads.iter()
    }

    /// Requests read at or after `from` and before `until`.
    pub fn read_between(&self, from: Instant, until: Instant) -> u64 {
        self.reads.iter().filter(|at| **at >= from && **at < until).count() as u64
    }

    /// The longest time between two successive reads at or after `from` and before `until`
    /// (zero with fewer than two): how long the mock went without reading a request while it
    /// was being sent some.
    pub fn longest_gap_between(&self, from: Instant, until: Instant) -> Duration {
        let inside: Vec<Instant> =
            self.reads.iter().copied().filter(|at| *at >= from && *at < until).collect();
        inside.windows(2).map(|pair| pair[1].saturating_duration_since(pair[0])).max().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_log_finds_the_longest_gap_and_hold_inside_a_window_and_keeps_its_last_reads() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut log = ReadLog::default();
        for ms in [0, 10, 20, 230, 240, 900] {
            log.push(at(ms));
        }
        assert_eq!(log.longest_gap_between(at(0), at(300)), Duration::from_millis(210));
        assert_eq!(log.longest_gap_between(at(230), at(300)), Duration::from_millis(10), "inside only");
        assert_eq!(log.longest_gap_between(at(0), at(5)), Duration::ZERO, "one read, no gap");
        assert_eq!(log.read_between(at(10), at(240)), 3, "from inclusive, until exclusive");
        log.push_served(at(0), at(12));
        log.push_served(at(230), at(450));
        assert_eq!(log.longest_hold_between(at(0), at(100)), Duration::from_millis(12));
        assert_eq!(log.longest_hold_between(at(0), at(300)), Duration::from_millis(220));
        assert_eq!(log.longest_hold_between(at(300), at(400)), Duration::ZERO);
        assert_eq!(ReadLog::default().median_hold(), None);
        log.push_served(at(500), at(530));
        assert_eq!(log.median_hold(), Some(Duration::from_millis(30)), "of 12, 30 and 220 ms");
        for i in 0..ReadLog::CAPACITY as u64 {
            log.push(at(1000 + i));
        }
        assert_eq!(log.reads().count(), ReadLog::CAPACITY);
        assert_eq!(log.reads().next(), Some(&at(1000)));
    }
}
