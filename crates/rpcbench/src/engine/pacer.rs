//! Open-loop pacing: when each request is due. A pacer is a pure function of the ticket index
//! (and, for Poisson arrivals, a seeded random stream), with no clock inside, so it is tested
//! with tables. Each worker paces its own share of the rate; the shares interleave so that the
//! union of all workers' schedules is the requested one.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::config::Arrivals;
use super::stages::LevelCurve;
use crate::replay::RecordedSchedule;

/// Produces the intended send time of each successive request, as an offset from the start.
pub(crate) trait Pacer: std::fmt::Debug + Send {
    /// The offset of the next request. Offsets never decrease.
    fn next_offset(&mut self) -> Duration;
}

/// Where a pacer's schedule has ended (the curve fell to zero): far past any run's end.
const NEVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// When request `count` is due. A time past what a `Duration` holds (a rate of 1e-300/s puts
/// the second request 1e300 s away) is never, as a curve that fell to zero is.
fn time_at(curve: &LevelCurve, count: f64) -> Duration {
    curve
        .time_at_count(count)
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
        .map_or(NEVER, |at| at.min(NEVER))
}

/// Evenly spaced arrivals: worker `index` of `workers` sends requests
/// `index, index + workers, index + 2 * workers, …` of a global schedule that follows the rate
/// curve (`1 / rate` apart at a constant rate).
#[derive(Debug, Clone)]
pub(crate) struct UniformPacer {
    curve: Arc<LevelCurve>,
    next_global: u64,
    stride: u64,
}

impl UniformPacer {
    #[cfg(test)]
    /// Worker `index`'s share of a constant `rate` spread over `workers` workers.
    pub(crate) fn new(rate: f64, index: usize, workers: usize) -> Self {
        Self::with_curve(Arc::new(LevelCurve::constant(rate)), index, workers)
    }

    /// Worker `index`'s share of a rate that follows `curve`.
    pub(crate) fn with_curve(curve: Arc<LevelCurve>, index: usize, workers: usize) -> Self {
        Self { curve, next_global: index as u64, stride: workers as u64 }
    }
}

impl Pacer for UniformPacer {
    fn next_offset(&mut self) -> Duration {
        let offset = time_at(&self.curve, self.next_global as f64);
        self.next_global += self.stride;
        offset
    }
}

/// Poisson arrivals: each worker draws exponential gaps with mean `workers` in count space, so
/// the superposition of the workers' processes is a Poisson process whose intensity follows the
/// rate curve (mean gap `1 / rate` at a constant rate).
#[derive(Debug, Clone)]
pub(crate) struct PoissonPacer {
    curve: Arc<LevelCurve>,
    mean_gap: f64,
    count: f64,
    rng: SmallRng,
}

impl PoissonPacer {
    #[cfg(test)]
    /// Worker `index`'s share of a constant `rate`, with a random stream seeded from `seed` and
    /// `index`.
    pub(crate) fn new(rate: f64, index: usize, workers: usize, seed: u64) -> Self {
        Self::with_curve(Arc::new(LevelCurve::constant(rate)), index, workers, seed)
    }

    /// Worker `index`'s share of a rate that follows `curve`.
    pub(crate) fn with_curve(curve: Arc<LevelCurve>, index: usize, workers: usize, seed: u64) -> Self {
        let stream_seed = seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Self { curve, mean_gap: workers as f64, count: 0.0, rng: SmallRng::seed_from_u64(stream_seed) }
    }
}

impl Pacer for PoissonPacer {
    fn next_offset(&mut self) -> Duration {
        let offset = time_at(&self.curve, self.count);
        // Inverse transform sampling; 1 - u is in (0, 1], so the logarithm is finite.
        let u: f64 = self.rng.gen();
        self.count += -(1.0 - u).ln() * self.mean_gap;
        offset
    }
}

/// A replay at its recorded pace: worker `index` of `workers` sends tickets
/// `index, index + workers, …` of the whole run, each at the recorded schedule's offset for
/// that ticket (past the end of a schedule that does not loop: never).
#[derive(Debug, Clone)]
pub(crate) struct RecordedPacer {
    schedule: RecordedSchedule,
    next_global: u64,
    stride: u64,
}

impl RecordedPacer {
    /// Worker `index`'s share of `schedule` spread over `workers` workers.
    pub(crate) fn new(schedule: RecordedSchedule, index: usize, workers: usize) -> Self {
        Self { schedule, next_global: index as u64, stride: workers as u64 }
    }
}

impl Pacer for RecordedPacer {
    fn next_offset(&mut self) -> Duration {
        let offset = self.schedule.offset_of(self.next_global).unwrap_or(NEVER);
        self.next_global += self.stride;
        offset
    }
}

/// The pacer for worker `index` of `workers` following `curve`.
pub(crate) fn pacer_for(
    arrivals: Arrivals,
    curve: Arc<LevelCurve>,
    index: usize,
    workers: usize,
    seed: u64,
) -> Box<dyn Pacer> {
    match arrivals {
        Arrivals::Uniform => Box::new(UniformPacer::with_curve(curve, index, workers)),
        Arrivals::Poisson => Box::new(PoissonPacer::with_curve(curve, index, workers, seed)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(pacer: &mut dyn Pacer, n: usize) -> Vec<u64> {
        (0..n).map(|_| pacer.next_offset().as_micros() as u64).collect()
    }

    #[test]
    fn a_rate_too_small_for_a_duration_is_never_due_rather_than_a_panic() {
        for arrivals in [Arrivals::Uniform, Arrivals::Poisson] {
            let mut pacer = pacer_for(arrivals, Arc::new(LevelCurve::constant(1e-300)), 0, 1, 1);
            let offsets: Vec<Duration> = (0..3).map(|_| pacer.next_offset()).collect();
            assert_eq!(offsets, [Duration::ZERO, NEVER, NEVER], "{arrivals:?}");
        }
    }

    #[test]
    fn uniform_shares_interleave_into_the_global_schedule() {
        let cases = [
            // (rate, index, workers, first offsets in µs)
            (1000.0, 0, 1, vec![0, 1000, 2000, 3000]),
            (1000.0, 0, 2, vec![0, 2000, 4000, 6000]),
            (1000.0, 1, 2, vec![1000, 3000, 5000, 7000]),
            (5000.0, 2, 4, vec![400, 1200, 2000, 2800]),
            (3.0, 0, 1, vec![0, 333_333, 666_666, 1_000_000]),
        ];
        for (rate, index, workers, expected) in cases {
            let mut pacer = UniformPacer::new(rate, index, workers);
            assert_eq!(offsets(&mut pacer, expected.len()), expected, "rate {rate} worker {index}/{workers}");
        }
    }

    #[test]
    fn recorded_shares_interleave_into_the_recorded_schedule_at_speed() {
        let offsets = [1_000, 1_000, 3_000, 7_000, 9_000];
        let cases = [
            // (speed, looped, index, workers, first offsets in µs; past the end: never)
            (1.0, false, 0, 1, vec![0, 0, 2000, 6000, 8000, u64::MAX]),
            (2.0, false, 0, 1, vec![0, 0, 1000, 3000, 4000, u64::MAX]),
            (0.5, false, 0, 2, vec![0, 4000, 16000, u64::MAX]),
            (0.5, false, 1, 2, vec![0, 12000, u64::MAX]),
            // Looped: the next pass starts a mean gap (2 ms) after the last request.
            (1.0, true, 1, 2, vec![0, 6000, 10_000, 12_000, 18_000]),
        ];
        for (speed, looped, index, workers, expected) in cases {
            let schedule = RecordedSchedule::new(&offsets, speed, looped);
            let mut pacer = RecordedPacer::new(schedule, index, workers);
            let got: Vec<u64> = (0..expected.len())
                .map(|_| match pacer.next_offset() {
                    NEVER => u64::MAX,
                    offset => offset.as_micros() as u64,
                })
                .collect();
            assert_eq!(got, expected, "speed {speed} loop {looped} worker {index}/{workers}");
        }
    }

    #[test]
    fn uniform_pacing_hits_the_rate_exactly_over_a_long_run() {
        let mut pacer = UniformPacer::new(5000.0, 0, 1);
        let due_in_10s = std::iter::from_fn(|| Some(pacer.next_offset()))
            .take_while(|offset| *offset < Duration::from_secs(10))
            .count();
        assert_eq!(due_in_10s, 50_000);
    }

    #[test]
    fn poisson_arrivals_have_the_right_mean_and_spread() {
        let mut pacer = PoissonPacer::new(1000.0, 0, 1, 42);
        let n = 100_000;
        let mut previous = pacer.next_offset();
        let mut gaps = Vec::with_capacity(n);
        for _ in 0..n {
            let offset = pacer.next_offset();
            assert!(offset >= previous);
            gaps.push((offset - previous).as_secs_f64());
            previous = offset;
        }
        let mean = gaps.iter().sum::<f64>() / n as f64;
        let variance = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
        // Exponential gaps: mean 1 ms and standard deviation equal to the mean.
        assert!((mean - 0.001).abs() < 0.00003, "mean {mean}");
        assert!((variance.sqrt() - 0.001).abs() < 0.00005, "stdev {}", variance.sqrt());
    }

    #[test]
    fn uniform_pacing_follows_rate_steps() {
        use super::super::stages::Stage;
        let stages = [
            Stage { level: 100.0, duration: Duration::from_secs(1), ramp: Duration::ZERO },
            Stage { level: 300.0, duration: Duration::from_secs(1), ramp: Duration::ZERO },
        ];
        let curve = Arc::new(LevelCurve::from_stages(&stages, Duration::ZERO));
        let mut pacer = UniformPacer::with_curve(curve, 0, 1);
        let offsets: Vec<Duration> = (0..400).map(|_| pacer.next_offset()).collect();
        let in_first = offsets.iter().filter(|o| **o < Duration::from_secs(1)).count();
        let in_second =
            offsets.iter().filter(|o| **o >= Duration::from_secs(1) && **o < Duration::from_secs(2)).count();
        assert_eq!((in_first, in_second), (100, 300));
    }

    #[test]
    fn poisson_streams_are_reproducible_and_distinct_per_worker() {
        let a = offsets(&mut PoissonPacer::new(100.0, 0, 2, 7), 5);
        let b = offsets(&mut PoissonPacer::new(100.0, 0, 2, 7), 5);
        let c = offsets(&mut PoissonPacer::new(100.0, 1, 2, 7), 5);
        assert_eq!(a, b);
        assert_ne!(a[1..], c[1..]);
    }
}
