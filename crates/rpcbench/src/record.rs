//! What a run records: HDR latency histograms, a count per outcome class, bytes, pacing
//! figures, and a time series. Each worker owns a [`Recorder`]; recorders merge into one
//! [`RunRecord`] at the end. Memory does not grow with the length of a run: histograms have a
//! bounded range (they grow to the largest latency seen, at most an hour), and the series
//! halves its resolution when it gets long.
//!
//! The series is recorded in ticks of [`SERIES_TICK`] (100 ms), so that a run of a second or
//! two still has a curve rather than one or two points. Once a run has lasted
//! [`FINE_SERIES_BELOW`] (3 s) it will be reported in whole seconds: its points so far are
//! merged into seconds, exactly (each second's histogram is the sum of its ticks'), and workers
//! count whole seconds from then on. Past the cap on points, intervals double in whole seconds.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::engine::usage::{self, ThreadUsage};
use crate::outcome::Outcome;
pub use crate::outcome::OutcomeCounts;

/// Latencies are recorded in microseconds with 3 significant digits.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// Phase and per-interval histograms keep 2 significant digits: a phase percentile or an
/// interval's p50/p99 is within 1% of the value, at an eighth of the memory.
pub const COARSE_SIGNIFICANT_DIGITS: u8 = 2;

/// The largest latency a histogram tracks, microseconds (one hour); larger values clamp to it.
pub const MAX_TRACKABLE_US: u64 = 3_600_000_000;

/// A new latency histogram: microseconds from 1 up to [`MAX_TRACKABLE_US`] (values are clamped
/// to it by the recorder), 3 significant digits.
///
/// The histogram starts small and grows its range to the largest value recorded, so memory
/// follows the latencies seen rather than the hour a histogram could track: about 40 KB for
/// latencies under 10 ms, 190 KB at most. It grows at most ~22 times in a run (each doubling of
/// the largest latency), so recording allocates almost never and memory stays flat.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new(SIGNIFICANT_DIGITS).expect("valid histogram digits")
}

/// Like [`new_histogram`], with [`COARSE_SIGNIFICANT_DIGITS`]: for phase and per-interval
/// histograms.
pub fn new_coarse_histogram() -> Histogram<u64> {
    Histogram::new(COARSE_SIGNIFICANT_DIGITS).expect("valid histogram digits")
}

/// A histogram of the same precision as `like`, empty, for decoding into the shape it was
/// recorded in.
pub fn new_histogram_like(like: &Histogram<u64>) -> Histogram<u64> {
    if like.sigfig() == COARSE_SIGNIFICANT_DIGITS {
        new_coarse_histogram()
    } else {
        new_histogram()
    }
}

/// Records `us` (from [`micros`], so within range), growing the histogram if needed.
/// (`saturating_record` would clamp to the current range instead of growing it.)
pub(crate) fn record_us(histogram: &mut Histogram<u64>, us: u64) {
    // Fails only if the counts array cannot grow (more than usize::MAX counters).
    histogram.record(us).ok();
}

/// Microseconds, at least 1 and at most [`MAX_TRACKABLE_US`].
fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX).clamp(1, MAX_TRACKABLE_US)
}

/// The width of the series' finest interval: workers count their responses per tick.
pub const SERIES_TICK: Duration = Duration::from_millis(100);

/// Ticks in a second.
pub const TICKS_PER_SECOND: u64 = 10;

/// [`SERIES_TICK`] in milliseconds.
const TICK_MS: u64 = 100;

/// A run measured for less than this keeps its 100 ms points; a longer one is reported in
/// whole seconds.
pub const FINE_SERIES_BELOW: Duration = Duration::from_secs(3);

/// The tick a response that completed `since_start` after measurement started falls in: one
/// division (by a constant), on the hot path once per request.
#[inline]
pub fn tick_of(since_start: Duration) -> u64 {
    since_start.as_secs() * TICKS_PER_SECOND + u64::from(since_start.subsec_nanos() / 100_000_000)
}

/// One interval of the run: a tick (100 ms), a second, or, after the series was compacted,
/// several seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeriesPoint {
    /// Milliseconds from the start of measurement to the start of this interval.
    pub start_ms: u64,
    /// Responses completed in the interval.
    pub requests: u64,
    /// Of which errors.
    pub errors: u64,
    /// Median latency of the interval, microseconds (0 when no requests).
    pub p50_us: u64,
    /// 99th percentile latency of the interval, microseconds.
    pub p99_us: u64,
}

/// A time series of bounded size, fed by workers once an interval (a tick, then a second).
///
/// Points are 100 ms wide until the run has lasted [`FINE_SERIES_BELOW`]: from then on it will
/// be reported in whole seconds, so the points so far are merged into seconds and later ticks
/// are added straight into their second (each second's histogram is then summed in memory and
/// written once, rather than written per tick and read back at the end).
#[derive(Debug)]
pub struct Series {
    max_points: usize,
    interval_ms: u64,
    points: Vec<SeriesPoint>,
    /// Each point's latency histogram (coarse), V2-serialized: a few hundred bytes a point, so
    /// that merged shards' intervals get exact percentiles.
    latencies: Vec<Vec<u8>>,
    /// Intervals still receiving flushes from workers, by their start in milliseconds: ticks
    /// while the points are 100 ms wide, seconds after.
    open: BTreeMap<u64, OpenInterval>,
    completed: u64,
    errors: u64,
}

#[derive(Debug)]
struct OpenInterval {
    requests: u64,
    errors: u64,
    /// Coarse: only p50 and p99 are read from it.
    latency: Histogram<u64>,
}

impl OpenInterval {
    fn merge(&mut self, other: &OpenInterval) {
        self.requests += other.requests;
        self.errors += other.errors;
        self.latency.add(&other.latency).ok();
    }
}

/// The series keeps at most this many points; past it, 100 ms points merge into seconds, and
/// seconds merge in pairs.
const MAX_SERIES_POINTS: usize = 4096;
/// An interval is closed once a flush for a tick this long after its start has arrived (a
/// worker flushes its interval when its next response falls in a later one): 3 s, whatever the
/// interval's width.
const OPEN_WINDOW: Duration = Duration::from_secs(3);
/// [`OPEN_WINDOW`] in milliseconds.
const OPEN_WINDOW_MS: u64 = OPEN_WINDOW.as_millis() as u64;
/// [`FINE_SERIES_BELOW`] in milliseconds.
const FINE_SERIES_BELOW_MS: u64 = FINE_SERIES_BELOW.as_millis() as u64;
/// A second in milliseconds: the width of the points of a run of [`FINE_SERIES_BELOW`] or more.
const SECOND_MS: u64 = 1000;

impl Default for Series {
    fn default() -> Self {
        Self::with_max_points(MAX_SERIES_POINTS)
    }
}

impl Series {
    /// A series that keeps at most `max_points` points (at least one).
    pub fn with_max_points(max_points: usize) -> Self {
        Self {
            max_points: max_points.max(1),
            interval_ms: TICK_MS,
            points: Vec::new(),
            latencies: Vec::new(),
            open: BTreeMap::new(),
            completed: 0,
            errors: 0,
        }
    }

    /// The width of the open intervals: a tick while the points are 100 ms wide, else a second
    /// (wider points are made of closed seconds).
    fn open_ms(&self) -> u64 {
        self.interval_ms.min(SECOND_MS)
    }

    /// `Series::open_ms` in ticks: how wide the intervals a worker counts before it flushes
    /// may be.
    pub fn open_ticks(&self) -> u64 {
        (self.open_ms() / TICK_MS).max(1)
    }

    /// Adds a worker's figures for the interval that starts at `tick` (see [`tick_of`]): one
    /// tick, or up to [`Series::open_ticks`] ticks.
    pub fn add(&mut self, tick: u64, requests: u64, errors: u64, latency: &Histogram<u64>) {
        self.completed += requests;
        self.errors += errors;
        let at_ms = tick.saturating_mul(TICK_MS);
        if at_ms >= FINE_SERIES_BELOW_MS && self.interval_ms < SECOND_MS {
            // The run has lasted 3 s: it will be given in whole seconds.
            self.widen();
        }
        let open_ms = self.open_ms();
        match self.open.entry(at_ms / open_ms * open_ms) {
            // A copy of an interval's first flush costs less than adding it to an empty one.
            std::collections::btree_map::Entry::Vacant(vacant) => {
                vacant.insert(OpenInterval { requests, errors, latency: latency.clone() });
            }
            std::collections::btree_map::Entry::Occupied(mut occupied) => {
                let open = occupied.get_mut();
                open.requests += requests;
                open.errors += errors;
                open.latency.add(latency).ok();
            }
        }
        while let Some((&oldest, _)) = self.open.first_key_value() {
            if oldest.saturating_add(OPEN_WINDOW_MS) > at_ms {
                break;
            }
            self.close_oldest();
        }
    }

    /// Responses and errors flushed so far (for progress display).
    pub fn totals(&self) -> (u64, u64) {
        (self.completed, self.errors)
    }

    fn close_oldest(&mut self) {
        let Some((start_ms, open)) = self.open.pop_first() else {
            return;
        };
        let point = SeriesPoint {
            start_ms,
            requests: open.requests,
            errors: open.errors,
            p50_us: open.latency.value_at_quantile(0.5),
            p99_us: open.latency.value_at_quantile(0.99),
        };
        self.push(point, serialize_histogram(&open.latency));
    }

    fn push(&mut self, point: SeriesPoint, latency: Vec<u8>) {
        let slot = point.start_ms / self.interval_ms;
        match (self.points.last_mut(), self.latencies.last_mut()) {
            (Some(last), Some(last_latency)) if last.start_ms / self.interval_ms == slot => {
                merge_point(last, &point);
                // The merged interval's percentiles come from the merged histogram.
                // (A read-back histogram has fixed bounds: the sum goes into one that grows.)
                let mut sum = new_coarse_histogram();
                for bytes in [&last_latency[..], &latency[..]] {
                    if let Some(histogram) = deserialize_histogram(bytes) {
                        sum.add(&histogram).ok();
                    }
                }
                if !sum.is_empty() {
                    last.p50_us = sum.value_at_quantile(0.5);
                    last.p99_us = sum.value_at_quantile(0.99);
                    *last_latency = serialize_histogram(&sum);
                }
            }
            _ => {
                let mut point = point;
                point.start_ms = slot * self.interval_ms;
                self.points.push(point);
                self.latencies.push(latency);
            }
        }
        while self.points.len() > self.max_points {
            self.widen();
        }
    }

    /// Merges the points into intervals of the next width: 100 ms points into seconds (the
    /// open ticks too), then seconds in pairs. Each new interval's histogram is the sum of its
    /// points' (each read once, the sum written once).
    fn widen(&mut self) {
        self.interval_ms =
            if self.interval_ms < SECOND_MS { SECOND_MS } else { self.interval_ms.saturating_mul(2) };
        let interval = self.interval_ms;
        let old = std::mem::take(&mut self.points);
        let old_latencies = std::mem::take(&mut self.latencies);
        let mut old = old.into_iter().zip(old_latencies).peekable();
        while let Some((mut point, mut latency)) = old.next() {
            let slot = point.start_ms / interval;
            point.start_ms = slot * interval;
            let mut sum: Option<Histogram<u64>> = None;
            while let Some((next, next_latency)) = old.next_if(|(next, _)| next.start_ms / interval == slot) {
                merge_point(&mut point, &next);
                // (A read-back histogram has fixed bounds: the sum goes into one that grows.)
                let sum = sum.get_or_insert_with(|| {
                    let mut sum = new_coarse_histogram();
                    if let Some(first) = deserialize_histogram(&latency) {
                        sum.add(&first).ok();
                    }
                    sum
                });
                if let Some(histogram) = deserialize_histogram(&next_latency) {
                    sum.add(&histogram).ok();
                }
            }
            if let Some(sum) = sum.filter(|sum| !sum.is_empty()) {
                point.p50_us = sum.value_at_quantile(0.5);
                point.p99_us = sum.value_at_quantile(0.99);
                latency = serialize_histogram(&sum);
            }
            self.points.push(point);
            self.latencies.push(latency);
        }
        let open_ms = self.open_ms();
        if self.open.keys().any(|start| start % open_ms != 0) {
            for (start, open) in std::mem::take(&mut self.open) {
                match self.open.entry(start / open_ms * open_ms) {
                    std::collections::btree_map::Entry::Vacant(vacant) => {
                        vacant.insert(open);
                    }
                    std::collections::btree_map::Entry::Occupied(mut occupied) => {
                        occupied.get_mut().merge(&open)
                    }
                }
            }
        }
    }

    /// Closes every open interval and returns the width of the points (milliseconds) and the
    /// points, with empty intervals filled in up to `length` of measured time.
    pub fn finish(self, length: Duration) -> (u64, Vec<SeriesPoint>) {
        let (interval, points, _) = self.finish_with_latencies(length);
        (interval, points)
    }

    /// [`Series::finish`] with each point's serialized latency histogram (empty for an
    /// interval without responses). A run measured for [`FINE_SERIES_BELOW`] or longer is
    /// given in whole seconds.
    pub fn finish_with_latencies(mut self, length: Duration) -> (u64, Vec<SeriesPoint>, Vec<Vec<u8>>) {
        while !self.open.is_empty() {
            self.close_oldest();
        }
        if length >= FINE_SERIES_BELOW && self.interval_ms < SECOND_MS {
            self.widen();
        }
        let interval = self.interval_ms;
        let length_ms = u64::try_from(length.as_millis()).unwrap_or(u64::MAX);
        // Whole ticks of measured time, as many intervals as they take.
        let slots = (length_ms / TICK_MS * TICK_MS).div_ceil(interval).max(1);
        let mut filled = Vec::with_capacity(slots.min(self.max_points as u64 * 2) as usize);
        let mut latencies = Vec::with_capacity(filled.capacity());
        let mut points = self.points.into_iter().zip(self.latencies).peekable();
        for slot in 0..slots {
            let start_ms = slot * interval;
            match points.peek() {
                Some((point, _)) if point.start_ms == start_ms => {
                    let (point, latency) = points.next().unwrap_or_default();
                    filled.push(point);
                    latencies.push(latency);
                }
                _ => {
                    filled.push(SeriesPoint { start_ms, ..SeriesPoint::default() });
                    latencies.push(Vec::new());
                }
            }
        }
        // Responses that completed after the nominal end (draining in-flight requests).
        for (point, latency) in points {
            filled.push(point);
            latencies.push(latency);
        }
        (interval, filled, latencies)
    }
}

/// A histogram in HdrHistogram's V2 encoding.
pub fn serialize_histogram(histogram: &Histogram<u64>) -> Vec<u8> {
    use hdrhistogram::serialization::Serializer as _;
    let mut bytes = Vec::new();
    hdrhistogram::serialization::V2Serializer::new().serialize(histogram, &mut bytes).ok();
    bytes
}

/// [`serialize_histogram`]'s bytes read back (`None` for no bytes or bad ones).
pub fn deserialize_histogram(bytes: &[u8]) -> Option<Histogram<u64>> {
    if bytes.is_empty() {
        return None;
    }
    hdrhistogram::serialization::Deserializer::new().deserialize(&mut &bytes[..]).ok()
}

fn merge_point(into: &mut SeriesPoint, other: &SeriesPoint) {
    into.requests += other.requests;
    into.errors += other.errors;
    // Percentiles of merged intervals cannot be recomputed; keep the worse one.
    into.p50_us = into.p50_us.max(other.p50_us);
    into.p99_us = into.p99_us.max(other.p99_us);
}

/// What a run measured, apart from the time series: histograms, counts, bytes and pacing
/// figures. Each worker fills its own; they add up with [`Totals::merge`].
#[derive(Debug)]
pub struct Totals {
    /// Latency of every request that got a response or failed after being sent, measured from
    /// the intended send time (open loop) or the actual send time (closed loop).
    pub latency: Histogram<u64>,
    /// The same requests measured from the actual send time.
    pub latency_uncorrected: Histogram<u64>,
    /// Latency of successful requests only (corrected).
    pub latency_ok: Histogram<u64>,
    /// Open loop: how long after its intended time each request was sent.
    pub send_lag: Histogram<u64>,
    /// Counts per outcome class.
    pub counts: OutcomeCounts,
    /// Counts per HTTP status of every response received, whatever its class.
    pub status_counts: BTreeMap<u16, u64>,
    /// Bytes of request sent (headers and body).
    pub bytes_sent: u64,
    /// Bytes of response received (headers and body).
    pub bytes_received: u64,
    /// Open loop: requests sent more than [`LATE_THRESHOLD`] after their intended time.
    pub late: u64,
    /// Open loop: of the late requests, those taken while every connection the run may open
    /// was busy (late because of the connection cap, not the generator).
    pub late_at_cap: u64,
    /// Open loop: requests due in the run that were never sent (no connection free in time).
    pub unsent: u64,
}

impl Default for Totals {
    fn default() -> Self {
        Self {
            latency: new_histogram(),
            latency_uncorrected: new_histogram(),
            latency_ok: new_histogram(),
            send_lag: new_histogram(),
            counts: OutcomeCounts::default(),
            status_counts: BTreeMap::new(),
            bytes_sent: 0,
            bytes_received: 0,
            late: 0,
            late_at_cap: 0,
            unsent: 0,
        }
    }
}

impl Totals {
    /// Adds another worker's totals into these.
    pub fn merge(&mut self, other: &Totals) {
        self.latency.add(&other.latency).ok();
        self.latency_uncorrected.add(&other.latency_uncorrected).ok();
        self.latency_ok.add(&other.latency_ok).ok();
        self.send_lag.add(&other.send_lag).ok();
        self.counts.merge(&other.counts);
        for (status, count) in &other.status_counts {
            *self.status_counts.entry(*status).or_default() += count;
        }
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.late += other.late;
        self.late_at_cap += other.late_at_cap;
        self.unsent += other.unsent;
    }
}

/// Where a request's time went, for one class of outcome: connecting (when the request needed
/// a new connection), sending the request, waiting for the first byte of the response, and
/// receiving the rest.
#[derive(Debug)]
pub struct PhaseTotals {
    /// TCP (and TLS) connect, for requests that opened a connection.
    pub connect: Histogram<u64>,
    /// Writing the request.
    pub send: Histogram<u64>,
    /// From the request written to the first byte of the response.
    pub wait: Histogram<u64>,
    /// From the first byte to the last.
    pub receive: Histogram<u64>,
}

impl Default for PhaseTotals {
    /// Coarse histograms: phases show where the time went, to 2 significant digits.
    fn default() -> Self {
        Self {
            connect: new_coarse_histogram(),
            send: new_coarse_histogram(),
            wait: new_coarse_histogram(),
            receive: new_coarse_histogram(),
        }
    }
}

impl PhaseTotals {
    /// Adds another worker's phases.
    pub fn merge(&mut self, other: &PhaseTotals) {
        self.connect.add(&other.connect).ok();
        self.send.add(&other.send).ok();
        self.wait.add(&other.wait).ok();
        self.receive.add(&other.receive).ok();
    }
}

/// The phases of one request that got a complete response.
#[derive(Debug, Clone, Copy)]
pub struct Phases {
    /// Connect time, if the request opened a connection.
    pub connect: Option<Duration>,
    /// Writing the request.
    pub send: Duration,
    /// Request written to first byte.
    pub wait: Duration,
    /// First byte to last.
    pub receive: Duration,
}

/// One stage's figures: latency (corrected) and outcome counts.
#[derive(Debug)]
pub struct StageTotals {
    /// Latency of the stage's requests.
    pub latency: Histogram<u64>,
    /// Their outcomes.
    pub counts: OutcomeCounts,
}

impl Default for StageTotals {
    fn default() -> Self {
        Self { latency: new_histogram(), counts: OutcomeCounts::default() }
    }
}

impl StageTotals {
    /// Adds another worker's figures for the same stage.
    pub fn merge(&mut self, other: &StageTotals) {
        self.latency.add(&other.latency).ok();
        self.counts.merge(&other.counts);
    }
}

/// A worker's recorder. Not shared between threads; merged at the end.
#[derive(Debug)]
pub struct Recorder {
    /// What this worker measured, per call of the workload (in the workload's order).
    pub calls: Vec<Totals>,
    /// Open loop: requests due in the run that were never sent (no call was chosen for them).
    /// Open loop: measured requests taken late with every allowed connection busy (added to
    /// the first call's [`Totals::late_at_cap`] when the record is built).
    pub late_at_cap: u64,
    /// Open loop: measured tickets never sent (the run was cut off first).
    pub unsent: u64,
    /// With batches: HTTP requests that completed (outcomes count calls).
    pub exchanges: u64,
    /// What the transport saw of its connections (opened, GOAWAYs, the server's stream limit).
    pub wire: crate::transport::WireStats,
    /// Why connections could not be opened: a count and the first message per kind.
    pub connect_causes: crate::connect_causes::ConnectCauses,
    /// The rate-limit headers the measured answers carried.
    pub rate_headers: crate::ratelimit::headers::RateHeaderSummary,
    /// Pauses after rate-limited answers (`--on-rate-limit`) and the time spent in them.
    pub rate_pauses: u64,
    /// The time spent in those pauses.
    pub rate_paused: Duration,
    /// With more than one stage: figures per stage, by the stage a request was due in.
    pub stages: Vec<StageTotals>,
    /// Phase timings of successful responses (`[0]`) and of the others (`[1]`).
    pub phases: [PhaseTotals; 2],
    /// CPU and wall time of the worker thread.
    pub usage: ThreadUsage,
    /// The ticks of the interval being counted, `[start, end)`: one tick, or a second once the
    /// series counts in seconds (the recorder learns which when it flushes).
    interval_start: u64,
    interval_end: u64,
    /// How many ticks the series' open intervals span, as of the last flush.
    interval_ticks: u64,
    interval_requests: u64,
    interval_errors: u64,
    interval_latency: Histogram<u64>,
    series: Arc<Mutex<Series>>,
}

/// A request sent later than this after its intended time counts as late.
pub const LATE_THRESHOLD: Duration = Duration::from_millis(2);

/// The timing of one request.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// The series tick the response completed in: [`tick_of`] the time since measurement
    /// started.
    pub done_tick: u64,
    /// From the intended send time to completion (equals `actual` in closed loop).
    pub corrected: Duration,
    /// From the actual send to completion.
    pub actual: Duration,
    /// From the intended send time to the actual send (zero in closed loop).
    pub lag: Option<Duration>,
}

impl Recorder {
    /// A recorder for a workload of `calls` calls that flushes its figures of each interval
    /// (a tick, or a second once the run has lasted 3 s) into `series`.
    pub fn new(calls: usize, series: Arc<Mutex<Series>>) -> Self {
        Self {
            calls: (0..calls.max(1)).map(|_| Totals::default()).collect(),
            unsent: 0,
            late_at_cap: 0,
            exchanges: 0,
            wire: crate::transport::WireStats::default(),
            connect_causes: Default::default(),
            rate_headers: Default::default(),
            rate_pauses: 0,
            rate_paused: Duration::ZERO,
            stages: Vec::new(),
            phases: Default::default(),
            usage: ThreadUsage::default(),
            interval_start: 0,
            interval_end: 0,
            interval_ticks: 1,
            interval_requests: 0,
            interval_errors: 0,
            interval_latency: new_coarse_histogram(),
            series,
        }
    }

    /// Keeps figures for `stages` stages too (none for a run of one stage).
    pub fn with_stages(mut self, stages: usize) -> Self {
        self.stages = (0..stages).map(|_| StageTotals::default()).collect();
        self
    }

    /// Records where a request's time went.
    pub fn record_phases(&mut self, ok: bool, phases: Phases) {
        let totals = &mut self.phases[usize::from(!ok)];
        if let Some(connect) = phases.connect {
            record_us(&mut totals.connect, micros(connect));
        }
        record_us(&mut totals.send, micros(phases.send));
        record_us(&mut totals.wait, micros(phases.wait));
        record_us(&mut totals.receive, micros(phases.receive));
    }

    /// Records one request in its stage's figures.
    pub fn record_stage(&mut self, stage: usize, outcome: Outcome, corrected: Duration) {
        let Some(totals) = self.stages.get_mut(stage) else { return };
        totals.counts.add(outcome, || None);
        if !matches!(outcome, Outcome::Connect | Outcome::Unfinished) {
            record_us(&mut totals.latency, micros(corrected));
        }
    }

    /// Records one request. Latency is recorded for every outcome but a failed connect (no
    /// request was sent).
    pub fn record(
        &mut self,
        call: usize,
        outcome: Outcome,
        timing: Timing,
        message: impl FnOnce() -> Option<String>,
    ) {
        // Two comparisons per request; the division is the tick's, done once by the caller.
        if timing.done_tick < self.interval_start || timing.done_tick >= self.interval_end {
            self.next_interval(timing.done_tick);
        }
        self.interval_requests += 1;
        let totals = &mut self.calls[call];
        totals.counts.add(outcome, message);
        if !outcome.is_ok() {
            self.interval_errors += 1;
        }
        if let Some(lag) = timing.lag {
            record_us(&mut totals.send_lag, micros(lag));
            if lag > LATE_THRESHOLD {
                totals.late += 1;
            }
        }
        if outcome == Outcome::Connect {
            return;
        }
        let corrected = micros(timing.corrected);
        record_us(&mut totals.latency, corrected);
        // In closed loop the uncorrected latency is the corrected one; `RunRecord::new` copies it.
        if timing.lag.is_some() {
            record_us(&mut totals.latency_uncorrected, micros(timing.actual));
        }
        record_us(&mut self.interval_latency, corrected);
        if outcome.is_ok() {
            record_us(&mut totals.latency_ok, corrected);
        }
    }

    /// Counts a call the run cut off after it was sent: no latency (it never completed).
    pub fn record_unfinished(&mut self, call: usize) {
        self.calls[call].counts.add(Outcome::Unfinished, || None);
    }

    /// Counts the HTTP status of a response.
    pub fn record_status(&mut self, call: usize, status: u16) {
        *self.calls[call].status_counts.entry(status).or_default() += 1;
    }

    /// Flushes the interval being counted and starts counting the one `tick` falls in.
    #[cold]
    fn next_interval(&mut self, tick: u64) {
        self.flush_interval();
        self.interval_start = tick - tick % self.interval_ticks;
        self.interval_end = self.interval_start.saturating_add(self.interval_ticks);
    }

    /// Sends the figures of the interval being counted to the shared series, and learns the
    /// width of the series' intervals.
    pub fn flush_interval(&mut self) {
        if self.interval_requests == 0 {
            return;
        }
        if let Ok(mut series) = self.series.lock() {
            series.add(
                self.interval_start,
                self.interval_requests,
                self.interval_errors,
                &self.interval_latency,
            );
            self.interval_ticks = series.open_ticks();
        }
        self.interval_requests = 0;
        self.interval_errors = 0;
        self.interval_latency.reset();
    }

    /// Adds another worker's recorder into this one (series figures go to the shared series).
    pub fn merge(&mut self, other: &mut Recorder) {
        other.flush_interval();
        for (ours, theirs) in self.calls.iter_mut().zip(&other.calls) {
            ours.merge(theirs);
        }
        if self.stages.len() < other.stages.len() {
            self.stages.resize_with(other.stages.len(), StageTotals::default);
        }
        for (ours, theirs) in self.stages.iter_mut().zip(&other.stages) {
            ours.merge(theirs);
        }
        for (ours, theirs) in self.phases.iter_mut().zip(&other.phases) {
            ours.merge(theirs);
        }
        self.usage.merge(&other.usage);
        self.unsent += other.unsent;
        self.late_at_cap += other.late_at_cap;
        self.exchanges += other.exchanges;
        self.wire.merge(&other.wire);
        self.connect_causes.merge(&other.connect_causes);
        self.rate_headers.merge(&other.rate_headers);
        self.rate_pauses += other.rate_pauses;
        self.rate_paused += other.rate_paused;
    }
}

/// Everything a finished run measured.
#[derive(Debug)]
pub struct RunRecord {
    /// Histograms, counts, bytes and pacing figures of the whole run.
    pub totals: Totals,
    /// The same per call of the workload, in the workload's order.
    pub calls: Vec<CallTotals>,
    /// With more than one stage: latency and outcomes per stage.
    pub stages: Vec<StageTotals>,
    /// Phase timings of successful responses (`[0]`) and of the others (`[1]`).
    pub phases: [PhaseTotals; 2],
    /// Measured time: from the end of warmup to the last completion.
    pub elapsed: Duration,
    /// Width of one series point, milliseconds: 100 for a run shorter than
    /// [`FINE_SERIES_BELOW`], else 1000 (or a multiple, when the run was very long).
    pub series_interval_ms: u64,
    /// The per-interval series.
    pub series: Vec<SeriesPoint>,
    /// The run was stopped early (Ctrl-C).
    pub interrupted: bool,
    /// What the generator itself used.
    pub generator: GeneratorUsage,
    /// With batches: the HTTP requests that completed (outcomes count calls); 0 otherwise.
    pub exchanges: u64,
    /// What the transport saw of its connections (opened, GOAWAYs, the server's stream limit).
    pub wire: crate::transport::WireStats,
    /// Why connections could not be opened: a count and the first message per kind.
    pub connect_causes: crate::connect_causes::ConnectCauses,
    /// The rate-limit headers the measured answers carried.
    pub rate_headers: crate::ratelimit::headers::RateHeaderSummary,
    /// Pauses after rate-limited answers (`--on-rate-limit`) and the time spent in them.
    pub rate_pauses: u64,
    /// The time spent in those pauses.
    pub rate_paused: Duration,
    /// How late the run started after the instant it was asked to start at (`--start-at`).
    pub late_start: Duration,
    /// Each series point's latency histogram, serialized (empty for an interval without
    /// responses, or none at all from older files).
    pub series_latency: Vec<Vec<u8>>,
}

/// What the generator itself used during a run, to tell a saturated tool from a slow target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GeneratorUsage {
    /// CPU and wall time of the worker threads.
    pub workers: ThreadUsage,
    /// Peak resident memory of the process, bytes (Linux only).
    pub peak_rss_bytes: Option<u64>,
}

/// One call's figures.
#[derive(Debug)]
pub struct CallTotals {
    /// The call's label.
    pub name: String,
    /// Its JSON-RPC method.
    pub method: String,
    /// What it measured.
    pub totals: Totals,
}

impl RunRecord {
    /// Builds the record from the merged recorder and the series. `calls` names the
    /// recorder's calls (label, method) in order.
    pub fn new(merged: Recorder, calls: &[(String, String)], elapsed: Duration, interrupted: bool) -> Self {
        let series = std::mem::take(&mut *merged.series.lock().unwrap_or_else(|poison| poison.into_inner()));
        let (series_interval_ms, series, series_latency) = series.finish_with_latencies(elapsed);
        // Unsent requests never had a call picked for them; they are counted under the first
        // call so that the calls always add up to the whole run.
        let mut merged = merged;
        if let Some(first) = merged.calls.first_mut() {
            first.unsent += merged.unsent;
            first.late_at_cap += merged.late_at_cap;
        }
        for call in &mut merged.calls {
            // Closed loop sends when it intends to: no send lag was recorded, and the
            // uncorrected latency is the latency itself (recorded once, copied here).
            if call.send_lag.is_empty() && call.latency_uncorrected.is_empty() {
                call.latency_uncorrected = call.latency.clone();
            }
        }
        let mut totals = Totals::default();
        for call in &merged.calls {
            totals.merge(call);
        }
        let calls = merged
            .calls
            .into_iter()
            .zip(calls)
            .map(|(totals, (name, method))| CallTotals { name: name.clone(), method: method.clone(), totals })
            .collect();
        let generator = GeneratorUsage { workers: merged.usage, peak_rss_bytes: usage::peak_rss_bytes() };
        Self {
            totals,
            calls,
            generator,
            stages: merged.stages,
            phases: merged.phases,
            elapsed,
            series_interval_ms,
            series,
            interrupted,
            exchanges: merged.exchanges,
            wire: merged.wire,
            connect_causes: merged.connect_causes,
            rate_headers: merged.rate_headers,
            rate_pauses: merged.rate_pauses,
            rate_paused: merged.rate_paused,
            late_start: Duration::ZERO,
            series_latency,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(tick: u64, micros: u64) -> Timing {
        let d = Duration::from_micros(micros);
        Timing { done_tick: tick, corrected: d, actual: d, lag: None }
    }

    /// The first tick of second `second`.
    fn at_second(second: u64) -> u64 {
        second * TICKS_PER_SECOND
    }

    #[test]
    fn recorders_merge_counts_and_histograms() {
        let series = Arc::new(Mutex::new(Series::default()));
        let mut a = Recorder::new(1, series.clone());
        let mut b = Recorder::new(1, series.clone());
        a.record(0, Outcome::Ok, timing(at_second(0), 100), || None);
        a.record(0, Outcome::RpcError(-32000), timing(at_second(0) + 3, 200), || Some("first".into()));
        b.record(0, Outcome::RpcError(-32000), timing(at_second(1), 300), || Some("second".into()));
        b.record(0, Outcome::Connect, timing(at_second(1) + 9, 5), || None);
        b.record(0, Outcome::HttpStatus(429), timing(at_second(2), 400), || None);
        a.merge(&mut b);
        drop(b);
        assert_eq!(a.calls[0].counts.ok, 1);
        assert_eq!(a.calls[0].counts.rpc_errors[&-32000].count, 2);
        assert_eq!(a.calls[0].counts.rpc_errors[&-32000].first_message.as_deref(), Some("first"));
        assert_eq!(a.calls[0].counts.http_errors[&429], 1);
        assert_eq!(a.calls[0].counts.connect, 1);
        assert_eq!(a.calls[0].counts.total(), 5);
        assert_eq!(a.calls[0].counts.errors(), 4);
        // The failed connect has no latency.
        assert_eq!(a.calls[0].latency.len(), 4);
        assert_eq!(a.calls[0].latency_ok.len(), 1);
        a.flush_interval();
        let record = RunRecord::new(a, &[("m".into(), "m".into())], Duration::from_secs(3), false);
        // A run of 3 s is given in whole seconds.
        assert_eq!(record.series_interval_ms, 1000);
        let requests: Vec<u64> = record.series.iter().map(|p| p.requests).collect();
        assert_eq!(requests, vec![2, 2, 1]);
        let errors: Vec<u64> = record.series.iter().map(|p| p.errors).collect();
        assert_eq!(errors, vec![1, 2, 1]);
        let starts: Vec<u64> = record.series.iter().map(|p| p.start_ms).collect();
        assert_eq!(starts, vec![0, 1000, 2000]);
    }

    #[test]
    fn a_recorder_counts_whole_seconds_once_the_run_has_lasted_three_seconds() {
        let series = Arc::new(Mutex::new(Series::default()));
        let mut recorder = Recorder::new(1, series.clone());
        for tick in 0..=45 {
            recorder.record(0, Outcome::Ok, timing(tick, 1_000 + tick), || None);
            recorder.record(0, Outcome::Timeout, timing(tick, 5_000), || None);
        }
        // Before 3 s it flushes every tick; after, every second (ten times fewer flushes).
        assert_eq!(recorder.interval_ticks, TICKS_PER_SECOND);
        assert_eq!((recorder.interval_start, recorder.interval_end), (40, 50));
        recorder.flush_interval();
        let record =
            RunRecord::new(recorder, &[("m".into(), "m".into())], Duration::from_millis(4_600), false);
        assert_eq!(record.series_interval_ms, 1000);
        let requests: Vec<u64> = record.series.iter().map(|p| p.requests).collect();
        assert_eq!(requests, vec![20, 20, 20, 20, 12]);
        let errors: Vec<u64> = record.series.iter().map(|p| p.errors).collect();
        assert_eq!(errors, vec![10, 10, 10, 10, 6]);
    }

    #[test]
    fn ticks_are_tenths_of_a_second_since_the_start() {
        assert_eq!(tick_of(Duration::ZERO), 0);
        assert_eq!(tick_of(Duration::from_micros(99_999)), 0);
        assert_eq!(tick_of(SERIES_TICK), 1);
        assert_eq!(tick_of(Duration::from_millis(1_550)), 15);
        assert_eq!(tick_of(Duration::from_secs(3_600)), 36_000);
    }

    #[test]
    fn runs_under_three_seconds_keep_their_100ms_points() {
        let mut series = Series::default();
        let mut histogram = new_coarse_histogram();
        histogram.record(2_000).unwrap();
        for tick in 0..15 {
            series.add(tick, tick + 1, 0, &histogram);
        }
        let (interval, points) = series.finish(Duration::from_millis(1_530));
        assert_eq!(interval, 100);
        assert_eq!(points.len(), 15);
        assert_eq!(
            points.iter().map(|p| p.start_ms).collect::<Vec<_>>(),
            (0..15).map(|t| t * 100).collect::<Vec<_>>()
        );
        assert_eq!(points.iter().map(|p| p.requests).collect::<Vec<_>>(), (1..=15).collect::<Vec<_>>());
        assert_eq!(points[7].p99_us, histogram.value_at_quantile(0.99));
        // A run of 2.95 s still does; one of 3 s does not.
        let (interval, _) = Series::default().finish(Duration::from_millis(2_950));
        assert_eq!(interval, 100);
        let (interval, _) = Series::default().finish(FINE_SERIES_BELOW);
        assert_eq!(interval, 1000);
    }

    #[test]
    fn seconds_merged_from_ticks_have_the_percentiles_of_all_their_ticks() {
        let mut series = Series::default();
        let mut all = new_coarse_histogram();
        for tick in 0..40 {
            let mut histogram = new_coarse_histogram();
            // Each tick has its own latencies: a second's p99 is none of its ticks' own.
            for value in 0..50 {
                histogram.record(100 + tick * 37 + value * (tick % 7 + 1) * 11).unwrap();
            }
            all.add(&histogram).unwrap();
            series.add(tick, 50, tick % 2, &histogram);
        }
        let (interval, points, latencies) = series.finish_with_latencies(Duration::from_secs(4));
        assert_eq!(interval, 1000);
        assert_eq!(points.len(), 4);
        assert_eq!(points.iter().map(|p| p.requests).collect::<Vec<_>>(), vec![500; 4]);
        assert_eq!(points.iter().map(|p| p.errors).collect::<Vec<_>>(), vec![5; 4]);
        let mut sum = new_coarse_histogram();
        for bytes in &latencies {
            sum.add(deserialize_histogram(bytes).unwrap()).unwrap();
        }
        assert_eq!(sum, all, "the seconds' histograms add up to every tick's");
        let mut first = new_coarse_histogram();
        for tick in 0..10 {
            for value in 0..50 {
                first.record(100 + tick * 37 + value * (tick % 7 + 1) * 11).unwrap();
            }
        }
        assert_eq!(
            (points[0].p50_us, points[0].p99_us),
            (first.value_at_quantile(0.5), first.value_at_quantile(0.99))
        );
    }

    #[test]
    fn the_open_window_is_three_seconds_not_three_ticks() {
        let mut series = Series::default();
        let histogram = new_coarse_histogram();
        series.add(0, 1, 0, &histogram);
        series.add(15, 1, 0, &histogram);
        series.add(29, 1, 0, &histogram);
        assert!(series.open.contains_key(&0), "a tick stays open for 3 s of later flushes");
        assert!(series.points.is_empty());
        // At 3 s the run is one of whole seconds; second 0 has had its 3 s.
        series.add(30, 1, 0, &histogram);
        assert_eq!(series.interval_ms, 1000);
        assert_eq!(series.points.len(), 1);
        assert_eq!((series.points[0].start_ms, series.points[0].requests), (0, 1));
        assert_eq!(series.open.keys().copied().collect::<Vec<_>>(), vec![1000, 2000, 3000]);
        // Seconds close 3 s after they start too.
        series.add(39, 1, 0, &histogram);
        assert_eq!(series.points.len(), 1, "second 1 is open until 4 s");
        series.add(40, 1, 0, &histogram);
        assert_eq!(series.points.len(), 2);
    }

    #[test]
    fn the_series_stays_bounded_on_long_runs() {
        let histogram = new_histogram();
        // 100 ms points past the cap merge into seconds, even in a run under 3 s.
        let mut series = Series::with_max_points(8);
        for tick in 0..26 {
            series.add(tick, 10, 1, &histogram);
        }
        assert!(series.open.len() <= 26);
        let (interval, points) = series.finish(Duration::from_millis(2_600));
        assert_eq!((interval, points.len()), (1000, 3));
        assert_eq!(points.iter().map(|p| p.requests).sum::<u64>(), 260);
        // A long run: seconds, merged in pairs past the cap.
        let max_points = 64;
        let mut series = Series::with_max_points(max_points);
        let seconds = max_points as u64 * 3;
        for tick in 0..at_second(seconds) {
            series.add(tick, 1, 0, &histogram);
            assert!(series.points.len() <= max_points);
            assert!(series.open.len() <= 31, "3 s of ticks or seconds are open at most");
        }
        let (interval, points) = series.finish(Duration::from_secs(seconds));
        assert_eq!(interval, 4000);
        assert_eq!(points.iter().map(|p| p.requests).sum::<u64>(), seconds * 10);
        assert_eq!(points.len() as u64, seconds / 4);
    }

    #[test]
    fn empty_seconds_are_filled_in() {
        let mut series = Series::default();
        let mut histogram = new_coarse_histogram();
        histogram.record(1000).unwrap();
        series.add(at_second(2) + 4, 5, 0, &histogram);
        let (_, points) = series.finish(Duration::from_secs(4));
        let requests: Vec<u64> = points.iter().map(|p| p.requests).collect();
        assert_eq!(requests, vec![0, 0, 5, 0]);
        // Per-interval percentiles are coarse: 2 significant digits (1,000 reads as 1,003).
        assert_eq!(points[2].p50_us, 1003);
    }

    #[test]
    fn histograms_grow_to_the_largest_value_and_clamp_at_an_hour() {
        let mut recorder = Recorder::new(1, Arc::new(Mutex::new(Series::default())));
        let small = recorder.calls[0].latency.distinct_values();
        recorder.record(0, Outcome::Ok, timing(0, 800), || None);
        let after_800us = recorder.calls[0].latency.distinct_values();
        recorder.record(0, Outcome::Ok, timing(0, 5_000_000_000_000), || None);
        let latency = &recorder.calls[0].latency;
        // Memory follows the values seen (a few KB below 1 ms), bounded by the hour clamp.
        assert!(
            small <= after_800us && after_800us * 8 < latency.distinct_values(),
            "{small} {after_800us} {}",
            latency.distinct_values()
        );
        assert_eq!(latency.max(), latency.highest_equivalent(MAX_TRACKABLE_US));
        assert_eq!(latency.len(), 2);
        let full = Histogram::<u64>::new_with_bounds(1, MAX_TRACKABLE_US, SIGNIFICANT_DIGITS).unwrap();
        assert!(latency.distinct_values() <= full.distinct_values());
        // Coarse histograms hold the same values in an eighth of the counters.
        let mut coarse = new_coarse_histogram();
        coarse.record(MAX_TRACKABLE_US).unwrap();
        assert!(coarse.distinct_values() * 6 < latency.distinct_values());
    }
}
