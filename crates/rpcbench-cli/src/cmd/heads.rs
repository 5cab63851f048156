//! `rpcbench heads NAME=URL NAME=URL ...`: a head race with no load. Each target's head is
//! polled (`eth_blockNumber`, `getSlot` for Solana, `GetSlot` for a grpc:// Geyser endpoint)
//! every `--interval` for `--duration`, and
//! each target's lag behind the highest head seen, its share at the tip, its stale samples
//! (more than `--stale-after` behind), the share of blocks it showed first and its delay
//! behind the first are reported.

use std::process::ExitCode;
use std::time::Duration;

use rpcbench::client::Endpoint;
use rpcbench::engine::StopHandle;
use rpcbench::heads::{analyse, follow, render_heads_text, HeadSource, PolledHead};

use crate::args::duration;
use crate::output;
use crate::output::emit;

/// Output formats of `heads`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadsFormat {
    /// A table.
    Text,
    /// JSON: one object per target.
    Json,
}

crate::args::format::command_format!(HeadsFormat: Text, Json);

/// Options of `rpcbench heads`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  rpcbench heads a=http://127.0.0.1:8545 b=http://127.0.0.1:8546 -d 30s
  rpcbench heads a=http://127.0.0.1:8899 b=http://127.0.0.1:8900 --interval 100ms --stale-after 150 -f json")]
pub struct HeadsArgs {
    /// Targets as NAME=URL, two or more.
    #[arg(required = true, value_name = "NAME=URL")]
    pub targets: Vec<String>,
    /// How long the race runs.
    #[arg(short, long, default_value = "10s", value_parser = duration)]
    pub duration: Duration,
    /// Time between two polls of every target (the resolution of the delays).
    #[arg(long, default_value = "200ms", value_parser = duration)]
    pub interval: Duration,
    /// A sample more than this many blocks (slots) behind the highest head seen is stale.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub stale_after: u64,
    /// Time allowed for one poll.
    #[arg(long, default_value = "2s", value_parser = duration)]
    pub timeout: Duration,
    /// Output format.
    #[arg(short, long, value_parser = crate::args::format::FormatParser::<HeadsFormat>::new(), default_value = "text", value_name = "FORMAT")]
    pub format: HeadsFormat,
    /// Write the report to this file (atomically) instead of standard output.
    #[arg(short, long, value_name = "FILE", value_parser = crate::args::output_file)]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(args: HeadsArgs) -> ExitCode {
    if args.interval.is_zero() {
        return output::usage_error("--interval: must be more than 0");
    }
    let targets = match crate::args::parse_targets(&args.targets) {
        Ok(targets) => targets,
        Err(message) => return output::usage_error(message),
    };
    let mut sources: Vec<Box<dyn HeadSource>> = Vec::with_capacity(targets.len());
    for (name, url) in &targets {
        match Endpoint::parse(url, args.timeout) {
            Ok(endpoint) => sources.push(Box::new(PolledHead::new(endpoint))),
            Err(err) => return output::usage_error(format!("target '{name}': {err}")),
        }
    }
    if let Some(Err(err)) = args.output.as_deref().map(|path| output::check_file_path("--output", path)) {
        return output::usage_error(err);
    }
    let stop = StopHandle::new();
    crate::signals::stop_on_interrupt(stop.clone());
    let samples = follow(&mut sources, args.interval, args.duration, &stop);
    let names: Vec<String> = targets.iter().map(|(name, _)| name.clone()).collect();
    let mut heads = analyse(&names, &samples, args.stale_after);
    heads.iter_mut().zip(&sources).for_each(|(row, source)| row.phantom = source.phantom());
    if heads.iter().all(|h| h.samples == 0) {
        return output::failure("no target answered eth_blockNumber, getSlot or (grpc://) GetSlot");
    }
    let text = match args.format {
        HeadsFormat::Text => render_heads_text(&heads, args.interval, args.stale_after),
        HeadsFormat::Json => serde_json::to_string_pretty(&heads).expect("heads serialize") + "\n",
    };
    emit(&text, args.output.as_deref(), true)
}
