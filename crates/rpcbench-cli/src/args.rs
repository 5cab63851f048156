//! The clap types: what the user typed, close to the command line. `run_cmd` turns them into
//! the library's validated `RunConfig`; nothing past that sees clap.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    Run(Box<RunArgs>),
    /// Serve a mock Solana or Ethereum node, or the static baseline, with fault knobs.
    Serve(Box<crate::serve::ServeArgs>),
    /// Try rpcbench in one command: four Solana methods at three loads against the built-in
    /// mock node, then the summary table.
    #[command(after_help = "Examples:
  rpcbench demo
  rpcbench demo --step-duration 1s
  rpcbench demo -f html -o demo.html")]
    Demo(DemoArgs),
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
    Replay(Box<crate::replay_cmd::ReplayArgs>),
    /// Render saved results files again (text, JSON, Markdown, HTML, CSV), or compare them.
    #[command(after_help = "Examples:
  rpcbench report results.json
  rpcbench report results.json -f html -o report.html
  rpcbench report --compare before.json after.json -f markdown
  rpcbench report capacity.json -f csv -o steps.csv")]
    Report(crate::report_cmd::ReportArgs),
    /// Merge the results files of shards of one workload into one, losslessly.
    #[command(after_help = "Examples:
  rpcbench merge shard-1.json shard-2.json -o all.json
  rpcbench merge shard-*.json -o all.json --threshold 'p99 < 5ms'
  rpcbench merge shard-*.json -o partial.json --partial")]
    Merge(crate::merge_cmd::MergeArgs),
    /// Run one workload against several targets in turn and compare them (or, with --equal,
    /// check that they answer alike).
    Compare(Box<crate::compare_cmd::CompareArgs>),
    /// Find the highest rate the endpoint serves within an SLO: open-loop steps, doubling then
    /// bisecting.
    Capacity(Box<crate::capacity_cmd::CapacityArgs>),
    /// Print the Kubernetes manifests that split a run over N pods (an Indexed Job) and merge
    /// their results: `rpcbench k8s-job --shards 4 --image IMAGE -- run URL ...`.
    #[command(after_help = "Examples:
  rpcbench k8s-job --shards 4 --image rpcbench:0.1.0 -- run http://node.default.svc:8545 -m eth_blockNumber --rate 40000 -d 60s > split-run.yaml
  rpcbench k8s-job --shards 8 --image rpcbench:0.1.0 --name getslot --threshold 'p99 < 5ms' -- run http://node:8899 -m getSlot -c 400 -d 5m
  rpcbench k8s-job --shards 2 --image rpcbench:0.1.0 --start-at 2026-12-01T10:00:00Z --merge-deadline 30m -- run http://node:8545 --suite ethereum-relay -d 10m")]
    K8sJob(Box<crate::k8s_cmd::K8sJobArgs>),
    /// Subscribe over WebSocket (newHeads, logs, pending transactions, slots, accounts) from
    /// many subscribers and report delivery lag, gaps, duplicates and reorders.
    Subscribe(Box<crate::subscribe_cmd::SubscribeArgs>),
    /// A head race with no load: each target's head polled, and who is behind, stale, or late.
    Heads(Box<crate::heads_cmd::HeadsArgs>),
    /// Probe what a node or a provider's plan allows, within a budget of requests: the largest
    /// batch accepted, with the error given past it.
    Limits(Box<crate::limits_cmd::LimitsArgs>),
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
    Completions(crate::docs_cmd::CompletionsArgs),
    /// Print the man page (roff) to standard output: `rpcbench man > rpcbench.1`, or a
    /// subcommand's page: `rpcbench man run > rpcbench-run.1`.
    #[command(after_help = "Examples:
  rpcbench man > rpcbench.1
  rpcbench man run > rpcbench-run.1
  rpcbench man capacity | man -l -")]
    Man(crate::docs_cmd::ManArgs),
    /// Relay JSON-RPC to an upstream over HTTP/1.1, measuring the proxy's own overhead per
    /// method, with fault knobs and optional recording (`--record FILE`) for replay.
    #[command(after_help = "Examples:
  rpcbench proxy --listen 127.0.0.1:0 --upstream http://127.0.0.1:8899
  rpcbench proxy --listen 127.0.0.1:9000 --upstream http://127.0.0.1:8545 --latency 20ms --error-rate 1%
  rpcbench proxy --listen 127.0.0.1:9000 --upstream http://127.0.0.1:8545 --record traffic.jsonl -f json -o overhead.json")]
    Proxy(Box<crate::proxy_cmd::ProxyArgs>),
    /// Relay and record traffic to a file (`proxy --record FILE` under another name).
    #[command(after_help = "Examples:
  rpcbench record --listen 127.0.0.1:9000 --upstream http://127.0.0.1:8545 -o traffic.jsonl
  rpcbench record --listen 127.0.0.1:9000 --upstream http://127.0.0.1:8545 -o traffic.jsonl --ignore-field result.timestamp
  rpcbench replay traffic.jsonl http://127.0.0.1:8545 --check-responses")]
    Record(Box<crate::proxy_cmd::RecordArgs>),
}

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
    pub metrics: crate::metrics_args::MetricsArgs,
}

pub fn duration(text: &str) -> Result<Duration, String> {
    rpcbench::units::parse_duration(text).map_err(|err| err.to_string())
}

pub(crate) fn size(text: &str) -> Result<u64, String> {
    rpcbench::units::parse_size(text).map_err(|err| err.to_string())
}

/// Report formats: given to `-o`, one is a slip from the days when `-o` chose the format.
const FORMAT_NAMES: [&str; 5] = ["text", "json", "markdown", "html", "csv"];

/// The value of `-o/--output FILE`: a file name, but not a bare format name (`-o json`), which
/// is refused with the flag to use instead.
pub fn output_file(text: &str) -> Result<PathBuf, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("expected a file name".to_string());
    }
    if FORMAT_NAMES.contains(&trimmed.to_ascii_lowercase().as_str()) {
        return Err(format!(
            "'{trimmed}' is a format, and -o/--output names the file to write: use -f {trimmed} \
             for the format (or -o ./{trimmed} for a file of that name)"
        ));
    }
    Ok(PathBuf::from(text))
}

pub fn rate(text: &str) -> Result<f64, String> {
    rpcbench::units::parse_rate(text).map_err(|err| err.to_string())
}

/// `Name: value`, or `None`. Parsed after clap rather than by a value parser: clap echoes an
/// invalid value in its error, and a header is where API keys live.
pub fn header(text: &str) -> Option<(String, String)> {
    match text.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => {
            Some((name.trim().to_string(), value.trim().to_string()))
        }
        _ => None,
    }
}

/// Formats of `run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The text report.
    Text,
    /// The JSON report (schema/report.schema.json).
    Json,
    /// Markdown tables.
    Markdown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalsArg {
    Uniform,
    Poisson,
}

/// `--on-rate-limit`: what a connection does after a rate-limited answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OnRateLimitArg {
    /// Go on at once and count the answer.
    #[default]
    Continue,
    /// Pause 100 ms, doubling up to 10 s; a success resets it.
    Backoff,
    /// Pause as Retry-After says (at most 60 s); backoff without it.
    RespectRetryAfter,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckArg {
    /// Top-level scan: jsonrpc, id, result or error code (fast).
    Scan,
    /// The scan plus a full JSON validation of every body.
    Full,
}

#[derive(Debug, Args)]
#[command(
    group = clap::ArgGroup::new("request").args(["method", "body", "body_file", "suite"]),
    after_help = "Examples:
  rpcbench run http://127.0.0.1:8899 -m getSlot -c 50 -d 30s
  rpcbench run http://127.0.0.1:8545 -m eth_blockNumber --rate 2000 -d 1m --threshold 'p99 < 50ms'
  rpcbench run http://127.0.0.1:8545 -m eth_getBlockByNumber -p '[\"latest\",false]' -n 10000 -f json -o run.json
  rpcbench run http://127.0.0.1:8899 --suite solana-rpc -d 1m --save results.json
  rpcbench run scenario.toml --url http://127.0.0.1:8899 -q -f json"
)]
pub struct RunArgs {
    /// The endpoint (http:// or https://), or a scenario file (.toml) describing the run (not
    /// with --targets, whose file names the URLs).
    #[arg(required_unless_present = "targets_file", default_value = "")]
    pub target: String,
    #[command(flatten)]
    pub scenario: ScenarioArgs,

    #[command(flatten)]
    pub request: RequestArgs,

    /// Closed loop: connections sending back to back [default: 50]. With --rate: this many
    /// connections opened at the start and held, the rate paced across them (as wrk2 -c N -R R).
    #[arg(short, long, help_heading = "Load")]
    pub connections: Option<usize>,
    /// Open loop: requests per second (5000, 50/s, 600/m), latency from the intended send time.
    #[arg(short, long, value_parser = rate, help_heading = "Load")]
    pub rate: Option<f64>,
    /// Open loop: spacing of arrivals [default: uniform].
    #[arg(long, value_enum, help_heading = "Load")]
    pub arrivals: Option<ArrivalsArg>,
    /// Open loop: the most connections opened, as needed, to keep up with the rate [default:
    /// 1024].
    #[arg(long, help_heading = "Load")]
    pub max_connections: Option<usize>,
    /// Worker threads [default: one per core].
    #[arg(long, help_heading = "Load")]
    pub threads: Option<usize>,
    /// Seed for everything random (arrivals, mixes, generated params) [default: 1].
    #[arg(long, help_heading = "Load")]
    pub seed: Option<u64>,
    /// Run shard I of N of the load (1-based): an exact share of the connections, rate and
    /// requests, disjoint ids, the pacing of N processes interleaved; `merge` puts them together.
    #[arg(long, value_name = "I/N", conflicts_with = "shards", help_heading = "Load")]
    pub shard: Option<String>,
    /// Split into N shards, this one's index from JOB_COMPLETION_INDEX (0-based, as a
    /// Kubernetes Indexed Job sets it); RPCBENCH_SHARDS gives N when the flag is absent.
    #[arg(long, value_name = "N", help_heading = "Load")]
    pub shards: Option<usize>,
    /// Wait until this wall-clock time to start (RFC 3339, e.g. 2026-11-23T10:00:00Z, or unix
    /// seconds), so that shards on several machines start together.
    #[arg(long, value_name = "TIME", help_heading = "Load")]
    pub start_at: Option<String>,

    /// Measured duration [default: 10s, unless --requests is given].
    #[arg(short, long, value_parser = duration, help_heading = "Length")]
    pub duration: Option<Duration>,
    /// Number of measured requests.
    #[arg(short = 'n', long, help_heading = "Length")]
    pub requests: Option<u64>,
    /// Multiply every stage's duration and ramp by F (0.1: a tenth as long), levels unchanged.
    /// With stages, -d fits them to its length the same way.
    #[arg(long, value_name = "F", help_heading = "Length")]
    pub stage_scale: Option<f64>,
    /// Time before measurement: requests are sent but not recorded [default: 0].
    #[arg(long, value_parser = duration, help_heading = "Length")]
    pub warmup: Option<Duration>,

    #[command(flatten)]
    pub http: HttpArgs,

    /// A condition the run must meet, e.g. 'p99 < 500ms', 'errors < 0.1%', 'getBlock: p99 < 1s'
    /// (repeatable; added to a scenario's). A breach exits 1.
    #[arg(long = "threshold", help_heading = "Output")]
    pub thresholds: Vec<String>,

    /// Report format.
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Text, help_heading = "Output")]
    pub format: OutputFormat,
    /// Write the report to this file (atomically) instead of standard output.
    #[arg(short, long, value_name = "FILE", value_parser = output_file, help_heading = "Output")]
    pub output: Option<PathBuf>,
    /// No progress bar even on a terminal.
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,
    /// Run the workload directly, then again through an in-process `rpcbench proxy` on
    /// 127.0.0.1, and print the overhead table (direct vs proxied per percentile and method,
    /// and the proxy's own overhead) instead of the run report.
    #[arg(long, help_heading = "Output", conflicts_with = "save")]
    pub via_proxy: bool,
    /// Also write a results file (histograms kept losslessly) for `report`, `merge` and
    /// `report --compare`; written even when the run is interrupted.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub save: Option<PathBuf>,

    #[command(flatten)]
    pub monitor: crate::monitor_args::MonitorArgs,

    #[command(flatten)]
    pub heads: crate::heads_cmd::HeadsFlags,

    #[command(flatten)]
    pub metrics: crate::metrics_args::MetricsArgs,
}

/// What to send, when no scenario or suite says it: shared by `run`, `compare` and `capacity`.
#[derive(Debug, Clone, Default, Args)]
pub struct RequestArgs {
    /// JSON-RPC method to call.
    #[arg(short, long, help_heading = "Request")]
    pub method: Option<String>,
    /// Params of the method, a JSON array or object.
    #[arg(short, long, requires = "method", help_heading = "Request")]
    pub params: Option<String>,
    /// A whole JSON-RPC request object (its id is replaced per request).
    #[arg(short, long, help_heading = "Request")]
    pub body: Option<String>,
    /// A file holding a JSON-RPC request object (with --http: the body as it is).
    #[arg(long, help_heading = "Request")]
    pub body_file: Option<PathBuf>,
    /// JSON-RPC calls per HTTP request: each request carries a batch of N calls drawn from the
    /// mix, each with its own id; -n and --rate count HTTP requests, outcomes count calls.
    #[arg(long, value_name = "N", help_heading = "Request")]
    pub batch: Option<usize>,
    /// A plain HTTP request instead of a JSON-RPC call: GET, POST (with --body), PUT, DELETE,
    /// PATCH, HEAD or OPTIONS to the URL; 2xx is a success, other statuses count by status.
    #[arg(long, value_name = "METHOD", conflicts_with_all = ["method", "params"], help_heading = "Request")]
    pub http: Option<String>,
    /// A vegeta targets file (METHOD URL, header lines, @body file; blank-line separated),
    /// taken round robin in file order; the URLs come from the file (no TARGET).
    #[arg(
        long = "targets",
        value_name = "FILE",
        conflicts_with_all = ["method", "params", "body", "body_file", "http"],
        help_heading = "Request"
    )]
    pub targets_file: Option<PathBuf>,
}

/// How to reach the target: shared by `run`, `compare` and `capacity`. Every field is optional
/// so that a scenario's own settings stand unless a flag overrides them.
#[derive(Debug, Clone, Default, Args)]
pub struct HttpArgs {
    /// Extra header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", help_heading = "HTTP")]
    pub headers: Vec<String>,
    /// Time allowed for one request [default: 5s].
    #[arg(long, value_parser = duration, help_heading = "HTTP")]
    pub timeout: Option<Duration>,
    /// Time allowed to connect [default: 3s].
    #[arg(long, value_parser = duration, help_heading = "HTTP")]
    pub connect_timeout: Option<Duration>,
    /// Open a new connection for every request.
    #[arg(long, help_heading = "HTTP")]
    pub no_keepalive: bool,
    /// Accept any TLS certificate.
    #[arg(long, help_heading = "HTTP")]
    pub insecure: bool,
    /// Trust the PEM certificates in this file too.
    #[arg(long, help_heading = "HTTP")]
    pub cacert: Option<PathBuf>,
    /// Largest response body accepted (64MiB, 10MB); larger ones count as invalid [default: 64MiB].
    #[arg(long, value_parser = size, help_heading = "HTTP")]
    pub max_body: Option<u64>,
    /// Send this id in every request and expect it back (for static servers such as nginx
    /// that always answer the same id); by default every request gets a fresh id.
    #[arg(long, help_heading = "HTTP")]
    pub fixed_id: Option<u64>,
    /// How much of each response to check [default: scan].
    #[arg(long, value_enum, help_heading = "HTTP")]
    pub check: Option<CheckArg>,
    /// A JSON-RPC error code that means "rate limited" whatever its message (repeatable; HTTP
    /// 429, codes -32029 and 429, and messages that speak of a rate are recognised anyway):
    /// such answers count as rate_limited, apart from other errors.
    #[arg(long, value_name = "CODE", allow_negative_numbers = true, help_heading = "HTTP")]
    pub rate_limit_code: Vec<i64>,
    /// What a connection does after a rate-limited answer: continue (count it), backoff
    /// (pause 100 ms doubling to 10 s, reset by a success), or respect-retry-after (pause as
    /// the server's Retry-After says, at most 60 s; backoff without it). The report says how
    /// many pauses and how long.
    #[arg(long, value_enum, default_value = "continue", value_name = "MODE", help_heading = "HTTP")]
    pub on_rate_limit: OnRateLimitArg,
    /// Cleartext HTTP/2 with prior knowledge, for http:// URLs.
    #[arg(long, conflicts_with = "http2", help_heading = "HTTP")]
    pub h2c: bool,
    /// HTTP/2 over TLS (ALPN h2), for https:// URLs; a server that offers only HTTP/1.1 is
    /// refused, not fallen back to.
    #[arg(long, help_heading = "HTTP")]
    pub http2: bool,
    /// HTTP/2: concurrent streams per connection, so -c N keeps N x S requests in flight
    /// (a server's SETTINGS_MAX_CONCURRENT_STREAMS below S holds the rest back) [default: 1].
    #[arg(long, value_name = "S", help_heading = "HTTP")]
    pub streams: Option<usize>,
    /// WebSocket (ws:// or wss://): requests outstanding per socket, answered in any order and
    /// matched by id, so -c N keeps N x K requests in flight [default: 1].
    #[arg(long, value_name = "K", help_heading = "HTTP")]
    pub in_flight: Option<usize>,
}

/// Where the workload comes from besides `--method`/`--body`: a scenario file's URL override,
/// a built-in suite, the pools file. Shared by `run` and `capacity`.
#[derive(Debug, Clone, Default, Args)]
pub struct ScenarioArgs {
    /// With a scenario file: send to this URL instead of the file's.
    #[arg(long, help_heading = "Request")]
    pub url: Option<String>,
    /// Run a built-in suite against the URL (`rpcbench suites` lists them).
    #[arg(long, help_heading = "Request")]
    pub suite: Option<String>,
    /// Pools file: used instead of sampling the target if it exists, else written after
    /// sampling (replaces a scenario's `[sample] cache`).
    #[arg(long, value_name = "FILE", help_heading = "Request")]
    pub pools: Option<PathBuf>,
    /// Blocks (Solana: slots) back from the head that sampling a suite's or scenario's pools
    /// looks at [default: 200, or the scenario's [sample] window].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000), help_heading = "Request")]
    pub sample_blocks: Option<u64>,
    /// Sample a margin behind the head (compare: for nodes a few blocks behind the first).
    #[arg(skip)]
    pub behind_head: bool,
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
}
