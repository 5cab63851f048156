//! Head lag in windows: what the head monitor saw of each target between two snapshots (a
//! step of a capacity search), so that a report can show whether a node falls behind as the
//! load on it rises. The lags are those the monitor measures (behind the highest head seen
//! across every followed node since it started), kept in a histogram per target and taken, and
//! reset, at each snapshot.

use serde::{Deserialize, Serialize};

/// The heads of one target between two snapshots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadLagWindow {
    /// Samples with a head.
    pub samples: u64,
    /// Polls that failed.
    pub failed: u64,
    /// Median lag behind the highest head seen, blocks (slots).
    pub lag_p50: u64,
    /// 99th percentile lag.
    pub lag_p99: u64,
    /// Largest lag.
    pub lag_max: u64,
    /// Share of the samples exactly at the highest head seen.
    pub at_tip: f64,
    /// Share of the samples more than `stale_after` behind.
    pub stale_share: f64,
}

/// The lags of every target since the last snapshot.
#[derive(Debug)]
pub(crate) struct LagWindows {
    stale_after: u64,
    lag: Vec<hdrhistogram::Histogram<u64>>,
    failed: Vec<u64>,
    at_tip: Vec<u64>,
    stale: Vec<u64>,
}

impl LagWindows {
    /// Empty windows for `targets` targets.
    pub(crate) fn new(targets: usize, stale_after: u64) -> Self {
        // Lags past 2^40 blocks are recorded as 2^40.
        let histogram = || hdrhistogram::Histogram::new_with_max(1 << 40, 3).expect("valid histogram bounds");
        Self {
            stale_after,
            lag: (0..targets).map(|_| histogram()).collect(),
            failed: vec![0; targets],
            at_tip: vec![0; targets],
            stale: vec![0; targets],
        }
    }

    /// A reading of `target`: its lag, or none when the poll failed.
    pub(crate) fn add(&mut self, target: usize, lag: Option<u64>) {
        let Some(lag) = lag else {
            self.failed[target] += 1;
            return;
        };
        self.lag[target].saturating_record(lag);
        self.at_tip[target] += u64::from(lag == 0);
        self.stale[target] += u64::from(lag > self.stale_after);
    }

    /// Each target's window, and empty windows to go on with.
    pub(crate) fn take(&mut self) -> Vec<HeadLagWindow> {
        let windows = (0..self.lag.len())
            .map(|t| {
                let lag = &self.lag[t];
                let samples = lag.len();
                let share = |count: u64| count as f64 / samples.max(1) as f64;
                HeadLagWindow {
                    samples,
                    failed: self.failed[t],
                    lag_p50: if samples == 0 { 0 } else { lag.value_at_quantile(0.5) },
                    lag_p99: if samples == 0 { 0 } else { lag.value_at_quantile(0.99) },
                    lag_max: if samples == 0 { 0 } else { lag.max() },
                    at_tip: share(self.at_tip[t]),
                    stale_share: share(self.stale[t]),
                }
            })
            .collect();
        self.lag.iter_mut().for_each(hdrhistogram::Histogram::reset);
        self.failed.iter_mut().for_each(|count| *count = 0);
        self.at_tip.iter_mut().for_each(|count| *count = 0);
        self.stale.iter_mut().for_each(|count| *count = 0);
        windows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_holds_only_the_lags_since_the_last_snapshot() {
        let mut windows = LagWindows::new(2, 20);
        [0, 0, 1, 0].into_iter().for_each(|lag| windows.add(0, Some(lag)));
        windows.add(1, None);
        let first = windows.take();
        assert_eq!((first[0].samples, first[0].lag_p50, first[0].lag_max, first[0].at_tip), (4, 0, 1, 0.75));
        assert_eq!((first[1].samples, first[1].failed), (0, 1));
        [30, 30, 5, 30].into_iter().for_each(|lag| windows.add(0, Some(lag)));
        let second = windows.take();
        assert_eq!((second[0].samples, second[0].lag_p50, second[0].lag_max), (4, 30, 30));
        assert_eq!((second[0].at_tip, second[0].stale_share), (0.0, 0.75));
        assert_eq!(second[1].failed, 0);
        assert_eq!(windows.take()[0].samples, 0);
    }
}
