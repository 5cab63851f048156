//! The `rpcbench` command line: parses arguments with clap, turns them into the library's
//! validated configuration, runs, and maps the result to an exit code (0 the run happened,
//! 1 a runtime failure or a breached threshold, 2 bad usage).

mod args;
mod capacity_cmd;
mod compare_cmd;
mod demo_cmd;
mod docs_cmd;
mod heads_cmd;
mod k8s_cmd;
mod limits_cmd;
mod live_dashboard;
mod merge_cmd;
mod metrics_args;
mod monitor_args;
mod output;
mod progress;
mod proxy_cmd;
mod replay_cmd;
mod report_cmd;
mod run_cmd;
mod run_targets;
mod serve;
mod signals;
mod subscribe_cmd;
mod suites_cmd;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return output::clap_error(err),
    };
    // Interrupts are watched before anything slow starts (sampling a node, reading files);
    // `serve`, `proxy` and `record` handle their own.
    if !matches!(
        cli.command,
        Command::Serve(_)
            | Command::Proxy(_)
            | Command::Record(_)
            | Command::Completions(_)
            | Command::Man(_)
    ) {
        signals::watch();
    }
    match cli.command {
        Command::Run(args) => run_cmd::run(*args),
        Command::Demo(args) => demo_cmd::run(args),
        Command::Serve(args) => serve::run(*args),
        Command::Replay(args) => replay_cmd::run(*args),
        Command::Report(args) => report_cmd::run(args),
        Command::Merge(args) => merge_cmd::run(args),
        Command::Compare(args) => compare_cmd::run(*args),
        Command::Capacity(args) => capacity_cmd::run(*args),
        Command::K8sJob(args) => k8s_cmd::run(*args),
        Command::Subscribe(args) => subscribe_cmd::run(*args),
        Command::Heads(args) => heads_cmd::run(*args),
        Command::Limits(args) => limits_cmd::run(*args),
        Command::Suites => suites_cmd::run(),
        Command::Completions(args) => docs_cmd::completions(&args),
        Command::Man(args) => docs_cmd::man(&args),
        Command::Proxy(args) => proxy_cmd::run(*args),
        Command::Record(args) => proxy_cmd::run_record(*args),
    }
}
