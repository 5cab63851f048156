//! `rpcbench subscribe`: many WebSocket subscriptions at once, and what they received
//! (subscribe latency, notifications, delivery lag, gaps, duplicates, reorders, closes).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use rpcbench::engine::config::Target;
use rpcbench::engine::StopHandle;
use rpcbench::report::subscribe::SubscribeThreshold;
use rpcbench::subscribe::{self, SubscribeConfig, SubscribeError, SubscriptionKind};
use rpcbench::XToken;

use crate::args::duration;
use crate::output;

/// Formats of `subscribe` (a race, `--race`, writes text or JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscribeFormat {
    /// The text report.
    Text,
    /// The JSON report (histograms kept losslessly).
    Json,
    /// Markdown tables.
    Markdown,
    /// One HTML page.
    Html,
}
crate::args::format::command_format!(SubscribeFormat: Text, Json, Markdown, Html);

/// Options of `rpcbench subscribe`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  rpcbench subscribe ws://127.0.0.1:8545 --sub newHeads --subscribers 100 -d 60s
  rpcbench subscribe ws://127.0.0.1:8545 --sub newHeads --stage 30s:1000 --stage 2m:1000 --stage 30s:0 --subs-per-socket 10
  rpcbench subscribe ws://127.0.0.1:8899 --sub slot --sub account:SysvarC1ock11111111111111111111111111111111 --subscribers 1000 --threshold 'lag p99 < 500ms' --threshold 'gaps < 1'
  rpcbench subscribe grpc://127.0.0.1:10000 --sub geyser-slot --sub 'geyser-tx:include=PUBKEY;vote=false' --x-token TOKEN
  rpcbench subscribe --race a=grpc://127.0.0.1:10000 b=grpc://127.0.0.1:10001 --sub geyser-stages --sub geyser-tx -d 60s")]
pub struct SubscribeArgs {
    /// The ws:// or wss:// endpoint, or a grpc:// or grpcs:// Yellowstone Geyser feed.
    #[arg(required_unless_present = "race")]
    pub url: Option<String>,
    /// Race gRPC feeds instead, NAME=URL each (two or more): the same --sub to all, and per
    /// slot stage, transaction or account write which delivered it first.
    #[arg(long, value_name = "NAME=URL", num_args = 2.., conflicts_with = "url")]
    pub race: Vec<String>,
    /// A subscription each subscriber opens (repeatable): newHeads, logs[:FILTER JSON],
    /// newPendingTransactions, slot, account:PUBKEY, logs-solana[:FILTER]; on a gRPC feed
    /// geyser-slot[:COMMITMENT], geyser-stages, geyser-tx[:include=K,..;exclude=K;required=K;
    /// vote=BOOL;failed=BOOL;commitment=C], geyser-account:PUBKEY|owner=PUBKEY, geyser-blocks-meta.
    #[arg(long = "sub", value_name = "KIND", required_unless_present = "filters")]
    pub subs: Vec<String>,
    /// A Geyser filter file (TOML: [slots], [blocks_meta], [transactions], [accounts], a
    /// commitment), each table one subscription. A --sub of the same kind as a table replaces
    /// it (flags win); other --sub flags are added.
    #[arg(long, value_name = "FILE")]
    pub filters: Option<PathBuf>,
    /// Close a connection that receives nothing for this long and count it as a stall (with
    /// --reconnect it is opened again) [default: wait for ever].
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub idle_timeout: Option<Duration>,
    /// The largest message accepted, in bytes: a larger one ends its connection and is counted
    /// (a gRPC message is refused from its length prefix, before its bytes are read).
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_message: usize,
    /// Subscribers, each holding one subscription of every --sub (with --stage: the highest
    /// stage's level).
    #[arg(long)]
    pub subscribers: Option<usize>,
    /// Subscriptions per WebSocket (per HTTP/2 connection on a gRPC feed).
    #[arg(long, visible_alias = "subs-per-connection", default_value_t = 1)]
    pub subs_per_socket: usize,
    /// The x-token header of a gRPC feed (a secret: never printed).
    #[arg(long, value_name = "TOKEN", value_parser = x_token)]
    pub x_token: Option<XToken>,
    /// How long to listen [default: 10s; with --stage: the stages' total].
    #[arg(short, long, value_parser = duration)]
    pub duration: Option<Duration>,
    /// Open the sockets evenly over this long from the start instead of all at once (the
    /// active subscriptions climb; a threshold still judges the whole run).
    #[arg(long, value_parser = duration, default_value = "0s")]
    pub ramp: Duration,
    /// A stage of subscribers, DURATION:SUBSCRIBERS (repeatable, in order): a linear ramp from
    /// the previous level to this one over the duration, as k6 stages go ('30s:100 1m:100 30s:0':
    /// up, hold, down). Sockets open as the level climbs; as it falls the last opened
    /// unsubscribe and close.
    #[arg(long = "stage", value_name = "DURATION:N", value_parser = stage)]
    pub stages: Vec<rpcbench::engine::stages::Stage>,
    /// Open a socket the server closed again, and subscribe again.
    #[arg(long)]
    pub reconnect: bool,
    /// Extra header on the upgrade request, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Time allowed to connect and upgrade.
    #[arg(long, value_parser = duration, default_value = "3s")]
    pub connect_timeout: Duration,
    #[command(flatten)]
    pub tls: crate::args::tls::TlsArgs,
    /// A condition the run must meet (repeatable): 'lag p99 < 500ms', 'produced-lag p50 < 2s',
    /// 'subscribe p99 < 100ms', 'gaps < 1', 'duplicates < 1', 'reorders < 1'. A breach exits 1.
    #[arg(long = "threshold")]
    pub thresholds: Vec<String>,
    /// Report format.
    #[arg(short, long, value_parser = crate::args::format::FormatParser::<SubscribeFormat>::new(), default_value = "text", value_name = "FORMAT")]
    pub format: SubscribeFormat,
    /// Write the report to this file (atomically) instead of standard output.
    #[arg(short, long, value_name = "FILE", value_parser = crate::args::output_file)]
    pub output: Option<std::path::PathBuf>,
    /// Also write the JSON report (histograms kept losslessly) to this file.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,

    #[command(flatten)]
    pub metrics: crate::args::metrics::MetricsArgs,
}

fn x_token(text: &str) -> Result<XToken, String> {
    Ok(XToken::new(text))
}

fn stage(text: &str) -> Result<rpcbench::engine::stages::Stage, String> {
    let (time, level) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("'{text}': expected DURATION:SUBSCRIBERS, such as 30s:100"))?;
    let duration = duration(time)?;
    if duration.is_zero() {
        return Err(format!("'{text}': a stage lasts longer than zero"));
    }
    let level: usize =
        level.trim().parse().map_err(|_| format!("'{text}': '{level}' is not a number of subscribers"))?;
    Ok(rpcbench::engine::stages::Stage { level: level as f64, duration, ramp: duration })
}

/// The --sub flags' subscriptions merged with the --filters file's (flags win by kind).
fn subscription_kinds(args: &SubscribeArgs) -> Result<Vec<SubscriptionKind>, String> {
    let mut flags = Vec::with_capacity(args.subs.len());
    for text in &args.subs {
        flags.push(SubscriptionKind::parse(text).map_err(|message| format!("--sub: {message}"))?);
    }
    match &args.filters {
        None => Ok(flags),
        Some(path) => {
            let file = subscribe::filter_file::load(path).map_err(|err| format!("--filters: {err}"))?;
            Ok(subscribe::filter_file::merge(file, flags))
        }
    }
}

pub fn run(args: SubscribeArgs) -> ExitCode {
    if !args.race.is_empty() {
        return run_race(&args);
    }
    let target = match Target::parse_websocket(args.url.as_deref().unwrap_or_default()) {
        Ok(target) => target,
        Err(err) => return output::usage_error(crate::fields::ConfigError::from(err)),
    };
    let kinds = match subscription_kinds(&args) {
        Ok(kinds) => kinds,
        Err(message) => return output::usage_error(message),
    };
    if args.idle_timeout.is_some_and(|idle| idle.is_zero()) {
        return output::usage_error("--idle-timeout: must be longer than 0");
    }
    if args.max_message == 0 {
        return output::usage_error("--max-message: must be at least 1 byte");
    }
    let mut thresholds = Vec::with_capacity(args.thresholds.len());
    for text in &args.thresholds {
        match SubscribeThreshold::parse(text) {
            Ok(threshold) => thresholds.push(threshold),
            Err(message) => return output::usage_error(format!("--threshold: {message}")),
        }
    }
    let orders: Vec<(&str, bool, bool)> =
        kinds.iter().map(|kind| (kind.name(), kind.judges_gaps(), kind.judges_order())).collect();
    if let Some(message) = thresholds.iter().find_map(|threshold| threshold.not_applicable(&orders)) {
        return output::usage_error(format!("--threshold: {message}"));
    }
    let headers = match crate::plan::parse_headers(&args.headers) {
        Ok(headers) => headers,
        Err(err) => return output::usage_error(err),
    };
    for (flag, path) in [("--save", &args.save), ("--output", &args.output)] {
        if let Some(Err(err)) = path.as_deref().map(|path| crate::output::check_file_path(flag, path)) {
            return output::usage_error(err);
        }
    }
    let highest = args.stages.iter().map(|stage| stage.level as usize).max();
    let duration = match (args.duration, args.stages.is_empty()) {
        (Some(_), false) => return output::usage_error("--stage: give stages or --duration, not both"),
        (Some(duration), true) => duration,
        (None, true) => Duration::from_secs(10),
        (None, false) => args.stages.iter().map(|stage| stage.duration).sum(),
    };
    let mut config = SubscribeConfig::new(target, kinds, duration);
    config.subscribers = args.subscribers.or(highest).unwrap_or(1);
    config.stages = args.stages.clone();
    config.subs_per_socket = args.subs_per_socket;
    config.reconnect = args.reconnect;
    config.x_token = args.x_token.clone();
    config.idle_timeout = args.idle_timeout;
    config.max_message = args.max_message;
    config.ramp = args.ramp;
    config.headers = headers;
    config.connect_timeout = args.connect_timeout;
    config.tls = args.tls.options();
    // Serves until the command ends.
    let _metrics_server = match args.metrics.start() {
        Ok(Some((server, live))) => {
            config.live = Some(live);
            Some(server)
        }
        Ok(None) => None,
        Err(err) => return output::usage_error(err),
    };
    let stop = StopHandle::new();
    crate::signals::stop_on_interrupt(stop.clone());
    let dashboard = crate::live_dashboard::wanted(false, args.metrics.no_tui)
        .then(|| {
            let live = config.live.get_or_insert_with(rpcbench::metrics::LiveMetrics::new).clone();
            let header = crate::live_dashboard::DashboardHeader {
                title: format!("subscribe {}", config.target.redacted()),
                load: format!("{} subscriber(s), {}", config.subscribers, args.subs.join(", ")),
                planned: Some(duration),
            };
            crate::live_dashboard::LiveDashboard::start(header, vec![(String::new(), live)], stop.clone())
        })
        .flatten();
    let result = subscribe::run(&config, &stop);
    drop(dashboard);
    let mut report = match result {
        Ok(report) => report,
        Err(SubscribeError::Config(err)) => {
            return output::usage_error(crate::fields::ConfigError::from(err))
        }
        Err(err) => return output::failure(err),
    };
    let passed = report.judge(&thresholds);
    if let Some(path) = &args.save {
        if let Err(err) = rpcbench::results::write_atomically(path, report.to_json().as_bytes()) {
            return output::failure(format!("--save {}: {err}", path.display()));
        }
    }
    let text = match args.format {
        SubscribeFormat::Json => report.to_json() + "\n",
        SubscribeFormat::Markdown => rpcbench::report::render_subscribe_markdown(&report),
        SubscribeFormat::Html => rpcbench::report::render_subscribe_html(&report),
        SubscribeFormat::Text => report.render_text(),
    };
    let status = crate::output::emit(&text, args.output.as_deref(), false);
    if !passed {
        return ExitCode::from(1);
    }
    // Nothing subscribed (of a kind, or at all) is not a run: the exit status says so, as
    // `run` does for a target that answered nothing.
    let unsubscribed: Vec<&str> =
        report.per_kind.iter().filter(|kind| kind.subscribed == 0).map(|kind| kind.kind.as_str()).collect();
    if report.subscribed == 0 || !unsubscribed.is_empty() {
        let reason = report
            .first_subscribe_error
            .as_deref()
            .or(report.first_connect_error.as_deref())
            .unwrap_or("no answer to the subscribe requests");
        eprintln!("rpcbench: nothing subscribed for {}: {reason}", unsubscribed.join(", "));
        return ExitCode::from(1);
    }
    status
}

/// `subscribe --race`: the feeds raced, the race's text or JSON on standard output.
fn run_race(args: &SubscribeArgs) -> ExitCode {
    let mut endpoints = Vec::with_capacity(args.race.len());
    for text in &args.race {
        let Some((name, url)) = text.split_once('=') else {
            return output::usage_error(format!("--race: '{text}': expected NAME=grpc://HOST:PORT"));
        };
        match Target::parse(url) {
            Ok(target) => endpoints.push((name.trim().to_string(), target)),
            Err(err) => return output::usage_error(format!("--race: {name}: {}", err.message())),
        }
    }
    let kinds = match subscription_kinds(args) {
        Ok(kinds) => kinds,
        Err(message) => return output::usage_error(message),
    };
    let duration = args.duration.unwrap_or(Duration::from_secs(10));
    let mut config = rpcbench::subscribe::race::RaceConfig::new(endpoints, kinds, duration);
    config.x_token = args.x_token.clone();
    config.connect_timeout = args.connect_timeout;
    config.max_message = args.max_message;
    config.tls = args.tls.options();
    let stop = StopHandle::new();
    crate::signals::stop_on_interrupt(stop.clone());
    let report = match rpcbench::subscribe::race::run(&config, &stop) {
        Ok(report) => report,
        Err(rpcbench::subscribe::race::RaceError::Config(err)) => {
            return output::usage_error(crate::fields::ConfigError::from(err))
        }
        Err(err) => return output::failure(err),
    };
    let text = match args.format {
        SubscribeFormat::Json => serde_json::to_string_pretty(&report).unwrap_or_default() + "\n",
        _ => rpcbench::report::render_race_text(&report),
    };
    print!("{text}");
    if report.kinds.iter().all(|kind| kind.items == 0) {
        eprintln!("error: the race saw no items");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
