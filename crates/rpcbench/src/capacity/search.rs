//! The capacity search as pure functions: the next rate (or connection count) from the steps
//! so far, doubling then bisecting, and the knee of the latency curve.

use super::*;

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
pub(super) fn round_rate(rate: f64) -> f64 {
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
