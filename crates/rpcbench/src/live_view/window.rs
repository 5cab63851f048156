//! The dashboard's model: a bounded window of samples of the live figures (the metrics store's
//! [`Snapshot`]s, taken about once a second), and the figures the panels show, derived from
//! differences between two samples. Pure: no clock, no terminal; the caller says when each
//! sample was taken.

use std::collections::VecDeque;
use std::time::Duration;

use crate::metrics::{
    CallFigures, HeadLagFigures, Snapshot, TransactionFigures, FINE_BUCKET_BOUNDS_US, LATENCY_BUCKETS_SECONDS,
};

/// The spans the chart and the "last window" figures can cover; keys step through them.
pub const WINDOW_CHOICES: [Duration; 6] = [
    Duration::from_secs(10),
    Duration::from_secs(30),
    Duration::from_secs(60),
    Duration::from_secs(120),
    Duration::from_secs(300),
    Duration::from_secs(600),
];

/// The window shown at first (a minute).
const FIRST_WINDOW: usize = 2;

/// At most this many samples are kept (ten minutes at four a second), whatever the window.
const MAX_SAMPLES: usize = 2_400;

/// Generator CPU above this share of the cores it may use is a bottleneck warning.
const BUSY_CPU_SHARE: f64 = 0.9;

/// A send lag p99 above this (seconds) is a bottleneck warning: requests leave late.
const LATE_SEND_P99_SECONDS: f64 = 0.002;

/// The live figures at one moment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LiveSample {
    /// Time since the dashboard started.
    pub at: Duration,
    /// The metrics store's figures then.
    pub snapshot: Snapshot,
    /// CPU time the generator's process had used by then (user + system), when known.
    pub cpu: Option<Duration>,
}

/// Requests and errors per second between two samples, at the later one's time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatePoint {
    /// Seconds since the dashboard started.
    pub at_seconds: f64,
    /// Completed requests per second.
    pub requests_per_second: f64,
    /// Failed requests per second.
    pub errors_per_second: f64,
}

/// Latency percentiles (seconds) of some requests, read from the fine buckets.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LatencyQuantiles {
    /// Latencies counted.
    pub count: u64,
    /// Median.
    pub p50: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// Mean (from the sum), when anything was counted.
    pub mean: Option<f64>,
}

/// One line of the outcome breakdown: a class (`ok` or a failure class) and its code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeRow {
    /// `ok`, `rpc_error`, `http_error`, `invalid`, `timeout`, `connect`, `closed`...
    pub class: String,
    /// The JSON-RPC code, HTTP status or kind, when the class has one.
    pub code: Option<String>,
    /// Over the whole run.
    pub run: u64,
    /// Over the last window.
    pub window: u64,
}

/// One line of the per-method table.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodRow {
    /// The call's name.
    pub name: String,
    /// Requests per second over the last window.
    pub requests_per_second: f64,
    /// Latency percentiles over the last window.
    pub latency: LatencyQuantiles,
    /// Failed requests over the whole run.
    pub errors: u64,
    /// Requests over the whole run.
    pub requests: u64,
}

/// Whether the generator itself may be the limit.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GeneratorFigures {
    /// The generator's CPU over the last window, in cores (1.0 = one core busy).
    pub cpu_cores: Option<f64>,
    /// Cores it may use.
    pub cores: usize,
    /// Open loop: send lag percentiles over the last window.
    pub send_lag: LatencyQuantiles,
    /// Open loop: requests sent more than 2 ms late, whole run.
    pub late: u64,
    /// Why the generator looks like the bottleneck, when it does.
    pub warning: Option<String>,
}

/// A subscription run's live figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubscriptionView {
    /// Subscriptions active now.
    pub active: u64,
    /// Notifications received, whole run.
    pub notifications: u64,
    /// Notifications per second over the last window.
    pub per_second: f64,
    /// Block numbers or slots never received, whole run.
    pub gaps: u64,
    /// Items received twice by one subscription, whole run.
    pub duplicates: u64,
    /// Items received after a later one, whole run.
    pub reorders: u64,
    /// Fan-out lag percentiles, whole run.
    pub lag: LatencyQuantiles,
}

/// A bounded window of samples, oldest first, and the span the panels look back over.
#[derive(Debug, Clone)]
pub struct LiveWindow {
    samples: VecDeque<LiveSample>,
    window: usize,
    cores: usize,
}

impl LiveWindow {
    /// No samples yet; `cores` is how many cores the generator may use.
    pub fn new(cores: usize) -> Self {
        LiveWindow { samples: VecDeque::new(), window: FIRST_WINDOW, cores: cores.max(1) }
    }

    /// Adds the figures of a moment (later than the previous one). Samples older than the
    /// widest window are dropped, and at most a few thousand are kept.
    pub fn push(&mut self, sample: LiveSample) {
        if self.samples.back().is_some_and(|last| sample.at < last.at) {
            return;
        }
        let widest = WINDOW_CHOICES[WINDOW_CHOICES.len() - 1];
        self.samples.push_back(sample);
        let newest = self.samples.back().map_or(Duration::ZERO, |last| last.at);
        // One sample at or before the widest window's start stays: the base of its differences.
        while self.samples.len() > 2 && self.samples[1].at + widest <= newest {
            self.samples.pop_front();
        }
        while self.samples.len() > MAX_SAMPLES {
            self.samples.pop_front();
        }
    }

    /// The span the chart and the window's figures cover.
    pub fn window(&self) -> Duration {
        WINDOW_CHOICES[self.window]
    }

    /// A wider window (up to the widest choice).
    pub fn widen(&mut self) {
        self.window = (self.window + 1).min(WINDOW_CHOICES.len() - 1);
    }

    /// A narrower window (down to the narrowest choice).
    pub fn narrow(&mut self) {
        self.window = self.window.saturating_sub(1);
    }

    /// The newest sample.
    pub fn latest(&self) -> Option<&LiveSample> {
        self.samples.back()
    }

    /// The sample the window's differences start from: the newest one at or before the
    /// window's start, else the oldest; `None` when there is nothing to difference.
    fn base(&self) -> Option<&LiveSample> {
        let latest = self.latest()?;
        let start = latest.at.saturating_sub(self.window());
        let base = self.samples.iter().rev().find(|sample| sample.at <= start).or(self.samples.front())?;
        (base.at < latest.at).then_some(base)
    }

    /// Requests and errors per second between consecutive samples within the window.
    pub fn rates(&self) -> Vec<RatePoint> {
        let Some(latest) = self.latest() else { return Vec::new() };
        let start = latest.at.saturating_sub(self.window());
        let mut points = Vec::new();
        let mut previous: Option<(Duration, (u64, u64))> = None;
        for sample in &self.samples {
            let (requests, errors) = counted(&sample.snapshot);
            if let Some((before, (before_requests, before_errors))) = previous {
                let seconds = (sample.at - before).as_secs_f64();
                if before >= start && seconds > 0.0 {
                    points.push(RatePoint {
                        at_seconds: sample.at.as_secs_f64(),
                        requests_per_second: requests.saturating_sub(before_requests) as f64 / seconds,
                        errors_per_second: errors.saturating_sub(before_errors) as f64 / seconds,
                    });
                }
            }
            previous = Some((sample.at, (requests, errors)));
        }
        points
    }

    /// Latency percentiles of the requests completed within the window, all methods (of a
    /// subscription run: the delivery lag of the notifications received within the window).
    pub fn window_latency(&self) -> LatencyQuantiles {
        if self.counts_notifications() {
            // A sample from before the subscriptions published counts as none received.
            let then = self.base().map(|base| base.snapshot.subscription.clone().unwrap_or_default());
            let now = self.latest().and_then(|latest| latest.snapshot.subscription.as_ref());
            return match (now, then) {
                (Some(now), Some(then)) => quantiles(
                    &spread_coarse(&difference(&now.lag_buckets, &then.lag_buckets)),
                    now.lag_sum_seconds - then.lag_sum_seconds,
                ),
                _ => LatencyQuantiles::default(),
            };
        }
        match (self.latest(), self.base()) {
            (Some(latest), Some(base)) => {
                let (now, then) = (total(&latest.snapshot), total(&base.snapshot));
                quantiles(
                    &difference(&now.fine_buckets, &then.fine_buckets),
                    now.latency_sum_seconds - then.latency_sum_seconds,
                )
            }
            _ => LatencyQuantiles::default(),
        }
    }

    /// Latency percentiles of the whole run (every measured request so far), all methods (of a
    /// subscription run: the delivery lag of every notification so far).
    pub fn run_latency(&self) -> LatencyQuantiles {
        if self.counts_notifications() {
            return self.subscription().map(|view| view.lag).unwrap_or_default();
        }
        self.latest().map_or_else(LatencyQuantiles::default, |latest| {
            let totals = total(&latest.snapshot);
            quantiles(&totals.fine_buckets, totals.latency_sum_seconds)
        })
    }

    /// Outcomes by class and code: `ok` first, then the failures, most frequent first (of a
    /// subscription run: notifications received, then gaps, duplicates and reorders).
    pub fn outcomes(&self) -> Vec<OutcomeRow> {
        let Some(latest) = self.latest() else { return Vec::new() };
        if let (true, Some(now)) = (self.counts_notifications(), latest.snapshot.subscription.as_ref()) {
            let then = self.base().and_then(|base| base.snapshot.subscription.clone()).unwrap_or_default();
            let row = |class: &str, now: u64, then: u64| OutcomeRow {
                class: class.to_string(),
                code: None,
                run: now,
                window: now.saturating_sub(then),
            };
            return vec![
                row("received", now.notifications, then.notifications),
                row("gap", now.gaps, then.gaps),
                row("duplicate", now.duplicates, then.duplicates),
                row("reorder", now.reorders, then.reorders),
            ];
        }
        let now = total(&latest.snapshot);
        let then = self.base().map(|base| total(&base.snapshot)).unwrap_or_default();
        let mut rows = vec![OutcomeRow {
            class: "ok".to_string(),
            code: None,
            run: now.requests.saturating_sub(now.error_total()),
            window: now
                .requests
                .saturating_sub(now.error_total())
                .saturating_sub(then.requests.saturating_sub(then.error_total())),
        }];
        let mut failures: Vec<OutcomeRow> = now
            .errors
            .iter()
            .map(|((outcome, code), &count)| OutcomeRow {
                class: outcome.class().to_string(),
                code: code.clone(),
                run: count,
                window: count
                    .saturating_sub(then.errors.get(&(*outcome, code.clone())).copied().unwrap_or(0)),
            })
            .collect();
        failures
            .sort_by(|a, b| b.run.cmp(&a.run).then_with(|| (&a.class, &a.code).cmp(&(&b.class, &b.code))));
        rows.extend(failures);
        rows
    }

    /// One row per method, in name order.
    pub fn methods(&self) -> Vec<MethodRow> {
        let Some(latest) = self.latest() else { return Vec::new() };
        let base = self.base();
        let seconds = base.map_or(0.0, |base| (latest.at - base.at).as_secs_f64());
        let empty = CallFigures::default();
        latest
            .snapshot
            .methods
            .iter()
            .map(|(name, now)| {
                let then = base.and_then(|base| base.snapshot.methods.get(name)).unwrap_or(&empty);
                let requests = now.requests.saturating_sub(then.requests);
                MethodRow {
                    name: name.clone(),
                    requests_per_second: if seconds > 0.0 { requests as f64 / seconds } else { 0.0 },
                    latency: quantiles(
                        &difference(&now.fine_buckets, &then.fine_buckets),
                        now.latency_sum_seconds - then.latency_sum_seconds,
                    ),
                    errors: now.error_total(),
                    requests: now.requests,
                }
            })
            .collect()
    }

    /// The generator's own CPU and send lag over the window, and whether it looks like the
    /// bottleneck.
    pub fn generator(&self) -> GeneratorFigures {
        let mut figures = GeneratorFigures { cores: self.cores, ..GeneratorFigures::default() };
        let Some(latest) = self.latest() else { return figures };
        let now = total(&latest.snapshot);
        figures.late = now.late;
        if let Some(base) = self.base() {
            let then = total(&base.snapshot);
            let fine = spread_coarse(&difference(&now.send_lag_buckets, &then.send_lag_buckets));
            figures.send_lag = quantiles(&fine, now.send_lag_sum_seconds - then.send_lag_sum_seconds);
            let wall = (latest.at - base.at).as_secs_f64();
            if let (Some(cpu_now), Some(cpu_then)) = (latest.cpu, base.cpu) {
                figures.cpu_cores = Some(cpu_now.saturating_sub(cpu_then).as_secs_f64() / wall);
            }
        }
        figures.warning = match (figures.cpu_cores, figures.send_lag.p99) {
            (Some(cpu), _) if cpu >= BUSY_CPU_SHARE * self.cores as f64 => Some(format!(
                "generator CPU {:.0}% of {} core(s): it may be the limit, not the target",
                100.0 * cpu / self.cores as f64,
                self.cores
            )),
            (_, Some(lag)) if lag > LATE_SEND_P99_SECONDS => Some(format!(
                "requests leave late (send lag p99 {}): the generator is falling behind its schedule",
                crate::util::units::format_micros(lag * 1e6)
            )),
            _ => None,
        };
        figures
    }
}

impl LiveWindow {
    /// A subscription run's figures, when one publishes.
    pub fn subscription(&self) -> Option<SubscriptionView> {
        let latest = self.latest()?;
        let now = latest.snapshot.subscription.as_ref()?;
        let per_second = self
            .base()
            .map(|base| {
                let then = base.snapshot.subscription.as_ref().map_or(0, |figures| figures.notifications);
                now.notifications.saturating_sub(then) as f64 / (latest.at - base.at).as_secs_f64()
            })
            .unwrap_or(0.0);
        Some(SubscriptionView {
            active: now.active,
            notifications: now.notifications,
            per_second,
            gaps: now.gaps,
            duplicates: now.duplicates,
            reorders: now.reorders,
            lag: quantiles(&spread_coarse(&now.lag_buckets), now.lag_sum_seconds),
        })
    }

    /// Each target's head lag, as the head monitor last published it (empty without
    /// `--heads`).
    pub fn heads(&self) -> &[HeadLagFigures] {
        self.latest().map_or(&[], |latest| latest.snapshot.heads.as_slice())
    }

    /// The transactions sent and included so far, when the transaction command publishes,
    /// with the rate of inclusions over the window.
    pub fn transactions(&self) -> Option<(TransactionFigures, f64)> {
        let latest = self.latest()?;
        let now = latest.snapshot.transactions.clone()?;
        let per_second = self
            .base()
            .map(|base| {
                let then = base.snapshot.transactions.as_ref().map_or(0, |figures| figures.included);
                now.included.saturating_sub(then) as f64 / (latest.at - base.at).as_secs_f64()
            })
            .unwrap_or(0.0);
        Some((now, per_second))
    }

    /// Whether the figures are a subscription's (no requests, notifications instead): the
    /// chart then shows notifications and gaps per second.
    pub fn counts_notifications(&self) -> bool {
        self.latest().is_some_and(|latest| {
            latest.snapshot.methods.is_empty() && latest.snapshot.subscription.is_some()
        })
    }
}

/// What the rate chart counts in a sample: completed requests and failures, or a
/// subscription's notifications and gaps.
fn counted(snapshot: &Snapshot) -> (u64, u64) {
    match (&snapshot.subscription, snapshot.methods.is_empty()) {
        (Some(figures), true) => (figures.notifications, figures.gaps),
        _ => {
            let totals = total(snapshot);
            (totals.requests, totals.error_total())
        }
    }
}

/// All methods' figures added up.
fn total(snapshot: &Snapshot) -> CallFigures {
    let mut sum = CallFigures::default();
    for figures in snapshot.methods.values() {
        sum.add(figures);
    }
    sum
}

/// Bucket by bucket, `now` less `then` (a missing bucket counts 0).
fn difference(now: &[u64], then: &[u64]) -> Vec<u64> {
    now.iter()
        .enumerate()
        .map(|(index, &count)| count.saturating_sub(then.get(index).copied().unwrap_or(0)))
        .collect()
}

/// Coarse buckets (the endpoint's) placed in the fine buckets of their upper bounds, so that
/// one percentile reader serves both.
fn spread_coarse(coarse: &[u64]) -> Vec<u64> {
    let mut fine = vec![0; FINE_BUCKET_BOUNDS_US.len() + 1];
    for (index, &count) in coarse.iter().enumerate() {
        let slot = LATENCY_BUCKETS_SECONDS
            .get(index)
            .and_then(|&bound| {
                let bound_us = (bound * 1e6).round() as u64;
                FINE_BUCKET_BOUNDS_US.iter().position(|&fine_bound| fine_bound == bound_us)
            })
            .unwrap_or(FINE_BUCKET_BOUNDS_US.len());
        fine[slot] += count;
    }
    fine
}

fn quantiles(fine: &[u64], sum_seconds: f64) -> LatencyQuantiles {
    let count: u64 = fine.iter().sum();
    LatencyQuantiles {
        count,
        p50: quantile_from_buckets(fine, 0.5),
        p90: quantile_from_buckets(fine, 0.9),
        p99: quantile_from_buckets(fine, 0.99),
        mean: (count > 0).then(|| sum_seconds.max(0.0) / count as f64),
    }
}

/// The `q` quantile (0..=1), seconds, of latencies counted per fine bucket
/// ([`FINE_BUCKET_BOUNDS_US`], not cumulative, then the count above the last bound), read as
/// Prometheus' `histogram_quantile` does: linearly within the bucket it falls in (the first
/// bucket starts at 0; above the last bound, the last bound). `None` when nothing was counted.
pub fn quantile_from_buckets(fine: &[u64], q: f64) -> Option<f64> {
    let count: u64 = fine.iter().sum();
    if count == 0 {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * count as f64;
    let mut below = 0u64;
    for (index, &in_bucket) in fine.iter().enumerate() {
        if in_bucket == 0 {
            continue;
        }
        if (below + in_bucket) as f64 >= rank {
            let Some(&upper) = FINE_BUCKET_BOUNDS_US.get(index) else {
                return Some(FINE_BUCKET_BOUNDS_US[FINE_BUCKET_BOUNDS_US.len() - 1] as f64 / 1e6);
            };
            let lower = index.checked_sub(1).map_or(0, |previous| FINE_BUCKET_BOUNDS_US[previous]);
            let within = ((rank - below as f64) / in_bucket as f64).clamp(0.0, 1.0);
            return Some((lower as f64 + (upper - lower) as f64 * within) / 1e6);
        }
        below += in_bucket;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::CallFigures;
    use crate::outcome::Outcome;

    /// Fine buckets with `count` latencies in the bucket whose upper bound is `bound_us`.
    fn fine_at(bound_us: u64, count: u64) -> Vec<u64> {
        let mut fine = vec![0; FINE_BUCKET_BOUNDS_US.len() + 1];
        let index = FINE_BUCKET_BOUNDS_US.iter().position(|&bound| bound == bound_us).unwrap();
        fine[index] = count;
        fine
    }

    fn sample(at_secs: u64, requests: u64, errors: u64, fine: Vec<u64>) -> LiveSample {
        let mut figures = CallFigures { requests, fine_buckets: fine, ..CallFigures::default() };
        if errors > 0 {
            figures.errors.insert((Outcome::RpcError(-32005), Outcome::RpcError(-32005).code()), errors);
        }
        let mut snapshot = Snapshot::default();
        snapshot.methods.insert("eth_blockNumber".to_string(), figures);
        LiveSample {
            at: Duration::from_secs(at_secs),
            snapshot,
            cpu: Some(Duration::from_millis(at_secs * 500)),
        }
    }

    /// A subscription run's sample: `notifications` received (and `gaps`), each with a delivery
    /// lag in the coarse bucket `lag_bucket`.
    fn subscription_sample(at_secs: u64, notifications: u64, gaps: u64, lag_bucket: usize) -> LiveSample {
        let mut figures =
            crate::metrics::SubscriptionFigures { notifications, gaps, active: 2, ..Default::default() };
        figures.lag_buckets[lag_bucket] = notifications;
        figures.lag_sum_seconds = notifications as f64 * LATENCY_BUCKETS_SECONDS[lag_bucket];
        let snapshot = Snapshot { subscription: Some(figures), ..Snapshot::default() };
        LiveSample { at: Duration::from_secs(at_secs), snapshot, cpu: None }
    }

    #[test]
    fn a_subscription_run_shows_its_delivery_lag_and_its_own_classes_not_request_figures() {
        let mut window = LiveWindow::new(2);
        // Published before the subscriptions: no subscription figures yet.
        window.push(LiveSample { at: Duration::ZERO, snapshot: Snapshot::default(), cpu: None });
        window.push(subscription_sample(1, 10, 0, 0));
        window.push(subscription_sample(2, 30, 1, 0));
        assert!(window.counts_notifications());
        // Every notification so far is in the window: a sample from before the subscriptions
        // counts as none received.
        let recent = window.window_latency();
        assert_eq!(recent.count, 30);
        assert!(recent.p50.is_some_and(|p50| p50 > 0.0 && p50 <= LATENCY_BUCKETS_SECONDS[0]), "{recent:?}");
        assert_eq!(window.run_latency().count, 30);
        let rows: Vec<(String, u64, u64)> =
            window.outcomes().into_iter().map(|row| (row.class, row.window, row.run)).collect();
        assert_eq!(
            rows,
            [("received", 30, 30), ("gap", 1, 1), ("duplicate", 0, 0), ("reorder", 0, 0)]
                .map(|(class, window, run)| (class.to_string(), window, run))
        );
    }

    #[test]
    fn a_quantile_falls_within_the_bucket_that_holds_it() {
        // Every latency between 5 and 6 ms: every percentile is in that bucket.
        let fine = fine_at(6_000, 100);
        for q in [0.5, 0.9, 0.99] {
            let value = quantile_from_buckets(&fine, q).unwrap();
            assert!((0.005..=0.006).contains(&value), "{q}: {value}");
        }
        assert_eq!(quantile_from_buckets(&vec![0; 68], 0.5), None);
        // Above the last bound: the last bound, not infinity.
        let mut over = vec![0; FINE_BUCKET_BOUNDS_US.len() + 1];
        over[FINE_BUCKET_BOUNDS_US.len()] = 3;
        assert_eq!(quantile_from_buckets(&over, 0.5), Some(10.0));
    }

    #[test]
    fn the_window_figures_are_differences_from_the_sample_at_the_window_start() {
        let mut window = LiveWindow::new(2);
        window.narrow();
        window.narrow();
        assert_eq!(window.window(), Duration::from_secs(10));
        // 0..20 s: 100 requests a second at 50..60 ms; 20..30 s: 200 a second at 5..6 ms.
        let mut slow = fine_at(60_000, 0);
        for second in 0..=30u64 {
            let requests = if second <= 20 { 100 * second } else { 2_000 + 200 * (second - 20) };
            slow = fine_at(60_000, 100 * second.min(20));
            let fast = fine_at(6_000, requests - 100 * second.min(20));
            let fine: Vec<u64> = slow.iter().zip(&fast).map(|(a, b)| a + b).collect();
            window.push(sample(second, requests, second, fine));
        }
        assert!(slow.iter().sum::<u64>() > 0);
        let recent = window.window_latency();
        assert_eq!(recent.count, 2_000);
        assert!((0.005..=0.006).contains(&recent.p99.unwrap()), "{recent:?}");
        let run = window.run_latency();
        assert_eq!(run.count, 4_000);
        assert!((0.050..=0.060).contains(&run.p99.unwrap()), "{run:?}");
        let rates = window.rates();
        assert_eq!(rates.len(), 10);
        assert!(rates
            .iter()
            .all(|point| point.requests_per_second == 200.0 && point.errors_per_second == 1.0));
        let methods = window.methods();
        assert_eq!(methods.len(), 1);
        assert_eq!(methods[0].requests_per_second, 200.0);
        assert_eq!((methods[0].requests, methods[0].errors), (4_000, 30));
        let outcomes = window.outcomes();
        assert_eq!(outcomes[0], OutcomeRow { class: "ok".into(), code: None, run: 3_970, window: 1_990 });
        assert_eq!(
            outcomes[1],
            OutcomeRow { class: "rpc_error".into(), code: Some("-32005".into()), run: 30, window: 10 }
        );
        window.widen();
        window.widen();
        window.widen();
        assert_eq!(window.window(), Duration::from_secs(120));
        // Wider than the samples: from the oldest one.
        assert_eq!(window.window_latency().count, 4_000);
        assert_eq!(window.rates().len(), 30);
    }

    #[test]
    fn a_busy_generator_is_named_the_bottleneck() {
        let mut window = LiveWindow::new(1);
        window.push(LiveSample { cpu: Some(Duration::ZERO), ..sample(0, 0, 0, Vec::new()) });
        window.push(LiveSample {
            cpu: Some(Duration::from_millis(950)),
            ..sample(1, 10, 0, fine_at(6_000, 10))
        });
        let generator = window.generator();
        assert_eq!(generator.cpu_cores, Some(0.95));
        assert!(generator.warning.unwrap().contains("generator CPU 95%"));
        // Half a core of two: no warning.
        let mut calm = LiveWindow::new(2);
        calm.push(sample(0, 0, 0, Vec::new()));
        calm.push(sample(1, 10, 0, fine_at(6_000, 10)));
        assert_eq!(calm.generator().warning, None);
        // Requests leaving 25..50 ms late: a warning, whatever the CPU.
        let mut late = sample(1, 10, 0, fine_at(6_000, 10));
        late.snapshot.methods.get_mut("eth_blockNumber").unwrap().send_lag_buckets[8] = 10;
        calm.push(LiveSample { at: Duration::from_secs(2), ..late });
        let generator = calm.generator();
        assert!(generator.send_lag.p99.unwrap() > 0.025, "{generator:?}");
        assert!(generator.warning.unwrap().contains("send lag p99"));
    }

    #[test]
    fn the_window_keeps_a_bounded_number_of_samples() {
        let mut window = LiveWindow::new(1);
        for tenth in 0..20_000u64 {
            window.push(LiveSample { at: Duration::from_millis(tenth * 100), ..LiveSample::default() });
        }
        assert!(window.samples.len() <= MAX_SAMPLES);
        // A sample older than the newest is ignored.
        let newest = window.latest().unwrap().at;
        window.push(LiveSample::default());
        assert_eq!(window.latest().unwrap().at, newest);
    }
}
