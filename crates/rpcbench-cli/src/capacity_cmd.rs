//! `rpcbench capacity`: finds the highest rate (or, with `--connections`, the most closed-loop
//! connections) a target serves within an SLO. Builds the
//! request and the search settings from the arguments, runs the library's search with one
//! progress line per step on standard error, and prints the table (or JSON, Markdown, CSV or
//! the HTML page). `--save FILE` keeps every step losslessly for `rpcbench report FILE`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use rpcbench::capacity::{
    search_recorded, CapacityReport, CapacitySettings, SearchBounds, Slo, SloBound, StepResult,
};
use rpcbench::capacity_file::CapacityFile;
use rpcbench::engine::config::{ConfigError, RunConfig};
use rpcbench::engine::{EngineError, StopHandle};
use rpcbench::units::{format_micros, parse_rate};

use crate::args::{duration, HttpArgs, OutputFormat, RequestArgs, RunArgs, ScenarioArgs};
use crate::monitor_args::MonitorArgs;
use crate::output;

fn rate(text: &str) -> Result<f64, String> {
    parse_rate(text).map_err(|err| err.to_string())
}

/// `5%` or `5`: a percentage above 0 and below 100, returned as a fraction.
fn precision(text: &str) -> Result<f64, String> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim());
    match number.trim().parse::<f64>() {
        Ok(percent) if percent > 0.0 && percent < 100.0 => Ok(percent / 100.0),
        _ => Err(format!("'{text}' is not a percentage above 0% and below 100%, such as 5%")),
    }
}

#[derive(Debug, Args)]
#[command(
    group = clap::ArgGroup::new("request").args(["method", "body", "body_file", "suite"]),
    after_help = "Examples:
  rpcbench capacity http://127.0.0.1:8899 -m getSlot --slo 'p99<50ms,errors<0.1%'
  rpcbench capacity http://127.0.0.1:8545 -m eth_blockNumber --slo 'p99<100ms' --start-rate 500 --max-rate 50000 --step 10s
  rpcbench capacity http://127.0.0.1:8899 -m getSlot --slo 'p99<20ms' --save search.json -f markdown -o search.md
  rpcbench capacity scenario.toml --url http://127.0.0.1:8899 --slo 'p99.9<1s,errors<1%' --precision 10%
  rpcbench capacity http://127.0.0.1:8545 -m eth_chainId --slo 'p99<100ms,errors<1%' --connections --max-connections 4096 --monitor-cmd geth -f json"
)]
pub struct CapacityArgs {
    /// The endpoint (http:// or https://), or a scenario file (.toml) whose calls each step
    /// sends (its load and stages give way to the steps).
    pub target: String,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub request: RequestArgs,

    /// The objective, comma-separated: p50|p75|p90|p95|p99|p99.9|p99.99|max<DURATION and
    /// errors<PCT%, e.g. 'p99<500ms,errors<0.1%'.
    #[arg(long, help_heading = "Search")]
    pub slo: String,
    /// Search the most connections that keep the SLO instead of the highest rate: each step is
    /// a closed loop (every connection sends its next request when the previous one is
    /// answered) with that many connections, doubled then bisected up to --max-connections.
    #[arg(long, help_heading = "Search")]
    pub connections: bool,
    /// With --connections: connections of the first step; doubled while steps pass.
    #[arg(long, value_name = "N", default_value_t = 16, requires = "connections", help_heading = "Search")]
    pub start_connections: usize,
    /// First rate tried; doubled while steps pass.
    #[arg(long, value_parser = rate, default_value = "100", conflicts_with = "connections", help_heading = "Search")]
    pub start_rate: f64,
    /// Highest rate tried.
    #[arg(long, value_parser = rate, default_value = "1000000", conflicts_with = "connections", help_heading = "Search")]
    pub max_rate: f64,
    /// Stop when the first failing rate is within this much of the highest passing one.
    #[arg(long, value_parser = precision, default_value = "5%", help_heading = "Search")]
    pub precision: f64,
    /// Measured length of each step.
    #[arg(long, value_parser = duration, default_value = "5s", help_heading = "Search")]
    pub step: Duration,
    /// Warmup of each step: sent at the step's rate, not measured.
    #[arg(long, value_parser = duration, default_value = "1s", help_heading = "Search")]
    pub warmup: Duration,
    /// Pause between steps, so that one step's backlog does not spill into the next.
    #[arg(long, value_parser = duration, default_value = "1s", help_heading = "Search")]
    pub cooldown: Duration,
    /// The most connections a step opens to keep up with its rate; with --connections, the
    /// most connections tried (also capped by the open-file limit).
    #[arg(long, default_value_t = 1024, help_heading = "Load")]
    pub max_connections: usize,
    /// Worker threads [default: one per core].
    #[arg(long, help_heading = "Load")]
    pub threads: Option<usize>,

    #[command(flatten)]
    pub http: HttpArgs,

    #[command(flatten)]
    pub monitor: MonitorArgs,

    #[command(flatten)]
    pub metrics: crate::metrics_args::MetricsArgs,

    /// Report format.
    #[arg(short, long, value_enum, default_value_t = CapacityFormat::Text, help_heading = "Output")]
    pub format: CapacityFormat,
    /// Write the report to this file (atomically) instead of standard output.
    #[arg(short, long, value_name = "FILE", value_parser = crate::args::output_file, help_heading = "Output")]
    pub output: Option<PathBuf>,
    /// Save every step (figures, HDR histograms, resources) to this capacity file, for
    /// `rpcbench report FILE`.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub save: Option<PathBuf>,
    /// No progress lines on standard error.
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,
}

/// Formats of `capacity -f`: `run`'s text and JSON, and what `report` renders a capacity file
/// as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CapacityFormat {
    /// The steps table, the answer and the knee.
    Text,
    /// The capacity report as JSON.
    Json,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// One self-contained HTML page with charts against the offered rate.
    Html,
    /// One row per step.
    Csv,
}

/// Renders a search in a format; text and JSON need only the report, the others the file.
pub fn render_capacity(report: &CapacityReport, file: &CapacityFile, format: CapacityFormat) -> String {
    match format {
        CapacityFormat::Text => report.render_text(),
        CapacityFormat::Json => report.to_json() + "\n",
        CapacityFormat::Markdown => rpcbench::report::render_capacity_markdown(file),
        CapacityFormat::Html => rpcbench::report::render_capacity_html(file),
        CapacityFormat::Csv => rpcbench::report::render_capacity_csv(file),
    }
}

impl CapacityArgs {
    /// The `run` arguments that describe the request, the target and how to reach it.
    fn run_args(&self) -> RunArgs {
        RunArgs {
            shard: None,
            shards: None,
            start_at: None,
            target: self.target.clone(),
            scenario: self.scenario.clone(),
            request: self.request.clone(),
            connections: None,
            rate: None,
            arrivals: None,
            max_connections: None,
            threads: self.threads,
            seed: None,
            duration: None,
            requests: None,
            stage_scale: None,
            warmup: None,
            http: self.http.clone(),
            thresholds: Vec::new(),
            monitor: MonitorArgs::default(),
            heads: Default::default(),
            metrics: Default::default(),
            format: OutputFormat::Text,
            output: None,
            quiet: self.quiet,
            via_proxy: false,
            save: None,
        }
    }
}

/// The request every step sends and the search settings, validated.
pub fn to_settings(args: &CapacityArgs) -> Result<(RunConfig, CapacitySettings), ConfigError> {
    let slo =
        Slo::parse(&args.slo).map_err(|err| ConfigError::new("--slo", format!("{err} in '{}'", args.slo)))?;
    let mut plan = crate::run_cmd::to_plan(&args.run_args())?;
    if plan.targets.len() > 1 {
        return Err(ConfigError::new(
            "--url",
            format!(
                "the scenario names {} targets; a search runs against one: give it with --url",
                plan.targets.len()
            ),
        ));
    }
    let (_, config) = plan.targets.swap_remove(0);
    let mut settings = if args.connections {
        CapacitySettings::connections(slo, args.start_connections, args.max_connections)
    } else {
        CapacitySettings::new(slo)
    };
    settings.bounds = SearchBounds::new(args.start_rate, args.max_rate, args.precision);
    settings.connection_bounds.precision = args.precision;
    settings.step = args.step;
    settings.warmup = args.warmup;
    settings.cooldown = args.cooldown;
    settings.max_connections = args.max_connections;
    settings.monitor_pids = args.monitor.resolve()?;
    settings.validate()?;
    Ok((config, settings))
}

/// One line per finished step: its level, what it achieved, its latency and its verdict.
pub fn progress_line(step: &StepResult) -> String {
    if let Some(connections) = step.connections {
        return format!(
            "  step {:>2}: {:>6} conns -> {:>9.1} req/s, p50 {}, p99 {}, errors {:.2}%: {}",
            step.step,
            connections,
            step.achieved_rate,
            format_micros(step.p50_us as f64),
            format_micros(step.p99_us as f64),
            step.error_percent,
            step.verdict_text()
        );
    }
    format!(
        "  step {:>2}: {:>9}/s -> achieved {:>9.1}/s, p50 {}, p99 {}, errors {:.2}%: {}",
        step.step,
        step.target_rate,
        step.achieved_rate,
        format_micros(step.p50_us as f64),
        format_micros(step.p99_us as f64),
        step.error_percent,
        step.verdict_text()
    )
}

pub fn run(args: CapacityArgs) -> ExitCode {
    let (mut config, settings) = match to_settings(&args) {
        Ok(both) => both,
        // The target did not answer while being sampled: a failure at run time, not bad usage.
        Err(err) if err.setting == crate::run_cmd::SAMPLING => return output::failure(err),
        Err(err) => return output::usage_error(err),
    };
    // Serves until the command ends; counters add up over the steps.
    let dashboard_wanted = crate::live_dashboard::wanted(args.quiet, args.metrics.no_tui);
    let (_metrics_server, dashboard_live) =
        match crate::live_dashboard::attach(&args.metrics, &mut config, dashboard_wanted) {
            Ok(both) => both,
            Err(err) => return output::usage_error(err),
        };
    // A search of minutes must not end in "cannot write".
    for (flag, path) in [("--save", &args.save), ("--output", &args.output)] {
        if let Some(Err(err)) = path.as_deref().map(|path| crate::run_cmd::check_file_path(flag, path)) {
            return output::usage_error(err);
        }
    }
    let stop = StopHandle::new();
    crate::signals::stop_on_interrupt(stop.clone());
    if !args.quiet {
        let start = if args.connections {
            format!(
                "closed-loop steps of {} (+{} warmup) from {} connections up to {}",
                rpcbench::units::format_duration(settings.step),
                rpcbench::units::format_duration(settings.warmup),
                settings.connection_bounds.start,
                settings.connection_bounds.max
            )
        } else {
            format!(
                "steps of {} (+{} warmup) from {}/s",
                rpcbench::units::format_duration(settings.step),
                rpcbench::units::format_duration(settings.warmup),
                settings.bounds.start_rate
            )
        };
        eprintln!(
            "rpcbench capacity: {} against {}, SLO {}, {start}",
            config.workload.label(),
            config.target.redacted(),
            settings.slo,
        );
        if !settings.slo.clauses.iter().any(|c| matches!(c.bound, SloBound::ErrorPercent(_))) {
            eprintln!(
                "  note: the SLO has no errors clause; failed requests count only through their latency"
            );
        }
    }
    let quiet = args.quiet;
    let started = std::time::SystemTime::now();
    let dashboard = dashboard_live.and_then(|live| {
        let header = crate::live_dashboard::DashboardHeader {
            title: format!("capacity {}", config.target.redacted()),
            load: format!("capacity search, {}, SLO {}", config.workload.label(), settings.slo),
            planned: None,
        };
        crate::live_dashboard::LiveDashboard::start(header, vec![(String::new(), live)], stop.clone())
    });
    let result = search_recorded(&config, &settings, &stop, |step| {
        if !quiet {
            eprintln!("{}", progress_line(step));
        }
        // Said even when quiet: a step whose connections failed says nothing else about why.
        for line in step.connect_causes.describe().lines() {
            eprintln!("rpcbench: step {}: {line}", step.step);
        }
    });
    drop(dashboard);
    let (report, steps) = match result {
        Ok(both) => both,
        Err(EngineError::Config(err)) => return output::usage_error(err),
        // As for `run`: more connections than the open-file limit allows is bad usage.
        Err(EngineError::TooManyConnections(err)) => return output::usage_error(err),
        Err(err) => return output::failure(err),
    };
    let file = CapacityFile::new(report, steps, config.workload.sample_request(0), started);
    // Saved before printing, so that a closed pipe loses nothing.
    if let Some(path) = &args.save {
        if let Err(err) = file.save(path) {
            return output::failure(format!("cannot save the capacity file: {err}"));
        }
        if !quiet {
            eprintln!("rpcbench: capacity file saved to {}", path.display());
        }
    }
    crate::report_cmd::emit(&render_capacity(&file.report, &file, args.format), args.output.as_deref(), quiet)
}
