//! Pooled latency percentiles of a comparison's rounds, for the verdicts on p50, p95 and p99
//! ([`crate::verdict`]). A target's p99 over its rounds is the p99 of every round's latency
//! histogram merged (what the table prints, each round weighed by its samples); the
//! bootstrap's resample of rounds is read the same way, each drawn round counted as many times
//! as it was drawn. No histogram is built per resample: each round is kept as the cumulative
//! counts of its non-empty buckets, and a resample's percentile is found by bisection over the
//! values the rounds hold, reading the merged histogram exactly as HdrHistogram's
//! `value_at_quantile` would.
//!
//! Each round's histogram travels in its [`crate::verdict::RoundFigures`] at 2 significant
//! digits ([`round_histogram_text`]): about 1 to 2 KB of text a round, so that a comparison's
//! memory and results file grow by that much per round and target, never by its requests.

use hdrhistogram::Histogram;

use crate::record::new_coarse_histogram;

/// A round's latency histogram as its rounds keep it: coarsened to 2 significant digits
/// (percentiles within 1% of the full histogram's), HdrHistogram V2 in base64.
pub(crate) fn round_histogram_text(latency: &Histogram<u64>) -> String {
    let mut coarse = new_coarse_histogram();
    // Cannot fail: the coarse histogram grows to the largest value, as the source did.
    coarse.add(latency).ok();
    crate::util::hdr_codec::encode_histogram(&coarse)
}

/// One round's latencies as cumulative counts: `values[i]` is the highest value of the i-th
/// non-empty bucket (microseconds), `at_or_below[i]` the samples at or below it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RoundLatency {
    values: Vec<u64>,
    at_or_below: Vec<u64>,
}

impl RoundLatency {
    /// The round's histogram as cumulative counts.
    pub(crate) fn from_histogram(histogram: &Histogram<u64>) -> Self {
        let mut round = RoundLatency::default();
        let mut sum = 0u64;
        for bucket in histogram.iter_recorded() {
            sum = sum.saturating_add(bucket.count_at_value());
            round.values.push(histogram.highest_equivalent(bucket.value_iterated_to()));
            round.at_or_below.push(sum);
        }
        round
    }

    /// [`round_histogram_text`]'s text read back; `None` when it does not decode.
    pub(crate) fn from_text(text: &str) -> Option<Self> {
        crate::util::hdr_codec::decode_histogram(text).ok().map(|histogram| Self::from_histogram(&histogram))
    }

    /// Samples in the round.
    fn total(&self) -> u64 {
        self.at_or_below.last().copied().unwrap_or(0)
    }

    /// Samples at or below `value`.
    fn count_at_or_below(&self, value: u64) -> u64 {
        match self.values.partition_point(|v| *v <= value) {
            0 => 0,
            end => self.at_or_below[end - 1],
        }
    }
}

/// A target's rounds, and every value any of them holds (sorted), for reading percentiles of
/// any weighing of the rounds.
#[derive(Debug, Clone)]
pub(crate) struct PooledRounds {
    rounds: Vec<RoundLatency>,
    values: Vec<u64>,
}

impl PooledRounds {
    /// The rounds, in the order the weights of [`PooledRounds::quantile`] follow.
    pub(crate) fn new(rounds: Vec<RoundLatency>) -> Self {
        let mut values: Vec<u64> = rounds.iter().flat_map(|round| round.values.iter().copied()).collect();
        values.sort_unstable();
        values.dedup();
        Self { rounds, values }
    }

    /// The `quantile` (0.99 for p99) of the rounds merged, round i counted `weights[i]` times
    /// (all 1: the rounds as run), read as HdrHistogram reads a merged histogram: the first
    /// value at or below which `ceil(quantile * samples)` samples lie. `None` when the weighed
    /// rounds hold no sample.
    pub(crate) fn quantile(&self, weights: &[u32], quantile: f64) -> Option<u64> {
        let weighed = || self.rounds.iter().zip(weights).filter(|(_, weight)| **weight > 0);
        let total: u64 = weighed().map(|(round, weight)| round.total() * u64::from(*weight)).sum();
        if total == 0 {
            return None;
        }
        let wanted = ((quantile.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let count = |value: u64| -> u64 {
            weighed().map(|(round, weight)| round.count_at_or_below(value) * u64::from(*weight)).sum()
        };
        let at = self.values.partition_point(|value| count(*value) < wanted);
        self.values.get(at).copied()
    }

    /// Rounds kept.
    pub(crate) fn len(&self) -> usize {
        self.rounds.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::new_histogram;

    #[test]
    fn a_pooled_percentile_is_the_merged_histograms_percentile_at_any_weighing() {
        let mut rounds = Vec::new();
        let mut merged = new_coarse_histogram();
        let mut twice = new_coarse_histogram();
        for r in 0..4u64 {
            let mut round = new_histogram();
            for i in 0..1000u64 {
                round.record(100 + (i * 37 + r * 101) % (500 + 300 * r)).unwrap();
            }
            let text = round_histogram_text(&round);
            let decoded = crate::util::hdr_codec::decode_histogram(&text).unwrap();
            assert_eq!(decoded.sigfig(), 2);
            merged.add(&decoded).unwrap();
            // Round 0 drawn twice, round 2 not at all.
            for _ in 0..[2, 1, 0, 1][r as usize] {
                twice.add(&decoded).unwrap();
            }
            rounds.push(RoundLatency::from_text(&text).unwrap());
        }
        let pooled = PooledRounds::new(rounds);
        assert_eq!(pooled.len(), 4);
        for q in [0.01, 0.5, 0.95, 0.99, 0.999, 1.0] {
            assert_eq!(pooled.quantile(&[1, 1, 1, 1], q), Some(merged.value_at_quantile(q)), "q {q}");
            assert_eq!(pooled.quantile(&[2, 1, 0, 1], q), Some(twice.value_at_quantile(q)), "q {q}");
        }
        assert_eq!(pooled.quantile(&[0, 0, 0, 0], 0.5), None);
        assert_eq!(RoundLatency::from_text("not base64!"), None);
        assert_eq!(PooledRounds::new(vec![RoundLatency::default()]).quantile(&[1], 0.5), None);
    }
}
