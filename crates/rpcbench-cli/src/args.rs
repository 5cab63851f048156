//! The clap types: what the user typed, close to the command line. `run_cmd` turns them into
//! the library's validated `RunConfig`; nothing past that sees clap.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Load testing and benchmarking for blockchain JSON-RPC endpoints.
#[derive(Debug, Parser)]
#[command(name = "rpcbench", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load one JSON-RPC endpoint with one request, closed loop or at a constant rate.
    Run(Box<RunArgs>),
    /// Serve a mock Solana or Ethereum node, or the static baseline, with fault knobs.
    Serve(crate::serve::ServeArgs),
    /// Run seed 000's Solana tests against the built-in mock node and print the summary.
    Demo(DemoArgs),
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Measured length of each of the twelve steps.
    #[arg(long, value_parser = duration, default_value = "2s")]
    pub step_duration: Duration,
    /// The open-loop step's rate.
    #[arg(long, value_parser = rate, default_value = "2000")]
    pub rate: f64,
}

pub fn duration(text: &str) -> Result<Duration, String> {
    rpcbench::units::parse_duration(text).map_err(|err| err.to_string())
}

fn size(text: &str) -> Result<u64, String> {
    rpcbench::units::parse_size(text).map_err(|err| err.to_string())
}

fn rate(text: &str) -> Result<f64, String> {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalsArg {
    Uniform,
    Poisson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckArg {
    /// Top-level scan: jsonrpc, id, result or error code (fast).
    Scan,
    /// The scan plus a full JSON validation of every body.
    Full,
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("request").required(true).args(["method", "body", "body_file"]))]
pub struct RunArgs {
    /// The endpoint, http:// or https://.
    pub url: String,

    /// JSON-RPC method to call.
    #[arg(short, long, help_heading = "Request")]
    pub method: Option<String>,
    /// Params of the method, a JSON array or object.
    #[arg(short, long, requires = "method", help_heading = "Request")]
    pub params: Option<String>,
    /// A whole JSON-RPC request object (its id is replaced per request).
    #[arg(short, long, help_heading = "Request")]
    pub body: Option<String>,
    /// A file holding a JSON-RPC request object.
    #[arg(long, help_heading = "Request")]
    pub body_file: Option<PathBuf>,

    /// Closed loop: connections sending back to back.
    #[arg(short, long, conflicts_with = "rate", help_heading = "Load")]
    pub connections: Option<usize>,
    /// Open loop: requests per second (5000, 50/s, 600/m), latency from the intended send time.
    #[arg(short, long, value_parser = rate, help_heading = "Load")]
    pub rate: Option<f64>,
    /// Open loop: spacing of arrivals.
    #[arg(long, value_enum, default_value_t = ArrivalsArg::Uniform, requires = "rate", help_heading = "Load")]
    pub arrivals: ArrivalsArg,
    /// Open loop: the most connections opened to keep up with the rate.
    #[arg(long, default_value_t = 1024, requires = "rate", help_heading = "Load")]
    pub max_connections: usize,
    /// Worker threads (default: one per core).
    #[arg(long, help_heading = "Load")]
    pub threads: Option<usize>,
    /// Seed for random choices (Poisson arrivals).
    #[arg(long, default_value_t = 1, help_heading = "Load")]
    pub seed: u64,

    /// Measured duration (default 10s unless --requests is given).
    #[arg(short, long, value_parser = duration, help_heading = "Length")]
    pub duration: Option<Duration>,
    /// Number of measured requests.
    #[arg(short = 'n', long, help_heading = "Length")]
    pub requests: Option<u64>,
    /// Time before measurement: requests are sent but not recorded.
    #[arg(long, value_parser = duration, default_value = "0", help_heading = "Length")]
    pub warmup: Duration,

    /// Extra header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", help_heading = "HTTP")]
    pub headers: Vec<String>,
    /// Time allowed for one request.
    #[arg(long, value_parser = duration, default_value = "5s", help_heading = "HTTP")]
    pub timeout: Duration,
    /// Time allowed to connect.
    #[arg(long, value_parser = duration, default_value = "3s", help_heading = "HTTP")]
    pub connect_timeout: Duration,
    /// Open a new connection for every request.
    #[arg(long, help_heading = "HTTP")]
    pub no_keepalive: bool,
    /// Accept any TLS certificate.
    #[arg(long, help_heading = "HTTP")]
    pub insecure: bool,
    /// Trust the PEM certificates in this file too.
    #[arg(long, help_heading = "HTTP")]
    pub cacert: Option<PathBuf>,
    /// Largest response body accepted (64MiB, 10MB); larger ones count as invalid.
    #[arg(long, value_parser = size, default_value = "64MiB", help_heading = "HTTP")]
    pub max_body: u64,
    /// How much of each response to check.
    #[arg(long, value_enum, default_value_t = CheckArg::Scan, help_heading = "HTTP")]
    pub check: CheckArg,

    /// Report format on standard output.
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Text, help_heading = "Output")]
    pub output: OutputFormat,
    /// No progress bar even on a terminal.
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,
}
