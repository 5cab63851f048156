//! `--heads` and its settings, flattened by `run`, `compare` and `capacity`: the head monitor
//! beside the load.

use std::time::Duration;

use rpcbench::client::Endpoint;
use rpcbench::heads::{HeadSource, PolledHead};

use super::duration;

/// `--heads` and its settings on `run`, `compare` and `capacity`: the head monitor beside the
/// load.
#[derive(clap::Args, Debug, Clone)]
pub struct HeadsFlags {
    /// Follow each target's head (`eth_blockNumber`, `getSlot` or, on grpc://, `GetSlot` polls,
    /// on a thread of its own) while the load runs, and report its lag behind the highest head seen, its share at the
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
    /// Starts the monitor over `targets` (name and run settings) when `on`, publishing each
    /// target's head lag into every store of `live` (the endpoint's, the dashboard's); an error
    /// names the flag or target at fault.
    pub fn start(
        &self,
        on: bool,
        targets: &[(String, &rpcbench::engine::config::RunConfig)],
        live: &[rpcbench::metrics::LiveMetrics],
    ) -> Result<Option<rpcbench::heads::HeadMonitor>, String> {
        self.start_with_references(on, targets, &[], live)
    }

    /// [`HeadsFlags::start`], also following reference nodes given by URL (`--heads-ref`),
    /// after the targets: polled plainly (none of the targets' headers go to them), named by
    /// their URL with secrets redacted, so that the targets' lags are measured against them.
    pub fn start_with_references(
        &self,
        on: bool,
        targets: &[(String, &rpcbench::engine::config::RunConfig)],
        references: &[String],
        live: &[rpcbench::metrics::LiveMetrics],
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
        let mut names: Vec<String> = targets.iter().map(|(name, _)| name.clone()).collect();
        for url in references {
            let target = rpcbench::engine::config::Target::parse(url)
                .map_err(|err| format!("--heads-ref: {}", err.message()))?;
            let timeout = self.heads_interval.max(Duration::from_millis(100));
            let endpoint = Endpoint::parse(url, timeout)
                .map_err(|err| format!("--heads-ref: '{}': {err}", target.redacted()))?;
            names.push(target.redacted());
            sources.push(Box::new(PolledHead::new(endpoint)));
        }
        rpcbench::heads::HeadMonitor::start_publishing(
            names,
            sources,
            self.heads_interval,
            self.stale_after,
            live.to_vec(),
        )
        .map(Some)
        .map_err(|err| format!("--heads: cannot start the head monitor: {err}"))
    }
}
