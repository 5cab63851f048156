//! `rpcbench demo`: seed 000's four Solana tests (getBalance, getBlocks, getBlock, getSlot) run
//! briefly against the built-in mock Solana node at two connection counts and one constant
//! rate, summed up in one side-by-side table ready to paste into a pull request.

use std::fmt::Write;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use crate::capacity::{self, CapacityReport, CapacitySettings, SearchBounds, Slo, StepResult};
use crate::client;
use crate::engine::config::{Arrivals, Length, Load, RunConfig, Target};
use crate::engine::{EngineError, LiveSink, Run, StopHandle};
use crate::jsonrpc::RequestTemplate;
use crate::mock::{Chain, MockError, MockOptions, MockServer};
use crate::report::RunReport;
use crate::results::ResultsFile;
use crate::util::units::format_micros;

/// The account seed 000 asks for.
pub const SEED_ACCOUNT: &str = "4EVAJ81v9fLjz2wp44SZmxgTbvYB8dBRZ6s1SAqP99eZ";

/// How the demo runs.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Measured length of each step.
    pub step_duration: Duration,
    /// The two closed-loop connection counts.
    pub connections: [usize; 2],
    /// The open-loop rate, requests per second.
    pub rate: f64,
    /// Threads for the mock node (the rest of the machine is the generator's).
    pub node_threads: usize,
    /// Where every step publishes live figures (`--metrics-listen`), if anywhere.
    pub metrics: Option<crate::metrics::LiveMetrics>,
}

impl Default for DemoOptions {
    fn default() -> Self {
        Self {
            step_duration: Duration::from_secs(2),
            connections: [16, 256],
            rate: 2000.0,
            node_threads: 1,
            metrics: None,
        }
    }
}

/// Why the demo could not run.
#[derive(Debug)]
pub enum DemoError {
    /// The mock node did not start.
    Node(MockError),
    /// The mock node did not answer a setup call.
    Setup(client::CallError),
    /// A run could not start.
    Engine(EngineError),
}

impl std::fmt::Display for DemoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DemoError::Node(err) => write!(f, "the mock Solana node did not start: {err}"),
            DemoError::Setup(err) => write!(f, "the mock Solana node did not answer: {err}"),
            DemoError::Engine(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for DemoError {}

/// One step's outcome.
#[derive(Debug, Clone)]
pub struct DemoStep {
    /// The method called.
    pub method: String,
    /// `16 conns`, `2000/s`.
    pub load: String,
    /// The full report of the step.
    pub report: RunReport,
    /// The step's results, labelled `method load` (for the HTML report).
    pub results: ResultsFile,
}

/// What the demo reports as it goes (for progress output).
#[derive(Debug)]
pub enum DemoEvent<'a> {
    /// A load step finished.
    Step(&'a DemoStep),
    /// The closing capacity search starts, with these settings (whose
    /// [`CapacitySettings::next`] says which rate each step will try).
    CapacityStarted(&'a CapacitySettings),
    /// A step of the capacity search finished.
    CapacityStep(&'a StepResult),
}

/// Everything the demo measured.
#[derive(Debug, Clone)]
pub struct DemoSummary {
    /// The node's URL.
    pub node_url: String,
    /// Every step in order.
    pub steps: Vec<DemoStep>,
    /// The demo was interrupted.
    pub interrupted: bool,
    /// The capacity of the node's heaviest call (getBlock, full transactions) within the demo's
    /// SLO, found by `rpcbench capacity`'s search; none if the demo was interrupted first.
    pub capacity: Option<CapacityReport>,
}

/// The SLO of the demo's capacity search.
pub const DEMO_SLO: &str = "p99<25ms,errors<0.1%";

/// Seed 000's four requests, with parameters chosen from what the node has.
fn seed_requests(url: &str) -> Result<Vec<RequestTemplate>, DemoError> {
    let timeout = Duration::from_secs(5);
    let slot = client::call(url, "getSlot", None, timeout).map_err(DemoError::Setup)?.as_u64().unwrap_or(0);
    let start = slot.saturating_sub(500);
    let blocks =
        client::call(url, "getBlocks", Some(&json!([start, slot])), timeout).map_err(DemoError::Setup)?;
    // A block that exists (leaders skip slots), a little behind the head.
    let block = blocks
        .as_array()
        .and_then(|b| b.iter().rev().nth(5).or(b.first()))
        .and_then(Value::as_u64)
        .unwrap_or(slot);
    let template = |method: &str, params: Option<Value>| {
        RequestTemplate::from_method(method, params.as_ref()).expect("the demo's requests are valid")
    };
    Ok(vec![
        template("getBalance", Some(json!([SEED_ACCOUNT]))),
        template("getBlocks", Some(json!([start, slot]))),
        template(
            "getBlock",
            Some(
                json!([block, {"encoding": "json", "maxSupportedTransactionVersion": 0, "transactionDetails": "full", "rewards": false}]),
            ),
        ),
        template("getSlot", None),
    ])
}

/// Runs the demo. `on_event` sees each step as it finishes, and the closing capacity search
/// start and its steps (for progress output); `stop` ends the step that is running and skips
/// the rest.
pub fn run_demo(
    options: &DemoOptions,
    stop: &StopHandle,
    mut on_event: impl FnMut(DemoEvent<'_>),
) -> Result<DemoSummary, DemoError> {
    let mut node_options = MockOptions::new(Chain::Solana);
    node_options.threads = options.node_threads;
    let node = MockServer::start(node_options).map_err(DemoError::Node)?;
    let url = node.url();
    let requests = seed_requests(&url)?;
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    let generator_threads = cores.saturating_sub(options.node_threads).max(1);
    let mut steps = Vec::new();
    let mut interrupted = false;
    let block_request = requests.iter().find(|r| r.method() == "getBlock").cloned();
    'methods: for request in requests {
        let loads = [
            Load::Closed { connections: options.connections[0] },
            Load::Closed { connections: options.connections[1] },
            Load::Open { rate: options.rate, arrivals: Arrivals::Uniform, max_connections: 256 },
        ];
        for load in loads {
            let label = match &load {
                Load::Closed { connections } => format!("{connections} conns"),
                Load::Open { rate, .. } => format!("{rate}/s"),
            };
            let target = Target::parse(&url).map_err(|err| DemoError::Engine(EngineError::Config(err)))?;
            let mut config = RunConfig::new(target, request.clone());
            config.load = load;
            config.length = Length { duration: Some(options.step_duration), requests: None };
            config.warmup = Duration::from_millis(200);
            config.threads = generator_threads;
            config.timeout = Duration::from_secs(2);
            config.metrics = options.metrics.clone().map(|live| Arc::new(live) as Arc<dyn LiveSink>);
            let run = Run::with_stop(config.clone(), stop.clone()).map_err(DemoError::Engine)?;
            let started = SystemTime::now();
            let record = run.execute().map_err(DemoError::Engine)?;
            let mut results = ResultsFile::from_run(&config, &record, started);
            results.label = Some(format!("{} {label}", request.method()));
            let step = DemoStep {
                method: request.method().to_string(),
                load: label,
                report: RunReport::new(&config, &record),
                results,
            };
            on_event(DemoEvent::Step(&step));
            interrupted = record.interrupted;
            steps.push(step);
            if interrupted {
                break 'methods;
            }
        }
    }
    let capacity = match block_request {
        Some(request) if !interrupted => {
            let target = Target::parse(&url).map_err(|err| DemoError::Engine(EngineError::Config(err)))?;
            let mut base = RunConfig::new(target, request);
            base.threads = generator_threads;
            base.timeout = Duration::from_secs(2);
            base.metrics = options.metrics.clone().map(|live| Arc::new(live) as Arc<dyn LiveSink>);
            let slo = Slo::parse(DEMO_SLO).expect("the demo's SLO is valid");
            let mut settings = CapacitySettings::new(slo);
            settings.bounds = SearchBounds::new(250.0, 100_000.0, 0.10);
            settings.step = options.step_duration;
            settings.warmup = Duration::from_millis(200);
            settings.cooldown = Duration::from_millis(300);
            settings.max_connections = 256;
            on_event(DemoEvent::CapacityStarted(&settings));
            let report =
                capacity::search(&base, &settings, stop, |step| on_event(DemoEvent::CapacityStep(step)))
                    .map_err(DemoError::Engine)?;
            interrupted = report.interrupted;
            Some(report)
        }
        _ => None,
    };
    node.stop();
    Ok(DemoSummary { node_url: url, steps, interrupted, capacity })
}

/// The mark of open-loop rows, whose latency is corrected for coordinated omission.
const OPEN_LOOP_MARK: &str = "(a)";

/// The side-by-side table, as GitHub-flavoured Markdown.
pub fn render_summary(summary: &DemoSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "rpcbench demo: seed 000's Solana tests against the built-in mock node ({})",
        summary.node_url
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "| method | load | req/s | ok % | errors | p50 | p90 | p99 | max | MB/s |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for step in &summary.steps {
        let report = &step.report;
        let latency = &report.latency;
        let total = report.requests.total.max(1);
        // Open-loop rows carry the mark of the note on corrected latency under the table.
        let mark = if report.is_open_loop() { format!(" {OPEN_LOOP_MARK}") } else { String::new() };
        let _ = writeln!(
            out,
            "| {} | {}{mark} | {:.0} | {:.2} | {} | {} | {} | {} | {} | {:.2} |",
            step.method,
            step.load,
            report.requests.rate,
            report.requests.ok as f64 * 100.0 / total as f64,
            report.requests.errors,
            format_micros(latency.percentile("p50") as f64),
            format_micros(latency.percentile("p90") as f64),
            format_micros(latency.percentile("p99") as f64),
            format_micros(latency.max_us as f64),
            report.bytes.received_per_sec / 1e6,
        );
    }
    if summary.steps.iter().any(|step| step.report.is_open_loop()) {
        let _ = writeln!(
            out,
            "\n{OPEN_LOOP_MARK} open loop: latency is measured from the intended send time at a constant rate (coordinated omission corrected)."
        );
    }
    // The generator's warnings, as the HTML report shows them: a saturated generator or late
    // sends make a row say more about the tool than about the node.
    let warnings: Vec<String> = summary
        .steps
        .iter()
        .flat_map(|step| {
            crate::report::generator_warnings(&step.report)
                .into_iter()
                .map(move |warning| format!("- {} {}: {warning}", step.method, step.load))
        })
        .collect();
    if !warnings.is_empty() {
        let _ = writeln!(out, "\nWarnings:");
        for warning in warnings {
            let _ = writeln!(out, "{warning}");
        }
    }
    // Ratios against the first method's lightest load, as a reader compares them.
    if let Some(first) = summary.steps.first() {
        let base = first.report.requests.rate.max(f64::MIN_POSITIVE);
        let ratios: Vec<String> = summary
            .steps
            .iter()
            .filter(|s| s.load == first.load)
            .map(|step| format!("{} {:.2}x", step.method, step.report.requests.rate / base))
            .collect();
        let _ = writeln!(
            out,
            "\nThroughput at {} relative to {} {}: {}.",
            first.load,
            first.method,
            first.load,
            ratios.join(", ")
        );
    }
    if let Some(capacity) = &summary.capacity {
        let _ = writeln!(out);
        let steps = capacity.steps.len();
        match (capacity.capacity, capacity.first_failing_rate) {
            (Some(rate), Some(failing)) => {
                let _ = writeln!(
                    out,
                    "Capacity of getBlock (full transactions) within {}: {rate:.0} req/s ({steps} open-loop steps; {failing:.0} req/s failed, limited by {}).",
                    capacity.settings.slo, capacity.limited_by
                );
            }
            (Some(rate), None) => {
                let _ = writeln!(
                    out,
                    "Capacity of getBlock (full transactions) within {}: at least {rate:.0} req/s ({steps} steps, limited by {}).",
                    capacity.settings.slo, capacity.limited_by
                );
            }
            (None, _) => {
                let _ = writeln!(
                    out,
                    "Capacity of getBlock (full transactions) within {}: no step passed ({steps} steps).",
                    capacity.settings.slo
                );
            }
        }
    }
    if summary.interrupted {
        let _ = writeln!(out, "(interrupted: the table shows the steps that ran)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::SavedRun;

    /// A demo step made of a committed results file (tests/golden).
    fn step(method: &str, load: &str, file: &str) -> DemoStep {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(file);
        let run = SavedRun::load(&path).expect("a committed results file");
        DemoStep { method: method.into(), load: load.into(), report: run.report, results: run.file }
    }

    fn summary() -> DemoSummary {
        DemoSummary {
            node_url: "http://127.0.0.1:8899/".into(),
            steps: vec![
                step("getBalance", "64 conns", "closed.results.json"),
                step("getBalance", "2000/s", "open.results.json"),
                step("getSlot", "64 conns", "closed.results.json"),
            ],
            interrupted: false,
            capacity: None,
        }
    }

    #[test]
    fn the_corrected_latency_note_stands_beside_open_loop_rows_only() {
        let text = render_summary(&summary());
        let rows: Vec<&str> = text.lines().filter(|line| line.starts_with("| get")).collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert!(rows[1].starts_with("| getBalance | 2000/s (a) |"), "{text}");
        assert!(!rows[0].contains("(a)") && !rows[2].contains("(a)"), "{text}");
        let notes: Vec<&str> = text.lines().filter(|line| line.contains("intended send time")).collect();
        assert_eq!(notes.len(), 1, "{text}");
        assert!(notes[0].starts_with("(a) open loop:"), "{text}");
        let closed_only =
            DemoSummary { steps: vec![step("getSlot", "64 conns", "closed.results.json")], ..summary() };
        assert!(!render_summary(&closed_only).contains("intended send time"));
    }

    #[test]
    fn the_summary_carries_the_generator_warnings() {
        let summary = summary();
        let warnings = crate::report::generator_warnings(&summary.steps[1].report);
        assert!(!warnings.is_empty(), "the open-loop file left requests unsent");
        let text = render_summary(&summary);
        for warning in warnings {
            assert!(text.contains(&format!("- getBalance 2000/s: {warning}")), "{text}");
        }
    }

    #[test]
    fn the_ratio_line_has_no_stray_semicolon() {
        let text = render_summary(&summary());
        let line = text.lines().find(|line| line.starts_with("Throughput at")).expect("a ratio line");
        assert_eq!(
            line,
            "Throughput at 64 conns relative to getBalance 64 conns: getBalance 1.00x, getSlot 1.00x."
        );
        assert!(!text.lines().any(|line| line.trim_end().ends_with(';')), "{text}");
    }
}
