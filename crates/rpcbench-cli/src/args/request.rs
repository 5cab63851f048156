//! What to send, when no scenario or suite says it, and where a workload comes from besides
//! `--method`/`--body` (a scenario file's URL override, a built-in suite, the pools file).

use std::path::PathBuf;

use clap::Args;

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
    #[arg(help = format!("Blocks (Solana: slots) back from the head that sampling a suite's or scenario's pools looks at [default: {}, or the scenario's [sample] window]", rpcbench::defaults::SAMPLE_BLOCKS), long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000), help_heading = "Request")]
    pub sample_blocks: Option<u64>,
    /// Sample a margin behind the head (compare: for nodes a few blocks behind the first).
    #[arg(skip)]
    pub behind_head: bool,
}
