//! Judging one step of a capacity search against the SLO: the figures a step is judged on
//! (achieved rate, unsent share, latency measured from the intended or the actual send) and the
//! verdict, with the generator blamed when it, not the target, fell short.

use super::*;

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
