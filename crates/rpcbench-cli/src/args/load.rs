//! How hard to load and for how long: connections, rate, arrivals, threads, seed, shards, and
//! the run's length (duration, request count, stage scaling, warm-up).

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{duration, rate};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalsArg {
    Uniform,
    Poisson,
}

/// The load of a run: closed loop (`-c`) or open loop (`--rate`), threads, seed and shards.
/// Every field is optional so that a scenario's own settings stand unless a flag overrides them.
#[derive(Debug, Clone, Default, Args)]
pub struct LoadArgs {
    #[arg(help = format!("Closed loop: connections sending back to back [default: {}]. With --rate: this many connections opened at the start and held, the rate paced across them (as wrk2 -c N -R R)", rpcbench::defaults::CONNECTIONS), short, long, help_heading = "Load")]
    pub connections: Option<usize>,
    /// Open loop: requests per second (5000, 50/s, 600/m), latency from the intended send time.
    #[arg(short, long, value_parser = rate, help_heading = "Load")]
    pub rate: Option<f64>,
    /// Open loop: spacing of arrivals [default: uniform].
    #[arg(long, value_enum, help_heading = "Load")]
    pub arrivals: Option<ArrivalsArg>,
    #[arg(help = format!("Open loop: the most connections opened, as needed, to keep up with the rate [default: {}]", rpcbench::defaults::MAX_CONNECTIONS), long, help_heading = "Load")]
    pub max_connections: Option<usize>,
    /// Worker threads [default: one per core].
    #[arg(long, help_heading = "Load")]
    pub threads: Option<usize>,
    #[arg(help = format!("Seed for everything random (arrivals, mixes, generated params) [default: {}]", rpcbench::defaults::SEED), long, help_heading = "Load")]
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
}

/// The length of a run: a duration, a request count, a scaling of the stages, a warm-up.
#[derive(Debug, Clone, Default, Args)]
pub struct LengthArgs {
    #[arg(help = format!("Measured duration [default: {}, unless --requests is given]", rpcbench::defaults::DURATION_TEXT), short, long, value_parser = duration, help_heading = "Length")]
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
}
