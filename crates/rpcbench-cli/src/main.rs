//! The `rpcbench` command line: parses arguments with clap, turns them into the library's
//! validated configuration, runs, and maps the result to an exit code (0 the run happened,
//! 1 a runtime failure or a breached threshold, 2 bad usage).
//!
//! Layers, low to high, none importing a higher one: `args/` (one clap group per concern) and
//! the shared helpers (`output`, `progress`, `render`, `signals`, `comparison_output`); `plan`
//! (groups -> the library's plan, once); `runner` and `run_targets` (running a plan); `cmd/`
//! (one file per command; no command imports another); this file (`Cli`, `Command`, dispatch).

mod args;
mod cmd;
mod comparison_output;
mod fields;
mod live_dashboard;
mod output;
mod plan;
mod progress;
mod render;
mod run_targets;
mod runner;
mod signals;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Load testing and benchmarking for the JSON-RPC endpoints of blockchain nodes.
#[derive(Debug, Parser)]
#[command(
    name = "rpcbench",
    version,
    long_about = "rpcbench: load testing and benchmarking for the JSON-RPC endpoints of blockchain nodes \
(Solana, Ethereum and other JSON-RPC servers), over HTTP/1.1, HTTP/2 and WebSocket.\n\n\
Measure one endpoint with `run`, find the highest rate it serves within an SLO with `capacity`, \
compare nodes with `compare`, measure WebSocket subscriptions with `subscribe`, and re-render or \
merge saved results with `report` and `merge`. `demo` and `serve` run a built-in mock node to try \
it all on this machine.",
    after_help = "Formats and files, in every subcommand: -f/--format FORMAT chooses the report's format, \
-o/--output FILE writes it to a file instead of standard output.\n\
Try: rpcbench demo; rpcbench serve --chain solana --listen 127.0.0.1:18899 & rpcbench run http://127.0.0.1:18899 -m getSlot -d 5s",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load one JSON-RPC endpoint with one request, closed loop or at a constant rate.
    Run(Box<args::RunArgs>),
    /// Serve a mock Solana or Ethereum node, or the static baseline, with fault knobs.
    Serve(Box<cmd::serve::ServeArgs>),
    /// Try rpcbench in one command: four Solana methods at three loads against the built-in
    /// mock node, then the summary table.
    #[command(after_help = "Examples:
  rpcbench demo
  rpcbench demo --step-duration 1s
  rpcbench demo -f html -o demo.html")]
    Demo(cmd::demo::DemoArgs),
    /// Replay recorded traffic (a `proxy --record` file, a vegeta targets file, a file of
    /// bodies) against an endpoint, in order, at the recorded pace times --speed, or at --rate.
    // `run`'s flags that say what to send are refused here: hidden from the help.
    #[command(
        mut_arg("target", |arg| arg.help("The endpoint to replay against (http://, https://, ws://, wss://)")),
        mut_arg("method", |arg| arg.hide(true)),
        mut_arg("params", |arg| arg.hide(true)),
        mut_arg("body", |arg| arg.hide(true)),
        mut_arg("body_file", |arg| arg.hide(true)),
        mut_arg("http", |arg| arg.hide(true)),
        mut_arg("targets_file", |arg| arg.hide(true)),
        mut_arg("batch", |arg| arg.hide(true)),
        mut_arg("suite", |arg| arg.hide(true)),
        mut_arg("url", |arg| arg.hide(true)),
        mut_arg("pools", |arg| arg.hide(true)),
        after_help = "Examples:
  rpcbench record --listen 127.0.0.1:0 --upstream http://127.0.0.1:8899 -o traffic.jsonl
  rpcbench replay traffic.jsonl http://127.0.0.1:8899
  rpcbench replay traffic.jsonl http://127.0.0.1:8899 --speed 2x --check-responses
  rpcbench replay traffic.jsonl http://127.0.0.1:8899 --loop -d 1m --rate 500
  rpcbench replay bodies.jsonl http://127.0.0.1:8545 --from bodies -c 20 -f json -o replay.json"
    )]
    Replay(Box<cmd::replay::ReplayArgs>),
    /// Render saved results files again (text, JSON, Markdown, HTML, CSV), or compare them.
    #[command(after_help = "Examples:
  rpcbench report results.json
  rpcbench report results.json -f html -o report.html
  rpcbench report --compare before.json after.json -f markdown
  rpcbench report capacity.json -f csv -o steps.csv")]
    Report(cmd::report::ReportArgs),
    /// Merge the results files of shards of one workload into one, losslessly.
    #[command(after_help = "Examples:
  rpcbench merge shard-1.json shard-2.json -o all.json
  rpcbench merge shard-*.json -o all.json --threshold 'p99 < 5ms'
  rpcbench merge shard-*.json -o partial.json --partial")]
    Merge(cmd::merge::MergeArgs),
    /// Run one workload against several targets in turn and compare them (or, with --equal,
    /// check that they answer alike).
    Compare(Box<cmd::compare::CompareArgs>),
    /// Find the highest rate the endpoint serves within an SLO: open-loop steps, doubling then
    /// bisecting.
    Capacity(Box<cmd::capacity::CapacityArgs>),
    /// Print the Kubernetes manifests that split a run over N pods (an Indexed Job) and merge
    /// their results: `rpcbench k8s-job --shards 4 --image IMAGE -- run URL ...`.
    #[command(after_help = "Examples:
  rpcbench k8s-job --shards 4 --image rpcbench:0.1.0 -- run http://node.default.svc:8545 -m eth_blockNumber --rate 40000 -d 60s > split-run.yaml
  rpcbench k8s-job --shards 8 --image rpcbench:0.1.0 --name getslot --threshold 'p99 < 5ms' -- run http://node:8899 -m getSlot -c 400 -d 5m
  rpcbench k8s-job --shards 2 --image rpcbench:0.1.0 --start-at 2026-12-01T10:00:00Z --merge-deadline 30m -- run http://node:8545 --suite ethereum-relay -d 10m")]
    K8sJob(Box<cmd::k8s::K8sJobArgs>),
    /// Subscribe over WebSocket (newHeads, logs, pending transactions, slots, accounts) from
    /// many subscribers and report delivery lag, gaps, duplicates and reorders.
    Subscribe(Box<cmd::subscribe::SubscribeArgs>),
    /// Send signed Ethereum transfers at a rate and report how fast they land: sent, accepted,
    /// rejected by reason, included, dropped and pending, send -> ack and send -> included.
    Tx(Box<args::tx::TxArgs>),
    /// A head race with no load: each target's head polled, and who is behind, stale, or late.
    Heads(Box<cmd::heads::HeadsArgs>),
    /// Probe what a node or a provider's plan allows, within a budget of requests: the largest
    /// batch accepted, with the error given past it.
    Limits(Box<cmd::limits::LimitsArgs>),
    /// List the built-in suites (`run URL --suite NAME`).
    #[command(after_help = "Examples:
  rpcbench suites
  rpcbench run http://127.0.0.1:8899 --suite solana-rpc -d 30s")]
    Suites,
    /// Print a shell completion script to standard output, e.g.
    /// `rpcbench completions bash > /etc/bash_completion.d/rpcbench`.
    #[command(after_help = "Examples:
  rpcbench completions bash > ~/.local/share/bash-completion/completions/rpcbench
  rpcbench completions zsh > ~/.zfunc/_rpcbench
  rpcbench completions fish > ~/.config/fish/completions/rpcbench.fish")]
    Completions(cmd::docs::CompletionsArgs),
    /// Print the man page (roff) to standard output: `rpcbench man > rpcbench.1`, or a
    /// subcommand's page: `rpcbench man run > rpcbench-run.1`.
    #[command(after_help = "Examples:
  rpcbench man > rpcbench.1
  rpcbench man run > rpcbench-run.1
  rpcbench man capacity | man -l -")]
    Man(cmd::docs::ManArgs),
    /// Relay JSON-RPC to an upstream over HTTP/1.1, measuring the proxy's own overhead per
    /// method, with fault knobs and optional recording (`--record FILE`) for replay.
    #[command(after_help = "Examples:
  rpcbench proxy --listen 127.0.0.1:0 --upstream http://127.0.0.1:8899
  rpcbench proxy --listen 127.0.0.1:9000 --upstream http://127.0.0.1:8545 --latency 20ms --error-rate 1%
  rpcbench proxy --listen 127.0.0.1:9000 --upstream http://127.0.0.1:8545 --record traffic.jsonl -f json -o overhead.json")]
    Proxy(Box<cmd::proxy::ProxyArgs>),
    /// Relay and record traffic to a file (`proxy --record FILE` under another name).
    #[command(after_help = "Examples:
  rpcbench record --listen 127.0.0.1:9000 --upstream http://127.0.0.1:8545 -o traffic.jsonl
  rpcbench record --listen 127.0.0.1:9000 --upstream http://127.0.0.1:8545 -o traffic.jsonl --ignore-field result.timestamp
  rpcbench replay traffic.jsonl http://127.0.0.1:8545 --check-responses")]
    Record(Box<cmd::proxy::RecordArgs>),
}

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
        Command::Run(args) => cmd::run::run(*args),
        Command::Demo(args) => cmd::demo::run(args),
        Command::Serve(args) => cmd::serve::run(*args),
        Command::Replay(args) => cmd::replay::run(*args),
        Command::Report(args) => cmd::report::run(args),
        Command::Merge(args) => cmd::merge::run(args),
        Command::Compare(args) => cmd::compare::run(*args),
        Command::Capacity(args) => cmd::capacity::run(*args),
        Command::K8sJob(args) => cmd::k8s::run(*args, parse_run_words),
        Command::Subscribe(args) => cmd::subscribe::run(*args),
        Command::Heads(args) => cmd::heads::run(*args),
        Command::Tx(args) => cmd::tx::run(*args),
        Command::Limits(args) => cmd::limits::run(*args),
        Command::Suites => cmd::suites::run(),
        Command::Completions(args) => cmd::docs::completions(&args, Cli::command()),
        Command::Man(args) => cmd::docs::man(&args, Cli::command()),
        Command::Proxy(args) => cmd::proxy::run(*args),
        Command::Record(args) => cmd::proxy::run_record(*args),
    }
}

/// Parses the words of a command line after `rpcbench` with the whole parser: the run
/// (`run URL ...` or `tx URL ...`) they give, `None` for another command. `k8s-job` checks its wrapped run so.
fn parse_run_words(words: &[String]) -> Result<Option<cmd::k8s::WrappedRun>, clap::Error> {
    let line = std::iter::once("rpcbench").chain(words.iter().map(String::as_str));
    Ok(match Cli::try_parse_from(line)?.command {
        Command::Run(run) => Some(cmd::k8s::WrappedRun::Run(run)),
        Command::Tx(tx) => Some(cmd::k8s::WrappedRun::Tx(tx)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        // Catches flags defined twice across flattened structs, groups naming missing flags,
        // and the like, for every subcommand.
        <Cli as clap::CommandFactory>::command().debug_assert();
    }

    #[test]
    fn the_tls_flags_read_the_same_in_every_command_that_has_them() {
        let cli = Cli::command();
        let commands = ["run", "replay", "compare", "capacity", "subscribe", "proxy", "record"];
        let helps: Vec<(String, String)> = commands
            .iter()
            .map(|name| {
                let command = cli.find_subcommand(name).expect("the command exists");
                let help = |id: &str| {
                    let arg = command.get_arguments().find(|arg| arg.get_id() == id);
                    arg.and_then(|arg| arg.get_help()).map(ToString::to_string).unwrap_or_default()
                };
                (help("insecure"), help("cacert"))
            })
            .collect();
        assert!(!helps[0].0.is_empty() && !helps[0].1.is_empty(), "{helps:?}");
        assert!(helps.iter().all(|pair| pair == &helps[0]), "{helps:?}");
    }
}
