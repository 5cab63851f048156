//! Capacity files: what `rpcbench capacity --save FILE` writes and `rpcbench report FILE`
//! renders again. One JSON object on one line, versioned by `format` (`rpcbench-capacity`)
//! and `version`:
//!
//! - metadata: the start time (RFC 3339, UTC), the machine that ran the load, the request
//!   object (without `jsonrpc` and `id`);
//! - `report`: the search exactly as reported live ([`CapacityReport`]): the settings (with
//!   `mode: "connections"` for a search over connections; files without a mode are rate
//!   searches) and the SLO, every step (offered and achieved rate, requests, errors, percentiles, verdict and
//!   breaches, the target's resources when monitored, what the generator used), the answer,
//!   its margin, the knee and what ended the climb;
//! - `steps`: per step, what it recorded, losslessly: outcomes by class, HTTP statuses, bytes,
//!   pacing counts and the four HDR histograms in the results files' encoding
//!   ([`crate::results`]), and the generator's usage.
//!
//! Reading checks the figures of every step against its histograms and counts, so a file whose
//! parts do not belong together is refused rather than rendered.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capacity::{CapacityReport, StepData};
use crate::record::Totals;
use crate::report::LatencyReport;
use crate::results::{write_atomically, Machine, ResultsError, RESULTS_FORMAT};
use crate::util::units::rfc3339;

/// The value of `format` in every capacity file.
pub use crate::results::CAPACITY_FORMAT;

/// The layout version written; bumped when a field changes meaning or goes away.
pub const CAPACITY_VERSION: u32 = 1;

/// A capacity file, as written and read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityFile {
    /// Always [`CAPACITY_FORMAT`].
    pub format: String,
    /// The layout version, [`CAPACITY_VERSION`].
    pub version: u32,
    /// When the search started, RFC 3339 in UTC.
    pub started_at: String,
    /// The machine that ran the load.
    pub machine: Machine,
    /// The request object every step sent, without `jsonrpc` and `id`.
    pub request: Value,
    /// The search as reported.
    pub report: CapacityReport,
    /// What each step recorded, in the order of `report.steps`.
    pub steps: Vec<StepData>,
}

/// One step's figures decoded from a capacity file.
#[derive(Debug)]
pub struct DecodedStep {
    /// The step's totals, histograms included.
    pub totals: Totals,
    /// Its latency from the intended send time.
    pub latency: LatencyReport,
}

impl CapacityFile {
    /// The file of a finished search that started at `started`.
    pub fn new(
        report: CapacityReport,
        steps: Vec<StepData>,
        request: Value,
        started: std::time::SystemTime,
    ) -> Self {
        Self {
            format: CAPACITY_FORMAT.into(),
            version: CAPACITY_VERSION,
            started_at: rfc3339(started),
            machine: Machine::current(),
            request,
            report,
            steps,
        }
    }

    /// The compact JSON text of the file, newline-terminated.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string(self).expect("a capacity file always serializes");
        text.push('\n');
        text
    }

    /// Parses and checks a capacity file's text; `path` names it in errors.
    pub fn from_json(text: &str, path: &Path) -> Result<Self, ResultsError> {
        let invalid = |message: String| ResultsError::Invalid { path: path.to_path_buf(), message };
        let value: Value = serde_json::from_str(text).map_err(|err| ResultsError::not_json(path, &err))?;
        match value.get("format").and_then(Value::as_str) {
            Some(CAPACITY_FORMAT) => {}
            Some(RESULTS_FORMAT) => {
                return Err(invalid(format!(
                    "this is a run's results file ('{RESULTS_FORMAT}'), not a capacity file (write one with capacity --save)"
                )))
            }
            Some(other) => return Err(invalid(format!("format is '{other}', not '{CAPACITY_FORMAT}'"))),
            None if value.get("limited_by").is_some() => {
                return Err(invalid(
                    "this is a capacity JSON report (-f json), not a capacity file (write one with capacity --save)"
                        .into(),
                ))
            }
            None => return Err(invalid(format!("no \"format\": \"{CAPACITY_FORMAT}\""))),
        }
        match value.get("version").and_then(Value::as_u64) {
            Some(version) if version == u64::from(CAPACITY_VERSION) => {}
            Some(version) => {
                return Err(invalid(format!(
                    "version {version}; this rpcbench reads capacity files of version {CAPACITY_VERSION}"
                )))
            }
            None => return Err(invalid("no version".into())),
        }
        let file: CapacityFile = serde_json::from_value(value).map_err(|err| invalid(err.to_string()))?;
        file.decode_steps().map_err(|err| invalid(err.to_string()))?;
        Ok(file)
    }

    /// Reads and checks a capacity file.
    pub fn load(path: &Path) -> Result<Self, ResultsError> {
        let text = crate::util::files::read_text_limited(path, crate::util::files::MAX_RESULTS)
            .map_err(|source| ResultsError::Io { path: path.to_path_buf(), source })?;
        Self::from_json(&text, path)
    }

    /// Writes the file atomically.
    pub fn save(&self, path: &Path) -> Result<(), ResultsError> {
        write_atomically(path, self.to_json().as_bytes())
            .map_err(|source| ResultsError::Io { path: path.to_path_buf(), source })
    }

    /// Every step's totals decoded, checked against the figures the report shows for it; the
    /// headline (capacity, first failing rate) checked against the steps' verdicts.
    pub fn decode_steps(&self) -> Result<Vec<DecodedStep>, StepsError> {
        let history: Vec<(f64, bool)> =
            self.report.steps.iter().map(|step| (step.level(), step.verdict.passed())).collect();
        let (capacity, first_failing) = crate::capacity::bracket(&history);
        if capacity != self.report.capacity || first_failing != self.report.first_failing_rate {
            return Err(StepsError::Headline {
                said: (self.report.capacity, self.report.first_failing_rate),
                steps_give: (capacity, first_failing),
            });
        }
        if self.steps.len() != self.report.steps.len() {
            return Err(StepsError::Count { recorded: self.steps.len(), reported: self.report.steps.len() });
        }
        self.steps
            .iter()
            .zip(&self.report.steps)
            .map(|(data, shown)| {
                let at = |fault: StepFault| StepsError::Step { step: shown.step, fault };
                if data.step != shown.step {
                    return Err(at(StepFault::RecordedAs(data.step)));
                }
                let totals = data.results.totals().map_err(|err| at(StepFault::Decode(err)))?;
                let latency = LatencyReport::from_histogram(&totals.latency);
                let uncorrected = LatencyReport::from_histogram(&totals.latency_uncorrected);
                let checks = [
                    ("requests", shown.requests, totals.counts.total()),
                    ("errors", shown.errors, totals.counts.errors()),
                    ("unsent", shown.unsent, totals.unsent),
                    ("p50", shown.p50_us, latency.percentile("p50")),
                    ("p90", shown.p90_us, latency.percentile("p90")),
                    ("p99", shown.p99_us, latency.percentile("p99")),
                    ("uncorrected p99", shown.p99_uncorrected_us, uncorrected.percentile("p99")),
                ];
                for (name, reported, recorded) in checks {
                    if reported != recorded {
                        return Err(at(StepFault::Mismatch { name, reported, recorded }));
                    }
                }
                Ok(DecodedStep { totals, latency })
            })
            .collect()
    }
}

/// Why the steps of a capacity file do not add up to its report.
#[derive(Debug)]
pub enum StepsError {
    /// The headline (capacity, first failing level) is not what the steps' verdicts give.
    Headline {
        /// What the report says.
        said: (Option<f64>, Option<f64>),
        /// What its steps give.
        steps_give: (Option<f64>, Option<f64>),
    },
    /// Not as many recorded steps as reported ones.
    Count {
        /// Steps recorded.
        recorded: usize,
        /// Steps reported.
        reported: usize,
    },
    /// One step is at fault.
    Step {
        /// The step's number.
        step: usize,
        /// What is wrong with it.
        fault: StepFault,
    },
}

/// What is wrong with one step of a capacity file.
#[derive(Debug)]
pub enum StepFault {
    /// Its figures are recorded under another step's number.
    RecordedAs(usize),
    /// Its figures do not decode.
    Decode(crate::results::DecodeError),
    /// A figure the report shows differs from the recorded one.
    Mismatch {
        /// The figure.
        name: &'static str,
        /// As reported.
        reported: u64,
        /// As recorded.
        recorded: u64,
    },
}

impl std::fmt::Display for StepsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |rate: Option<f64>| rate.map_or("none".to_string(), |rate| format!("{rate}/s"));
        match self {
            StepsError::Headline { said, steps_give } => write!(
                f,
                "the headline says capacity {} (first failing {}) but its steps give {} (first failing {})",
                shown(said.0),
                shown(said.1),
                shown(steps_give.0),
                shown(steps_give.1)
            ),
            StepsError::Count { recorded, reported } => {
                write!(f, "{recorded} recorded steps for {reported} reported steps")
            }
            StepsError::Step { step, fault } => match fault {
                StepFault::RecordedAs(other) => write!(f, "step {step}: recorded as step {other}"),
                StepFault::Decode(err) => write!(f, "step {step}: {err}"),
                StepFault::Mismatch { name, reported, recorded } => write!(
                    f,
                    "step {step}: {name} is {reported} in the report but {recorded} in the recorded figures"
                ),
            },
        }
    }
}

impl std::error::Error for StepsError {}

/// Whether the file at `path` says it is a capacity file (its `format`); false if it cannot be
/// read or parsed (loading it then says why).
pub fn is_capacity_file(path: &Path) -> bool {
    #[derive(Deserialize)]
    struct Format {
        format: Option<String>,
    }
    crate::util::files::read_text_limited(path, crate::util::files::MAX_RESULTS)
        .ok()
        .and_then(|text| serde_json::from_str::<Format>(&text).ok())
        .and_then(|f| f.format)
        .is_some_and(|format| format == CAPACITY_FORMAT)
}
