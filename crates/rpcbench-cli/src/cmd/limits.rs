//! `rpcbench limits URL`: probes what a node or a provider's plan allows, within a budget of
//! requests, and prints each limit found with its evidence (text, Markdown or JSON). The probes
//! are the library's (`rpcbench::limits`); this file only reads the flags.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use rpcbench::client::Endpoint;
use rpcbench::engine::config::Target;
use rpcbench::limits::rate::{
    configs_per_call, probe_rate_limits, probe_rate_limits_per_call, RateFinding, RateProbe, RateProbeError,
    RateSearch,
};
use rpcbench::limits::response::probe_response;
use rpcbench::limits::{
    probe_batch, probe_body, probe_websocket, LimitsReport, ProbeBudget, WsProbe, DEFAULT_BATCH_CEILING,
    DEFAULT_MAX_REQUESTS, DEFAULT_MAX_SUBSCRIPTIONS, DEFAULT_MAX_WS_CONNECTIONS,
};

use crate::args::duration;
use crate::output;
use crate::output::emit;

/// Output formats of `limits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitsFormat {
    /// A table.
    Text,
    /// A Markdown table.
    Markdown,
    /// JSON (schema/limits.schema.json).
    Json,
    /// An HTML page with the table.
    Html,
}

crate::args::format::command_format!(LimitsFormat: Text, Markdown, Json, Html);

/// Options of `rpcbench limits`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  rpcbench limits http://127.0.0.1:8545
  rpcbench limits http://127.0.0.1:8545 --max-requests 50 --max-batch 2000 -f json
  rpcbench limits http://127.0.0.1:8545 --rate --max-requests 5000 -m eth_blockNumber,eth_getLogs
  rpcbench limits http://127.0.0.1:8545 --ws ws://127.0.0.1:8545 --max-subscriptions 200
  rpcbench limits ws://127.0.0.1:8899 -m getSlot --subscribe slotSubscribe --subscribe-params '[]'")]
pub struct LimitsArgs {
    /// The endpoint to probe: http:// or https:// (batches), or ws:// (WebSocket limits only).
    #[arg(value_name = "URL")]
    pub url: String,
    /// The method called in the probes' requests; with --rate, a comma-separated list gets a
    /// sustained rate each (heavy methods are often capped lower), the first is used for the
    /// other probes.
    #[arg(short, long = "method", default_value = "eth_blockNumber", value_delimiter = ',', num_args = 1..)]
    pub methods: Vec<String>,
    /// Also find the rate limit: the burst let through at once, the sustained rate (open-loop
    /// steps doubled until rate-limited answers appear, then that rate measured from an empty
    /// budget), the window after which the burst is back, and whether batch calls count one by
    /// one. Spends most of the budget; run it on a quiet key (the burst needs a full budget).
    #[arg(long, help_heading = "Rate")]
    pub rate: bool,
    /// With --rate: the first rate offered.
    #[arg(long, value_name = "RATE", default_value = "10", value_parser = rate_value, requires = "rate", help_heading = "Rate")]
    pub start_rate: f64,
    /// With --rate: the highest rate offered.
    #[arg(long, value_name = "RATE", default_value = "100000", value_parser = rate_value, requires = "rate", help_heading = "Rate")]
    pub max_rate: f64,
    /// With --rate: the measured length of each step (a 0.5s warm-up comes before it).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = duration, requires = "rate", help_heading = "Rate")]
    pub rate_step: Duration,
    /// With --rate: the longest burst sent.
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..), requires = "rate", help_heading = "Rate")]
    pub max_burst: u64,
    /// With --rate: a sustained rate for each call of this built-in suite (`rpcbench suites`),
    /// with the params it draws from pools sampled from the node first; --method's first
    /// method is still used for the burst, the batch counting and the other probes.
    #[arg(long, value_name = "NAME", requires = "rate", help_heading = "Rate")]
    pub suite: Option<String>,
    /// The most HTTP requests the probe may send (a batch is one); the report says what it spent.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_REQUESTS, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_requests: u64,
    /// The longest batch the batch search tries; accepted, it ends the search.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BATCH_CEILING, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_batch: u64,
    /// The largest request body the body search tries, in bytes (16MiB, 1MB...).
    #[arg(long, value_name = "SIZE", default_value = "16MiB", value_parser = body_size)]
    pub max_body: u64,
    /// The largest response body the response search asks for, in bytes; the answer's size
    /// grows with the call's id, which the node echoes (bounded by the request body found).
    #[arg(long, value_name = "SIZE", default_value = "16MiB", value_parser = body_size)]
    pub max_response: u64,
    /// Probe WebSocket limits at this ws:// URL (subscriptions per connection, connections per
    /// client); a ws:// URL to probe is used without it.
    #[arg(long, value_name = "URL")]
    pub ws: Option<String>,
    /// The subscribe method of the WebSocket probe.
    #[arg(long, value_name = "METHOD", default_value = "eth_subscribe")]
    pub subscribe: String,
    /// Its params, a JSON array.
    #[arg(long, value_name = "JSON", default_value = "[\"newHeads\"]")]
    pub subscribe_params: String,
    /// The most subscriptions the WebSocket probe opens on one connection.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SUBSCRIPTIONS, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_subscriptions: u64,
    /// The most WebSocket connections the probe holds open at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_WS_CONNECTIONS, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub max_ws_connections: u64,
    /// Time allowed for one request.
    #[arg(long, default_value = "10s", value_parser = duration)]
    pub timeout: Duration,
    /// Output format.
    #[arg(short, long, value_parser = crate::args::format::FormatParser::<LimitsFormat>::new(), default_value = "text", value_name = "FORMAT")]
    pub format: LimitsFormat,
    /// Write the report to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: LimitsArgs) -> ExitCode {
    let endpoint = match Endpoint::parse(&args.url, args.timeout) {
        Ok(endpoint) => endpoint,
        Err(err) => return output::usage_error(err.to_string().trim_start_matches("request failed: ")),
    };
    let ws_url = args.ws.clone().or_else(|| args.url.starts_with("ws://").then(|| args.url.clone()));
    let ws_probe = match ws_url {
        None => None,
        Some(url) if !url.starts_with("ws://") => {
            return output::usage_error(format!(
                "--ws: expected a ws:// URL, not '{}'",
                rpcbench::redact_url(&url)
            ))
        }
        Some(url) => match serde_json::from_str::<serde_json::Value>(&args.subscribe_params) {
            Ok(params @ serde_json::Value::Array(_)) => Some(WsProbe {
                url,
                method: args.subscribe.clone(),
                params,
                max_subscriptions: args.max_subscriptions,
                max_connections: args.max_ws_connections,
                timeout: args.timeout,
            }),
            _ => {
                return output::usage_error(
                    "--subscribe-params: expected a JSON array such as [\"newHeads\"]",
                )
            }
        },
    };
    if let Some(Err(err)) = args.output.as_deref().map(|path| output::check_file_path("--output", path)) {
        return output::usage_error(err);
    }
    // Ctrl-C stops the probes (and the open-loop step running then); the report of what they
    // found by then is still written.
    let stop = rpcbench::engine::StopHandle::new();
    crate::signals::stop_on_interrupt(stop.clone());
    let mut budget = ProbeBudget::with_stop(args.max_requests, stop);
    let method = args.methods.first().cloned().unwrap_or_default();
    let http = !(args.url.starts_with("ws://") || args.url.starts_with("wss://"));
    let rate = if args.rate && http {
        match probe_rate(&args, &endpoint, &mut budget) {
            Ok(found) => Some(found),
            Err(code) => return code,
        }
    } else {
        None
    };
    // Batches are probed over HTTP: over WebSocket a batch's answer is not one call's.
    let batch = if !http {
        None
    } else {
        let batch = probe_batch(&endpoint, &method, args.max_batch, &mut budget);
        if batch.largest_accepted == 0 {
            if let Some(refusal) = batch.refusal.as_ref().filter(|refusal| refusal.status == 0) {
                return output::failure(format!("{}: {}", endpoint.redacted(), refusal.message));
            }
        }
        Some(batch)
    };
    let body = batch.is_some().then(|| probe_body(&endpoint, &method, args.max_body, &mut budget));
    let response = body.as_ref().map(|body| {
        let max_request = Some(body.largest_accepted).filter(|bytes| *bytes > 0);
        probe_response(&endpoint, &method, args.max_response, max_request, &mut budget)
    });
    let (subscriptions, ws_connections) = match ws_probe.map(|probe| probe_websocket(&probe, &mut budget)) {
        None => (None, None),
        Some(Ok((subscriptions, connections))) => (Some(subscriptions), Some(connections)),
        Some(Err(message)) => return output::failure(endpoint.scrub(&message)),
    };
    let report = LimitsReport {
        url: endpoint.redacted(),
        method,
        budget,
        rate,
        batch,
        body,
        response,
        subscriptions,
        ws_connections,
    };
    let text = match args.format {
        LimitsFormat::Text => report.render_text(),
        LimitsFormat::Markdown => report.render_markdown(),
        LimitsFormat::Json => report.render_json(),
        LimitsFormat::Html => rpcbench::report::render_limits_html(&report),
    };
    emit(&text, args.output.as_deref(), false)
}

fn probe_rate(
    args: &LimitsArgs,
    endpoint: &Endpoint,
    budget: &mut ProbeBudget,
) -> Result<RateFinding, ExitCode> {
    let search = RateSearch {
        start_rate: args.start_rate,
        max_rate: args.max_rate.max(args.start_rate),
        step: args.rate_step,
        ..RateSearch::default()
    };
    let target = Target::parse(&args.url).map_err(|err| output::usage_error(err.to_string()))?;
    let limits = RateProbe { search, max_burst: args.max_burst, max_batch: args.max_batch };
    let found = match &args.suite {
        None => probe_rate_limits(endpoint, &target, &args.methods, &limits, budget),
        Some(name) => {
            let per_call = suite_calls(name, &args.url, endpoint)?;
            let first = args.methods.first().map_or("eth_blockNumber", String::as_str);
            probe_rate_limits_per_call(endpoint, first, &per_call, &limits, budget)
        }
    };
    found.map_err(|err| match err {
        RateProbeError::Method(_) => output::usage_error(format!("--method: {err}")),
        RateProbeError::Run(_) => output::failure(endpoint.scrub(&err.to_string())),
    })
}

/// The calls of suite `name` against `url`, each with the params it draws from pools sampled
/// from the node, one run config each.
fn suite_calls(
    name: &str,
    url: &str,
    endpoint: &Endpoint,
) -> Result<Vec<(String, rpcbench::engine::config::RunConfig)>, ExitCode> {
    let suite = rpcbench::plan::suites::find(name).ok_or_else(|| {
        let names: Vec<&str> = rpcbench::plan::suites::SUITES.iter().map(|suite| suite.name).collect();
        output::usage_error(format!("--suite: no suite named '{name}' (suites: {})", names.join(", ")))
    })?;
    let draft = suite.draft().map_err(|err| output::usage_error(format!("--suite {name}: {err}")))?;
    let access = rpcbench::plan::prepare::Access::default();
    let prepared = rpcbench::plan::prepare::prepare(&draft, Some(url), None, &access).map_err(|err| {
        let text = match err {
            rpcbench::plan::prepare::PrepareError::Scenario(err) => err.to_string(),
            rpcbench::plan::prepare::PrepareError::Sample(err) => err.0,
            rpcbench::plan::prepare::PrepareError::PoolsFile(err) => err.0,
            err @ rpcbench::plan::prepare::PrepareError::GrpcTarget { .. } => err.to_string(),
        };
        output::failure(endpoint.scrub(&format!("--suite {name}: {text}")))
    })?;
    for left_out in &prepared.scenario.left_out {
        eprintln!("rpcbench: warning: --suite {name}: {left_out}");
    }
    Ok(configs_per_call(&prepared.scenario.config))
}

fn rate_value(text: &str) -> Result<f64, String> {
    match rpcbench::parse_rate(text) {
        Ok(rate) if rate > 0.0 && rate <= 10_000_000.0 => Ok(rate),
        Ok(_) => Err("expected a rate above 0 and at most 10000000/s".to_string()),
        Err(err) => Err(err.to_string()),
    }
}

fn body_size(text: &str) -> Result<u64, String> {
    match rpcbench::parse_size(text) {
        Ok(bytes) if (1..=1 << 30).contains(&bytes) => Ok(bytes),
        Ok(_) => Err("expected a size from 1 byte to 1GiB".to_string()),
        Err(err) => Err(err.to_string()),
    }
}
