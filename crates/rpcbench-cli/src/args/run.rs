//! The flags of one run: `run`'s whole set, which `replay` flattens too (hiding what it refuses)
//! and `k8s-job` checks for the run it wraps.

use std::path::PathBuf;

use clap::Args;

use super::{output_file, HttpArgs, LengthArgs, LoadArgs, RequestArgs, ScenarioArgs};

/// Formats of `run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// The text report.
    Text,
    /// The JSON report (schema/report.schema.json).
    Json,
    /// Markdown tables.
    Markdown,
}
super::format::command_format!(OutputFormat: Text, Json, Markdown);

/// Every flag of a run.
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
    /// The endpoint (http://, https://, ws://, wss://, or grpc:// and grpcs:// for unary
    /// Yellowstone Geyser calls), or a scenario file (.toml) describing the run (not
    /// with --targets, whose file names the URLs).
    #[arg(required_unless_present = "targets_file", default_value = "")]
    pub target: String,
    #[command(flatten)]
    pub scenario: ScenarioArgs,

    #[command(flatten)]
    pub request: RequestArgs,

    #[command(flatten)]
    pub load: LoadArgs,

    #[command(flatten)]
    pub length: LengthArgs,

    #[command(flatten)]
    pub http: HttpArgs,

    /// A condition the run must meet, e.g. 'p99 < 500ms', 'errors < 0.1%', 'getBlock: p99 < 1s'
    /// (repeatable; added to a scenario's). A breach exits 1.
    #[arg(long = "threshold", help_heading = "Output")]
    pub thresholds: Vec<String>,

    /// Report format.
    #[arg(short, long, value_parser = crate::args::format::FormatParser::<OutputFormat>::new(), default_value = "text", value_name = "FORMAT", help_heading = "Output")]
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
    pub monitor: super::monitor::MonitorArgs,

    #[command(flatten)]
    pub heads: super::heads::HeadsFlags,

    #[command(flatten)]
    pub metrics: super::metrics::MetricsArgs,
}
