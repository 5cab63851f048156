//! `rpcbench heads NAME=URL NAME=URL ...`: a head race with no load. Each target's head is
//! polled (`eth_blockNumber`, or `getSlot` for Solana) every `--interval` for `--duration`, and
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
use crate::report_cmd::emit;

/// Output formats of `heads`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HeadsFormat {
    /// A table.
    Text,
    /// JSON: one object per target.
    Json,
}

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
    #[arg(short, long, value_enum, default_value_t = HeadsFormat::Text)]
    pub format: HeadsFormat,
}

pub fn run(args: HeadsArgs) -> ExitCode {
    if args.interval.is_zero() {
        return output::usage_error("--interval: must be more than 0");
    }
    let targets = match crate::compare_cmd::parse_targets(&args.targets) {
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
    let stop = StopHandle::new();
    crate::signals::stop_on_interrupt(stop.clone());
    let samples = follow(&mut sources, args.interval, args.duration, &stop);
    let names: Vec<String> = targets.iter().map(|(name, _)| name.clone()).collect();
    let mut heads = analyse(&names, &samples, args.stale_after);
    heads.iter_mut().zip(&sources).for_each(|(row, source)| row.phantom = source.phantom());
    if heads.iter().all(|h| h.samples == 0) {
        return output::failure("no target answered eth_blockNumber or getSlot");
    }
    let text = match args.format {
        HeadsFormat::Text => render_heads_text(&heads, args.interval, args.stale_after),
        HeadsFormat::Json => serde_json::to_string_pretty(&heads).expect("heads serialize") + "\n",
    };
    emit(&text, None, true)
}

/// `--heads` and its settings on `run`, `compare` and `capacity`: the head monitor beside the
/// load.
#[derive(clap::Args, Debug, Clone)]
pub struct HeadsFlags {
    /// Follow each target's head (`eth_blockNumber` or `getSlot` polls, on a thread of its own)
    /// while the load runs, and report its lag behind the highest head seen, its share at the
    /// tip, its stale samples and its block-visibility delay.
    #[arg(long, help_heading = "Heads")]
    pub heads: bool,
    /// Time between two polls of every target's head.
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = duration, help_heading = "Heads")]
    pub heads_interval: Duration,
    /// A head sample more than this many blocks (slots) behind the highest head seen is stale.
    #[arg(long, value_name = "N", default_value_t = 20, help_heading = "Heads")]
    pub stale_after: u64,
}

impl Default for HeadsFlags {
    fn default() -> Self {
        Self { heads: false, heads_interval: Duration::from_millis(200), stale_after: 20 }
    }
}

impl HeadsFlags {
    /// Starts the monitor over `targets` (name and run settings) when `on`; an error names the
    /// flag or target at fault.
    pub fn start(
        &self,
        on: bool,
        targets: &[(String, &rpcbench::engine::config::RunConfig)],
    ) -> Result<Option<rpcbench::heads::HeadMonitor>, String> {
        if !on {
            return Ok(None);
        }
        if self.heads_interval.is_zero() {
            return Err("--heads-interval: must be more than 0".to_string());
        }
        let mut sources: Vec<Box<dyn HeadSource>> = Vec::with_capacity(targets.len());
        for (name, config) in targets {
            // A poll may take at most the interval, so that one slow target cannot hold the
            // others' samples back for long.
            let timeout = self.heads_interval.max(Duration::from_millis(100));
            match Endpoint::from_config(config, timeout) {
                Ok(endpoint) => sources.push(Box::new(PolledHead::new(endpoint))),
                Err(err) => return Err(format!("--heads: target '{name}': {err}")),
            }
        }
        let names = targets.iter().map(|(name, _)| name.clone()).collect();
        rpcbench::heads::HeadMonitor::start(names, sources, self.heads_interval, self.stale_after)
            .map(Some)
            .map_err(|err| format!("--heads: cannot start the head monitor: {err}"))
    }
}
