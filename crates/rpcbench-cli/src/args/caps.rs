//! The caps on client connections that `proxy`, `record` and `serve` share.

use std::time::Duration;

use clap::Args;

use super::duration;

/// The caps on client connections that `proxy`, `record` and `serve` share.
#[derive(Debug, Clone, Args)]
pub struct ClientCapArgs {
    /// Most client connections open at once; one more is closed at once, so idle clients
    /// cannot take every file descriptor [default: the open-file limit less 64, and less the
    /// upstream connections for proxy and record].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Close a client connection that has not sent a complete request (head and body) within
    /// DUR, or that stays idle this long between requests.
    #[arg(long, value_parser = duration, default_value = "60s", value_name = "DUR")]
    pub idle_timeout: Duration,
}

impl Default for ClientCapArgs {
    fn default() -> Self {
        Self { max_connections: None, idle_timeout: Duration::from_secs(60) }
    }
}
