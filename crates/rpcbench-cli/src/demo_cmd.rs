//! `rpcbench demo`: the first quick-start command. Starts the mock Solana node in-process,
//! runs seed 000's tests and prints the summary table.

use std::process::ExitCode;

use rpcbench::demo::{render_summary, run_demo, DemoOptions};
use rpcbench::engine::StopHandle;

use crate::args::DemoArgs;
use crate::output;

pub fn run(args: DemoArgs) -> ExitCode {
    let options =
        DemoOptions { step_duration: args.step_duration, rate: args.rate, ..DemoOptions::default() };
    if options.step_duration.is_zero() {
        return output::usage_error("--step-duration: must be longer than zero");
    }
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
    match result {
        Ok(summary) => output::print_stdout(&render_summary(&summary)),
        Err(err) => output::failure(err),
    }
}
