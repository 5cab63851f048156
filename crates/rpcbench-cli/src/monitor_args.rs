//! `--monitor-pid` and `--monitor-cmd`, shared by `run` and `capacity`: which target processes
//! to sample from /proc while the load runs.

use clap::Args;
use rpcbench::engine::config::ConfigError;
use rpcbench::monitor::{find_pids_by_comm, process_exists};

#[derive(Debug, Clone, Default, Args)]
pub struct MonitorArgs {
    /// Sample this process's CPU, memory, disk I/O and TCP connections from /proc every 250ms
    /// during the run (repeatable; Linux).
    #[arg(long = "monitor-pid", value_name = "PID", help_heading = "Target process")]
    pub pids: Vec<u32>,
    /// Monitor every process named NAME (/proc/PID/comm, e.g. agave-validator or geth).
    #[arg(long = "monitor-cmd", value_name = "NAME", help_heading = "Target process")]
    pub command: Option<String>,
}

impl MonitorArgs {
    /// The processes to monitor, checked to exist; empty when none was asked for.
    pub fn resolve(&self) -> Result<Vec<u32>, ConfigError> {
        let mut pids = Vec::new();
        for pid in &self.pids {
            if !process_exists(*pid) {
                return Err(ConfigError::new("--monitor-pid", format!("no process {pid} in /proc")));
            }
            pids.push(*pid);
        }
        if let Some(name) = &self.command {
            let found = find_pids_by_comm(name);
            if found.is_empty() {
                return Err(ConfigError::new(
                    "--monitor-cmd",
                    format!("no process named '{name}' (names are matched against /proc/PID/comm)"),
                ));
            }
            pids.extend(found);
        }
        pids.sort_unstable();
        pids.dedup();
        Ok(pids)
    }
}
