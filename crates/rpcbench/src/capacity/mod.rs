//! Capacity search: the highest request rate a target serves within a service-level objective,
//! or (connections mode, [`SearchMode::Connections`]) the most concurrent connections it serves
//! within it.
//!
//! The search runs open-loop steps (uniform arrivals, each with its own warmup, a cool-down
//! between them) and judges each against the [`Slo`]:
//!
//! 1. Coarse phase: from the start rate, double while steps pass, up to the maximum rate.
//!    If the very first step fails, halve instead until one passes (down to 1 req/s).
//! 2. Bisection between the highest passing rate and the lowest failing rate, until the
//!    bracket is narrower than the precision (relative to the passing rate).
//!
//! The next rate is a pure function of the steps so far ([`next_step`]), tested with tables.
//! A step fails on an SLO breach, or when the generator did not achieve its rate (achieved
//! below 95% of the target, or more than 1% of the due requests never sent). A shortfall is
//! blamed on the generator ([`Verdict::GeneratorLimited`]) when the requests that did go out
//! were served within the SLO measured from their actual send time; otherwise on the target.
//!
//! In connections mode each step is a closed-loop run (every connection sends its next request
//! when the previous one is answered) with that many connections; the search doubles and
//! bisects the same way over whole connection counts ([`next_connections`]), and a step is
//! judged on the SLO alone (a closed loop has no rate to fall short of).
//!
//! The result ([`CapacityReport`]) has every step, the answer (highest passing rate) with its
//! margin to the first failing rate, and the knee: the last rate before p99 more than doubles
//! over the lowest-rate step's p99.

use std::fmt::{self, Write};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::engine::config::{Arrivals, ConfigError, Length, Load, RunConfig};
use crate::engine::{EngineError, Run, StopHandle};
use crate::monitor::{Monitor, ResourceReport};
use crate::record::RunRecord;
use crate::report::{GeneratorReport, LatencyReport, RunReport, PERCENTILES};
use crate::results::{GeneratorData, MethodResults};
use crate::units::percent;
use crate::units::{format_duration, format_micros, parse_duration};

/// A step that sent less than this share of its target rate did not achieve it.
pub const ACHIEVED_MIN: f64 = 0.95;
/// A step that left more than this share of its due requests unsent did not achieve its rate.
pub const UNSENT_MAX: f64 = 0.01;
/// The knee is where p99 first exceeds this multiple of the lowest-rate step's p99.
pub const KNEE_FACTOR: f64 = 2.0;

// ---------------------------------------------------------------------------------------------
// SLO

/// A latency figure an SLO clause can bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyStat {
    /// A percentile by its report name (`p99`).
    Percentile(&'static str),
    /// The largest latency.
    Max,
}

/// What one SLO clause bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SloBound {
    /// The latency figure must stay below the duration.
    Latency(LatencyStat, Duration),
    /// The share of requests that are errors must stay below this percentage.
    ErrorPercent(f64),
}

/// One clause of an SLO, such as `p99<500ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct SloClause {
    /// The clause as written, without spaces.
    pub text: String,
    /// What it bounds.
    pub bound: SloBound,
}

/// A service-level objective: every clause must hold for a step to pass.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// The clauses, in the order written.
    pub clauses: Vec<SloClause>,
}

/// A bad SLO text: where (1-based character position) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SloError {
    /// Character position of the fault in the SLO text, from 1.
    pub position: usize,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for SloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at character {}: {}", self.position, self.message)
    }
}

impl std::error::Error for SloError {}

const SLO_METRICS: &str = "p50, p75, p90, p95, p99, p99.9, p99.99, max or errors";

impl Slo {
    /// Parses comma-separated clauses: `p50|p75|p90|p95|p99|p99.9|p99.99|max < DURATION` and
    /// `errors < PCT%`, for example `p99<500ms, errors<0.1%`.
    pub fn parse(text: &str) -> Result<Slo, SloError> {
        let mut clauses = Vec::new();
        let mut offset = 0;
        for part in text.split(',') {
            clauses.push(parse_clause(text, part, offset)?);
            offset += part.len() + 1;
        }
        Ok(Slo { clauses })
    }

    /// The clauses that do not hold for these figures, each with what was observed.
    pub fn breaches(&self, latency: &LatencyReport, errors: u64, total: u64) -> Vec<Breach> {
        let error_percent = percent(errors, total);
        self.clauses
            .iter()
            .filter_map(|clause| {
                let (observed, limit, unit) = match clause.bound {
                    SloBound::Latency(stat, limit) => {
                        let value = match stat {
                            LatencyStat::Percentile(name) => latency.percentile(name),
                            LatencyStat::Max => latency.max_us,
                        };
                        (value as f64, limit.as_secs_f64() * 1e6, "us")
                    }
                    SloBound::ErrorPercent(limit) => (error_percent, limit, "%"),
                };
                (observed >= limit).then(|| Breach {
                    clause: clause.text.clone(),
                    observed,
                    limit,
                    unit: unit.to_string(),
                })
            })
            .collect()
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let texts: Vec<&str> = self.clauses.iter().map(|c| c.text.as_str()).collect();
        f.write_str(&texts.join(", "))
    }
}

/// Character position (from 1) of byte `offset` in `text`.
fn position(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].chars().count() + 1
}

fn parse_clause(text: &str, part: &str, offset: usize) -> Result<SloClause, SloError> {
    let error = |at: usize, message: String| SloError { position: position(text, at), message };
    let leading = part.len() - part.trim_start().len();
    let body = part.trim();
    let start = offset + leading;
    if body.is_empty() {
        return Err(error(
            start,
            format!("an empty clause (expected {SLO_METRICS} followed by '<' and a limit)"),
        ));
    }
    let Some(less) = body.find('<') else {
        // Point at the comparison that is there (`p99>5ms`, `p99=5ms`), else at the end.
        return Err(match body.find(['>', '=', '!']) {
            Some(at) => error(
                start + at,
                format!(
                    "only '<' is supported: write '{}<{}'",
                    body[..at].trim(),
                    body[at + 1..].trim_start_matches(['=', '>']).trim()
                ),
            ),
            None => error(start + body.len(), format!("expected '<' and a limit after '{body}'")),
        });
    };
    let metric = body[..less].trim();
    let value = body[less + 1..].trim();
    let value_start = start + less + 1 + (body[less + 1..].len() - body[less + 1..].trim_start().len());
    if value.starts_with('=') {
        return Err(error(value_start, "only '<' is supported (the limit itself fails)".into()));
    }
    let bound = if metric.eq_ignore_ascii_case("errors") {
        let Some(number) = value.strip_suffix('%') else {
            return Err(error(
                value_start,
                format!("expected a percentage such as 0.1% after 'errors<', got '{value}'"),
            ));
        };
        match number.trim().parse::<f64>() {
            Ok(limit) if limit.is_finite() && limit > 0.0 && limit <= 100.0 => SloBound::ErrorPercent(limit),
            _ => {
                return Err(error(
                    value_start,
                    format!("'{value}' is not a percentage above 0% and at most 100%"),
                ))
            }
        }
    } else {
        let stat = if metric.eq_ignore_ascii_case("max") {
            LatencyStat::Max
        } else {
            let name = metric.to_ascii_lowercase();
            match PERCENTILES.iter().find(|(known, _)| *known == name) {
                Some((known, _)) => LatencyStat::Percentile(known),
                None => {
                    let message = if metric.is_empty() {
                        format!("expected {SLO_METRICS} before '<'")
                    } else {
                        format!("unknown figure '{metric}' (expected {SLO_METRICS})")
                    };
                    return Err(error(start, message));
                }
            }
        };
        match parse_duration(value) {
            Ok(limit) if !limit.is_zero() => SloBound::Latency(stat, limit),
            Ok(_) => return Err(error(value_start, "the latency limit must be longer than zero".into())),
            Err(err) => return Err(error(value_start, err.to_string())),
        }
    };
    let text: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    Ok(SloClause { text, bound })
}

/// The pseudo-clause a step breaches when no response at all was a success.
pub const NO_SUCCESS: &str = "successes>0";

/// A clause that did not hold, and by how much.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breach {
    /// The clause, such as `p99<50ms`.
    pub clause: String,
    /// What the step measured: microseconds or percent.
    pub observed: f64,
    /// The clause's limit, in the same unit.
    pub limit: f64,
    /// `us` or `%`.
    pub unit: String,
}

impl Breach {
    /// `p99 812.00ms >= 50ms (16.2x)`.
    pub fn describe(&self) -> String {
        let name = self.clause.split('<').next().unwrap_or("");
        let ratio = if self.limit > 0.0 { self.observed / self.limit } else { f64::INFINITY };
        if self.clause == NO_SUCCESS {
            "no successful response".to_string()
        } else if self.unit == "%" {
            format!("{name} {:.2}% >= {}% ({ratio:.1}x)", self.observed, trim(self.limit))
        } else {
            format!("{name} {} >= {} ({ratio:.1}x)", format_micros(self.observed), format_micros(self.limit))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Judging a step

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Within the SLO at the target rate.
    Pass,
    /// The target breached the SLO.
    SloBreach,
    /// The generator did not achieve the rate while the target served what was sent within the
    /// SLO: the search cannot tell what the target would do at this rate.
    GeneratorLimited,
    /// Like [`Verdict::GeneratorLimited`], but what held the requests back was the connection
    /// cap: they were due while every allowed connection was busy (the target held each one
    /// that long), not the generator's CPU.
    ConnectionCap,
    /// Stopped before the end (Ctrl-C); not used by the search.
    Interrupted,
}

impl Verdict {
    /// Whether the step counts as passing.
    pub fn passed(self) -> bool {
        self == Verdict::Pass
    }
}

/// The figures of one step a verdict depends on.
#[derive(Debug, Clone, PartialEq)]
pub struct StepFigures {
    /// The rate asked for, requests per second.
    pub target_rate: f64,
    /// Measured length of the step.
    pub duration: Duration,
    /// Requests sent in the measured time (every one with an outcome).
    pub requests: u64,
    /// Of which errors.
    pub errors: u64,
    /// Requests due in the measured time that were never sent.
    pub unsent: u64,
    /// Mean of how late requests were sent after their intended time, microseconds.
    pub send_lag_mean_us: u64,
    /// Requests sent more than 2 ms after their intended time.
    pub late: u64,
    /// Of those, the ones due while every allowed connection was busy.
    pub late_at_cap: u64,
    /// Latency from the intended send time.
    pub latency: LatencyReport,
    /// Latency from the actual send time.
    pub latency_uncorrected: LatencyReport,
}

impl StepFigures {
    /// The figures of a finished step's report.
    pub fn from_report(target_rate: f64, duration: Duration, report: &RunReport) -> Self {
        Self {
            target_rate,
            duration,
            requests: report.requests.total,
            errors: report.requests.errors,
            unsent: report.requests.unsent.unwrap_or(0),
            send_lag_mean_us: report.send_lag.as_ref().map(|lag| lag.mean_us).unwrap_or(0),
            late: report.requests.late.unwrap_or(0),
            late_at_cap: report.requests.late_at_cap.unwrap_or(0),
            latency: report.latency.clone(),
            latency_uncorrected: report.latency_uncorrected.clone(),
        }
    }

    /// The rate the generator kept up: requests sent, over the step's length plus how far the
    /// sends slipped behind schedule by the end. Requests due in the step but sent late are
    /// still sent (open loop never drops them), so a count alone would hide the slip. A
    /// generator falling steadily behind slips from 0 to twice its mean send lag, which is the
    /// slip counted; a short stall it catches up on hardly moves the mean. The time responses
    /// take to come back does not count against the generator.
    pub fn achieved_rate(&self) -> f64 {
        let seconds = crate::report::measured_seconds(self.duration, self.send_lag_mean_us);
        if seconds > 0.0 {
            self.requests as f64 / seconds
        } else {
            0.0
        }
    }

    /// Whether the generator fell short of the target rate.
    pub fn shortfall(&self) -> bool {
        let due = self.requests + self.unsent;
        self.requests == 0
            || self.achieved_rate() < ACHIEVED_MIN * self.target_rate
            || self.unsent as f64 > UNSENT_MAX * due as f64
    }

    /// Whether the connection cap, not the generator, held the sends back: most late requests
    /// were due while every allowed connection was busy.
    pub fn at_connection_cap(&self) -> bool {
        self.late > 0 && self.late_at_cap * 2 >= self.late
    }

    /// The verdict of a closed-loop step (connections mode), which has no rate to fall short
    /// of: a pass, or an SLO breach (also when no response at all was a success).
    pub fn judge_closed(&self, slo: &Slo) -> (Verdict, Vec<Breach>) {
        let mut breaches = slo.breaches(&self.latency, self.errors, self.requests);
        if self.errors == self.requests {
            breaches.push(Breach {
                clause: NO_SUCCESS.into(),
                observed: 0.0,
                limit: 0.0,
                unit: "count".into(),
            });
        }
        let verdict = if breaches.is_empty() { Verdict::Pass } else { Verdict::SloBreach };
        (verdict, breaches)
    }

    /// The verdict and the breached clauses (measured from the intended send time). A step
    /// without a single successful response fails whatever the SLO says (a dead target has no
    /// latency to breach a latency clause).
    pub fn judge(&self, slo: &Slo) -> (Verdict, Vec<Breach>) {
        let mut breaches = slo.breaches(&self.latency, self.errors, self.requests);
        if self.requests > 0 && self.errors == self.requests {
            breaches.push(Breach {
                clause: NO_SUCCESS.into(),
                observed: 0.0,
                limit: 0.0,
                unit: "count".into(),
            });
        }
        let verdict = match (breaches.is_empty(), self.shortfall()) {
            (true, false) => Verdict::Pass,
            (false, false) => Verdict::SloBreach,
            (_, true) => {
                // Was what did go out served within the SLO? Then the tool is to blame.
                let served = slo.breaches(&self.latency_uncorrected, self.errors, self.requests);
                if served.is_empty() && self.requests > self.errors {
                    if self.at_connection_cap() {
                        Verdict::ConnectionCap
                    } else {
                        Verdict::GeneratorLimited
                    }
                } else {
                    Verdict::SloBreach
                }
            }
        };
        (verdict, breaches)
    }
}

// ---------------------------------------------------------------------------------------------
// The search, as a pure function

/// The limits of a search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchBounds {
    /// First rate tried.
    pub start_rate: f64,
    /// Highest rate tried.
    pub max_rate: f64,
    /// Lowest rate tried when even the start rate fails.
    pub min_rate: f64,
    /// Bisection stops when (first fail - highest pass) <= precision x highest pass.
    pub precision: f64,
    /// At most this many steps.
    pub max_steps: usize,
}

impl SearchBounds {
    /// Bounds with the defaults of `rpcbench capacity`.
    pub fn new(start_rate: f64, max_rate: f64, precision: f64) -> Self {
        Self { start_rate, max_rate, min_rate: start_rate.min(1.0), precision, max_steps: 40 }
    }
}

/// What the search does next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NextStep {
    /// Run a step at this rate.
    Run(f64),
    /// The search is over.
    Done,
}

/// The highest passing rate and the lowest failing rate above it.
pub fn bracket(history: &[(f64, bool)]) -> (Option<f64>, Option<f64>) {
    let pass = history.iter().filter(|(_, passed)| *passed).map(|(rate, _)| *rate).reduce(f64::max);
    let fail = history
        .iter()
        .filter(|(rate, passed)| !passed && pass.is_none_or(|pass| *rate > pass))
        .map(|(rate, _)| *rate)
        .reduce(f64::min);
    (pass, fail)
}

/// The next step of the search, given the (rate, passed) of every step so far.
pub fn next_step(bounds: &SearchBounds, history: &[(f64, bool)]) -> NextStep {
    if history.len() >= bounds.max_steps {
        return NextStep::Done;
    }
    match bracket(history) {
        (None, None) => NextStep::Run(bounds.start_rate.min(bounds.max_rate)),
        // Coarse phase up: double until a failure or the maximum.
        (Some(pass), None) => {
            if pass >= bounds.max_rate {
                NextStep::Done
            } else {
                NextStep::Run((pass * 2.0).min(bounds.max_rate))
            }
        }
        // Coarse phase down: the start rate failed; halve until a pass or the minimum.
        (None, Some(fail)) => {
            if fail <= bounds.min_rate {
                NextStep::Done
            } else {
                NextStep::Run(round_rate(fail / 2.0).max(bounds.min_rate))
            }
        }
        (Some(pass), Some(fail)) => {
            if fail - pass <= bounds.precision * pass {
                return NextStep::Done;
            }
            let middle = round_rate((pass + fail) / 2.0);
            if middle <= pass || middle >= fail {
                NextStep::Done
            } else {
                NextStep::Run(middle)
            }
        }
    }
}

/// What a search climbs: the offered rate (open loop) or the connections (closed loop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// Open-loop steps at a rate each: the answer is requests per second.
    #[default]
    Rate,
    /// Closed-loop steps with a number of connections each: the answer is connections.
    Connections,
}

impl SearchMode {
    /// Whether this is the rate search (the default, left out of files).
    pub fn is_rate(&self) -> bool {
        *self == SearchMode::Rate
    }

    /// The unit of a step's level in text: `req/s` or `connections`.
    pub fn unit(self) -> &'static str {
        match self {
            SearchMode::Rate => "req/s",
            SearchMode::Connections => "connections",
        }
    }

    /// `300 req/s`, `48 connections` (`1 connection`).
    pub fn amount(self, level: f64) -> String {
        match self {
            SearchMode::Connections if level == 1.0 => "1 connection".into(),
            _ => format!("{} {}", trim(level), self.unit()),
        }
    }
}

/// The limits of a search over connections.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConnectionBounds {
    /// Connections of the first step.
    pub start: usize,
    /// The most connections tried.
    pub max: usize,
    /// Bisection stops when (first fail - most passing) <= precision x most passing, or the two
    /// are neighbours.
    pub precision: f64,
    /// At most this many steps.
    pub max_steps: usize,
}

impl ConnectionBounds {
    /// Bounds with the defaults of `rpcbench capacity --connections`.
    pub fn new(start: usize, max: usize, precision: f64) -> Self {
        Self { start, max, precision, max_steps: 40 }
    }
}

/// The next step of a search over connections, given the (connections, passed) of every step
/// so far: double from the start while steps pass (up to the maximum), halve from it while they
/// fail (down to one), then bisect over whole counts.
pub fn next_connections(bounds: &ConnectionBounds, history: &[(f64, bool)]) -> NextStep {
    if history.len() >= bounds.max_steps {
        return NextStep::Done;
    }
    let max = bounds.max.max(1) as f64;
    match bracket(history) {
        (None, None) => NextStep::Run((bounds.start.max(1) as f64).min(max)),
        (Some(pass), None) if pass >= max => NextStep::Done,
        (Some(pass), None) => NextStep::Run((pass * 2.0).min(max)),
        (None, Some(fail)) if fail <= 1.0 => NextStep::Done,
        (None, Some(fail)) => NextStep::Run((fail / 2.0).floor().max(1.0)),
        (Some(pass), Some(fail)) => {
            let middle = ((pass + fail) / 2.0).floor();
            if fail - pass <= bounds.precision * pass || middle <= pass {
                NextStep::Done
            } else {
                NextStep::Run(middle)
            }
        }
    }
}

/// Whole requests per second from 10 up, hundredths below.
fn round_rate(rate: f64) -> f64 {
    if rate >= 10.0 {
        rate.round()
    } else {
        (rate * 100.0).round() / 100.0
    }
}

/// The last rate before p99 rises above [`KNEE_FACTOR`] times the lowest-rate step's p99 and
/// stays above it at every faster step, from (rate, p99 in microseconds) of the steps; `None`
/// if p99 never does. A step whose p99 rose while a faster step's did not is noise (a hiccup of
/// the machine or the target), not a knee: the knee must be confirmed by every step above it.
pub fn knee(steps: &[(f64, u64)]) -> Option<f64> {
    let mut sorted = steps.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let baseline = sorted.first()?.1.max(1) as f64;
    let degraded = |p99: u64| p99 as f64 > KNEE_FACTOR * baseline;
    // The first step of the run of degraded steps that reaches the fastest one.
    let first_degraded = sorted.iter().rposition(|&(_, p99)| !degraded(p99))? + 1;
    (first_degraded < sorted.len()).then(|| sorted[first_degraded - 1].0)
}

// ---------------------------------------------------------------------------------------------
// Running it

/// Everything a capacity search needs besides the request.
#[derive(Debug, Clone)]
pub struct CapacitySettings {
    /// The objective.
    pub slo: Slo,
    /// Rates and precision.
    pub bounds: SearchBounds,
    /// Measured length of each step.
    pub step: Duration,
    /// Warmup of each step, sent but not measured.
    pub warmup: Duration,
    /// Pause between steps, so that one step's backlog does not leak into the next.
    pub cooldown: Duration,
    /// The most connections a step opens.
    pub max_connections: usize,
    /// Processes whose resources are sampled during each step.
    pub monitor_pids: Vec<u32>,
    /// What the search climbs: the rate (default) or the connections.
    pub mode: SearchMode,
    /// Connections of the first step and the most tried, in connections mode (the most is
    /// also capped by the open-file limit when the search starts).
    pub connection_bounds: ConnectionBounds,
}

impl CapacitySettings {
    /// Settings with the defaults of `rpcbench capacity` (5 s steps, 1 s warmup, 1 s cool-down,
    /// from 100 req/s up to 1,000,000, 5% precision, 1024 connections).
    pub fn new(slo: Slo) -> Self {
        Self {
            slo,
            bounds: SearchBounds::new(100.0, 1_000_000.0, 0.05),
            step: Duration::from_secs(5),
            warmup: Duration::from_secs(1),
            cooldown: Duration::from_secs(1),
            max_connections: 1024,
            monitor_pids: Vec::new(),
            mode: SearchMode::Rate,
            connection_bounds: ConnectionBounds::new(16, 1024, 0.05),
        }
    }

    /// Settings of a search over connections from `start` up to `max` (defaults otherwise).
    pub fn connections(slo: Slo, start: usize, max: usize) -> Self {
        let mut settings = Self::new(slo);
        settings.mode = SearchMode::Connections;
        settings.connection_bounds = ConnectionBounds::new(start, max, settings.bounds.precision);
        settings.max_connections = max;
        settings
    }

    /// The next step's level (rate or connections), given (level, passed) of the steps so far.
    pub fn next(&self, history: &[(f64, bool)]) -> NextStep {
        match self.mode {
            SearchMode::Rate => next_step(&self.bounds, history),
            SearchMode::Connections => next_connections(&self.connection_bounds, history),
        }
    }

    /// Checks the settings, naming the flag at fault.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bounds = &self.bounds;
        let rate_ok = |rate: f64| rate.is_finite() && rate > 0.0 && rate <= 10_000_000.0;
        if !rate_ok(bounds.start_rate) {
            return Err(ConfigError::new("--start-rate", "must be a positive rate of at most 10000000/s"));
        }
        if !rate_ok(bounds.max_rate) {
            return Err(ConfigError::new("--max-rate", "must be a positive rate of at most 10000000/s"));
        }
        if bounds.max_rate < bounds.start_rate {
            return Err(ConfigError::new("--max-rate", "must be at least --start-rate"));
        }
        if !(bounds.precision > 0.0 && bounds.precision < 1.0) {
            return Err(ConfigError::new("--precision", "must be above 0% and below 100%"));
        }
        if self.step.is_zero() {
            return Err(ConfigError::new("--step", "must be longer than zero"));
        }
        if self.max_connections == 0 {
            return Err(ConfigError::new("--max-connections", "must be at least 1"));
        }
        if self.slo.clauses.is_empty() {
            return Err(ConfigError::new("--slo", "needs at least one clause"));
        }
        if self.mode == SearchMode::Connections {
            let connections = &self.connection_bounds;
            if connections.start == 0 {
                return Err(ConfigError::new("--start-connections", "must be at least 1"));
            }
            if connections.max < connections.start {
                return Err(ConfigError::new("--max-connections", "must be at least --start-connections"));
            }
            if !(connections.precision > 0.0 && connections.precision < 1.0) {
                return Err(ConfigError::new("--precision", "must be above 0% and below 100%"));
            }
        }
        Ok(())
    }
}

/// One step of the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    /// Order of the step, from 1.
    pub step: usize,
    /// The rate asked for, requests per second; in connections mode (closed loop, no rate is
    /// asked for) the rate the connections achieved.
    pub target_rate: f64,
    /// The connections of a closed-loop step (connections mode); absent in rate mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// The rate the generator kept up: requests sent over the step length plus twice the mean
    /// send lag (see [`StepFigures::achieved_rate`]).
    pub achieved_rate: f64,
    /// Requests sent in the measured time.
    pub requests: u64,
    /// Of which errors.
    pub errors: u64,
    /// Errors as a percentage of requests.
    pub error_percent: f64,
    /// Requests due but never sent.
    pub unsent: u64,
    /// Median latency (from the intended send time), microseconds.
    pub p50_us: u64,
    /// 90th percentile latency (from the intended send time), microseconds.
    #[serde(default)]
    pub p90_us: u64,
    /// 99th percentile latency (from the intended send time), microseconds.
    pub p99_us: u64,
    /// 99th percentile latency from the actual send time, microseconds.
    pub p99_uncorrected_us: u64,
    /// Mean send lag, microseconds.
    pub send_lag_mean_us: u64,
    /// Pass, SLO breach or generator limited.
    pub verdict: Verdict,
    /// The clauses breached (measured from the intended send time).
    pub breaches: Vec<Breach>,
    /// The generator fell short of the rate (achieved < 95% or unsent > 1%).
    pub generator_shortfall: bool,
    /// Resources of the monitored processes during the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_resources: Option<ResourceReport>,
    /// What the generator itself used during the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<GeneratorReport>,
    /// Why connections of the step failed: a count and the first message of each kind (not
    /// kept in capacity files).
    #[serde(skip)]
    pub connect_causes: crate::connect_causes::ConnectCauses,
}

impl StepResult {
    /// What the search climbed at this step: its connections in connections mode, otherwise
    /// the rate asked for.
    pub fn level(&self) -> f64 {
        self.connections.map_or(self.target_rate, |connections| connections as f64)
    }

    /// The verdict column: `pass`, `FAIL p99 812.00ms >= 50ms (16.2x)`, `GENERATOR LIMITED …`.
    pub fn verdict_text(&self) -> String {
        let breaches: Vec<String> = self.breaches.iter().map(Breach::describe).collect();
        match self.verdict {
            Verdict::Pass => "pass".into(),
            Verdict::SloBreach => {
                let mut text = format!("FAIL {}", breaches.join(", "));
                if breaches.is_empty() {
                    text = format!("FAIL {}", self.shortfall_text());
                } else if self.generator_shortfall {
                    text.push_str("; ");
                    text.push_str(&self.shortfall_text());
                }
                text
            }
            Verdict::GeneratorLimited => format!("GENERATOR LIMITED: {}", self.shortfall_text()),
            Verdict::ConnectionCap => {
                format!("CONNECTION CAP reached, every connection busy: {}", self.shortfall_text())
            }
            Verdict::Interrupted => "interrupted".into(),
        }
    }

    fn shortfall_text(&self) -> String {
        let due = self.requests + self.unsent;
        format!(
            "sent {:.1}% of the rate, {} of {due} not sent",
            self.achieved_rate * 100.0 / self.target_rate.max(f64::MIN_POSITIVE),
            self.unsent
        )
    }
}

/// What a step recorded, losslessly: kept in capacity files (`capacity --save`) so that a
/// search can be rendered again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepData {
    /// Order of the step, from 1.
    pub step: usize,
    /// Measured time of the step, nanoseconds.
    pub elapsed_ns: u64,
    /// Outcomes by class, HTTP statuses, bytes, pacing counts and the four HDR histograms.
    pub results: MethodResults,
    /// What the generator used.
    pub generator: GeneratorData,
}

/// Runs one step at `level`: an open-loop run at that rate (or, in connections mode, a
/// closed-loop run with that many connections) of `settings.step` after `settings.warmup`.
pub fn run_step(
    base: &RunConfig,
    settings: &CapacitySettings,
    level: f64,
    number: usize,
    stop: &StopHandle,
) -> Result<StepResult, EngineError> {
    run_step_recorded(base, settings, level, number, stop).map(|(step, _)| step)
}

/// [`run_step`], with what the step recorded.
pub fn run_step_recorded(
    base: &RunConfig,
    settings: &CapacitySettings,
    level: f64,
    number: usize,
    stop: &StopHandle,
) -> Result<(StepResult, StepData), EngineError> {
    let config = step_config(base, settings, level);
    let run = Run::with_stop(config, stop.clone())?;
    let monitor = (!settings.monitor_pids.is_empty()).then(|| Monitor::start(&settings.monitor_pids));
    let record = run.execute();
    let resources = monitor.map(Monitor::stop);
    Ok(judge_step(base, settings, level, number, &record?, resources))
}

/// The run of one step at `level`: a rate, or connections in connections mode.
fn step_config(base: &RunConfig, settings: &CapacitySettings, level: f64) -> RunConfig {
    let mut config = base.clone();
    config.load = match settings.mode {
        SearchMode::Rate => {
            Load::Open { rate: level, arrivals: Arrivals::Uniform, max_connections: settings.max_connections }
        }
        SearchMode::Connections => Load::Closed { connections: level as usize },
    };
    config.length = Length { duration: Some(settings.step), requests: None };
    config.warmup = settings.warmup;
    // A scenario's stages give way to the step's constant rate.
    config.stages.clear();
    config
}

/// The result of step `number` at `level` (a rate, or connections in connections mode) from
/// what it recorded (and what the monitor saw of the target meanwhile), judged against the
/// SLO, and its data for a capacity file.
pub fn judge_step(
    base: &RunConfig,
    settings: &CapacitySettings,
    level: f64,
    number: usize,
    record: &RunRecord,
    resources: Option<ResourceReport>,
) -> (StepResult, StepData) {
    let report = RunReport::new(&step_config(base, settings, level), record);
    let closed = settings.mode == SearchMode::Connections;
    let mut figures = StepFigures::from_report(level, settings.step, &report);
    if closed {
        figures.target_rate = round2(figures.achieved_rate());
    }
    let (mut verdict, breaches) =
        if closed { figures.judge_closed(&settings.slo) } else { figures.judge(&settings.slo) };
    if record.interrupted {
        verdict = Verdict::Interrupted;
    }
    let mut results = MethodResults::new(base.workload.sample_request(0), &record.totals);
    base.secrets().scrub_outcomes(&mut results.outcomes);
    let data = StepData {
        step: number,
        elapsed_ns: u64::try_from(record.elapsed.as_nanos()).unwrap_or(u64::MAX),
        results,
        generator: GeneratorData::new(&record.generator),
    };
    let result = StepResult {
        step: number,
        target_rate: figures.target_rate,
        connections: closed.then_some(level as u64),
        achieved_rate: round2(figures.achieved_rate()),
        requests: figures.requests,
        errors: figures.errors,
        error_percent: round2(percent(figures.errors, figures.requests)),
        unsent: figures.unsent,
        p50_us: report.latency.percentile("p50"),
        p90_us: report.latency.percentile("p90"),
        p99_us: report.latency.percentile("p99"),
        p99_uncorrected_us: report.latency_uncorrected.percentile("p99"),
        send_lag_mean_us: figures.send_lag_mean_us,
        verdict,
        breaches,
        generator_shortfall: !closed && figures.shortfall(),
        target_resources: resources,
        generator: Some(report.generator),
        connect_causes: record.connect_causes.clone(),
    };
    (result, data)
}

/// The settings of a search as the report shows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchSettingsReport {
    /// What the search climbed: `rate`, or `connections` (closed-loop steps); files without
    /// it are rate searches.
    #[serde(default, skip_serializing_if = "SearchMode::is_rate")]
    pub mode: SearchMode,
    /// Connections of the first step, in connections mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_connections: Option<u64>,
    /// The SLO as given.
    pub slo: String,
    /// First rate tried.
    pub start_rate: f64,
    /// Highest rate allowed.
    pub max_rate: f64,
    /// Relative width of the final bracket, percent.
    pub precision_percent: f64,
    /// Measured length of each step, microseconds.
    pub step_us: u64,
    /// Warmup of each step, microseconds.
    pub warmup_us: u64,
    /// Pause between steps, microseconds.
    pub cooldown_us: u64,
    /// Connection cap of each step; in connections mode the most connections tried (after
    /// the open-file limit).
    pub max_connections: u64,
}

/// The result of a capacity search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityReport {
    /// The tool that made it.
    pub tool: String,
    /// The target URL with secrets redacted.
    pub target: String,
    /// The JSON-RPC method called.
    pub method: String,
    /// How the search was run.
    pub settings: SearchSettingsReport,
    /// Every step, in the order run.
    pub steps: Vec<StepResult>,
    /// The highest rate that passed, requests per second (in connections mode the most
    /// connections); null if none did.
    pub capacity: Option<f64>,
    /// The lowest rate (or connections) above it that failed; null if none did.
    pub first_failing_rate: Option<f64>,
    /// `first_failing_rate - capacity`, requests per second (or connections).
    pub margin: Option<f64>,
    /// The margin as a percentage of the capacity.
    pub margin_percent: Option<f64>,
    /// What ended the climb: `slo` (the target), `generator`, `connection_cap` (every allowed
    /// connection busy), `max_rate` (`max_connections` in
    /// connections mode), `no_pass` (even the lowest rate failed), `interrupted` or
    /// `max_steps`.
    pub limited_by: String,
    /// The last rate before p99 more than doubles over the lowest-rate step's p99; null: none.
    pub knee: Option<f64>,
    /// The p99 of the lowest-rate step the knee compares to, microseconds.
    pub knee_baseline_p99_us: Option<u64>,
    /// The search was stopped before the end (Ctrl-C).
    pub interrupted: bool,
    /// Wall time of the whole search, microseconds.
    pub elapsed_us: u64,
}

/// Runs the whole search. `on_step` sees every step as it finishes (for progress output).
/// Stopping `stop` ends the step that is running; the report covers the steps before it.
pub fn search(
    base: &RunConfig,
    settings: &CapacitySettings,
    stop: &StopHandle,
    on_step: impl FnMut(&StepResult),
) -> Result<CapacityReport, EngineError> {
    search_recorded(base, settings, stop, on_step).map(|(report, _)| report)
}

/// [`search`], with what each step recorded (in the order of the report's steps), for
/// `capacity --save`.
pub fn search_recorded(
    base: &RunConfig,
    settings: &CapacitySettings,
    stop: &StopHandle,
    mut on_step: impl FnMut(&StepResult),
) -> Result<(CapacityReport, Vec<StepData>), EngineError> {
    settings.validate().map_err(EngineError::Config)?;
    base.validate().map_err(EngineError::Config)?;
    let settings = &capped_by_open_files(base, settings);
    let started = Instant::now();
    let mut steps: Vec<StepResult> = Vec::new();
    let mut recorded: Vec<StepData> = Vec::new();
    let mut interrupted = false;
    loop {
        let history: Vec<(f64, bool)> = steps.iter().map(|s| (s.level(), s.verdict.passed())).collect();
        let NextStep::Run(level) = settings.next(&history) else {
            break;
        };
        if !steps.is_empty() && !pause(settings.cooldown, stop) {
            interrupted = true;
            break;
        }
        if stop.is_stopped() {
            interrupted = true;
            break;
        }
        let (step, data) = run_step_recorded(base, settings, level, steps.len() + 1, stop)?;
        on_step(&step);
        if step.verdict == Verdict::Interrupted {
            interrupted = true;
            break;
        }
        steps.push(step);
        recorded.push(data);
    }
    Ok((summarize(base, settings, steps, interrupted, started.elapsed()), recorded))
}

/// In connections mode, the settings with the most connections lowered to what the open-file
/// limit allows (raised as far as it may be first), so that the climb stops there rather than
/// failing a step; otherwise the settings as they are.
fn capped_by_open_files(base: &RunConfig, settings: &CapacitySettings) -> CapacitySettings {
    let mut settings = settings.clone();
    if settings.mode == SearchMode::Connections {
        let widest = step_config(base, &settings, settings.connection_bounds.max as f64);
        if let Some(allowed) = crate::engine::limits::connections_allowed(&widest) {
            let allowed = usize::try_from(allowed).unwrap_or(usize::MAX).max(1);
            let bounds = &mut settings.connection_bounds;
            bounds.max = bounds.max.min(allowed);
            bounds.start = bounds.start.min(bounds.max);
            settings.max_connections = bounds.max;
        }
    }
    settings
}

/// Sleeps for `length` unless stopped first; false if stopped.
fn pause(length: Duration, stop: &StopHandle) -> bool {
    let until = Instant::now() + length;
    while Instant::now() < until {
        if stop.is_stopped() {
            return false;
        }
        std::thread::sleep(until.saturating_duration_since(Instant::now()).min(Duration::from_millis(50)));
    }
    !stop.is_stopped()
}

/// The report of a finished (or stopped) search.
pub fn summarize(
    base: &RunConfig,
    settings: &CapacitySettings,
    steps: Vec<StepResult>,
    interrupted: bool,
    elapsed: Duration,
) -> CapacityReport {
    let history: Vec<(f64, bool)> = steps.iter().map(|s| (s.level(), s.verdict.passed())).collect();
    let (capacity, first_fail) = bracket(&history);
    let fail_step = first_fail.and_then(|level| steps.iter().find(|s| s.level() == level));
    let closed = settings.mode == SearchMode::Connections;
    let max_level = if closed { settings.connection_bounds.max as f64 } else { settings.bounds.max_rate };
    let limited_by = if interrupted {
        "interrupted"
    } else if let Some(step) = fail_step.filter(|_| capacity.is_some()) {
        if step.verdict == Verdict::GeneratorLimited {
            "generator"
        } else if step.verdict == Verdict::ConnectionCap {
            "connection_cap"
        } else {
            "slo"
        }
    } else if capacity.is_some_and(|level| level >= max_level) {
        if closed {
            "max_connections"
        } else {
            "max_rate"
        }
    } else if capacity.is_none() && first_fail.is_some() {
        "no_pass"
    } else {
        "max_steps"
    };
    // Generator-limited steps say nothing about the target's latency.
    let latencies: Vec<(f64, u64)> = steps
        .iter()
        .filter(|s| s.verdict != Verdict::GeneratorLimited)
        .map(|s| (s.level(), s.p99_us))
        .collect();
    let baseline = latencies.iter().min_by(|a, b| a.0.total_cmp(&b.0)).map(|(_, p99)| *p99);
    let margin = capacity.zip(first_fail).map(|(pass, fail)| fail - pass);
    CapacityReport {
        tool: concat!("rpcbench ", env!("CARGO_PKG_VERSION")).into(),
        target: base.target.redacted(),
        method: base.workload.label(),
        settings: SearchSettingsReport {
            mode: settings.mode,
            start_connections: closed.then_some(settings.connection_bounds.start as u64),
            slo: settings.slo.to_string(),
            start_rate: settings.bounds.start_rate,
            max_rate: settings.bounds.max_rate,
            precision_percent: round2(settings.bounds.precision * 100.0),
            step_us: micros(settings.step),
            warmup_us: micros(settings.warmup),
            cooldown_us: micros(settings.cooldown),
            max_connections: settings.max_connections as u64,
        },
        capacity,
        first_failing_rate: first_fail.filter(|_| capacity.is_some()),
        margin,
        margin_percent: margin.zip(capacity).map(|(margin, pass)| round2(margin * 100.0 / pass)),
        limited_by: limited_by.into(),
        knee: knee(&latencies),
        knee_baseline_p99_us: baseline,
        steps,
        interrupted,
        elapsed_us: micros(elapsed),
    }
}

impl CapacityReport {
    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    /// The text report: the steps as a table, then the answer and the knee.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{} capacity {} against {}", self.tool, self.method, self.target);
        let _ = writeln!(out, "{}", self.settings_text());
        let level_header = if self.connections_mode() { "Conns" } else { "Target/s" };
        let monitored = self.steps.iter().any(|s| s.target_resources.is_some());
        let mut header = format!(
            "  {:>4} {:>10} {:>10} {:>10} {:>10} {:>8}",
            "Step", level_header, "Achieved/s", "p50", "p99", "Errors"
        );
        if monitored {
            let _ = write!(header, " {:>8} {:>10}", "CPU", "RSS");
        }
        let _ = writeln!(out, "{header}  Verdict");
        for step in &self.steps {
            let mut row = format!(
                "  {:>4} {:>10} {:>10.1} {:>10} {:>10} {:>7.2}%",
                step.step,
                trim(step.level()),
                step.achieved_rate,
                format_micros(step.p50_us as f64),
                format_micros(step.p99_us as f64),
                step.error_percent
            );
            if monitored {
                match &step.target_resources {
                    Some(r) => {
                        let _ = write!(
                            row,
                            " {:>8} {:>10}",
                            format!("{:.1}%", r.cpu_percent_avg),
                            crate::monitor::format_bytes(r.rss_bytes_peak)
                        );
                    }
                    None => {
                        let _ = write!(row, " {:>8} {:>10}", "", "");
                    }
                }
            }
            let _ = writeln!(out, "{row}  {}", step.verdict_text());
        }
        for line in self.summary_lines() {
            let _ = writeln!(out, "{line}");
        }
        out
    }

    /// Whether the search climbed connections (closed loop) rather than the rate.
    pub fn connections_mode(&self) -> bool {
        self.settings.mode == SearchMode::Connections
    }

    /// `300 req/s` or `48 connections`, in this search's unit.
    pub fn amount(&self, level: f64) -> String {
        self.settings.mode.amount(level)
    }

    /// How the search ran, in one line: the SLO, the steps, where it started and its limits.
    pub fn settings_text(&self) -> String {
        let settings = &self.settings;
        if self.connections_mode() {
            return format!(
                "SLO {}; closed-loop steps of {} after {} warmup, {} cool-down; from {} up to {}, precision {}%",
                settings.slo,
                format_micros(settings.step_us as f64),
                format_micros(settings.warmup_us as f64),
                format_micros(settings.cooldown_us as f64),
                self.amount(settings.start_connections.unwrap_or(1) as f64),
                self.amount(settings.max_connections as f64),
                trim(settings.precision_percent),
            );
        }
        format!(
            "SLO {}; open-loop steps of {} after {} warmup, {} cool-down; from {}/s up to {}/s, precision {}%",
            settings.slo,
            format_micros(settings.step_us as f64),
            format_micros(settings.warmup_us as f64),
            format_micros(settings.cooldown_us as f64),
            trim(settings.start_rate),
            trim(settings.max_rate),
            trim(settings.precision_percent),
        )
    }

    /// The lines under the steps table: the answer and its margin, what ended the climb, the
    /// knee, what the generator used and how long the search took.
    pub fn summary_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.connections_mode() {
            self.connections_answer(&mut lines);
        } else {
            self.rate_answer(&mut lines);
        }
        match self.limited_by.as_str() {
            "generator" => {
                lines.push(
                    "  WARNING: the generator, not the target, failed the first failing step (it could not \
                     send at the rate); the target's capacity may be higher. Raise --max-connections or \
                     --threads, or run the generator on another machine."
                        .to_string(),
                );
            }
            "connection_cap" => {
                lines.push(format!(
                    "  WARNING: the connection cap, not the generator's CPU, failed the first failing step: \
                     every one of the {} allowed connections was busy when requests fell due (the \
                     target held them that long, so it is saturated at this rate or needs more \
                     concurrency). Raise --max-connections to tell which.",
                    self.settings.max_connections
                ));
            }
            "max_rate" => {
                lines.push("  The search stopped at --max-rate.".to_string());
            }
            "max_connections" => {
                lines.push(format!(
                    "  The search stopped at its most connections, {} (--max-connections, or what the open-file limit allows).",
                    self.settings.max_connections
                ));
            }
            "interrupted" => {
                lines.push(
                    "  INTERRUPTED: the search was stopped; the figures cover the steps that ran."
                        .to_string(),
                );
            }
            "max_steps" => {
                lines.push("  The search stopped after its step limit.".to_string());
            }
            _ => {}
        }
        let lowest = if self.connections_mode() { "fewest-connections" } else { "lowest-rate" };
        match (self.knee, self.knee_baseline_p99_us) {
            (Some(knee), Some(baseline)) => {
                lines.push(format!(
                    "Knee: {} (above it p99 exceeds {}x the {lowest} step's {})",
                    self.amount(knee),
                    trim(KNEE_FACTOR),
                    format_micros(baseline as f64)
                ));
            }
            _ => {
                lines.push(format!(
                    "Knee: none (p99 never exceeded {}x the {lowest} step's)",
                    trim(KNEE_FACTOR)
                ));
            }
        }
        if let Some(usage) = self.generator_usage_text() {
            lines.push(usage);
        }
        lines.push(format!(
            "Search took {} over {} steps",
            format_duration(Duration::from_micros(self.elapsed_us)),
            self.steps.len()
        ));
        lines
    }

    /// The answer of a search over connections: the most that kept the SLO, the first that
    /// broke it with its failing figure, and what that means.
    fn connections_answer(&self, lines: &mut Vec<String>) {
        let failing =
            self.first_failing_rate.and_then(|level| self.steps.iter().find(|s| s.level() == level));
        match (self.capacity, failing) {
            (Some(capacity), Some(fail)) => {
                let level = fail.level();
                let figure = fail.breaches.iter().map(Breach::describe).collect::<Vec<_>>().join(", ");
                lines.push(format!(
                    "Capacity: {} within the SLO; the first that broke it, {}, had {}; margin {} ({}%)",
                    self.amount(capacity),
                    self.amount(level),
                    if figure.is_empty() { "no figure".to_string() } else { figure },
                    self.amount(level - capacity),
                    trim(self.margin_percent.unwrap_or(0.0)),
                ));
            }
            (Some(capacity), None) => {
                lines.push(format!(
                    "Capacity: at least {} within the SLO (no step failed)",
                    self.amount(capacity)
                ));
            }
            (None, _) => {
                lines
                    .push("Capacity: none; no step met the SLO, not even the fewest connections".to_string());
            }
        }
        lines.push(
            "  Each step is a closed loop: every connection sends its next request as soon as the previous \
             one is answered. The answer is the most concurrent connections (requests in flight) the \
             target served within the SLO."
                .to_string(),
        );
    }

    fn rate_answer(&self, lines: &mut Vec<String>) {
        match (self.capacity, self.first_failing_rate) {
            (Some(capacity), Some(fail)) => {
                lines.push(format!(
                    "Capacity: {} req/s within the SLO; margin {} req/s ({}%) to the first failing rate, {} req/s",
                    trim(capacity),
                    trim(fail - capacity),
                    trim(self.margin_percent.unwrap_or(0.0)),
                    trim(fail)
                ));
            }
            (Some(capacity), None) => {
                lines.push(format!(
                    "Capacity: at least {} req/s within the SLO (no step failed)",
                    trim(capacity)
                ));
            }
            (None, _) => {
                lines.push("Capacity: none; no step met the SLO".to_string());
            }
        }
    }
}

impl CapacityReport {
    /// `Generator: 2 worker thread(s), CPU up to 41.5% of their capacity (at 800 req/s), peak
    /// memory 9.4MB`: the busiest step's worker CPU and the process's peak memory; `None` when
    /// no step measured the generator.
    pub fn generator_usage_text(&self) -> Option<String> {
        let measured: Vec<(&StepResult, &GeneratorReport)> =
            self.steps.iter().filter_map(|s| s.generator.as_ref().map(|g| (s, g))).collect();
        let threads = measured.iter().map(|(_, g)| g.threads).max()?;
        let mut text = format!("Generator: {threads} worker thread(s)");
        let busiest = measured
            .iter()
            .filter_map(|(s, g)| g.cpu_percent.map(|cpu| (s.level(), cpu)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((level, cpu)) = busiest {
            let _ = write!(text, ", CPU up to {cpu:.1}% of their capacity (at {})", self.amount(level));
        }
        if let Some(rss) = measured.iter().filter_map(|(_, g)| g.peak_rss_bytes).max() {
            let _ = write!(text, ", peak memory {:.1}MB", rss as f64 / 1e6);
        }
        Some(text)
    }
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// `400`, `412.5`, `0.25`.
fn trim(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        let text = format!("{value:.2}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_slo_with_the_wrong_comparison_points_at_it() {
        let err = Slo::parse("p99>5ms").unwrap_err();
        assert_eq!(err.position, 4, "{err:?}");
        assert!(err.message.contains("p99<5ms"), "{err:?}");
        let err = Slo::parse("p50<1s, errors>=1%").unwrap_err();
        assert_eq!(err.position, 15, "{err:?}");
    }
    use crate::record::new_histogram;

    #[test]
    fn slos_parse() {
        let slo = Slo::parse("p99<500ms,errors<0.1%").unwrap();
        assert_eq!(
            slo.clauses,
            vec![
                SloClause {
                    text: "p99<500ms".into(),
                    bound: SloBound::Latency(LatencyStat::Percentile("p99"), Duration::from_millis(500))
                },
                SloClause { text: "errors<0.1%".into(), bound: SloBound::ErrorPercent(0.1) },
            ]
        );
        let slo = Slo::parse(" P99.9 < 1s , max<2s, p50<800us ").unwrap();
        assert_eq!(slo.to_string(), "P99.9<1s, max<2s, p50<800us");
        assert_eq!(
            slo.clauses[0].bound,
            SloBound::Latency(LatencyStat::Percentile("p99.9"), Duration::from_secs(1))
        );
        assert_eq!(slo.clauses[1].bound, SloBound::Latency(LatencyStat::Max, Duration::from_secs(2)));
    }

    #[test]
    fn bad_slos_name_the_position() {
        for (text, position, message) in [
            ("p98<5ms", 1, "unknown figure 'p98'"),
            ("p99<500ms,errors<0.1", 18, "expected a percentage"),
            ("p99<5x", 5, "a duration such as"),
            ("p99 500ms", 10, "expected '<'"),
            ("p99<500ms,", 11, "an empty clause"),
            ("p99<500ms, errors<0%", 19, "above 0%"),
            ("p99<=5ms", 5, "only '<'"),
            ("<5ms", 1, "expected p50"),
            ("p99<0", 5, "longer than zero"),
            ("", 1, "an empty clause"),
            ("p99<1µs,p9<1s", 9, "unknown figure 'p9'"),
        ] {
            let err = Slo::parse(text).unwrap_err();
            assert_eq!(err.position, position, "{text:?}: {err}");
            assert!(err.message.contains(message), "{text:?}: {err}");
        }
    }

    fn latency(us: &[u64]) -> LatencyReport {
        let mut histogram = new_histogram();
        for value in us {
            histogram.record(*value).unwrap();
        }
        LatencyReport::from_histogram(&histogram)
    }

    fn figures(requests: u64, errors: u64, unsent: u64, corrected_us: u64, actual_us: u64) -> StepFigures {
        StepFigures {
            target_rate: 100.0,
            duration: Duration::from_secs(1),
            requests,
            errors,
            unsent,
            send_lag_mean_us: corrected_us.saturating_sub(actual_us) / 2,
            late: 0,
            late_at_cap: 0,
            latency: latency(&vec![corrected_us; requests.max(1) as usize]),
            latency_uncorrected: latency(&vec![actual_us; requests.max(1) as usize]),
        }
    }

    #[test]
    fn steps_are_judged() {
        let slo = Slo::parse("p99<50ms,errors<1%").unwrap();
        // (requests, errors, unsent, corrected, actual) -> verdict, breached clauses
        let table = [
            (figures(100, 0, 0, 2_000, 2_000), Verdict::Pass, vec![]),
            (figures(100, 0, 0, 80_000, 80_000), Verdict::SloBreach, vec!["p99<50ms"]),
            (figures(100, 5, 0, 2_000, 2_000), Verdict::SloBreach, vec!["errors<1%"]),
            // Saturated target: sent less, and what was sent was slow.
            (figures(90, 0, 10, 900_000, 600_000), Verdict::SloBreach, vec!["p99<50ms"]),
            // The tool was late, the target fast: the generator's fault.
            (figures(90, 0, 10, 900_000, 2_000), Verdict::GeneratorLimited, vec!["p99<50ms"]),
            // Everything sent, but the sends slipped steadily to 0.9 s behind: 100 in 1.9 s.
            (figures(100, 0, 0, 900_000, 2_000), Verdict::GeneratorLimited, vec!["p99<50ms"]),
            // A 30 ms slip is within 95%.
            (figures(100, 0, 0, 32_000, 2_000), Verdict::Pass, vec![]),
            (figures(93, 0, 0, 2_000, 2_000), Verdict::GeneratorLimited, vec![]),
            // 2% unsent is a shortfall even though 98% were sent.
            (figures(98, 0, 2, 2_000, 2_000), Verdict::GeneratorLimited, vec![]),
            (figures(99, 0, 1, 2_000, 2_000), Verdict::Pass, vec![]),
            (figures(0, 0, 100, 0, 0), Verdict::SloBreach, vec![]),
            // A dead target: every request a connect error, no latency recorded.
            (figures(100, 100, 0, 0, 0), Verdict::SloBreach, vec!["errors<1%", "successes>0"]),
        ];
        for (i, (figures, verdict, clauses)) in table.into_iter().enumerate() {
            let (got, breaches) = figures.judge(&slo);
            assert_eq!(got, verdict, "row {i}");
            let names: Vec<&str> = breaches.iter().map(|b| b.clause.as_str()).collect();
            assert_eq!(names, clauses, "row {i}");
        }
        // Without an errors clause, a dead target still fails.
        let latency_only = Slo::parse("p99<50ms").unwrap();
        let (verdict, breaches) = figures(100, 100, 0, 0, 0).judge(&latency_only);
        assert_eq!(verdict, Verdict::SloBreach);
        assert_eq!(breaches[0].describe(), "no successful response");
    }

    #[test]
    fn breaches_say_by_how_much() {
        let slo = Slo::parse("p99<50ms,errors<1%").unwrap();
        let breaches = slo.breaches(&latency(&[812_000]), 25, 200);
        let texts: Vec<String> = breaches.iter().map(Breach::describe).collect();
        assert_eq!(texts.len(), 2);
        assert!(texts[0].starts_with("p99 81"), "{texts:?}");
        assert!(texts[0].ends_with(">= 50.00ms (16.2x)"), "{texts:?}");
        assert_eq!(texts[1], "errors 12.50% >= 1% (12.5x)");
    }

    /// Plays a search against a target that passes every rate up to `capacity`.
    fn play(bounds: &SearchBounds, capacity: f64) -> Vec<f64> {
        let mut history = Vec::new();
        while let NextStep::Run(rate) = next_step(bounds, &history) {
            history.push((rate, rate <= capacity));
            assert!(history.len() <= bounds.max_steps);
        }
        history.into_iter().map(|(rate, _)| rate).collect()
    }

    #[test]
    fn the_search_doubles_then_bisects() {
        let bounds = SearchBounds::new(100.0, 1_000_000.0, 0.05);
        assert_eq!(play(&bounds, 400.0), vec![100.0, 200.0, 400.0, 800.0, 600.0, 500.0, 450.0, 425.0, 413.0]);
        assert_eq!(play(&bounds, 250.0), vec![100.0, 200.0, 400.0, 300.0, 250.0, 275.0, 263.0, 257.0]);
        let steps = play(&bounds, 3_333.0);
        let (pass, fail) = bracket(&steps.iter().map(|r| (*r, *r <= 3_333.0)).collect::<Vec<_>>());
        let (pass, fail) = (pass.unwrap(), fail.unwrap());
        assert!(pass <= 3_333.0 && fail > 3_333.0 && fail - pass <= 0.05 * pass, "{steps:?}");
    }

    #[test]
    fn the_search_table() {
        let bounds = SearchBounds::new(100.0, 1000.0, 0.05);
        // (history, next)
        let table: [(&[(f64, bool)], NextStep); 10] = [
            (&[], NextStep::Run(100.0)),
            (&[(100.0, true)], NextStep::Run(200.0)),
            (&[(100.0, true), (200.0, true), (400.0, true), (800.0, true)], NextStep::Run(1000.0)),
            (&[(100.0, true), (200.0, true), (400.0, true), (800.0, true), (1000.0, true)], NextStep::Done),
            (&[(100.0, true), (200.0, false)], NextStep::Run(150.0)),
            (&[(100.0, true), (200.0, false), (150.0, false)], NextStep::Run(125.0)),
            (
                &[(100.0, true), (200.0, false), (150.0, true), (175.0, true), (188.0, true), (194.0, false)],
                NextStep::Done,
            ),
            // The start rate fails: halve until a pass, then bisect.
            (&[(100.0, false)], NextStep::Run(50.0)),
            (&[(100.0, false), (50.0, true)], NextStep::Run(75.0)),
            (
                &[
                    (100.0, false),
                    (50.0, false),
                    (25.0, false),
                    (13.0, false),
                    (6.5, false),
                    (3.25, false),
                    (1.63, false),
                    (1.0, false),
                ],
                NextStep::Done,
            ),
        ];
        for (i, (history, next)) in table.into_iter().enumerate() {
            assert_eq!(next_step(&bounds, history), next, "row {i}: {history:?}");
        }
        let capped = SearchBounds { max_steps: 2, ..bounds };
        assert_eq!(next_step(&capped, &[(100.0, true), (200.0, true)]), NextStep::Done);
    }

    /// Plays a search over connections against a target that passes up to `capacity`.
    fn play_connections(bounds: &ConnectionBounds, capacity: f64) -> Vec<f64> {
        let mut history = Vec::new();
        while let NextStep::Run(connections) = next_connections(bounds, &history) {
            assert_eq!(connections.fract(), 0.0, "whole connections: {history:?}");
            history.push((connections, connections <= capacity));
            assert!(history.len() <= bounds.max_steps);
        }
        history.into_iter().map(|(connections, _)| connections).collect()
    }

    #[test]
    fn the_connections_search_doubles_then_bisects_whole_counts() {
        let bounds = ConnectionBounds::new(16, 4096, 0.05);
        assert_eq!(play_connections(&bounds, 48.0), vec![16.0, 32.0, 64.0, 48.0, 56.0, 52.0, 50.0]);
        // Small counts bisect down to neighbours.
        let small = ConnectionBounds::new(1, 64, 0.05);
        assert_eq!(play_connections(&small, 4.0), vec![1.0, 2.0, 4.0, 8.0, 6.0, 5.0]);
        assert_eq!(play_connections(&small, 1.0), vec![1.0, 2.0]);
        // The start fails: halve down to one.
        assert_eq!(play_connections(&bounds, 3.0), vec![16.0, 8.0, 4.0, 2.0, 3.0]);
        assert_eq!(play_connections(&bounds, 0.0), vec![16.0, 8.0, 4.0, 2.0, 1.0]);
        // Everything passes: up to the maximum, which need not be a power of two.
        let capped = ConnectionBounds::new(16, 100, 0.05);
        assert_eq!(play_connections(&capped, 1e9), vec![16.0, 32.0, 64.0, 100.0]);
        let (pass, fail) = bracket(
            &play_connections(&bounds, 2800.0).iter().map(|c| (*c, *c <= 2800.0)).collect::<Vec<_>>(),
        );
        let (pass, fail) = (pass.unwrap(), fail.unwrap());
        assert!(pass <= 2800.0 && fail > 2800.0 && fail - pass <= 0.05 * pass, "{pass} {fail}");
    }

    #[test]
    fn the_connections_search_table() {
        let bounds = ConnectionBounds::new(16, 256, 0.05);
        // (history, next)
        let table: [(&[(f64, bool)], NextStep); 9] = [
            (&[], NextStep::Run(16.0)),
            (&[(16.0, true)], NextStep::Run(32.0)),
            (&[(16.0, true), (32.0, true), (64.0, true), (128.0, true)], NextStep::Run(256.0)),
            (&[(16.0, true), (32.0, true), (64.0, true), (128.0, true), (256.0, true)], NextStep::Done),
            (&[(16.0, true), (32.0, false)], NextStep::Run(24.0)),
            (&[(16.0, true), (32.0, false), (24.0, true), (28.0, true), (30.0, false)], NextStep::Run(29.0)),
            // Neighbours: nothing left between them.
            (&[(16.0, true), (32.0, false), (24.0, true), (28.0, true), (29.0, false)], NextStep::Done),
            (&[(16.0, false)], NextStep::Run(8.0)),
            (&[(16.0, false), (8.0, false), (4.0, false), (2.0, false), (1.0, false)], NextStep::Done),
        ];
        for (i, (history, next)) in table.into_iter().enumerate() {
            assert_eq!(next_connections(&bounds, history), next, "row {i}: {history:?}");
        }
        // A start above the maximum starts at the maximum.
        let low = ConnectionBounds::new(16, 10, 0.05);
        assert_eq!(next_connections(&low, &[]), NextStep::Run(10.0));
        let capped = ConnectionBounds { max_steps: 2, ..bounds };
        assert_eq!(next_connections(&capped, &[(16.0, true), (32.0, true)]), NextStep::Done);
    }

    #[test]
    fn a_connections_summary_says_the_most_that_kept_the_slo_and_the_first_that_broke_it() {
        let settings = CapacitySettings::connections(Slo::parse("p99<100ms").unwrap(), 16, 4096);
        let at = |number: usize, connections: u64, verdict: Verdict, p99_us: u64| {
            let mut step = step(number, 500.0, verdict, p99_us);
            step.connections = Some(connections);
            if verdict == Verdict::SloBreach {
                step.breaches = settings.slo.breaches(&latency(&[p99_us]), 0, 1);
            }
            step
        };
        let steps = vec![
            at(1, 16, Verdict::Pass, 20_000),
            at(2, 32, Verdict::Pass, 45_000),
            at(3, 64, Verdict::SloBreach, 130_000),
            at(4, 48, Verdict::Pass, 80_000),
            at(5, 56, Verdict::SloBreach, 101_000),
        ];
        let report = summarize(&base(), &settings, steps, false, Duration::from_secs(30));
        assert_eq!((report.capacity, report.first_failing_rate), (Some(48.0), Some(56.0)));
        assert_eq!(report.limited_by, "slo");
        assert_eq!(report.knee, Some(16.0));
        assert_eq!(report.settings.mode, SearchMode::Connections);
        let text = report.render_text();
        assert!(text.contains("closed-loop steps"), "{text}");
        assert!(text.contains("Step      Conns Achieved/s"), "{text}");
        assert!(
            text.contains(
                "Capacity: 48 connections within the SLO; the first that broke it, 56 connections, had p99 "
            ),
            "{text}"
        );
        assert!(text.contains("margin 8 connections (16.67%)"), "{text}");
        assert!(text.contains("the most concurrent connections"), "{text}");
        assert!(text.contains("Knee: 16 connections"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["settings"]["mode"], "connections");
        assert_eq!(json["steps"][3]["connections"], 48);
        // Everything passing up to the cap says so.
        let all = vec![at(1, 16, Verdict::Pass, 1_000), at(2, 32, Verdict::Pass, 1_000)];
        let mut capped = settings.clone();
        capped.connection_bounds.max = 32;
        let report = summarize(&base(), &capped, all, false, Duration::ZERO);
        assert_eq!(report.limited_by, "max_connections");
        assert!(
            report.render_text().contains("Capacity: at least 32 connections"),
            "{}",
            report.render_text()
        );
    }

    #[test]
    fn a_rate_report_has_no_mode_in_its_json() {
        let settings = CapacitySettings::new(Slo::parse("p99<50ms").unwrap());
        let report =
            summarize(&base(), &settings, vec![step(1, 100.0, Verdict::Pass, 1)], false, Duration::ZERO);
        let json = report.to_json();
        assert!(!json.contains("\"mode\""), "{json}");
        assert!(!json.contains("\"connections\""), "{json}");
        let back: CapacityReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back.settings.mode, SearchMode::Rate);
    }

    #[test]
    fn a_closed_loop_step_is_judged_on_the_slo_alone() {
        let slo = Slo::parse("p99<50ms").unwrap();
        // 93% of a (meaningless) rate and late sends: no shortfall in a closed loop.
        let fast = figures(93, 0, 0, 900_000, 2_000);
        assert_eq!(fast.judge(&slo).0, Verdict::GeneratorLimited);
        let mut closed = fast.clone();
        closed.latency = closed.latency_uncorrected.clone();
        assert_eq!(closed.judge_closed(&slo).0, Verdict::Pass);
        assert_eq!(figures(100, 0, 0, 80_000, 80_000).judge_closed(&slo).0, Verdict::SloBreach);
        let (verdict, breaches) = figures(0, 0, 0, 0, 0).judge_closed(&slo);
        assert_eq!((verdict, breaches[0].clause.as_str()), (Verdict::SloBreach, NO_SUCCESS));
    }

    #[test]
    fn the_knee_is_the_last_rate_before_p99_doubles() {
        assert_eq!(knee(&[]), None);
        assert_eq!(knee(&[(100.0, 1_000)]), None);
        assert_eq!(knee(&[(100.0, 1_000), (200.0, 1_500), (400.0, 1_900)]), None);
        // Out of order, as a bisection runs them.
        assert_eq!(knee(&[(100.0, 1_000), (400.0, 9_000), (200.0, 1_800), (300.0, 2_500)]), Some(200.0));
        assert_eq!(knee(&[(100.0, 1_000), (200.0, 2_001)]), Some(100.0));
    }

    #[test]
    fn a_knee_from_one_noisy_step_is_not_headlined() {
        // One slow step at 200/s, then fast again up to 6400/s: noise, not a knee.
        let noisy = [(100.0, 1_000), (200.0, 30_000), (400.0, 1_100), (6_400.0, 1_900)];
        assert_eq!(knee(&noisy), None);
        // The same noise below a real knee: the knee is where p99 rises for good.
        let rising = [
            (100.0, 1_000),
            (200.0, 30_000),
            (400.0, 1_100),
            (800.0, 1_300),
            (1_600.0, 9_000),
            (3_200.0, 90_000),
        ];
        assert_eq!(knee(&rising), Some(800.0));
        // A step above the knee that recovers takes the knee back up, out of order too.
        assert_eq!(
            knee(&[(1_600.0, 9_000), (100.0, 1_000), (800.0, 1_300), (1_200.0, 1_500)]),
            Some(1_200.0)
        );
    }

    fn step(number: usize, rate: f64, verdict: Verdict, p99_us: u64) -> StepResult {
        StepResult {
            step: number,
            target_rate: rate,
            connections: None,
            achieved_rate: rate,
            requests: rate as u64,
            errors: 0,
            error_percent: 0.0,
            unsent: 0,
            p50_us: p99_us / 2,
            p90_us: p99_us * 3 / 4,
            p99_us,
            p99_uncorrected_us: p99_us,
            send_lag_mean_us: 0,
            verdict,
            breaches: Vec::new(),
            generator_shortfall: verdict == Verdict::GeneratorLimited,
            target_resources: None,
            generator: None,
            connect_causes: Default::default(),
        }
    }

    fn base() -> RunConfig {
        let target =
            crate::engine::config::Target::parse("http://127.0.0.1:8899/v3/0123456789abcdef0123456789abcdef")
                .unwrap();
        RunConfig::new(target, crate::jsonrpc::RequestTemplate::from_method("getSlot", None).unwrap())
    }

    #[test]
    fn the_summary_has_the_answer_margin_and_knee() {
        let settings = CapacitySettings::new(Slo::parse("p99<50ms").unwrap());
        let steps = vec![
            step(1, 100.0, Verdict::Pass, 2_000),
            step(2, 200.0, Verdict::Pass, 3_000),
            step(3, 400.0, Verdict::SloBreach, 90_000),
            step(4, 300.0, Verdict::Pass, 5_000),
            step(5, 350.0, Verdict::SloBreach, 60_000),
        ];
        let report = summarize(&base(), &settings, steps, false, Duration::from_secs(30));
        assert_eq!(report.capacity, Some(300.0));
        assert_eq!(report.first_failing_rate, Some(350.0));
        assert_eq!(report.margin, Some(50.0));
        assert_eq!(report.margin_percent, Some(16.67));
        assert_eq!(report.limited_by, "slo");
        assert_eq!(report.knee, Some(200.0));
        let text = report.render_text();
        assert!(text.contains("Capacity: 300 req/s within the SLO; margin 50 req/s (16.67%)"), "{text}");
        assert!(text.contains("Knee: 200 req/s"), "{text}");
        assert!(text.contains("/v3/***"), "{text}");
        assert!(!text.contains("0123456789abcdef"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["steps"][2]["verdict"], "slo_breach");
        assert_eq!(json["capacity"], 300.0);
    }

    #[test]
    fn a_shortfall_at_the_connection_cap_is_not_called_generator_limited() {
        let slo = Slo::parse("p99<50ms").unwrap();
        // Sends slipped behind while what went out was served fast: a shortfall either way.
        let mut capped = figures(100, 0, 0, 900_000, 2_000);
        capped.late = 80;
        capped.late_at_cap = 70;
        assert_eq!(capped.judge(&slo).0, Verdict::ConnectionCap);
        let mut cpu = capped.clone();
        cpu.late_at_cap = 10;
        assert_eq!(cpu.judge(&slo).0, Verdict::GeneratorLimited);
        // What went out was slow: the target's fault, capped or not.
        let mut slow = figures(90, 0, 10, 900_000, 600_000);
        slow.late = 80;
        slow.late_at_cap = 80;
        assert_eq!(slow.judge(&slo).0, Verdict::SloBreach);

        let settings = CapacitySettings::new(slo);
        let steps =
            vec![step(1, 100.0, Verdict::Pass, 2_000), step(2, 200.0, Verdict::ConnectionCap, 200_000)];
        let report = summarize(&base(), &settings, steps, false, Duration::from_secs(10));
        assert_eq!(report.limited_by, "connection_cap");
        let text = report.render_text();
        assert!(text.contains("CONNECTION CAP reached"), "{text}");
        assert!(!text.contains("GENERATOR LIMITED"), "{text}");
        assert!(text.contains("Raise --max-connections"), "{text}");
        assert!(!text.contains("--threads"), "advice that does not help: {text}");
    }

    #[test]
    fn a_generator_limited_failure_is_told_apart() {
        let settings = CapacitySettings::new(Slo::parse("p99<50ms").unwrap());
        let steps = vec![
            step(1, 100.0, Verdict::Pass, 2_000),
            step(2, 200.0, Verdict::GeneratorLimited, 200_000),
            step(3, 150.0, Verdict::Pass, 2_100),
        ];
        let report = summarize(&base(), &settings, steps, false, Duration::from_secs(10));
        assert_eq!(report.limited_by, "generator");
        assert_eq!(report.knee, None, "generator-limited steps do not count for the knee");
        let text = report.render_text();
        assert!(text.contains("GENERATOR LIMITED: sent 100.0% of the rate"), "{text}");
        assert!(text.contains("WARNING: the generator, not the target"), "{text}");
        assert!(text.contains("Knee: none"), "{text}");
        let no_pass =
            summarize(&base(), &settings, vec![step(1, 1.0, Verdict::SloBreach, 1)], false, Duration::ZERO);
        assert_eq!((no_pass.capacity, no_pass.limited_by.as_str()), (None, "no_pass"));
        assert!(no_pass.render_text().contains("Capacity: none"));
    }

    #[test]
    fn settings_are_checked() {
        let mut settings = CapacitySettings::new(Slo::parse("p99<50ms").unwrap());
        assert!(settings.validate().is_ok());
        settings.bounds.max_rate = 50.0;
        assert_eq!(settings.validate().unwrap_err().setting, "--max-rate");
        settings.bounds.max_rate = 1000.0;
        settings.bounds.precision = 0.0;
        assert_eq!(settings.validate().unwrap_err().setting, "--precision");
        settings.bounds.precision = 0.05;
        settings.step = Duration::ZERO;
        assert_eq!(settings.validate().unwrap_err().setting, "--step");
        let mut settings = CapacitySettings::connections(Slo::parse("p99<50ms").unwrap(), 16, 8);
        assert_eq!(settings.validate().unwrap_err().setting, "--max-connections");
        settings.connection_bounds.start = 0;
        assert_eq!(settings.validate().unwrap_err().setting, "--start-connections");
        settings.connection_bounds = ConnectionBounds::new(1, 8, 0.05);
        assert!(settings.validate().is_ok());
    }
}
