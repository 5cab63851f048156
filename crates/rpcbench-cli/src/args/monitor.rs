//! `--monitor-pid` and `--monitor-cmd`, shared by `run`, `capacity` and `compare`: which target
//! processes to sample from /proc while the load runs. One target takes `PID` and `COMM`;
//! several (a comparison, a scenario naming several targets) take `NAME=PID` and `NAME=COMM`.

use crate::fields::ConfigError;
use clap::Args;
use rpcbench::monitor::{find_pids_by_comm, process_exists};

#[derive(Debug, Clone, Default, Args)]
pub struct MonitorArgs {
    /// Sample this process's CPU, memory, disk I/O and TCP connections from /proc every 250ms
    /// during the run (repeatable; Linux). With a scenario naming several targets, NAME=PID
    /// monitors PID during target NAME's run.
    #[arg(long = "monitor-pid", value_name = "PID", help_heading = "Target process")]
    pub pids: Vec<String>,
    /// Monitor every process named COMM (/proc/PID/comm, e.g. agave-validator or geth); with a
    /// scenario naming several targets, NAME=COMM (repeatable).
    #[arg(long = "monitor-cmd", value_name = "COMM", help_heading = "Target process")]
    pub commands: Vec<String>,
}

impl MonitorArgs {
    /// The processes to monitor in a run against one target, checked to exist; empty when none
    /// was asked for. `NAME=PID` is refused with a message saying where it belongs.
    pub fn resolve(&self) -> Result<Vec<u32>, ConfigError> {
        let mut pids = Vec::new();
        for text in &self.pids {
            let flag = format!("--monitor-pid {text}");
            if text.contains('=') {
                return Err(ConfigError::new(
                    flag,
                    "NAME=PID is for compare and for scenarios naming several targets; \
                     with one target give the PID alone",
                ));
            }
            let pid = parse_pid(text).map_err(|message| ConfigError::new(&flag, message))?;
            pids.push(pid);
        }
        for name in &self.commands {
            if name.contains('=') {
                return Err(ConfigError::new(
                    format!("--monitor-cmd {name}"),
                    "NAME=COMM is for compare and for scenarios naming several targets; \
                     with one target give the process name alone",
                ));
            }
            pids.extend(pids_named(name).map_err(|message| ConfigError::new("--monitor-cmd", message))?);
        }
        pids.sort_unstable();
        pids.dedup();
        Ok(pids)
    }

    /// The processes to monitor per target, from `NAME=PID` and `NAME=COMM`, in the order of
    /// `names`: each NAME must be a target, each PID a running process and each COMM the name of
    /// at least one.
    pub fn per_target(&self, names: &[&str]) -> Result<Vec<Vec<u32>>, ConfigError> {
        per_target(names, &self.pids, &self.commands)
    }
}

/// A process id that exists in /proc.
fn parse_pid(text: &str) -> Result<u32, String> {
    let pid: u32 = text.trim().parse().map_err(|_| format!("'{text}' is not a process id"))?;
    if !process_exists(pid) {
        return Err(format!("no process {pid} in /proc"));
    }
    Ok(pid)
}

/// The processes named `name`, at least one.
fn pids_named(name: &str) -> Result<Vec<u32>, String> {
    let found = find_pids_by_comm(name);
    if found.is_empty() {
        return Err(format!("no process named '{name}' (names are matched against /proc/PID/comm)"));
    }
    Ok(found)
}

/// The processes to monitor per target, from `--monitor-pid NAME=PID` and
/// `--monitor-cmd NAME=COMM`, in the order of `names`.
pub fn per_target(
    names: &[&str],
    pids: &[String],
    commands: &[String],
) -> Result<Vec<Vec<u32>>, ConfigError> {
    let mut monitors: Vec<Vec<u32>> = vec![Vec::new(); names.len()];
    let target_index = |flag: &str, text: &str, example: &str| -> Result<(usize, String), ConfigError> {
        let setting = format!("{flag} '{text}'");
        let Some((name, value)) = text.split_once('=').filter(|(n, v)| !n.is_empty() && !v.is_empty()) else {
            return Err(ConfigError::new(
                setting,
                format!("expected NAME={example}, where NAME is a target"),
            ));
        };
        match names.iter().position(|target| *target == name) {
            Some(index) => Ok((index, value.to_string())),
            None => Err(ConfigError::new(
                setting,
                format!("no target named '{name}' (targets: {})", names.join(", ")),
            )),
        }
    };
    for text in pids {
        let (index, value) = target_index("--monitor-pid", text, "PID")?;
        let pid = parse_pid(&value)
            .map_err(|message| ConfigError::new(format!("--monitor-pid '{text}'"), message))?;
        monitors[index].push(pid);
    }
    for text in commands {
        let (index, name) = target_index("--monitor-cmd", text, "COMM")?;
        let found = pids_named(&name)
            .map_err(|message| ConfigError::new(format!("--monitor-cmd '{text}'"), message))?;
        monitors[index].extend(found);
    }
    for pids in &mut monitors {
        pids.sort_unstable();
        pids.dedup();
    }
    Ok(monitors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitors_name_a_target_and_a_process() {
        let names = ["a", "b"];
        let me = std::process::id();
        let monitors = per_target(&names, &[format!("b={me}")], &[]).unwrap();
        assert_eq!(monitors, vec![vec![], vec![me]]);
        for (pids, commands, expected) in [
            (vec![format!("c={me}")], vec![], "no target named 'c' (targets: a, b)"),
            (vec![me.to_string()], vec![], "expected NAME=PID"),
            (vec!["a=".to_string()], vec![], "expected NAME=PID"),
            (vec!["a=x1".to_string()], vec![], "'x1' is not a process id"),
            (vec!["a=4294967295".to_string()], vec![], "no process 4294967295"),
            (vec![], vec!["b=no-such-proc-x".to_string()], "no process named 'no-such-proc-x'"),
            (vec![], vec!["geth".to_string()], "--monitor-cmd 'geth': expected NAME=COMM"),
        ] {
            let err = per_target(&names, &pids, &commands).unwrap_err().to_string();
            assert!(err.contains(expected), "{pids:?} {commands:?}: {err}");
        }
    }

    #[test]
    fn one_target_refuses_name_equals_pid_saying_where_it_belongs() {
        let me = std::process::id();
        let args = MonitorArgs { pids: vec![format!("go={me}")], commands: Vec::new() };
        let err = args.resolve().unwrap_err().to_string();
        assert!(err.contains("NAME=PID is for compare"), "{err}");
        assert!(!err.contains("invalid digit"), "{err}");
        let args = MonitorArgs { pids: vec![me.to_string()], commands: Vec::new() };
        assert_eq!(args.resolve().unwrap(), vec![me]);
        let args = MonitorArgs { pids: vec!["x".into()], commands: Vec::new() };
        assert!(args.resolve().unwrap_err().to_string().contains("'x' is not a process id"));
    }
}
