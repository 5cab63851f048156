//! Live metrics of a run in the Prometheus text format (`--metrics-listen`).
//!
//! The load workers keep no shared counters: every [`PUBLISH_INTERVAL`] each worker copies a
//! small summary of its own recorder (per call: requests, errors by class, latency bucket
//! counts) into a [`LiveMetrics`] store, under one short lock, and never per request. A
//! [`MetricsServer`] on a thread and runtime of its own answers `GET /metrics` from that store,
//! encoded by the `prometheus-client` crate's text encoder. A run without a store
//! (`RunConfig::metrics` is `None`) publishes nothing.
//!
//! Workers publish cumulative figures, so a late or lost publication loses nothing: the store
//! keeps each worker's latest figures, adds up the workers at scrape time, and folds a finished
//! run into a base, so that counters keep growing across the runs of a capacity search or a
//! demo. Only measured requests count (not warmup), as in the report; after a run the
//! counters equal the report's totals.
//!
//! Exported (every name prefixed `rpcbench_`):
//! - `requests_total{method}`: completed requests, whatever their outcome;
//! - `errors_total{method,class,code}`: failed requests by outcome class (`rpc_error`,
//!   `http_error`, `invalid`, `timeout`, `connect`, `closed`) and code (JSON-RPC error code,
//!   HTTP status, kind of invalid response; absent for the others);
//! - `latency_seconds{method}`: histogram of latency, corrected (from the intended send time)
//!   in open loop, buckets [`LATENCY_BUCKETS_SECONDS`];
//! - `send_lag_seconds{method}`: open loop, how late requests went out after their intended
//!   send time (the generator's own delay), buckets as `latency_seconds`;
//! - `late_requests_total{method}`: open loop, requests sent more than 2 ms late;
//! - `achieved_rate`: responses per second over the last few seconds;
//! - `target_rate`: open loop only, the rate asked for now (it follows stages);
//! - `in_flight_requests`: requests sent and not yet answered;
//! - `running`: 1 while a run is going on, 0 after;
//! - `run_info{target,mode}`: the target URL (redacted) and `open` or `closed`;
//! - `rpcbench tx`: `tx_outcomes_total{outcome}` (a row of [`crate::outcome::TX_FINALS`]
//!   each), `tx_pending`, `tx_reorged_out_total`, `tx_sent_total`, `tx_accepted_total` and the
//!   older `tx_included_total`, `tx_rejected_total`, `tx_dropped_total`
//!   ([`crate::beside_load`]).

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use tokio::sync::watch;

use crate::beside_load::encode_beside_load;
pub use crate::beside_load::{HeadLagFigures, TransactionFigures};
use crate::engine::config::{Load, RunConfig};
use crate::engine::stages::LevelCurve;
use crate::engine::LiveSink;
pub use crate::engine::PUBLISH_INTERVAL;
use crate::outcome::{Outcome, OutcomeCounts};
use crate::record::Totals;
use crate::server::http1::{
    self as http_server, Arrival, DateCache, Handler, Limits, Method as HttpMethod, Next, Request,
    ServerThread, StartError,
};

/// Upper bounds of the latency histogram's buckets, seconds (then `+Inf`).
pub const LATENCY_BUCKETS_SECONDS: [f64; 16] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// The same bounds in microseconds, the unit of the recorders' histograms.
const BUCKET_BOUNDS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
    2_500_000, 5_000_000, 10_000_000,
];

/// The achieved rate is measured over about this much recent time.
const RATE_WINDOW: Duration = Duration::from_secs(5);

/// The content type of the OpenMetrics text format, which `prometheus-client` writes.
pub const CONTENT_TYPE_TEXT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What one call (a `method` label) measured so far.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallFigures {
    /// Completed requests, whatever their outcome.
    pub requests: u64,
    /// Failed requests by outcome, with the `code` label of each (a code, a status, a kind,
    /// `other` for the JSON-RPC codes past the bound on distinct codes).
    pub errors: BTreeMap<(Outcome, Option<String>), u64>,
    /// Latencies per bucket of [`LATENCY_BUCKETS_SECONDS`] (not cumulative), then the count
    /// above the last bound.
    pub buckets: [u64; LATENCY_BUCKETS_SECONDS.len() + 1],
    /// Sum of the latencies, seconds.
    pub latency_sum_seconds: f64,
    /// The same latencies per bucket of [`FINE_BUCKET_BOUNDS_US`] (not cumulative), then the
    /// count above the last bound; empty when none were recorded. `buckets` are sums of these.
    pub fine_buckets: Vec<u64>,
    /// Open loop: how late requests went out after their intended send time, per bucket as
    /// `buckets` (the generator falling behind its schedule shows here first).
    pub send_lag_buckets: [u64; LATENCY_BUCKETS_SECONDS.len() + 1],
    /// Sum of the send lags, seconds.
    pub send_lag_sum_seconds: f64,
    /// Open loop: requests sent more than 2 ms after their intended time.
    pub late: u64,
}

impl CallFigures {
    /// The figures of one call's totals. Sums the latency histogram's counts bucket by bucket
    /// up to its largest value (not on the hot path: a worker does this every
    /// [`PUBLISH_INTERVAL`]).
    pub fn from_totals(totals: &Totals) -> Self {
        let mut figures = CallFigures {
            requests: totals.counts.total(),
            errors: error_classes(&totals.counts),
            ..CallFigures::default()
        };
        (figures.fine_buckets, figures.latency_sum_seconds) = fine_latency_buckets(&totals.latency);
        figures.buckets = coarse_buckets(&figures.fine_buckets);
        (figures.send_lag_buckets, figures.send_lag_sum_seconds) = latency_buckets(&totals.send_lag);
        figures.late = totals.late;
        figures
    }

    /// Latencies recorded (every request but failed connects).
    pub fn latency_count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Failed requests with this outcome (its class and code).
    pub fn errors_of(&self, outcome: Outcome) -> u64 {
        self.errors.get(&(outcome, outcome.code())).copied().unwrap_or(0)
    }

    /// Failed requests.
    pub fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Adds `other` (another worker's, run's or call's figures) to these.
    pub fn add(&mut self, other: &CallFigures) {
        self.requests += other.requests;
        for (class, count) in &other.errors {
            *self.errors.entry(class.clone()).or_default() += count;
        }
        for (ours, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            *ours += theirs;
        }
        self.latency_sum_seconds += other.latency_sum_seconds;
        if self.fine_buckets.len() < other.fine_buckets.len() {
            self.fine_buckets.resize(other.fine_buckets.len(), 0);
        }
        for (ours, theirs) in self.fine_buckets.iter_mut().zip(&other.fine_buckets) {
            *ours += theirs;
        }
        for (ours, theirs) in self.send_lag_buckets.iter_mut().zip(&other.send_lag_buckets) {
            *ours += theirs;
        }
        self.send_lag_sum_seconds += other.send_lag_sum_seconds;
        self.late += other.late;
    }
}

fn error_classes(counts: &OutcomeCounts) -> BTreeMap<(Outcome, Option<String>), u64> {
    counts.failures().into_iter().map(|(outcome, code, count)| ((outcome, code), count)).collect()
}

/// Upper bounds of the fine latency buckets, microseconds: 1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8
/// and 9 times each power of ten from 10 µs to 1 s, then 10 s (then the count above). Every
/// bound of [`LATENCY_BUCKETS_SECONDS`] is one of them, so the endpoint's buckets are sums of
/// these; the live dashboard reads percentiles from these to within a bucket (about 10-25%).
pub const FINE_BUCKET_BOUNDS_US: [u64; 67] = fine_bounds();

const fn fine_bounds() -> [u64; 67] {
    let mantissas = [10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90];
    let mut bounds = [0; 67];
    let mut scale = 1;
    let mut index = 0;
    while index < 66 {
        let mut m = 0;
        while m < mantissas.len() {
            bounds[index] = mantissas[m] * scale;
            index += 1;
            m += 1;
        }
        scale *= 10;
    }
    bounds[66] = 10_000_000;
    bounds
}

/// A histogram of microseconds in the endpoint's buckets ([`LATENCY_BUCKETS_SECONDS`], not
/// cumulative, then the count above the last bound) and its sum in seconds. Sums the
/// histogram's counts bucket by bucket up to its largest value (not on a hot path).
fn latency_buckets(
    histogram: &hdrhistogram::Histogram<u64>,
) -> ([u64; LATENCY_BUCKETS_SECONDS.len() + 1], f64) {
    let (fine, sum) = fine_latency_buckets(histogram);
    (coarse_buckets(&fine), sum)
}

/// A histogram of microseconds in the fine buckets ([`FINE_BUCKET_BOUNDS_US`], not
/// cumulative, then the count above the last bound; empty when nothing was recorded) and its
/// sum in seconds. Sums the histogram's counts bucket by bucket up to its largest value.
fn fine_latency_buckets(histogram: &hdrhistogram::Histogram<u64>) -> (Vec<u64>, f64) {
    let recorded = histogram.len();
    if recorded == 0 {
        return (Vec::new(), 0.0);
    }
    let mut buckets = vec![0; FINE_BUCKET_BOUNDS_US.len() + 1];
    let max = histogram.max();
    let mut counted = 0;
    let mut low = 0;
    for (bucket, &bound) in FINE_BUCKET_BOUNDS_US.iter().enumerate() {
        if low > max {
            break;
        }
        // Disjoint ranges of the histogram's own buckets: a bound's bucket counts below it.
        let count = histogram.count_between(low, bound.min(max));
        buckets[bucket] = count;
        counted += count;
        low = histogram.highest_equivalent(bound) + 1;
    }
    buckets[FINE_BUCKET_BOUNDS_US.len()] = recorded.saturating_sub(counted);
    (buckets, histogram.mean() * recorded as f64 / 1e6)
}

/// The endpoint's buckets as sums of the fine ones.
fn coarse_buckets(fine: &[u64]) -> [u64; LATENCY_BUCKETS_SECONDS.len() + 1] {
    let mut coarse = [0; LATENCY_BUCKETS_SECONDS.len() + 1];
    for (index, &count) in fine.iter().enumerate() {
        let bucket = match FINE_BUCKET_BOUNDS_US.get(index) {
            Some(&bound) => {
                BUCKET_BOUNDS_US.iter().position(|&coarse| bound <= coarse).unwrap_or(BUCKET_BOUNDS_US.len())
            }
            None => BUCKET_BOUNDS_US.len(),
        };
        coarse[bucket] += count;
    }
    coarse
}

/// What a subscription run (`subscribe --metrics-listen`) received so far.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubscriptionFigures {
    /// Notifications received.
    pub notifications: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Block numbers or slots never received.
    pub gaps: u64,
    /// Items received twice by one subscription.
    pub duplicates: u64,
    /// Items received after a later one.
    pub reorders: u64,
    /// Subscriptions active now.
    pub active: u64,
    /// Fan-out lag per bucket, as [`CallFigures::buckets`].
    pub lag_buckets: [u64; LATENCY_BUCKETS_SECONDS.len() + 1],
    /// Sum of the fan-out lags, seconds.
    pub lag_sum_seconds: f64,
}

impl SubscriptionFigures {
    /// The fan-out lag histogram's part of the figures.
    pub fn with_lag(mut self, lag: &hdrhistogram::Histogram<u64>) -> Self {
        (self.lag_buckets, self.lag_sum_seconds) = latency_buckets(lag);
        self
    }
}

/// Everything the endpoint shows at one moment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    /// Figures per `method` label (the call's name), this run and earlier ones added up.
    pub methods: BTreeMap<String, CallFigures>,
    /// Requests sent and not yet answered.
    pub in_flight: u64,
    /// Responses per second over the last few seconds.
    pub achieved_rate: f64,
    /// Open loop: the rate asked for now.
    pub target_rate: Option<f64>,
    /// Whether a run is going on.
    pub running: bool,
    /// The latest run's target URL, redacted, and mode (`open` or `closed`).
    pub run: Option<(String, &'static str)>,
    /// A subscription run's figures, when one publishes.
    pub subscription: Option<SubscriptionFigures>,
    /// Each target's head lag, when a head monitor publishes (`--heads`).
    pub heads: Vec<HeadLagFigures>,
    /// The transactions of `rpcbench tx`, when it publishes.
    pub transactions: Option<TransactionFigures>,
}

/// The store the workers publish into and the endpoint reads. Cloning it is cheap; every clone
/// is the same store.
#[derive(Clone, Default)]
pub struct LiveMetrics(Arc<Mutex<State>>);

impl fmt::Debug for LiveMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveMetrics").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    /// Finished runs, by method label.
    base: BTreeMap<String, CallFigures>,
    run: Option<RunState>,
    subscription: Option<SubscriptionFigures>,
    heads: Vec<HeadLagFigures>,
    transactions: Option<TransactionFigures>,
}

struct RunState {
    target: String,
    mode: &'static str,
    start: Instant,
    /// Open loop: the rate over time, seconds from `start`.
    curve: Option<LevelCurve>,
    names: Vec<String>,
    workers: Vec<WorkerSlot>,
    running: bool,
}

#[derive(Default)]
struct WorkerSlot {
    calls: Vec<CallFigures>,
    in_flight: u64,
    /// (publication time, requests so far), oldest first, covering about [`RATE_WINDOW`].
    history: VecDeque<(Instant, u64)>,
}

impl WorkerSlot {
    fn rate(&self) -> f64 {
        match (self.history.front(), self.history.back()) {
            (Some(&(t0, n0)), Some(&(t1, n1))) if t1 > t0 => {
                n1.saturating_sub(n0) as f64 / t1.duration_since(t0).as_secs_f64()
            }
            _ => 0.0,
        }
    }
}

impl LiveMetrics {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// A subscription run's figures so far (published about once a second).
    pub fn publish_subscription(&self, figures: SubscriptionFigures) {
        self.state().subscription = Some(figures);
    }

    /// Every target's head as the head monitor last read it (published once a poll round).
    pub fn publish_heads(&self, heads: Vec<HeadLagFigures>) {
        self.state().heads = heads;
    }

    /// The transactions of `rpcbench tx` so far.
    pub fn publish_transactions(&self, figures: TransactionFigures) {
        self.state().transactions = Some(figures);
    }
}

impl LiveSink for LiveMetrics {
    fn begin_run(&self, config: &RunConfig, workers: usize, start: Instant, measure_start: Instant) {
        let (mode, curve) = match &config.load {
            Load::Closed { .. } => ("closed", None),
            Load::Open { rate, .. } => {
                ("open", Some(config.level_curve().unwrap_or_else(|| LevelCurve::constant(*rate))))
            }
        };
        let slot = || WorkerSlot { history: VecDeque::from([(measure_start, 0)]), ..WorkerSlot::default() };
        let run = RunState {
            target: config.target.redacted(),
            mode,
            start,
            curve,
            names: config.workload.calls().iter().map(|call| call.name().to_string()).collect(),
            workers: (0..workers).map(|_| slot()).collect(),
            running: true,
        };
        let mut state = self.state();
        state.fold_run();
        state.run = Some(run);
    }

    fn publish(&self, worker: usize, calls: &[Totals], in_flight: u64) {
        let figures: Vec<CallFigures> = calls.iter().map(CallFigures::from_totals).collect();
        let requests = figures.iter().map(|call| call.requests).sum();
        let now = Instant::now();
        let mut state = self.state();
        let Some(slot) = state.run.as_mut().and_then(|run| run.workers.get_mut(worker)) else { return };
        slot.calls = figures;
        slot.in_flight = in_flight;
        // Before measurement starts (warmup) the history stays at its start.
        let since = slot.history.front().map_or(now, |&(start, _)| start.max(now));
        slot.history.push_back((since, requests));
        while slot.history.len() > 2 && slot.history[1].0 + RATE_WINDOW <= since {
            slot.history.pop_front();
        }
    }

    /// The run ended: its figures join the base and the gauges go to zero.
    fn end_run(&self) {
        let mut state = self.state();
        state.fold_run();
    }
}

impl LiveMetrics {
    /// What the endpoint shows now.
    pub fn snapshot(&self) -> Snapshot {
        let state = self.state();
        let mut snapshot = Snapshot {
            methods: state.base.clone(),
            subscription: state.subscription.clone(),
            heads: state.heads.clone(),
            transactions: state.transactions.clone(),
            ..Snapshot::default()
        };
        if let Some(run) = &state.run {
            snapshot.run = Some((run.target.clone(), run.mode));
            snapshot.running = run.running;
            for worker in &run.workers {
                add_calls(&mut snapshot.methods, &run.names, &worker.calls);
                snapshot.in_flight += worker.in_flight;
                snapshot.achieved_rate += worker.rate();
            }
            snapshot.target_rate = run.curve.as_ref().filter(|_| run.running).map(|curve| {
                curve.level_at(Instant::now().saturating_duration_since(run.start).as_secs_f64())
            });
            // Every call of the workload has its series from the start, even before its first
            // request completes.
            for name in &run.names {
                snapshot.methods.entry(name.clone()).or_default();
            }
        }
        snapshot
    }

    /// The endpoint's answer now, in the OpenMetrics text format.
    pub fn render(&self) -> String {
        render(&self.snapshot())
    }
}

impl State {
    /// Moves the figures of the current run (if still open) into the base.
    fn fold_run(&mut self) {
        let Some(run) = self.run.as_mut() else { return };
        if !run.running {
            return;
        }
        for worker in &mut run.workers {
            add_calls(&mut self.base, &run.names, &worker.calls);
            *worker = WorkerSlot::default();
        }
        run.running = false;
    }
}

fn add_calls(into: &mut BTreeMap<String, CallFigures>, names: &[String], calls: &[CallFigures]) {
    for (name, figures) in names.iter().zip(calls) {
        into.entry(name.clone()).or_default().add(figures);
    }
}

/// Renders a snapshot with `prometheus-client`'s text encoder.
pub fn render(snapshot: &Snapshot) -> String {
    render_collector("rpcbench", SnapshotCollector(snapshot.clone()))
}

/// The Prometheus text of one collector whose metric names take `prefix`.
pub(crate) fn render_collector(prefix: &str, collector: impl Collector + 'static) -> String {
    let mut registry = Registry::with_prefix(prefix);
    registry.register_collector(Box::new(collector));
    let mut text = String::new();
    // Writing into a String cannot fail.
    prometheus_client::encoding::text::encode(&mut text, &registry).ok();
    text
}

/// Encodes one snapshot at scrape time.
#[derive(Debug)]
struct SnapshotCollector(Snapshot);

impl Collector for SnapshotCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let snapshot = &self.0;
        {
            let mut metric = encoder.encode_descriptor(
                "requests",
                "Completed requests (measured, after warmup), whatever their outcome.",
                None,
                MetricType::Counter,
            )?;
            for (method, figures) in &snapshot.methods {
                let labels = [("method", method.as_str())];
                metric
                    .encode_family(&labels)?
                    .encode_counter::<NoLabelSet, _, u64>(&figures.requests, None)?;
            }
        }
        {
            let mut metric = encoder.encode_descriptor(
                "errors",
                "Failed requests by outcome class and code (JSON-RPC error code, HTTP status, kind).",
                None,
                MetricType::Counter,
            )?;
            for (method, figures) in &snapshot.methods {
                for ((outcome, code), count) in &figures.errors {
                    let mut labels = vec![("method", method.clone()), ("class", outcome.class().to_string())];
                    if let Some(code) = code.clone() {
                        labels.push(("code", code));
                    }
                    metric.encode_family(&labels)?.encode_counter::<NoLabelSet, _, u64>(count, None)?;
                }
            }
        }
        method_histogram(
            &mut encoder,
            "latency",
            "Request latency; from the intended send time in open loop (corrected).",
            &snapshot.methods,
            |figures| (&figures.buckets[..], figures.latency_sum_seconds, figures.latency_count()),
        )?;
        method_histogram(
            &mut encoder,
            "send_lag",
            "Open loop: how late requests went out after their intended send time.",
            &snapshot.methods,
            |figures| {
                (
                    &figures.send_lag_buckets[..],
                    figures.send_lag_sum_seconds,
                    figures.send_lag_buckets.iter().sum(),
                )
            },
        )?;
        {
            let mut metric = encoder.encode_descriptor(
                "late_requests",
                "Open loop: requests sent more than 2 ms after their intended send time.",
                None,
                MetricType::Counter,
            )?;
            for (method, figures) in &snapshot.methods {
                let labels = [("method", method.as_str())];
                metric.encode_family(&labels)?.encode_counter::<NoLabelSet, _, u64>(&figures.late, None)?;
            }
        }
        gauge(
            &mut encoder,
            "achieved_rate",
            "Responses per second over the last few seconds.",
            snapshot.achieved_rate,
        )?;
        {
            // Declared even without a value (closed loop, between runs), so that the names the
            // endpoint exports do not depend on the mode.
            let mut metric = encoder.encode_descriptor(
                "target_rate",
                "Open loop: requests per second asked for now.",
                None,
                MetricType::Gauge,
            )?;
            if let Some(rate) = snapshot.target_rate {
                metric.encode_gauge(&rate)?;
            }
        }
        gauge(
            &mut encoder,
            "in_flight_requests",
            "Requests sent and not yet answered.",
            snapshot.in_flight as f64,
        )?;
        gauge(
            &mut encoder,
            "running",
            "1 while a run is going on, 0 after.",
            f64::from(u8::from(snapshot.running)),
        )?;
        if let Some(figures) = &snapshot.subscription {
            encode_subscription(&mut encoder, figures)?;
        }
        encode_beside_load(&mut encoder, &snapshot.heads, snapshot.transactions.as_ref())?;
        if let Some((target, mode)) = &snapshot.run {
            let labels = [("target", target.as_str()), ("mode", mode)];
            encoder
                .encode_descriptor("run", "The run's target (redacted) and mode.", None, MetricType::Info)?
                .encode_info(&labels)?;
        }
        Ok(())
    }
}

fn encode_subscription(
    encoder: &mut DescriptorEncoder,
    figures: &SubscriptionFigures,
) -> Result<(), fmt::Error> {
    for (name, help, value) in [
        ("subscribe_notifications", "Subscription notifications received.", figures.notifications),
        ("subscribe_received_bytes", "Bytes of the notifications received.", figures.bytes),
        ("subscribe_gaps", "Block numbers or slots a subscription never received.", figures.gaps),
        ("subscribe_duplicates", "Items a subscription received twice.", figures.duplicates),
        ("subscribe_reorders", "Items a subscription received after a later one.", figures.reorders),
    ] {
        encoder
            .encode_descriptor(name, help, None, MetricType::Counter)?
            .encode_counter::<NoLabelSet, _, u64>(&value, None)?;
    }
    gauge(encoder, "subscribe_active", "Subscriptions active now.", figures.active as f64)?;
    let buckets: Vec<(f64, u64)> = LATENCY_BUCKETS_SECONDS
        .iter()
        .copied()
        .chain([f64::INFINITY])
        .zip(figures.lag_buckets.iter().copied())
        .collect();
    encoder
        .encode_descriptor(
            "subscribe_lag",
            "Fan-out lag: a notification's arrival minus the earliest arrival of the same item at any subscriber.",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?
        .encode_histogram::<NoLabelSet>(figures.lag_sum_seconds, figures.lag_buckets.iter().sum(), &buckets, None)
}

/// One histogram per method, in seconds, with the endpoint's buckets: `of` gives a method's
/// bucket counts (the last one +Inf), its sum and its count.
fn method_histogram(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    methods: &BTreeMap<String, CallFigures>,
    of: impl Fn(&CallFigures) -> (&[u64], f64, u64),
) -> Result<(), fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
    for (method, figures) in methods {
        let (counts, sum, count) = of(figures);
        let buckets: Vec<(f64, u64)> = LATENCY_BUCKETS_SECONDS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(counts.iter().copied())
            .collect();
        let labels = [("method", method.as_str())];
        metric.encode_family(&labels)?.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
    }
    Ok(())
}

fn gauge(encoder: &mut DescriptorEncoder, name: &str, help: &str, value: f64) -> Result<(), fmt::Error> {
    encoder.encode_descriptor(name, help, None, MetricType::Gauge)?.encode_gauge(&value)
}

/// The HTTP endpoint: `GET /metrics` on a thread with a small runtime of its own, never on the
/// load workers, served by the crate's HTTP/1.1 loop (`http_server.rs`). Stops on
/// [`MetricsServer::stop`] or drop.
#[derive(Debug)]
pub struct MetricsServer {
    server: ServerThread,
}

impl MetricsServer {
    /// Binds `addr` (port 0 picks a free port) and serves `live` from a thread of its own.
    /// Returns once the socket is listening.
    pub fn start(addr: SocketAddr, live: LiveMetrics) -> std::io::Result<MetricsServer> {
        let render: Render = Arc::new(move || live.render());
        Self::serve(addr, "rpcbench-metrics", render)
    }

    /// Binds `addr` and answers `GET /metrics` with what `render` returns at each scrape.
    pub(crate) fn serve(addr: SocketAddr, name: &str, render: Render) -> std::io::Result<MetricsServer> {
        let server =
            ServerThread::start(addr, 1, name, Duration::from_millis(200), move |listener, shutdown| {
                accept_loop(listener, render, shutdown)
            })
            .map_err(|error| match error {
                StartError::Bind { source, .. } | StartError::Runtime(source) => source,
            })?;
        Ok(MetricsServer { server })
    }

    /// The address the endpoint listens on (the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// The endpoint's URL, e.g. `http://127.0.0.1:9464/metrics`.
    pub fn url(&self) -> String {
        format!("http://{}/metrics", self.local_addr())
    }

    /// Stops serving and joins the thread.
    pub fn stop(self) {
        self.server.stop();
    }
}

/// Renders the exposition text at scrape time.
pub(crate) type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// The most connections the endpoint keeps open at once.
pub const MAX_CONNECTIONS: usize = 64;
/// A request head must arrive within this.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a connection is kept, idle or not.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// The largest request body the endpoint reads (scrapes have none).
const MAX_BODY: usize = 4096;

async fn accept_loop(listener: tokio::net::TcpListener, render: Render, mut shutdown: watch::Receiver<bool>) {
    let open = http_server::OpenConnections::new(MAX_CONNECTIONS);
    loop {
        let accepted = tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _peer)) = accepted else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        // At most MAX_CONNECTIONS at once: one more is closed at once, so idle or trickling
        // clients cannot take the file descriptors the load run needs.
        let Some(slot) = open.admit() else {
            drop(stream);
            continue;
        };
        let handler = Scrapes { render: render.clone() };
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let limits = Limits { max_body: MAX_BODY, head_timeout: Some(HEADER_TIMEOUT), timed: false };
            let connection = http_server::serve_connection(stream, handler, shutdown, limits);
            // A scraper reconnects; a connection held longer than this is someone else's.
            let _ = tokio::time::timeout(CONNECTION_LIFETIME, connection).await;
            drop(slot);
        });
    }
}

/// Answers the scrapes of one connection.
struct Scrapes {
    render: Render,
}

impl<S: Send> Handler<S> for Scrapes {
    type TakeOver = ();

    fn answer<'a>(
        &'a mut self,
        _stream: &'a mut S,
        out: &'a mut Vec<u8>,
        request: &'a Request,
        bytes: &'a [u8],
        _arrival: Option<Arrival>,
        date: &'a mut DateCache,
    ) -> impl std::future::Future<Output = Next<()>> + Send + 'a {
        let path = request.path(bytes);
        let path = path.split(|b| *b == b'?').next().unwrap_or(path);
        let get = request.method == HttpMethod::Get;
        let (status, content_type, body): (&[u8], &[u8], String) = match (get, path) {
            (true, b"/metrics") => (b"200 OK", CONTENT_TYPE_TEXT.as_bytes(), (self.render)()),
            (false, b"/metrics") => (b"405 Method Not Allowed", b"text/plain", "use GET\n".to_string()),
            _ => (b"404 Not Found", b"text/plain", "not found: metrics are at /metrics\n".to_string()),
        };
        http_server::write_response(
            out,
            status,
            content_type,
            b"",
            body.as_bytes(),
            Some(request),
            request.closes(),
            &date.text,
        );
        std::future::ready(Next::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::Target;
    use crate::jsonrpc::RequestTemplate;
    use crate::outcome::InvalidKind;
    use crate::record::Recorder;
    use crate::record::{Series, Timing};

    fn timing(micros: u64) -> Timing {
        let d = Duration::from_micros(micros);
        Timing { done_tick: 0, corrected: d, actual: d, lag: None }
    }

    fn recorder() -> Recorder {
        let mut recorder = Recorder::new(1, Arc::new(Mutex::new(Series::default())));
        recorder.record(0, Outcome::Ok, timing(80), || None);
        recorder.record(0, Outcome::Ok, timing(2_000), || None);
        recorder.record(0, Outcome::RpcError(-32005), timing(300), || None);
        recorder.record(0, Outcome::HttpStatus(429), timing(20_000_000), || None);
        recorder.record(0, Outcome::Connect, timing(5), || None);
        recorder.record(0, Outcome::Invalid(InvalidKind::NotJson), timing(700), || None);
        recorder
    }

    #[test]
    fn figures_bin_latencies_and_classify_errors() {
        let figures = CallFigures::from_totals(&recorder().calls[0]);
        assert_eq!(figures.requests, 6);
        assert_eq!(figures.error_total(), 4);
        assert_eq!(figures.errors_of(Outcome::RpcError(-32005)), 1);
        assert_eq!(figures.errors_of(Outcome::Connect), 1);
        // A failed connect sent nothing and has no latency.
        assert_eq!(figures.latency_count(), 5);
        assert_eq!(figures.buckets[0], 1, "80us <= 100us");
        assert_eq!(figures.buckets[1], 0, "nothing in (100us, 250us]");
        assert_eq!(figures.buckets[2], 1, "300us is in (250us, 500us]");
        let sum: f64 = [80.0, 2_000.0, 300.0, 20_000_000.0, 700.0].iter().sum::<f64>() / 1e6;
        assert!((figures.latency_sum_seconds - sum).abs() < sum * 0.001, "{}", figures.latency_sum_seconds);
    }

    #[test]
    fn bounds_count_in_their_own_bucket() {
        let mut recorder = Recorder::new(1, Arc::new(Mutex::new(Series::default())));
        for micros in [100, 101, 2_500, 2_600, 10_000_000, 10_100_000] {
            recorder.record(0, Outcome::Ok, timing(micros), || None);
        }
        let figures = CallFigures::from_totals(&recorder.calls[0]);
        let mut expected = [0; LATENCY_BUCKETS_SECONDS.len() + 1];
        for bucket in [0, 1, 4, 5, 15, 16] {
            expected[bucket] = 1;
        }
        assert_eq!(figures.buckets, expected);
    }

    #[test]
    fn the_text_has_every_family_with_labels_and_cumulative_buckets() {
        let mut config = RunConfig::new(
            Target::parse("https://node.example/v2/abcdef0123456789abcdef0123456789").unwrap(),
            RequestTemplate::from_method("getSlot", None).unwrap(),
        );
        config.load = Load::Open { rate: 250.0, arrivals: Default::default(), max_connections: 8 };
        let live = LiveMetrics::new();
        let now = Instant::now();
        live.begin_run(&config, 1, now, now);
        live.publish(0, &recorder().calls, 3);
        let text = live.render();
        assert!(text.contains("# TYPE rpcbench_requests counter\n"), "{text}");
        assert!(text.contains("rpcbench_requests_total{method=\"getSlot\"} 6\n"), "{text}");
        assert!(
            text.contains(
                "rpcbench_errors_total{method=\"getSlot\",class=\"rpc_error\",code=\"-32005\"} 1\n"
            ),
            "{text}"
        );
        assert!(text.contains("rpcbench_errors_total{method=\"getSlot\",class=\"connect\"} 1\n"), "{text}");
        assert!(text.contains("# TYPE rpcbench_latency_seconds histogram\n"), "{text}");
        assert!(text.contains("# UNIT rpcbench_latency_seconds seconds\n"), "{text}");
        assert!(
            text.contains("rpcbench_latency_seconds_bucket{le=\"0.0001\",method=\"getSlot\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("rpcbench_latency_seconds_bucket{le=\"0.001\",method=\"getSlot\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("rpcbench_latency_seconds_bucket{le=\"10.0\",method=\"getSlot\"} 4\n"),
            "{text}"
        );
        assert!(
            text.contains("rpcbench_latency_seconds_bucket{le=\"+Inf\",method=\"getSlot\"} 5\n"),
            "{text}"
        );
        assert!(text.contains("rpcbench_latency_seconds_count{method=\"getSlot\"} 5\n"), "{text}");
        assert!(text.contains("rpcbench_target_rate 250.0\n"), "{text}");
        assert!(text.contains("rpcbench_in_flight_requests 3.0\n"), "{text}");
        assert!(text.contains("rpcbench_running 1.0\n"), "{text}");
        assert!(
            text.contains("rpcbench_run_info{target=\"https://node.example/v2/***\",mode=\"open\"} 1\n"),
            "{text}"
        );
        assert!(!text.contains("abcdef0123456789"), "the key leaked: {text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn finished_runs_add_up_and_the_gauges_rest() {
        let config = RunConfig::new(
            Target::parse("http://127.0.0.1:1/").unwrap(),
            RequestTemplate::from_method("getSlot", None).unwrap(),
        );
        let live = LiveMetrics::new();
        for _ in 0..2 {
            let now = Instant::now();
            live.begin_run(&config, 2, now, now);
            live.publish(0, &recorder().calls, 1);
            live.publish(1, &recorder().calls, 1);
            // A second publication replaces the first: figures are cumulative.
            live.publish(1, &recorder().calls, 2);
            assert_eq!(live.snapshot().in_flight, 3);
            live.end_run();
        }
        let snapshot = live.snapshot();
        assert_eq!(snapshot.methods["getSlot"].requests, 4 * 6);
        assert_eq!(snapshot.methods["getSlot"].errors_of(Outcome::HttpStatus(429)), 4);
        assert_eq!(snapshot.in_flight, 0);
        assert!(!snapshot.running);
        assert_eq!(snapshot.target_rate, None, "closed loop has no target rate");
        let text = live.render();
        assert!(text.contains("rpcbench_running 0.0\n"), "{text}");
        assert!(text.contains("# TYPE rpcbench_target_rate gauge\n"), "declared: {text}");
        assert!(!text.lines().any(|line| line.starts_with("rpcbench_target_rate")), "no value: {text}");
    }

    #[test]
    fn the_achieved_rate_comes_from_each_workers_history() {
        let mut slot = WorkerSlot::default();
        let start = Instant::now();
        slot.history.push_back((start, 0));
        slot.history.push_back((start + Duration::from_secs(2), 1000));
        assert!((slot.rate() - 500.0).abs() < 1e-9);
    }
}

#[cfg(test)]
mod live_figure_tests {
    use super::*;

    #[test]
    fn the_endpoint_buckets_are_sums_of_the_fine_buckets() {
        let mut histogram = crate::record::new_histogram();
        for micros in [7, 99, 100, 101, 240, 260, 4_999, 5_000, 5_001, 5_500, 61_000, 9_999_999, 12_000_000] {
            histogram.record(micros).unwrap();
        }
        let (fine, _) = fine_latency_buckets(&histogram);
        assert_eq!(fine.iter().sum::<u64>(), 13);
        let coarse = coarse_buckets(&fine);
        // Counted directly against the coarse bounds, as the endpoint did before.
        let mut direct = [0u64; LATENCY_BUCKETS_SECONDS.len() + 1];
        let mut low = 0;
        for (bucket, &bound) in BUCKET_BOUNDS_US.iter().enumerate() {
            direct[bucket] = histogram.count_between(low, bound.min(histogram.max()));
            low = histogram.highest_equivalent(bound) + 1;
        }
        direct[BUCKET_BOUNDS_US.len()] = 13 - direct.iter().sum::<u64>();
        assert_eq!(coarse, direct);
        assert!(FINE_BUCKET_BOUNDS_US.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(BUCKET_BOUNDS_US.iter().all(|bound| FINE_BUCKET_BOUNDS_US.contains(bound)));
    }

    #[test]
    fn the_endpoint_publishes_send_lag_and_late_requests_per_method() {
        let mut figures = CallFigures { requests: 10, late: 3, ..CallFigures::default() };
        figures.send_lag_buckets[5] = 10;
        figures.send_lag_sum_seconds = 0.04;
        let mut snapshot = Snapshot::default();
        snapshot.methods.insert("getSlot".to_string(), figures);
        let text = render(&snapshot);
        assert!(text.contains("rpcbench_late_requests_total{method=\"getSlot\"} 3"), "{text}");
        assert!(text.contains("rpcbench_send_lag_seconds_count{method=\"getSlot\"} 10"), "{text}");
        assert!(
            text.contains("rpcbench_send_lag_seconds_bucket{le=\"0.005\",method=\"getSlot\"} 10"),
            "{text}"
        );
    }
}
