//! Comparisons: one workload run against several targets in turn, with a cool-down between,
//! summed up in one table (a row per metric, a column per target, ratios against the first;
//! each target's processes sampled while its run goes on, when asked for, and the generator's
//! own CPU and memory);
//! and the equality check, which sends identical requests to every target and reports the
//! responses that differ after normalisation.

use std::fmt::{self, Write};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;

use crate::client::{CallError, Endpoint};
use crate::engine::config::RunConfig;
use crate::engine::{EngineError, Run, StopHandle};
use crate::monitor::Monitor;
use crate::report::tables::{
    count_with_share, describe_load, format_ratio, method_groups, outcome_rows, stage_groups, status_rows,
    summary_rows, usage_rows, MetricRow, OutcomeRow, RowGroup,
};
use crate::report::RunReport;
use crate::results::{ResultsFile, SavedRun};
pub use crate::util::json_path::{normalize, FieldPath};
use crate::util::printable::escape_controls;
use crate::util::redact::Secrets;
use crate::util::units::trim_float;
use crate::verdict::{
    methodology_lines, tie_bands_text, verdicts_by, FigureVerdict, Methodology, RoundFigures, VerdictRule,
};

/// Version of the comparison JSON layout.
pub const COMPARISON_VERSION: u32 = 1;

/// One target of a comparison: its name and the run against it.
#[derive(Debug, Clone)]
pub struct CompareTarget {
    /// The name shown in the table.
    pub name: String,
    /// The run (identical for every target but the URL).
    pub config: RunConfig,
    /// The target's processes, sampled from /proc while its run goes on (empty: none).
    pub monitor_pids: Vec<u32>,
}

/// What a comparison is doing, for progress output.
#[derive(Debug)]
pub enum CompareEvent<'a> {
    /// A run starts.
    Started {
        /// The target's name.
        name: &'a str,
        /// Its URL, redacted.
        target: String,
    },
    /// A run finished (in rounds: every round of the target, after the last round).
    Finished(&'a SavedRun),
    /// A round of a target starts (a comparison in rounds).
    RoundStarted {
        /// The round, from 1.
        round: u32,
        /// Of how many.
        rounds: u32,
        /// The target's name.
        name: &'a str,
        /// Its URL, redacted.
        target: String,
    },
    /// A round of a target finished.
    RoundFinished {
        /// The target's name.
        name: &'a str,
        /// What it measured in the round.
        figures: &'a crate::verdict::RoundFigures,
    },
    /// Connections of a run failed: a count and the first message of each kind.
    ConnectFailures {
        /// The target's name.
        name: &'a str,
        /// Why.
        causes: &'a crate::connect_causes::ConnectCauses,
    },
    /// Waiting before the next run.
    CoolingDown(Duration),
}

/// A run of the comparison could not start.
#[derive(Debug)]
pub struct CompareError {
    /// The target's name.
    pub name: String,
    /// Why.
    pub error: EngineError,
}

impl fmt::Display for CompareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.error)
    }
}

impl std::error::Error for CompareError {}

/// Runs the workload against each target in turn, sleeping `cooldown` between runs. A stop
/// ends the running run and skips the rest; the runs that happened are returned.
pub fn run_comparison(
    targets: &[CompareTarget],
    cooldown: Duration,
    stop: &StopHandle,
    mut on_event: impl FnMut(CompareEvent<'_>),
) -> Result<Vec<SavedRun>, CompareError> {
    let mut runs = Vec::with_capacity(targets.len());
    for (index, target) in targets.iter().enumerate() {
        if stop.is_stopped() {
            break;
        }
        if index > 0 && !cooldown.is_zero() {
            on_event(CompareEvent::CoolingDown(cooldown));
            let until = Instant::now() + cooldown;
            while !stop.is_stopped() {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                std::thread::sleep(left.min(Duration::from_millis(50)));
            }
            if stop.is_stopped() {
                break;
            }
        }
        let error = |error| CompareError { name: target.name.clone(), error };
        on_event(CompareEvent::Started { name: &target.name, target: target.config.target.redacted() });
        let run = Run::with_stop(target.config.clone(), stop.clone()).map_err(error)?;
        let started = SystemTime::now();
        let monitor = (!target.monitor_pids.is_empty()).then(|| Monitor::start(&target.monitor_pids));
        let record = run.execute();
        let target_resources = monitor.map(Monitor::stop);
        let record = record.map_err(error)?;
        let mut file = ResultsFile::from_run(&target.config, &record, started);
        file.label = Some(target.name.clone());
        file.target_resources = target_resources.clone();
        let mut saved = SavedRun::new(file, &target.name).map_err(|message| {
            error(EngineError::Runtime(std::io::Error::other(format!("results do not decode: {message}"))))
        })?;
        // The live report: it has everything the file keeps and the per-stage figures too.
        saved.report = RunReport::new(&target.config, &record);
        saved.report.target_resources = target_resources;
        on_event(CompareEvent::Finished(&saved));
        if !record.connect_causes.is_empty() {
            on_event(CompareEvent::ConnectFailures { name: &target.name, causes: &record.connect_causes });
        }
        runs.push(saved);
    }
    Ok(runs)
}

/// The comparison table as text: a row per metric, a column per run, ratios against the
/// first run; then outcomes, HTTP statuses, and the per-stage and per-call metrics with their
/// ratios too.
pub fn render_comparison_text(runs: &[SavedRun]) -> String {
    let mut out = String::new();
    let Some(first) = runs.first() else {
        return out;
    };
    let reports: Vec<&RunReport> = runs.iter().map(|r| &r.report).collect();
    let _ = writeln!(out, "rpcbench comparison of {} run(s); ratios against {}", runs.len(), first.label);
    let name_width = runs.iter().map(|r| r.label.chars().count()).max().unwrap_or(0);
    for run in runs {
        let report = &run.report;
        let mut line = format!(
            "  {:<name_width$}  {} {} ({})",
            run.label,
            report.method,
            report.target,
            describe_load(report)
        );
        if run.file.shards() > 1 {
            line.push_str(&format!(", {} shards", run.file.shards()));
        }
        if report.interrupted {
            line.push_str(", INTERRUPTED");
        }
        let _ = writeln!(out, "{line}");
    }
    let labels: Vec<&str> = runs.iter().map(|run| run.label.as_str()).collect();
    let rows = comparison_rows(&reports);
    let cells: Vec<(String, Vec<String>)> = rows
        .iter()
        .map(|row| (row.metric.clone(), (0..runs.len()).map(|i| row.cell_with_ratio(i)).collect()))
        .collect();
    text_table(&mut out, "Metric", &labels, &cells);
    if let Some(verdicts) = comparison_verdicts(runs) {
        let _ = writeln!(out);
        out.push_str(&verdicts.text());
    }
    // Outcomes by class (JSON-RPC errors by code with their message) and responses by HTTP
    // status, as counts with their share of each run's requests.
    let share_rows = |rows: Vec<OutcomeRow>| -> Vec<(String, Vec<String>)> {
        rows.into_iter()
            .map(|row| {
                let cells = row
                    .counts
                    .iter()
                    .zip(&reports)
                    .map(|(count, report)| count_with_share(*count, report.requests.total))
                    .collect();
                (row.outcome, cells)
            })
            .collect()
    };
    let _ = writeln!(out);
    text_table(&mut out, "Outcome", &labels, &share_rows(outcome_rows(&reports)));
    let statuses = status_rows(&reports);
    if !statuses.is_empty() {
        let _ = writeln!(out);
        text_table(&mut out, "HTTP status", &labels, &share_rows(statuses));
    }
    for (corner, groups) in [("Per stage", stage_groups(&reports)), ("Per method", method_groups(&reports))] {
        if groups.is_empty() {
            continue;
        }
        let _ = writeln!(out);
        text_table(&mut out, corner, &labels, &group_cells(&groups, runs.len()));
    }
    if let Some(heads) =
        crate::heads::HeadsReport::gather(runs.iter().filter_map(|run| run.report.heads.as_ref()))
    {
        let _ = writeln!(out);
        out.push_str(&heads.render_text());
    }
    out
}

/// The verdicts of a comparison in rounds: each target after the first against the first,
/// figure by figure, and how the comparison was run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparisonVerdicts {
    /// How the comparison was run (the first run's methodology).
    pub methodology: Methodology,
    /// The baseline's name.
    pub baseline: String,
    /// Each other target's verdicts.
    pub targets: Vec<TargetVerdicts>,
}

/// One target's verdicts against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetVerdicts {
    /// The target's name.
    pub name: String,
    /// A verdict per figure.
    pub verdicts: Vec<FigureVerdict>,
}

impl ComparisonVerdicts {
    /// The verdicts and the methodology as text lines under the table.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let m = &self.methodology;
        let _ = writeln!(
            out,
            "Verdicts against {} ({}% CI over {} round(s), {})",
            escape_controls(&self.baseline),
            trim_float(m.confidence * 100.0),
            m.rounds,
            tie_bands_text(m)
        );
        let name_width = self.targets.iter().map(|t| t.name.chars().count()).max().unwrap_or(0);
        let metric_width = self
            .targets
            .iter()
            .flat_map(|t| &t.verdicts)
            .map(|v| v.metric.chars().count())
            .max()
            .unwrap_or(0);
        for target in &self.targets {
            for (index, verdict) in target.verdicts.iter().enumerate() {
                let name =
                    if index == 0 { escape_controls(&target.name).into_owned() } else { String::new() };
                let _ = writeln!(
                    out,
                    "  {name:<name_width$}  {:<metric_width$}  {}",
                    verdict.metric, verdict.text
                );
            }
        }
        let _ = writeln!(out, "Method:");
        for line in methodology_lines(m) {
            let _ = writeln!(out, "  {line}");
        }
        out
    }
}

/// The verdicts of runs made in rounds (every run's results keep its rounds), each target
/// against the first; `None` when any run was not made in rounds (a single run, or a file
/// written before comparisons had rounds).
pub fn comparison_verdicts(runs: &[SavedRun]) -> Option<ComparisonVerdicts> {
    let (first, rest) = runs.split_first()?;
    let baseline = first.file.rounds.as_ref()?;
    let mut targets = Vec::with_capacity(rest.len());
    for run in rest {
        let theirs = run.file.rounds.as_ref()?;
        targets.push(TargetVerdicts {
            name: run.label.clone(),
            verdicts: verdicts_by(&baseline.rounds, &theirs.rounds, &VerdictRule::of(&baseline.methodology)),
        });
    }
    Some(ComparisonVerdicts {
        methodology: baseline.methodology.clone(),
        baseline: first.label.clone(),
        targets,
    })
}

/// Grouped rows as text table rows: the group's name on a line of its own, then its metrics
/// indented, each cell with its ratio against the first run.
fn group_cells(groups: &[RowGroup], runs: usize) -> Vec<(String, Vec<String>)> {
    let mut cells = Vec::new();
    for group in groups {
        cells.push((escape_controls(&group.name).into_owned(), vec![String::new(); runs]));
        for row in &group.rows {
            cells.push((format!("  {}", row.metric), (0..runs).map(|i| row.cell_with_ratio(i)).collect()));
        }
    }
    cells
}

/// A text table: a first column of row names under `corner`, then a right-aligned column per
/// label.
fn text_table(out: &mut String, corner: &str, labels: &[&str], rows: &[(String, Vec<String>)]) {
    let name_width =
        rows.iter().map(|(name, _)| name.chars().count()).chain([corner.chars().count()]).max().unwrap_or(0);
    let widths: Vec<usize> = (0..labels.len())
        .map(|i| {
            rows.iter()
                .map(|(_, cells)| cells[i].chars().count())
                .chain([labels[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let _ = write!(out, "{corner:<name_width$}");
    for (label, width) in labels.iter().zip(&widths) {
        let _ = write!(out, "  {label:>width$}");
    }
    let _ = writeln!(out);
    for (name, cells) in rows {
        let mut line = format!("{name:<name_width$}");
        for (cell, width) in cells.iter().zip(&widths) {
            let _ = write!(line, "  {cell:>width$}");
        }
        // A group's own line has empty cells.
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// The rows of a comparison: the headline metrics, then what the target process(es) used
/// (when monitored) and what the generator used.
fn comparison_rows(reports: &[&RunReport]) -> Vec<MetricRow> {
    let mut rows = summary_rows(reports);
    rows.extend(usage_rows(reports));
    rows
}

#[derive(Serialize)]
struct ComparisonJson<'a> {
    comparison_version: u32,
    baseline: &'a str,
    metrics: Vec<MetricJson>,
    /// Per stage of a staged load (empty otherwise), each metric with its ratios.
    stages: Vec<GroupJson>,
    /// Per call of a mix (empty for a single call), each metric with its ratios.
    methods: Vec<GroupJson>,
    runs: Vec<RunJson<'a>>,
    /// A comparison in rounds: how it was run (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    methodology: Option<Methodology>,
    /// A comparison in rounds: each other target's verdicts against the baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    verdicts: Option<Vec<TargetVerdicts>>,
}

#[derive(Serialize)]
struct GroupJson {
    name: String,
    metrics: Vec<MetricJson>,
}

impl MetricJson {
    fn new(row: MetricRow) -> Self {
        Self {
            ratios: row.ratios(),
            values: row.values.iter().map(|v| v.is_finite().then_some(*v)).collect(),
            metric: row.metric,
        }
    }
}

impl GroupJson {
    fn all(groups: Vec<RowGroup>) -> Vec<Self> {
        groups
            .into_iter()
            .map(|group| Self {
                name: group.name,
                metrics: group.rows.into_iter().map(MetricJson::new).collect(),
            })
            .collect()
    }
}

#[derive(Serialize)]
struct MetricJson {
    metric: String,
    /// Null where a run did not measure it (a target that was not monitored).
    values: Vec<Option<f64>>,
    ratios: Vec<Option<f64>>,
}

#[derive(Serialize)]
struct RunJson<'a> {
    name: &'a str,
    started_at: &'a str,
    shards: u64,
    report: &'a RunReport,
    /// A comparison in rounds: this target's figures of each round.
    #[serde(skip_serializing_if = "Option::is_none")]
    rounds: Option<&'a [RoundFigures]>,
}

/// The comparison as pretty JSON: the metrics with their values and ratios, the same per stage
/// and per call, then each run's full report.
pub fn comparison_json(runs: &[SavedRun]) -> String {
    let reports: Vec<&RunReport> = runs.iter().map(|r| &r.report).collect();
    let verdicts = comparison_verdicts(runs);
    let json = ComparisonJson {
        comparison_version: COMPARISON_VERSION,
        baseline: runs.first().map_or("", |r| r.label.as_str()),
        metrics: comparison_rows(&reports).into_iter().map(MetricJson::new).collect(),
        stages: GroupJson::all(stage_groups(&reports)),
        methods: GroupJson::all(method_groups(&reports)),
        runs: runs
            .iter()
            .map(|run| RunJson {
                name: &run.label,
                started_at: &run.file.started_at,
                shards: run.file.shards(),
                report: &run.report,
                rounds: run.file.rounds.as_ref().map(|r| r.rounds.as_slice()),
            })
            .collect(),
        methodology: verdicts.as_ref().map(|v| v.methodology.clone()),
        verdicts: verdicts.map(|v| v.targets),
    };
    serde_json::to_string_pretty(&json).expect("a comparison serializes")
}

/// A difference at one place between two normalised responses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// The round, from 1.
    pub round: u32,
    /// Where: `result.value`, `result.transactions[3].meta`, or `(response)` for the whole.
    pub path: String,
    /// The baseline's value there (absent if missing).
    pub baseline: Option<Value>,
    /// This target's value there (absent if missing).
    pub value: Option<Value>,
}

fn join_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Where `a` and `b` differ, at most `limit` leaves.
fn differences(
    a: &Value,
    b: &Value,
    path: &str,
    out: &mut Vec<(String, Option<Value>, Option<Value>)>,
    limit: usize,
) {
    if out.len() >= limit || a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let child = join_path(path, key);
                match (x.get(key), y.get(key)) {
                    (Some(p), Some(q)) => differences(p, q, &child, out, limit),
                    (p, q) => {
                        if out.len() < limit {
                            out.push((child, p.cloned(), q.cloned()));
                        }
                    }
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (index, (p, q)) in x.iter().zip(y).enumerate() {
                differences(p, q, &format!("{path}[{index}]"), out, limit);
            }
        }
        _ => {
            let place = if path.is_empty() { "(response)".to_string() } else { path.to_string() };
            out.push((place, Some(a.clone()), Some(b.clone())));
        }
    }
}

/// How the equality check runs.
#[derive(Debug, Clone)]
pub struct EqualOptions {
    /// Rounds: each sends one request to every target.
    pub rounds: u32,
    /// Fields left out of the comparison.
    pub ignore: Vec<FieldPath>,
    /// Time allowed for each request.
    pub timeout: Duration,
}

/// What the equality check found for one target against the first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EqualTarget {
    /// The target's name.
    pub name: String,
    /// Its URL, redacted.
    pub target: String,
    /// Rounds whose response differed from the baseline's.
    pub differing_rounds: u32,
    /// The first few differences.
    pub examples: Vec<Difference>,
}

/// The result of the equality check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EqualReport {
    /// The method called.
    pub method: String,
    /// The params sent.
    pub params: Option<Value>,
    /// Rounds run.
    pub rounds: u32,
    /// The first target, which the others are compared with.
    pub baseline: String,
    /// Its URL, redacted.
    pub baseline_target: String,
    /// Fields left out.
    pub ignored: Vec<String>,
    /// The other targets.
    pub targets: Vec<EqualTarget>,
}

impl EqualReport {
    /// Whether every response equalled the baseline's.
    pub fn all_equal(&self) -> bool {
        self.targets.iter().all(|t| t.differing_rounds == 0)
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("an equality report serializes")
    }
}

/// A response as compared: `{"result": …}`, `{"error": {"code", "message"}}`, or
/// `{"failure": "…"}` when there was no JSON-RPC answer.
fn response_value(outcome: Result<Value, CallError>) -> Value {
    match outcome {
        Ok(result) => serde_json::json!({ "result": result }),
        Err(CallError::Rpc { code, message }) => {
            serde_json::json!({ "error": { "code": code, "message": message } })
        }
        Err(err) => serde_json::json!({ "failure": err.to_string() }),
    }
}

/// Examples kept per target.
const MAX_EXAMPLES: usize = 10;
/// Differences kept per round.
const MAX_PER_ROUND: usize = 3;

/// Sends the same request to every target (`(name, url)`), `rounds` times, and compares each
/// target's normalised responses with the first target's of the same round.
pub fn check_equal(
    targets: &[(String, Endpoint)],
    method: &str,
    params: Option<&Value>,
    options: &EqualOptions,
    stop: &StopHandle,
) -> EqualReport {
    let targets: Vec<(&str, Endpoint)> = targets
        .iter()
        .map(|(name, endpoint)| (name.as_str(), endpoint.clone().with_timeout(options.timeout)))
        .collect();
    // What a target answered may quote its own secrets or another's: every one is scrubbed.
    let mut secrets = Secrets::new();
    for (_, endpoint) in &targets {
        secrets.extend(endpoint.secrets());
    }
    let scrubbed = |value: Option<Value>| {
        value.map(|mut value| {
            secrets.scrub_json(&mut value);
            value
        })
    };
    let mut report = EqualReport {
        method: method.to_string(),
        params: params.cloned(),
        rounds: 0,
        baseline: targets.first().map(|(name, _)| name.to_string()).unwrap_or_default(),
        baseline_target: targets.first().map(|(_, endpoint)| endpoint.redacted()).unwrap_or_default(),
        ignored: options.ignore.iter().map(|p| p.as_str().to_string()).collect(),
        targets: targets
            .iter()
            .skip(1)
            .map(|(name, endpoint)| EqualTarget {
                name: name.to_string(),
                target: endpoint.redacted(),
                differing_rounds: 0,
                examples: Vec::new(),
            })
            .collect(),
    };
    for round in 1..=options.rounds {
        if stop.is_stopped() {
            break;
        }
        let responses: Vec<Value> = targets
            .iter()
            .map(|(_, endpoint)| {
                let mut value = response_value(endpoint.call(method, params));
                normalize(&mut value, &options.ignore);
                value
            })
            .collect();
        report.rounds = round;
        let Some((base, others)) = responses.split_first() else { break };
        for (target, response) in report.targets.iter_mut().zip(others) {
            if response == base {
                continue;
            }
            target.differing_rounds += 1;
            let mut found = Vec::new();
            differences(base, response, "", &mut found, MAX_PER_ROUND);
            for (path, baseline, value) in found {
                if target.examples.len() < MAX_EXAMPLES {
                    target.examples.push(Difference {
                        round,
                        path: secrets.scrub(&path).into_owned(),
                        baseline: scrubbed(baseline),
                        value: scrubbed(value),
                    });
                }
            }
        }
    }
    report
}

fn show(value: &Option<Value>) -> String {
    match value {
        Some(value) => crate::report::tables::shorten(&value.to_string(), 60),
        None => "(missing)".into(),
    }
}

/// The equality check as text.
pub fn render_equal_text(report: &EqualReport) -> String {
    let mut out = String::new();
    let params = report.params.as_ref().map(|p| format!(" {p}")).unwrap_or_default();
    let _ = writeln!(
        out,
        "rpcbench equality check: {}{params}, {} round(s), against {} ({})",
        report.method, report.rounds, report.baseline, report.baseline_target
    );
    if !report.ignored.is_empty() {
        let _ = writeln!(out, "  ignoring: {}", report.ignored.join(", "));
    }
    for target in &report.targets {
        if target.differing_rounds == 0 {
            let _ = writeln!(
                out,
                "  {} ({}): all {} response(s) equal {}'s",
                target.name, target.target, report.rounds, report.baseline
            );
            continue;
        }
        let _ = writeln!(
            out,
            "  {} ({}): {} of {} response(s) differ from {}'s",
            target.name, target.target, target.differing_rounds, report.rounds, report.baseline
        );
        for example in &target.examples {
            let _ = writeln!(
                out,
                "    round {}: {}: {} ({}) vs {} ({})",
                example.round,
                escape_controls(&example.path),
                show(&example.baseline),
                report.baseline,
                show(&example.value),
                target.name
            );
        }
    }
    let verdict = if report.all_equal() { "EQUAL" } else { "DIFFERENT" };
    let _ = writeln!(out, "{verdict}");
    out
}

/// The equality check as Markdown.
pub fn render_equal_markdown(report: &EqualReport) -> String {
    let mut out = String::new();
    let cell = crate::util::printable::markdown;
    let _ = writeln!(out, "## rpcbench equality check: {}", cell(&report.method));
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} round(s) against {} ({}){}",
        report.rounds,
        cell(&report.baseline),
        crate::util::printable::markdown_code(&report.baseline_target),
        if report.ignored.is_empty() {
            String::new()
        } else {
            format!("; ignoring {}", cell(&report.ignored.join(", ")))
        }
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "| target | URL | differing rounds |");
    let _ = writeln!(out, "|---|---|---:|");
    for target in &report.targets {
        let _ = writeln!(
            out,
            "| {} | {} | {} of {} |",
            cell(&target.name),
            crate::util::printable::markdown_code(&target.target),
            target.differing_rounds,
            report.rounds
        );
    }
    let examples: Vec<(&EqualTarget, &Difference)> =
        report.targets.iter().flat_map(|t| t.examples.iter().map(move |e| (t, e))).collect();
    if !examples.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "| target | round | field | {} | target's |", cell(&report.baseline));
        let _ = writeln!(out, "|---|---:|---|---|---|");
        for (target, example) in examples {
            let _ = writeln!(
                out,
                "| {} | {} | `{}` | `{}` | `{}` |",
                cell(&target.name),
                example.round,
                cell(&example.path),
                cell(&show(&example.baseline)),
                cell(&show(&example.value))
            );
        }
    }
    out
}

/// Ratios as the comparison table shows them, for callers that print their own.
pub fn ratio_text(value: f64, baseline: f64) -> String {
    if baseline > 0.0 {
        format_ratio(value / baseline)
    } else {
        "-".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalisation_ignores_key_order_hex_case_and_ignored_fields() {
        let ignore = vec![FieldPath::parse("result.context.slot").unwrap()];
        let mut a = json!({"result": {"value": "0xABcd", "context": {"slot": 5, "apiVersion": "2"}}});
        let mut b = json!({"result": {"context": {"apiVersion": "2", "slot": 9}, "value": "0xabCD"}});
        normalize(&mut a, &ignore);
        normalize(&mut b, &ignore);
        assert_eq!(a, b);
        assert_eq!(a.to_string(), r#"{"result":{"context":{"apiVersion":"2"},"value":"0xabcd"}}"#);
        // Not hex: left alone.
        let mut c = json!({"result": "0xZZ"});
        normalize(&mut c, &[]);
        assert_eq!(c, json!({"result": "0xZZ"}));
    }

    #[test]
    fn wildcards_and_indices_in_field_paths() {
        let ignore = vec![
            FieldPath::parse("result.value[*].slot").unwrap(),
            FieldPath::parse("result.extra.1").unwrap(),
        ];
        let mut value =
            json!({"result": {"value": [{"slot": 1, "x": 2}, {"slot": 3, "x": 4}], "extra": [1, 2, 3]}});
        normalize(&mut value, &ignore);
        assert_eq!(value, json!({"result": {"value": [{"x": 2}, {"x": 4}], "extra": [1, null, 3]}}));
        assert!(FieldPath::parse("").is_err());
        assert!(FieldPath::parse("result..slot").is_err());
    }

    #[test]
    fn differences_name_the_paths() {
        let a = json!({"result": {"value": 1, "list": [1, 2], "gone": true}});
        let b = json!({"result": {"value": 2, "list": [1, 3], "new": false}});
        let mut found = Vec::new();
        differences(&a, &b, "", &mut found, 10);
        let paths: Vec<&str> = found.iter().map(|(p, _, _)| p.as_str()).collect();
        assert_eq!(paths, vec!["result.gone", "result.list[1]", "result.new", "result.value"]);
        let mut found = Vec::new();
        differences(&json!(1), &json!(2), "", &mut found, 10);
        assert_eq!(found[0].0, "(response)");
    }

    #[test]
    fn ratio_text_handles_a_zero_baseline() {
        assert_eq!(ratio_text(6.0, 5.0), "1.20x");
        assert_eq!(ratio_text(1.0, 0.0), "-");
        assert_eq!(ratio_text(1000.0, 1.0), "1000x");
    }
}
