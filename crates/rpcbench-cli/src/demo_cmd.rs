//! `rpcbench demo`: the first quick-start command. Starts the mock Solana node in-process,
//! runs four Solana methods at three loads against it and prints the summary table; writes it,
//! and an HTML report of every step, into `--out-dir` (default: `rpcbench-demo` in the
//! system's temporary directory).

use std::path::Path;
use std::process::ExitCode;

use rpcbench::demo::DemoSummary;
use rpcbench::demo::{render_summary, run_demo, DemoOptions};
use rpcbench::engine::StopHandle;
use rpcbench::report::render_html;
use rpcbench::results::{write_atomically, SavedRun};

use crate::args::DemoArgs;
use crate::output;

pub fn run(args: DemoArgs) -> ExitCode {
    let mut options =
        DemoOptions { step_duration: args.step_duration, rate: args.rate, ..DemoOptions::default() };
    if options.step_duration.is_zero() {
        return output::usage_error("--step-duration: must be longer than zero");
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
    eprintln!(
        "rpcbench demo: 4 methods x ({} conns, {} conns, {}/s), {} each, against the built-in mock Solana node",
        options.connections[0],
        options.connections[1],
        options.rate,
        rpcbench::units::format_duration(options.step_duration)
    );
    let result = run_demo(&options, &stop, |step| {
        eprintln!(
            "  {:<11} {:>9}: {:>9.0} req/s, p99 {}",
            step.method,
            step.load,
            step.report.requests.rate,
            rpcbench::units::format_micros(step.report.latency.percentile("p99") as f64)
        )
    });
    let summary = match result {
        Ok(summary) => summary,
        Err(err) => return output::failure(err),
    };
    let table = render_summary(&summary);
    let dir = args.out_dir.unwrap_or_else(|| std::env::temp_dir().join("rpcbench-demo"));
    if let Err(err) = write_reports(&summary, &table, &dir) {
        return output::failure(format!("cannot write the demo's reports into {}: {err}", dir.display()));
    }
    eprintln!(
        "rpcbench demo: wrote {} and {}",
        dir.join("report.html").display(),
        dir.join("summary.md").display()
    );
    output::print_stdout(&table)
}

/// The HTML report of every step and the Markdown summary.
fn write_reports(summary: &DemoSummary, table: &str, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|err| err.to_string())?;
    let runs = summary
        .steps
        .iter()
        .map(|step| SavedRun::new(step.results.clone(), &step.load))
        .collect::<Result<Vec<_>, String>>()?;
    write_atomically(&dir.join("report.html"), render_html(&runs).as_bytes())
        .map_err(|err| err.to_string())?;
    write_atomically(&dir.join("summary.md"), table.as_bytes()).map_err(|err| err.to_string())
}
