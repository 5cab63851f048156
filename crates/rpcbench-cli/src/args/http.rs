//! How to reach the target: headers, timeouts, TLS, response checks, rate-limit handling and
//! the wire (HTTP/2, WebSocket in-flight requests).

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{duration, size};

/// `--on-rate-limit`: what a connection does after a rate-limited answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OnRateLimitArg {
    /// Go on at once and count the answer.
    #[default]
    Continue,
    /// Pause 100 ms, doubling up to 10 s; a success resets it.
    Backoff,
    /// Pause as Retry-After says (at most 60 s); backoff without it.
    RespectRetryAfter,
}

fn x_token(text: &str) -> Result<rpcbench::XToken, String> {
    Ok(rpcbench::XToken::new(text))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckArg {
    /// Top-level scan: jsonrpc, id, result or error code (fast).
    Scan,
    /// The scan plus a full JSON validation of every body.
    Full,
}

/// How to reach the target: shared by `run`, `compare` and `capacity`. Every field is optional
/// so that a scenario's own settings stand unless a flag overrides them.
#[derive(Debug, Clone, Default, Args)]
pub struct HttpArgs {
    /// Extra header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", help_heading = "HTTP")]
    pub headers: Vec<String>,
    /// gRPC (grpc:// or grpcs://): the x-token every Geyser call carries (a secret: never
    /// printed).
    #[arg(long, value_name = "TOKEN", value_parser = x_token, help_heading = "HTTP")]
    pub x_token: Option<rpcbench::XToken>,
    #[arg(help = format!("Time allowed for one request [default: {}]", rpcbench::defaults::TIMEOUT_TEXT), long, value_parser = duration, help_heading = "HTTP")]
    pub timeout: Option<Duration>,
    #[arg(help = format!("Time allowed to connect [default: {}]", rpcbench::defaults::CONNECT_TIMEOUT_TEXT), long, value_parser = duration, help_heading = "HTTP")]
    pub connect_timeout: Option<Duration>,
    /// Open a new connection for every request.
    #[arg(long, help_heading = "HTTP")]
    pub no_keepalive: bool,
    #[command(flatten, next_help_heading = "HTTP")]
    pub tls: super::tls::TlsArgs,
    #[arg(help = format!("Largest response body accepted (64MiB, 10MB); larger ones count as invalid [default: {}]", rpcbench::defaults::MAX_BODY_TEXT), long, value_parser = size, help_heading = "HTTP")]
    pub max_body: Option<u64>,
    /// Send this id in every request and expect it back (for static servers such as nginx
    /// that always answer the same id); by default every request gets a fresh id.
    #[arg(long, help_heading = "HTTP")]
    pub fixed_id: Option<u64>,
    /// How much of each response to check [default: scan].
    #[arg(long, value_enum, help_heading = "HTTP")]
    pub check: Option<CheckArg>,
    /// A JSON-RPC error code that means "rate limited" whatever its message (repeatable; HTTP
    /// 429, codes -32029 and 429, and messages that speak of a rate are recognised anyway):
    /// such answers count as rate_limited, apart from other errors.
    #[arg(long, value_name = "CODE", allow_negative_numbers = true, help_heading = "HTTP")]
    pub rate_limit_code: Vec<i64>,
    /// What a connection does after a rate-limited answer: continue (count it), backoff
    /// (pause 100 ms doubling to 10 s, reset by a success), or respect-retry-after (pause as
    /// the server's Retry-After says, at most 60 s; backoff without it). The report says how
    /// many pauses and how long.
    #[arg(long, value_enum, default_value = "continue", value_name = "MODE", help_heading = "HTTP")]
    pub on_rate_limit: OnRateLimitArg,
    /// Cleartext HTTP/2 with prior knowledge, for http:// URLs.
    #[arg(long, conflicts_with = "http2", help_heading = "HTTP")]
    pub h2c: bool,
    /// HTTP/2 over TLS (ALPN h2), for https:// URLs; a server that offers only HTTP/1.1 is
    /// refused, not fallen back to.
    #[arg(long, help_heading = "HTTP")]
    pub http2: bool,
    #[arg(help = format!("HTTP/2: concurrent streams per connection, so -c N keeps N x S requests in flight (a server's SETTINGS_MAX_CONCURRENT_STREAMS below S holds the rest back) [default: {}]", rpcbench::defaults::STREAMS), long, value_name = "S", help_heading = "HTTP")]
    pub streams: Option<usize>,
    #[arg(help = format!("WebSocket (ws:// or wss://): requests outstanding per socket, answered in any order and matched by id, so -c N keeps N x K requests in flight [default: {}]", rpcbench::defaults::IN_FLIGHT), long, value_name = "K", help_heading = "HTTP")]
    pub in_flight: Option<usize>,
}
