//! `rpcbench demo`: the first quick-start command. Starts the mock Solana node in-process,
//! runs four Solana methods at three loads against it and prints the summary table; writes it,
//! and an HTML report of every step, into `--out-dir` (default: `rpcbench-demo` in the
//! system's temporary directory). The closing capacity search shows its steps on a terminal
//! (step, rate, verdict) as they finish, and the running one live.

use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rpcbench::capacity::{CapacitySettings, NextStep};
use rpcbench::demo::DemoSummary;
use rpcbench::demo::{render_summary, run_demo, DemoEvent, DemoOptions};
use rpcbench::engine::StopHandle;
use rpcbench::report::render_html;
use rpcbench::results::{write_atomically, SavedRun};

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::args::{duration, rate};
use crate::output;

/// Options of `rpcbench demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Measured length of each of the twelve steps.
    #[arg(long, value_parser = duration, default_value = "2s")]
    pub step_duration: Duration,
    /// The open-loop step's rate.
    #[arg(long, value_parser = rate, default_value = "2000")]
    pub rate: f64,
    /// Where to write the HTML report and the Markdown summary [default: rpcbench-demo in the
    /// system's temporary directory].
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// No progress on standard error (the summary table still goes to standard output).
    #[arg(short, long)]
    pub quiet: bool,

    #[command(flatten)]
    pub metrics: crate::args::metrics::MetricsArgs,
}

pub fn run(args: DemoArgs) -> ExitCode {
    let mut options =
        DemoOptions { step_duration: args.step_duration, rate: args.rate, ..DemoOptions::default() };
    if options.step_duration.is_zero() {
        return output::usage_error("--step-duration: must be longer than zero");
    }
    // The folder is made before the steps run: a demo of a minute must not end in "cannot write".
    let dir = args.out_dir.clone().unwrap_or_else(|| std::env::temp_dir().join("rpcbench-demo"));
    if let Err(err) = std::fs::create_dir_all(&dir) {
        return output::usage_error(format!("--out-dir {}: {err}", dir.display()));
    }
    // Serves until the command ends; counters add up over the steps.
    let _metrics_server = match args.metrics.start() {
        Ok(Some((server, live))) => {
            options.metrics = Some(live);
            Some(server)
        }
        Ok(None) => None,
        Err(err) => return output::usage_error(err),
    };
    // Ctrl-C stops the step that is running; the summary covers the steps that ran.
    let stop = StopHandle::new();
    crate::signals::stop_on_interrupt(stop.clone());
    let quiet = args.quiet;
    if !quiet {
        eprintln!(
        "rpcbench demo: 4 methods x ({} conns, {} conns, {}/s), {} each, against the built-in mock Solana node",
        options.connections[0],
        options.connections[1],
        options.rate,
        rpcbench::format_duration(options.step_duration)
    );
    }
    let mut search: Option<SearchProgress> = None;
    let result = run_demo(&options, &stop, |event| match event {
        DemoEvent::Step(step) if !quiet => eprintln!(
            "  {:<11} {:>9}: {:>9.0} req/s, p99 {}",
            step.method,
            step.load,
            step.report.requests.rate,
            rpcbench::format_micros(step.report.latency.percentile("p99") as f64)
        ),
        DemoEvent::Step(_) => {}
        DemoEvent::CapacityStarted(settings) => {
            if !quiet {
                eprintln!(
                    "rpcbench demo: capacity search of getBlock within {}: steps of {} from {}/s, doubling then bisecting",
                    settings.slo,
                    rpcbench::format_duration(settings.step),
                    settings.bounds.start_rate
                );
            }
            search = Some(SearchProgress::start(settings, quiet));
        }
        DemoEvent::CapacityStep(step) => {
            if let Some(search) = &search {
                search.finished(step);
            }
        }
    });
    drop(search);
    let summary = match result {
        Ok(summary) => summary,
        Err(err) => return output::failure(err),
    };
    let table = render_summary(&summary);
    if let Err(err) = write_reports(&summary, &table, &dir) {
        return output::failure(format!("cannot write the demo's reports into {}: {err}", dir.display()));
    }
    if !quiet {
        eprintln!(
            "rpcbench demo: wrote {} and {}",
            dir.join("report.html").display(),
            dir.join("summary.md").display()
        );
    }
    output::print_stdout(&table)
}

/// The HTML report of every step and the Markdown summary.
fn write_reports(summary: &DemoSummary, table: &str, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|err| err.to_string())?;
    let runs = summary
        .steps
        .iter()
        .map(|step| SavedRun::new(step.results.clone(), &step.load))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| err.to_string())?;
    write_atomically(&dir.join("report.html"), render_html(&runs).as_bytes())
        .map_err(|err| err.to_string())?;
    write_atomically(&dir.join("summary.md"), table.as_bytes()).map_err(|err| err.to_string())
}

/// The live line of the closing capacity search: the step running, its rate and how long it
/// has run, and the last verdict; each finished step printed above it. Shown only when
/// standard error is a terminal and not `-q`.
struct SearchProgress {
    state: Arc<Mutex<SearchState>>,
    ticker: crate::progress::Ticker,
}

struct SearchState {
    settings: CapacitySettings,
    history: Vec<(f64, bool)>,
    step_started: Instant,
    last: Option<String>,
}

impl SearchState {
    fn line(&self) -> String {
        let running = match self.settings.next(&self.history) {
            NextStep::Run(rate) => format!(
                "capacity search: step {} at {}/s, {}s",
                self.history.len() + 1,
                rate,
                self.step_started.elapsed().as_secs()
            ),
            NextStep::Done => "capacity search: done".to_string(),
        };
        match &self.last {
            Some(last) => format!("{running} (last: {last})"),
            None => running,
        }
    }
}

impl SearchProgress {
    fn start(settings: &CapacitySettings, quiet: bool) -> Self {
        let state = Arc::new(Mutex::new(SearchState {
            settings: settings.clone(),
            history: Vec::new(),
            step_started: Instant::now(),
            last: None,
        }));
        let shared = state.clone();
        let ticker = crate::progress::Ticker::start(quiet, move |_| {
            shared.lock().map(|state| state.line()).unwrap_or_default()
        });
        SearchProgress { state, ticker }
    }

    fn finished(&self, step: &rpcbench::capacity::StepResult) {
        if let Ok(mut state) = self.state.lock() {
            state.history.push((step.level(), step.verdict.passed()));
            state.step_started = Instant::now();
            state.last =
                Some(format!("{}/s {}", step.level(), if step.verdict.passed() { "pass" } else { "FAIL" }));
        }
        self.ticker.println(&crate::progress::capacity_step_line(step));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcbench::capacity::{SearchBounds, Slo};

    #[test]
    fn the_live_line_names_the_step_running_its_rate_and_the_last_verdict() {
        let mut settings = CapacitySettings::new(Slo::parse("p99<25ms").unwrap());
        settings.bounds = SearchBounds::new(250.0, 100_000.0, 0.10);
        let mut state =
            SearchState { settings, history: Vec::new(), step_started: Instant::now(), last: None };
        assert_eq!(state.line(), "capacity search: step 1 at 250/s, 0s");
        state.history = vec![(250.0, true), (500.0, false)];
        state.last = Some("500/s FAIL".into());
        assert_eq!(state.line(), "capacity search: step 3 at 375/s, 0s (last: 500/s FAIL)");
    }
}
