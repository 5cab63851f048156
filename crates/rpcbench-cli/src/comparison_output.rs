//! How a comparison of several targets speaks on standard error: a line per target and round,
//! what was not run after an interrupt, and a failure's message and exit status. Shared by
//! `compare` and `run` of a scenario with several targets.

use std::process::ExitCode;

use crate::fields::ConfigError;
use rpcbench::compare::{CompareError, CompareEvent, CompareTarget};
use rpcbench::engine::{EngineError, StopHandle};
use rpcbench::format_micros;
use rpcbench::results::SavedRun;

use crate::output;

/// Prints a comparison's progress on standard error, a line per target saying which of how
/// many it is (nothing when quiet).
pub fn progress_printer(targets: &[CompareTarget], quiet: bool) -> impl FnMut(CompareEvent<'_>) {
    let name_width = targets.iter().map(|target| target.name.chars().count()).max().unwrap_or(0);
    let total = targets.len();
    let count_width = total.to_string().len();
    let mut started = 0;
    let names: Vec<String> = targets.iter().map(|target| target.name.clone()).collect();
    let mut in_rounds = false;
    move |event| match event {
        CompareEvent::Started { name, target } if !quiet => {
            started += 1;
            eprint!("  [{started:>count_width$}/{total}] {name:<name_width$}  {target} ... ");
        }
        CompareEvent::RoundStarted { round, rounds, name, target } if !quiet => {
            in_rounds = true;
            let place = names.iter().position(|n| n == name).map_or(0, |i| i + 1);
            eprintln!(
                "  [{place:>count_width$}/{total}] {name:<name_width$}  {target}  round {round}/{rounds}"
            );
        }
        CompareEvent::RoundFinished { name, figures } if !quiet => {
            eprintln!(
                "        {name:<name_width$}  round {}: {:.0} req/s, p50 {}, p99 {}, {} error(s)",
                figures.round,
                figures.rate,
                format_micros(figures.p50_us as f64),
                format_micros(figures.p99_us as f64),
                figures.errors
            );
        }
        CompareEvent::Finished(run) if !quiet => {
            let report = &run.report;
            if in_rounds {
                eprint!("  {:<name_width$}  all rounds: ", run.label);
            }
            eprintln!(
                "{:.0} req/s, p50 {}, p99 {}, {} error(s){}",
                report.requests.rate,
                format_micros(report.latency.percentile("p50") as f64),
                format_micros(report.latency.percentile("p99") as f64),
                report.requests.errors,
                if report.interrupted { " (interrupted)" } else { "" }
            );
        }
        // Said even when quiet: a failed run says nothing else about why.
        CompareEvent::ConnectFailures { name, causes } => {
            for line in causes.describe().lines() {
                eprintln!("rpcbench: {name}: {line}");
            }
        }
        _ => {}
    }
}

/// After an interrupt, says on standard error which targets were cut short and which did not
/// run at all (always, even when quiet: the report is missing them).
pub fn say_what_was_not_run(targets: &[CompareTarget], runs: &[SavedRun], stop: &StopHandle) {
    if !stop.is_stopped() {
        return;
    }
    let not_run: Vec<&str> =
        targets[runs.len().min(targets.len())..].iter().map(|t| t.name.as_str()).collect();
    let cut_short: Vec<&str> =
        runs.iter().filter(|run| run.report.interrupted).map(|run| run.label.as_str()).collect();
    let mut parts = Vec::new();
    if !cut_short.is_empty() {
        parts.push(format!("cut short: {}", cut_short.join(", ")));
    }
    if !not_run.is_empty() {
        parts.push(format!("not run: {}", not_run.join(", ")));
    }
    if !parts.is_empty() {
        eprintln!(
            "rpcbench: interrupted after {} of {} targets; {}",
            runs.len(),
            targets.len(),
            parts.join("; ")
        );
    }
}

/// The exit of a comparison whose run against one target could not start: bad usage (exit 2,
/// naming the target) or a failure at run time.
pub fn comparison_failure(err: CompareError, quiet: bool) -> ExitCode {
    if !quiet {
        // Ends the progress line the run started.
        eprintln!();
    }
    match err.error {
        EngineError::Config(config) => {
            let config = ConfigError::from(config);
            output::usage_error(ConfigError {
                setting: format!("target '{}': {}", err.name, config.setting),
                message: config.message,
            })
        }
        EngineError::TooManyConnections(limit) => {
            output::usage_error(format!("target '{}': {}", err.name, ConfigError::from(limit)))
        }
        _ => output::failure(err),
    }
}
