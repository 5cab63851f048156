//! The open-file limit (`ulimit -n`). Every connection is a file descriptor; a run that wants
//! more connections than the process may open would otherwise fail connect by connect with
//! `EMFILE` and report a broken target. At run start the soft limit is raised to the hard
//! limit, and a run that still does not fit is refused before it starts, naming the limit.

use std::fmt;

use super::config::{Field, Load, RunConfig};

/// Descriptors kept free beyond one per connection: standard streams, the signal thread's
/// runtime, name resolution, CA files, and a few to spare.
pub(crate) const BASE_MARGIN: u64 = 32;

/// Descriptors each worker thread's runtime holds (its epoll instance and waker).
pub(crate) const PER_WORKER: u64 = 2;

/// A run wants more connections than the open-file limit allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooManyConnections {
    /// The setting at fault: [`Field::Connections`] or [`Field::MaxConnections`].
    pub field: Field,
    /// The connections asked for.
    pub connections: u64,
    /// The open files the run needs: the connections plus a margin.
    pub wanted: u64,
    /// The soft open-file limit in force (after raising it as far as allowed).
    pub limit: u64,
}

impl fmt::Display for TooManyConnections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message())
    }
}

impl TooManyConnections {
    /// What is wrong, without the setting's name.
    pub fn message(&self) -> String {
        format!(
            "{} connections need about {} open files, which exceeds the open-file limit \
             (ulimit -n) of {}; raise it or use fewer connections",
            self.connections, self.wanted, self.limit
        )
    }
}

impl std::error::Error for TooManyConnections {}

/// The connections a run may hold at once and the setting that sets them.
pub(crate) fn connections_of(config: &RunConfig) -> (Field, u64) {
    match &config.load {
        Load::Closed { connections } => (Field::Connections, *connections as u64),
        Load::Open { max_connections, .. } if config.hold_connections => {
            (Field::Connections, *max_connections as u64)
        }
        Load::Open { max_connections, .. } => (Field::MaxConnections, *max_connections as u64),
    }
}

/// The open files a run needs: one per connection, plus the margin.
pub(crate) fn files_needed(config: &RunConfig) -> u64 {
    let (_, connections) = connections_of(config);
    let workers = config.worker_threads() as u64;
    connections.saturating_add(BASE_MARGIN).saturating_add(workers.saturating_mul(PER_WORKER))
}

/// Raises the soft open-file limit towards the hard limit (at least to `wanted` where the hard
/// limit allows) and returns the soft limit now in force; `None` where the platform has no
/// such limit or it cannot be read.
pub(crate) fn raise_open_file_limit(wanted: u64) -> Option<u64> {
    #[cfg(unix)]
    {
        use rlimit::Resource;
        if !Resource::NOFILE.is_supported() {
            return None;
        }
        // An unlimited hard limit cannot be the soft limit on Linux (fs.nr_open caps it), so
        // fall back to asking for what the run needs.
        if rlimit::increase_nofile_limit(u64::MAX).is_err() {
            rlimit::increase_nofile_limit(wanted).ok();
        }
        Resource::NOFILE.get().ok().map(|(soft, _hard)| soft)
    }
    #[cfg(not(unix))]
    {
        let _ = wanted;
        None
    }
}

/// Checks a run against a given open-file limit.
pub(crate) fn check_against(config: &RunConfig, limit: u64) -> Result<(), TooManyConnections> {
    let (field, connections) = connections_of(config);
    let wanted = files_needed(config);
    if wanted > limit {
        return Err(TooManyConnections { field, connections, wanted, limit });
    }
    Ok(())
}

/// Raises the open-file limit and checks that the run fits under it. Where the limit is
/// unknown the run goes ahead.
pub(crate) fn check_open_files(config: &RunConfig) -> Result<(), TooManyConnections> {
    let wanted = files_needed(config);
    match raise_open_file_limit(wanted) {
        Some(limit) => check_against(config, limit),
        None => Ok(()),
    }
}

/// The most connections a run like `config` may hold under an open-file limit of `limit`: the
/// limit less the margin (`config`'s own connections do not count).
pub(crate) fn connections_under(config: &RunConfig, limit: u64) -> u64 {
    let (_, connections) = connections_of(config);
    let margin = files_needed(config).saturating_sub(connections);
    limit.saturating_sub(margin)
}

/// The most connections a run like `config` may hold, after raising the open-file limit as far
/// as allowed; `None` where the limit is unknown.
pub(crate) fn connections_allowed(config: &RunConfig) -> Option<u64> {
    raise_open_file_limit(files_needed(config)).map(|limit| connections_under(config, limit))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::{Arrivals, Target};
    use crate::jsonrpc::RequestTemplate;

    fn config(load: Load) -> RunConfig {
        let target = Target::parse("http://127.0.0.1:8899/").unwrap();
        let mut config = RunConfig::new(target, RequestTemplate::from_method("getSlot", None).unwrap());
        config.load = load;
        config.threads = 2;
        config
    }

    #[test]
    fn the_margin_counts_workers() {
        let closed = config(Load::Closed { connections: 100 });
        assert_eq!(files_needed(&closed), 100 + BASE_MARGIN + 2 * PER_WORKER);
        let open = config(Load::Open { rate: 10.0, arrivals: Arrivals::Uniform, max_connections: 1 });
        assert_eq!(files_needed(&open), 1 + BASE_MARGIN + PER_WORKER);
    }

    #[test]
    fn runs_over_the_limit_name_the_setting_and_the_limit() {
        let closed = config(Load::Closed { connections: 100 });
        assert!(check_against(&closed, 1000).is_ok());
        let err = check_against(&closed, 64).unwrap_err();
        assert_eq!(err.field, Field::Connections);
        assert_eq!(err.limit, 64);
        let text = err.to_string();
        assert!(text.contains("open-file limit (ulimit -n) of 64"), "{text}");
        assert!(text.contains("raise it or use fewer connections"), "{text}");
        let open = config(Load::Open { rate: 10.0, arrivals: Arrivals::Uniform, max_connections: 5000 });
        let err = check_against(&open, 1024).unwrap_err();
        assert_eq!(err.field, Field::MaxConnections);
        assert!(err.to_string().starts_with("max_connections: 5000 connections"), "{err}");
    }

    #[test]
    fn the_connections_allowed_leave_the_margin() {
        let closed = config(Load::Closed { connections: 5000 });
        let allowed = connections_under(&closed, 1024);
        assert_eq!(allowed, 1024 - BASE_MARGIN - 2 * PER_WORKER);
        let fits = config(Load::Closed { connections: allowed as usize });
        assert!(check_against(&fits, 1024).is_ok());
        let over = config(Load::Closed { connections: allowed as usize + 1 });
        assert!(check_against(&over, 1024).is_err());
        assert_eq!(connections_under(&closed, 10), 0);
    }

    #[test]
    fn the_limit_in_force_is_at_least_what_it_was() {
        #[cfg(target_os = "linux")]
        {
            let before = rlimit::Resource::NOFILE.get().unwrap().0;
            let after = raise_open_file_limit(100).unwrap();
            assert!(after >= before);
        }
    }
}
