//! `rpcbench run`: builds a `RunConfig` from the arguments, runs it with a progress bar on a
//! terminal and Ctrl-C handling, and prints the report.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rpcbench::engine::config::{Arrivals, ConfigError, Length, Load, RunConfig, Target, TlsOptions};
use rpcbench::engine::{EngineError, Progress, Run};
use rpcbench::jsonrpc::{CheckMode, RequestTemplate};
use rpcbench::report::{render_text, RunReport};

use crate::args::{ArrivalsArg, CheckArg, OutputFormat, RunArgs};
use crate::output;

/// Turns the arguments into a validated configuration.
pub fn to_config(args: &RunArgs) -> Result<RunConfig, ConfigError> {
    let target = Target::parse(&args.url)?;
    let request = if let Some(method) = &args.method {
        let params = match &args.params {
            Some(text) => Some(
                serde_json::from_str::<serde_json::Value>(text)
                    .map_err(|err| ConfigError::new("--params", format!("not valid JSON: {err}")))?,
            ),
            None => None,
        };
        RequestTemplate::from_method(method, params.as_ref())
            .map_err(|err| ConfigError::new("--params", err.0))?
    } else if let Some(body) = &args.body {
        RequestTemplate::from_body(body).map_err(|err| ConfigError::new("--body", err.0))?
    } else if let Some(path) = &args.body_file {
        let flag = format!("--body-file {}", path.display());
        let text = std::fs::read_to_string(path).map_err(|err| ConfigError::new(&flag, err.to_string()))?;
        RequestTemplate::from_body(&text).map_err(|err| ConfigError::new(&flag, err.0))?
    } else {
        return Err(ConfigError::new("--method", "one of --method, --body or --body-file is required"));
    };
    let mut config = RunConfig::new(target, request);
    config.load = match args.rate {
        Some(rate) => Load::Open {
            rate,
            arrivals: match args.arrivals {
                ArrivalsArg::Uniform => Arrivals::Uniform,
                ArrivalsArg::Poisson => Arrivals::Poisson,
            },
            max_connections: args.max_connections,
        },
        None => Load::Closed { connections: args.connections.unwrap_or(50) },
    };
    config.length = match (args.duration, args.requests) {
        (None, None) => Length { duration: Some(Duration::from_secs(10)), requests: None },
        (duration, requests) => Length { duration, requests },
    };
    config.warmup = args.warmup;
    config.headers = parse_headers(&args.headers)?;
    config.timeout = args.timeout;
    config.connect_timeout = args.connect_timeout;
    config.keepalive = !args.no_keepalive;
    config.tls = TlsOptions { insecure: args.insecure, ca_file: args.cacert.clone() };
    config.threads = args.threads.unwrap_or(0);
    config.max_body = args.max_body;
    config.check = match args.check {
        CheckArg::Scan => CheckMode::Scan,
        CheckArg::Full => CheckMode::Full,
    };
    config.seed = args.seed;
    if args.threads == Some(0) {
        return Err(ConfigError::new("--threads", "must be at least 1"));
    }
    config.validate()?;
    Ok(config)
}

/// The `-H` values as (name, value) pairs. A malformed one is not echoed: it may hold a key.
fn parse_headers(raw: &[String]) -> Result<Vec<(String, String)>, ConfigError> {
    raw.iter()
        .enumerate()
        .map(|(index, text)| {
            crate::args::header(text).ok_or_else(|| {
                ConfigError::new(
                    "--header",
                    format!(
                        "header #{} is not of the form 'Name: value' (not shown: it may hold a secret)",
                        index + 1
                    ),
                )
            })
        })
        .collect()
}

pub fn run(args: RunArgs) -> ExitCode {
    let config = match to_config(&args) {
        Ok(config) => config,
        Err(err) => return output::usage_error(err),
    };
    let run = match Run::new(config.clone()) {
        Ok(run) => run,
        Err(EngineError::Config(err)) => return output::usage_error(err),
        // Names --connections or --max-connections and the open-file limit.
        Err(EngineError::TooManyConnections(err)) => return output::usage_error(err),
        Err(err) => return output::failure(err),
    };
    crate::signals::stop_on_interrupt(run.stop_handle());
    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let finished = Arc::new(AtomicBool::new(false));
    let progress_thread =
        show_progress.then(|| spawn_progress(run.progress(), config.length, config.warmup, finished.clone()));
    let result = run.execute();
    finished.store(true, Ordering::SeqCst);
    if let Some(thread) = progress_thread {
        thread.join().ok();
    }
    let record = match result {
        Ok(record) => record,
        Err(err) => return output::failure(err),
    };
    let report = RunReport::new(&config, &record);
    let text = match args.output {
        OutputFormat::Text => render_text(&report),
        OutputFormat::Json => report.to_json() + "\n",
    };
    output::print_stdout(&text)
}

fn spawn_progress(
    progress: Progress,
    length: Length,
    warmup: Duration,
    finished: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let total_ms = length.duration.map(|d| (d + warmup).as_millis() as u64);
        let bar = match (total_ms, length.requests) {
            (Some(ms), _) => indicatif::ProgressBar::new(ms),
            (None, Some(n)) => indicatif::ProgressBar::new(n),
            (None, None) => indicatif::ProgressBar::new_spinner(),
        };
        let style = indicatif::ProgressStyle::with_template("{bar:40} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        let start = Instant::now();
        while !finished.load(Ordering::SeqCst) {
            let (done, errors) = progress.totals();
            match total_ms {
                Some(_) => bar.set_position(start.elapsed().as_millis() as u64),
                None => bar.set_position(done),
            }
            let rate = done as f64 / start.elapsed().as_secs_f64().max(0.001);
            bar.set_message(format!("{done} responses, {errors} errors, {rate:.0}/s"));
            std::thread::sleep(Duration::from_millis(200));
        }
        bar.finish_and_clear();
    })
}
