//! `--metrics-listen`, shared by `run`, `capacity` and `demo`: serve live Prometheus metrics
//! while the load runs.

use std::net::{SocketAddr, ToSocketAddrs};

use crate::fields::ConfigError;
use clap::Args;
use rpcbench::metrics::{LiveMetrics, MetricsServer};

/// The flag, as errors name it.
const FLAG: &str = "--metrics-listen";

#[derive(Debug, Clone, Default, Args)]
pub struct MetricsArgs {
    /// Serve live Prometheus metrics at http://ADDR/metrics during the run, e.g. 127.0.0.1:9464
    /// (port 0 picks a free port; the address is printed on standard error).
    #[arg(long = "metrics-listen", value_name = "ADDR", help_heading = "Output")]
    pub listen: Option<String>,
    /// No live dashboard on a terminal: print the progress lines instead (the dashboard is off
    /// anyway when standard output is not a terminal, with -q, or when CI is set).
    #[arg(long = "no-tui", help_heading = "Output")]
    pub no_tui: bool,
}

impl MetricsArgs {
    /// The address to listen on, checked; `None` when the flag was not given.
    pub fn address(&self) -> Result<Option<SocketAddr>, ConfigError> {
        let Some(text) = &self.listen else { return Ok(None) };
        let invalid = || {
            ConfigError::new(
                FLAG,
                format!("'{text}' is not an address to listen on (expected HOST:PORT, e.g. 127.0.0.1:9464)"),
            )
        };
        if let Ok(addr) = text.parse::<SocketAddr>() {
            return Ok(Some(addr));
        }
        // A host name such as localhost:9464.
        let mut addrs = text.to_socket_addrs().map_err(|_| invalid())?;
        addrs.next().map(Some).ok_or_else(invalid)
    }

    /// Binds the endpoint when the flag was given, and says where it is on standard error.
    /// Returns the server (serving until dropped) and the store the run publishes into.
    pub fn start(&self) -> Result<Option<(MetricsServer, LiveMetrics)>, ConfigError> {
        let Some(addr) = self.address()? else { return Ok(None) };
        let live = LiveMetrics::new();
        let server = MetricsServer::start(addr, live.clone())
            .map_err(|err| ConfigError::new(FLAG, format!("cannot listen on {addr}: {err}")))?;
        eprintln!("metrics: {}", server.url());
        if !addr.ip().is_loopback() {
            eprintln!(
                "rpcbench: warning: the metrics endpoint listens on {addr}, reachable from other \
                 machines; it shows the (redacted) target and the run's figures to anyone who asks"
            );
        }
        Ok(Some((server, live)))
    }
}
