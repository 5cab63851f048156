//! `rpcbench proxy` (and `rpcbench record`, the same with `-o FILE` recording required): a
//! transparent JSON-RPC relay in front of an upstream that measures its own overhead per
//! method, injects faults on the way back and records the traffic for `replay`. Runs until
//! Ctrl-C or SIGTERM, then prints the overhead table (`-f text|json`, `-o FILE`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use rpcbench::compare::FieldPath;
use rpcbench::proxy::{Proxy, ProxyError, ProxyOptions};
use rpcbench::Target;

use crate::args::duration;
use crate::fields::{flag, ConfigError};
use crate::output;

/// How the final table is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyFormat {
    /// A table.
    Text,
    /// JSON.
    Json,
}
crate::args::format::command_format!(ProxyFormat: Text, Json);

#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Where to listen, e.g. 127.0.0.1:8546.
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
    /// The node every request is relayed to (its path and query are used for every request).
    #[arg(long, value_name = "URL")]
    pub upstream: String,
    /// Write one line per relayed request to FILE (the traffic format `replay` reads).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// A response field left out of the recorded digests (repeatable), e.g. result.blockhash.
    #[arg(long, value_name = "PATH")]
    pub ignore_field: Vec<String>,
    /// Serve the proxy's live figures to Prometheus on this address (GET /metrics).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Added before every answer, e.g. 5ms.
    #[arg(long, value_parser = duration, value_name = "DUR")]
    pub latency: Option<Duration>,
    /// Share of requests answered with a JSON-RPC error -32603 (HTTP 200) instead of the
    /// upstream's answer.
    #[arg(long, value_name = "P", default_value = "0", allow_hyphen_values = true)]
    pub error_rate: f64,
    /// Share of requests whose connection is closed without an answer.
    #[arg(long, value_name = "P", default_value = "0", allow_hyphen_values = true)]
    pub drop_rate: f64,
    /// Seed of the fault draws.
    #[arg(long, default_value = "0")]
    pub seed: u64,
    /// Runtime worker threads.
    #[arg(long, default_value = "1")]
    pub threads: usize,
    /// Most connections open to the upstream at once.
    #[arg(long, default_value = "64")]
    pub upstream_connections: usize,
    /// Relay to the upstream over cleartext HTTP/2 with prior knowledge (h2c): one connection,
    /// a stream per request (at most --upstream-connections at once).
    #[arg(long, conflicts_with = "upstream_http2")]
    pub upstream_h2c: bool,
    /// Relay to an https:// upstream over HTTP/2 (ALPN h2): one connection, a stream per
    /// request (at most --upstream-connections at once).
    #[arg(long)]
    pub upstream_http2: bool,
    /// The longest wait for the upstream's answer.
    #[arg(long, value_parser = duration, default_value = "30s", value_name = "DUR")]
    pub upstream_timeout: Duration,
    /// The longest a request waits for a free upstream connection; past it the client gets a
    /// 502 counted as upstream failure `queue_timeout` (so one client's slow calls holding
    /// every upstream connection delay the others by at most this).
    #[arg(long, value_parser = duration, default_value = "10s", value_name = "DUR")]
    pub queue_timeout: Duration,
    #[command(flatten)]
    pub caps: crate::args::caps::ClientCapArgs,
    // TLS to an https upstream.
    #[command(flatten)]
    pub tls: crate::args::tls::TlsArgs,
    /// The final table's format.
    #[arg(short = 'f', long, value_parser = crate::args::format::FormatParser::<ProxyFormat>::new(), default_value = "text", value_name = "FORMAT")]
    pub format: ProxyFormat,
    /// Write the final table to FILE instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE", value_parser = crate::args::output_file)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Where to listen, e.g. 127.0.0.1:8546.
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
    /// The node every request is relayed to.
    #[arg(long, value_name = "URL")]
    pub upstream: String,
    /// The traffic file to write.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: PathBuf,
    /// A response field left out of the recorded digests (repeatable).
    #[arg(long, value_name = "PATH")]
    pub ignore_field: Vec<String>,
    /// Runtime worker threads.
    #[arg(long, default_value = "1")]
    pub threads: usize,
    // TLS to an https upstream.
    #[command(flatten)]
    pub tls: crate::args::tls::TlsArgs,
    #[command(flatten)]
    pub caps: crate::args::caps::ClientCapArgs,
}

/// What `serve` starts and writes: the proxy's options, its metrics address, the final table's
/// format and file, and how the command names its record file in messages (`record -o FILE`
/// is `proxy --record FILE` under another name).
struct ServePlan {
    options: ProxyOptions,
    metrics: Option<SocketAddr>,
    format: ProxyFormat,
    output: Option<PathBuf>,
    record_flag: &'static str,
}

/// The options both commands have: where to listen, the upstream and how to reach it, the
/// recorded digests' ignored fields, the threads and the client caps.
fn relay_options(
    listen: &str,
    upstream: &str,
    ignore_field: &[String],
    threads: usize,
    tls: &crate::args::tls::TlsArgs,
    caps: &crate::args::caps::ClientCapArgs,
) -> Result<ProxyOptions, ConfigError> {
    let listen: SocketAddr = listen.parse().map_err(|_| {
        ConfigError::new("--listen", format!("'{listen}' is not an address like 127.0.0.1:8546"))
    })?;
    let upstream =
        Target::parse(upstream).map_err(|error| ConfigError::new("--upstream", error.to_string()))?;
    let mut ignore_fields = Vec::new();
    for text in ignore_field {
        ignore_fields.push(
            FieldPath::parse(text).map_err(|error| ConfigError::new("--ignore-field", error.to_string()))?,
        );
    }
    let mut options = ProxyOptions::new(listen, upstream);
    options.tls = tls.options();
    options.ignore_fields = ignore_fields;
    options.threads = threads;
    options.max_connections = caps.max_connections;
    options.idle_timeout = Some(caps.idle_timeout);
    Ok(options)
}

/// `proxy`'s validated plan, or a usage error naming the flag.
fn proxy_plan(args: &ProxyArgs) -> Result<ServePlan, ConfigError> {
    let mut options =
        relay_options(&args.listen, &args.upstream, &args.ignore_field, args.threads, &args.tls, &args.caps)?;
    let metrics = args
        .metrics_listen
        .as_deref()
        .map(|text| {
            text.parse::<SocketAddr>()
                .map_err(|_| ConfigError::new("--metrics-listen", format!("'{text}' is not an address")))
        })
        .transpose()?;
    options.record = args.record.clone();
    options.latency = args.latency.unwrap_or_default();
    options.error_rate = args.error_rate;
    options.drop_rate = args.drop_rate;
    options.seed = args.seed;
    options.upstream_connections = args.upstream_connections;
    options.upstream_http = match (args.upstream_h2c, args.upstream_http2) {
        (true, _) => rpcbench::engine::config::HttpVersion::H2c,
        (_, true) => rpcbench::engine::config::HttpVersion::Http2,
        _ => rpcbench::engine::config::HttpVersion::Http1,
    };
    options.upstream_timeout = args.upstream_timeout;
    options.queue_timeout = args.queue_timeout;
    options.validate()?;
    Ok(ServePlan {
        options,
        metrics,
        format: args.format,
        output: args.output.clone(),
        record_flag: "--record",
    })
}

/// `record`'s validated plan: a proxy with no faults, recording to `-o FILE`, its table as text
/// on standard output.
fn record_plan(args: &RecordArgs) -> Result<ServePlan, ConfigError> {
    let mut options =
        relay_options(&args.listen, &args.upstream, &args.ignore_field, args.threads, &args.tls, &args.caps)?;
    options.record = Some(args.output.clone());
    options.validate()?;
    Ok(ServePlan {
        options,
        metrics: None,
        format: ProxyFormat::Text,
        output: None,
        record_flag: "-o/--output",
    })
}

/// A proxy error that is bad usage, named by the flag at fault (`record_flag` for the record
/// file); any other error back as it is.
fn usage_of(err: ProxyError, record_flag: &str) -> Result<ConfigError, ProxyError> {
    match err {
        ProxyError::Invalid(err) => Ok(ConfigError::from(err)),
        ProxyError::Bind { field, addr, source } => {
            Ok(ConfigError::new(flag(&field), format!("cannot listen on {addr}: {source}")))
        }
        ProxyError::Upstream(setup) => Ok(match setup.as_setting() {
            Some(setting) => ConfigError::from(setting),
            None => ConfigError::new("--upstream", setup.to_string()),
        }),
        ProxyError::Record { path, source } => {
            Ok(ConfigError::new(record_flag, format!("cannot create {}: {source}", path.display())))
        }
        other => Err(other),
    }
}

/// Runs `record`: the proxy, recording to `-o FILE`.
pub fn run_record(args: RecordArgs) -> ExitCode {
    match record_plan(&args) {
        Ok(plan) => serve(plan),
        Err(err) => output::usage_error(err),
    }
}

/// Runs the proxy until Ctrl-C or SIGTERM, then writes the table. Exit 2 for bad flags
/// (a listen address in use included), 1 when it cannot start otherwise.
pub fn run(args: ProxyArgs) -> ExitCode {
    match proxy_plan(&args) {
        Ok(plan) => serve(plan),
        Err(err) => output::usage_error(err),
    }
}

/// Runs the proxy of `plan` until Ctrl-C or SIGTERM, then writes its table.
fn serve(plan: ServePlan) -> ExitCode {
    let ServePlan { options, metrics, format, output: table_file, record_flag } = plan;
    let recording = options.record.clone();
    let upstream = options.upstream.redacted();
    let proxy = match Proxy::start_with_metrics(options, metrics) {
        Ok(proxy) => proxy,
        Err(err) => {
            return match usage_of(err, record_flag) {
                Ok(usage) => output::usage_error(usage),
                Err(err) => output::failure(err),
            }
        }
    };
    eprintln!("rpcbench proxy: listening on {} in front of {upstream}", proxy.url());
    if let Some(url) = proxy.metrics_url() {
        eprintln!("rpcbench proxy: metrics on {url}");
    }
    if let Some(path) = &recording {
        eprintln!("rpcbench proxy: recording to {}", path.display());
    }
    let waited = tokio::runtime::Builder::new_current_thread().enable_all().build().and_then(|runtime| {
        runtime.block_on(async {
            #[cfg(unix)]
            {
                let mut terminate =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
                tokio::select! {
                    result = tokio::signal::ctrl_c() => result,
                    _ = terminate.recv() => Ok(()),
                }
            }
            #[cfg(not(unix))]
            tokio::signal::ctrl_c().await
        })
    });
    if let Err(error) = waited {
        eprintln!("error: cannot wait for Ctrl-C: {error}");
    }
    eprintln!("rpcbench proxy: stopping");
    let stats = proxy.stop();
    let text = match format {
        ProxyFormat::Text => stats.render_text(),
        ProxyFormat::Json => format!("{:#}\n", stats.to_json()),
    };
    match &table_file {
        Some(path) => match std::fs::write(path, text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => output::failure(format!("-o {}: {error}", path.display())),
        },
        None => output::print_stdout(&text),
    }
}
