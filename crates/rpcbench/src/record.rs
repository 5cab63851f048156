//! What a run records: HDR latency histograms, a count per outcome class, bytes, pacing
//! figures, and a per-second series. Each worker owns a [`Recorder`]; recorders merge into one
//! [`RunRecord`] at the end. Memory does not grow with the length of a run: histograms have a
//! bounded range (they grow to the largest latency seen, at most an hour), and the per-second
//! series halves its resolution when it gets long.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::engine::usage::{self, ThreadUsage};
use crate::outcome::Outcome;
pub use crate::outcome::OutcomeCounts;

/// Latencies are recorded in microseconds with 3 significant digits.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// Phase and per-second histograms keep 2 significant digits: a phase percentile or a
/// second's p50/p99 is within 1% of the value, at an eighth of the memory.
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

/// Like [`new_histogram`], with [`COARSE_SIGNIFICANT_DIGITS`]: for phase and per-second
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

/// One second (or, after the series was compacted, one interval) of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeriesPoint {
    /// Seconds from the start of measurement to the start of this interval.
    pub second: u64,
    /// Responses completed in the interval.
    pub requests: u64,
    /// Of which errors.
    pub errors: u64,
    /// Median latency of the interval, microseconds (0 when no requests).
    pub p50_us: u64,
    /// 99th percentile latency of the interval, microseconds.
    pub p99_us: u64,
}

/// A per-second series of bounded size, fed by workers once a second.
#[derive(Debug)]
pub struct Series {
    max_points: usize,
    interval_secs: u64,
    points: Vec<SeriesPoint>,
    /// Each point's latency histogram (coarse), V2-serialized: a few hundred bytes a point, so
    /// that merged shards' intervals get exact percentiles.
    latencies: Vec<Vec<u8>>,
    /// Seconds still receiving flushes from workers.
    open: BTreeMap<u64, OpenSecond>,
    completed: u64,
    errors: u64,
}

#[derive(Debug)]
struct OpenSecond {
    requests: u64,
    errors: u64,
    /// Coarse: only p50 and p99 are read from it.
    latency: Histogram<u64>,
}

/// The series keeps at most this many points; past it, neighbours merge in pairs.
const MAX_SERIES_POINTS: usize = 4096;
/// A second is closed once flushes for a second this much later have arrived.
const OPEN_SECONDS: u64 = 3;

impl Default for Series {
    fn default() -> Self {
        Self::with_max_points(MAX_SERIES_POINTS)
    }
}

impl Series {
    /// A series that keeps at most `max_points` points.
    pub fn with_max_points(max_points: usize) -> Self {
        Self {
            max_points,
            interval_secs: 1,
            points: Vec::new(),
            latencies: Vec::new(),
            open: BTreeMap::new(),
            completed: 0,
            errors: 0,
        }
    }

    /// Adds a worker's figures for one second.
    pub fn add(&mut self, second: u64, requests: u64, errors: u64, latency: &Histogram<u64>) {
        self.completed += requests;
        self.errors += errors;
        let open = self.open.entry(second).or_insert_with(|| OpenSecond {
            requests: 0,
            errors: 0,
            latency: new_coarse_histogram(),
        });
        open.requests += requests;
        open.errors += errors;
        open.latency.add(latency).ok();
        while let Some((&oldest, _)) = self.open.first_key_value() {
            if oldest + OPEN_SECONDS > second {
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
        let Some((second, open)) = self.open.pop_first() else {
            return;
        };
        let point = SeriesPoint {
            second,
            requests: open.requests,
            errors: open.errors,
            p50_us: open.latency.value_at_quantile(0.5),
            p99_us: open.latency.value_at_quantile(0.99),
        };
        self.push(point, serialize_histogram(&open.latency));
    }

    fn push(&mut self, point: SeriesPoint, latency: Vec<u8>) {
        let slot = point.second / self.interval_secs;
        match (self.points.last_mut(), self.latencies.last_mut()) {
            (Some(last), Some(last_latency)) if last.second / self.interval_secs == slot => {
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
                point.second = slot * self.interval_secs;
                self.points.push(point);
                self.latencies.push(latency);
            }
        }
        if self.points.len() > self.max_points {
            self.interval_secs *= 2;
            let old = std::mem::take(&mut self.points);
            let old_latencies = std::mem::take(&mut self.latencies);
            for (point, latency) in old.into_iter().zip(old_latencies) {
                self.push(point, latency);
            }
        }
    }

    /// Closes every open second and returns the series, with empty seconds filled in up to
    /// `length` of measured time.
    pub fn finish(self, length: Duration) -> (u64, Vec<SeriesPoint>) {
        let (interval, points, _) = self.finish_with_latencies(length);
        (interval, points)
    }

    /// [`Series::finish`] with each point's serialized latency histogram (empty for an
    /// interval without responses).
    pub fn finish_with_latencies(mut self, length: Duration) -> (u64, Vec<SeriesPoint>, Vec<Vec<u8>>) {
        while !self.open.is_empty() {
            self.close_oldest();
        }
        let interval = self.interval_secs;
        let slots = length.as_secs().div_ceil(interval).max(1);
        let mut filled = Vec::with_capacity(slots as usize);
        let mut latencies = Vec::with_capacity(slots as usize);
        let mut points = self.points.into_iter().zip(self.latencies).peekable();
        for slot in 0..slots {
            let second = slot * interval;
            match points.peek() {
                Some((point, _)) if point.second == second => {
                    let (point, latency) = points.next().unwrap_or_default();
                    filled.push(point);
                    latencies.push(latency);
                }
                _ => {
                    filled.push(SeriesPoint { second, ..SeriesPoint::default() });
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
    pub unsent: u64,
    /// With batches: HTTP requests that completed (outcomes count calls).
    pub exchanges: u64,
    /// What the transport saw of its connections (opened, GOAWAYs, the server's stream limit).
    pub wire: crate::transport::WireStats,
    /// With more than one stage: figures per stage, by the stage a request was due in.
    pub stages: Vec<StageTotals>,
    /// Phase timings of successful responses (`[0]`) and of the others (`[1]`).
    pub phases: [PhaseTotals; 2],
    /// CPU and wall time of the worker thread.
    pub usage: ThreadUsage,
    second: u64,
    second_requests: u64,
    second_errors: u64,
    second_latency: Histogram<u64>,
    series: Arc<Mutex<Series>>,
}

/// A request sent later than this after its intended time counts as late.
pub const LATE_THRESHOLD: Duration = Duration::from_millis(2);

/// The timing of one request.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Seconds since measurement started when the response completed.
    pub done_second: u64,
    /// From the intended send time to completion (equals `actual` in closed loop).
    pub corrected: Duration,
    /// From the actual send to completion.
    pub actual: Duration,
    /// From the intended send time to the actual send (zero in closed loop).
    pub lag: Option<Duration>,
}

impl Recorder {
    /// A recorder for a workload of `calls` calls that flushes its per-second figures into
    /// `series`.
    pub fn new(calls: usize, series: Arc<Mutex<Series>>) -> Self {
        Self {
            calls: (0..calls.max(1)).map(|_| Totals::default()).collect(),
            unsent: 0,
            exchanges: 0,
            wire: crate::transport::WireStats::default(),
            stages: Vec::new(),
            phases: Default::default(),
            usage: ThreadUsage::default(),
            second: 0,
            second_requests: 0,
            second_errors: 0,
            second_latency: new_coarse_histogram(),
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
        if timing.done_second != self.second {
            self.flush_second();
            self.second = timing.done_second;
        }
        self.second_requests += 1;
        let totals = &mut self.calls[call];
        totals.counts.add(outcome, message);
        if !outcome.is_ok() {
            self.second_errors += 1;
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
        record_us(&mut self.second_latency, corrected);
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

    /// Sends this second's figures to the shared series.
    pub fn flush_second(&mut self) {
        if self.second_requests == 0 {
            return;
        }
        if let Ok(mut series) = self.series.lock() {
            series.add(self.second, self.second_requests, self.second_errors, &self.second_latency);
        }
        self.second_requests = 0;
        self.second_errors = 0;
        self.second_latency.reset();
    }

    /// Adds another worker's recorder into this one (series figures go to the shared series).
    pub fn merge(&mut self, other: &mut Recorder) {
        other.flush_second();
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
        self.exchanges += other.exchanges;
        self.wire.merge(&other.wire);
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
    /// Width of one series point in seconds (1 unless the run was very long).
    pub series_interval_secs: u64,
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
        let (series_interval_secs, series, series_latency) = series.finish_with_latencies(elapsed);
        // Unsent requests never had a call picked for them; they are counted under the first
        // call so that the calls always add up to the whole run.
        let mut merged = merged;
        if let Some(first) = merged.calls.first_mut() {
            first.unsent += merged.unsent;
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
            series_interval_secs,
            series,
            interrupted,
            exchanges: merged.exchanges,
            wire: merged.wire,
            late_start: Duration::ZERO,
            series_latency,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(second: u64, micros: u64) -> Timing {
        let d = Duration::from_micros(micros);
        Timing { done_second: second, corrected: d, actual: d, lag: None }
    }

    #[test]
    fn recorders_merge_counts_and_histograms() {
        let series = Arc::new(Mutex::new(Series::default()));
        let mut a = Recorder::new(1, series.clone());
        let mut b = Recorder::new(1, series.clone());
        a.record(0, Outcome::Ok, timing(0, 100), || None);
        a.record(0, Outcome::RpcError(-32000), timing(0, 200), || Some("first".into()));
        b.record(0, Outcome::RpcError(-32000), timing(1, 300), || Some("second".into()));
        b.record(0, Outcome::Connect, timing(1, 5), || None);
        b.record(0, Outcome::HttpStatus(429), timing(2, 400), || None);
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
        a.flush_second();
        let record = RunRecord::new(a, &[("m".into(), "m".into())], Duration::from_secs(3), false);
        let requests: Vec<u64> = record.series.iter().map(|p| p.requests).collect();
        assert_eq!(requests, vec![2, 2, 1]);
        let errors: Vec<u64> = record.series.iter().map(|p| p.errors).collect();
        assert_eq!(errors, vec![1, 2, 1]);
    }

    #[test]
    fn the_series_stays_bounded_on_long_runs() {
        let max_points = 64;
        let mut series = Series::with_max_points(max_points);
        let histogram = new_histogram();
        let seconds = max_points as u64 * 3;
        for second in 0..seconds {
            series.add(second, 10, 1, &histogram);
        }
        assert!(series.points.len() <= max_points);
        assert!(series.open.len() <= OPEN_SECONDS as usize);
        let (interval, points) = series.finish(Duration::from_secs(seconds));
        assert_eq!(interval, 4);
        assert_eq!(points.iter().map(|p| p.requests).sum::<u64>(), seconds * 10);
        assert_eq!(points.len() as u64, seconds / 4);
    }

    #[test]
    fn empty_seconds_are_filled_in() {
        let mut series = Series::default();
        let mut histogram = new_coarse_histogram();
        histogram.record(1000).unwrap();
        series.add(2, 5, 0, &histogram);
        let (_, points) = series.finish(Duration::from_secs(4));
        let requests: Vec<u64> = points.iter().map(|p| p.requests).collect();
        assert_eq!(requests, vec![0, 0, 5, 0]);
        // Per-second percentiles are coarse: 2 significant digits (1,000 reads as 1,003).
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
