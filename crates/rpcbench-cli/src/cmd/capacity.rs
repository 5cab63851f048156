//! `rpcbench capacity`: finds the highest rate (or, with `--connections`, the most closed-loop
//! connections) a target serves within an SLO. Builds the
//! request and the search settings from the arguments, runs the library's search with one
//! progress line per step on standard error, and prints the table (or JSON, Markdown, CSV or
//! the HTML page). `--save FILE` keeps every step losslessly for `rpcbench report FILE`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use rpcbench::capacity::{search_following_heads, CapacitySettings, SearchBounds, Slo, SloBound};
use rpcbench::capacity_file::CapacityFile;
use rpcbench::engine::config::RunConfig;

use crate::fields::ConfigError;
use rpcbench::engine::{EngineError, StopHandle};
use rpcbench::parse_rate;

use crate::args::monitor::MonitorArgs;
use crate::args::{duration, HttpArgs, LengthArgs, LoadArgs, RequestArgs, ScenarioArgs};
use crate::output;
use crate::plan::RunFlags;
use crate::render::{render_capacity, CapacityFormat};

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
  rpcbench capacity http://127.0.0.1:8545 -m eth_chainId --slo 'p99<100ms,errors<1%' --search connections --max-connections 4096 --monitor-cmd geth -f json"
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
    /// What the search varies: `rate`, the highest open-loop rate that keeps the SLO, or
    /// `connections`, the most connections that keep it: each step is then a closed loop (every
    /// connection sends its next request when the previous one is answered) with that many
    /// connections, doubled then bisected up to --max-connections.
    #[arg(long, value_enum, value_name = "WHAT", default_value = "rate", help_heading = "Search")]
    pub search: SearchOver,
    // The old spelling of `--search connections`, kept working with a note: `--connections`
    // is a count everywhere else.
    #[arg(long = "connections", hide = true, conflicts_with = "search", help_heading = "Search")]
    pub connections_switch: bool,
    #[arg(
        long,
        value_name = "N",
        help = format!(
            "With --search connections: connections of the first step; doubled while steps pass [default: {}]",
            rpcbench::defaults::START_CONNECTIONS
        ),
        help_heading = "Search"
    )]
    pub start_connections: Option<usize>,
    #[arg(
        long,
        value_parser = rate,
        help = format!("First rate tried; doubled while steps pass [default: {}]", rpcbench::defaults::START_RATE_TEXT),
        help_heading = "Search"
    )]
    pub start_rate: Option<f64>,
    #[arg(
        long,
        value_parser = rate,
        help = format!("Highest rate tried [default: {}]", rpcbench::defaults::MAX_RATE_TEXT),
        help_heading = "Search"
    )]
    pub max_rate: Option<f64>,
    /// Stop when the first failing rate is within this much of the highest passing one.
    #[arg(long, value_parser = precision, default_value = rpcbench::defaults::PRECISION_TEXT, help_heading = "Search")]
    pub precision: f64,
    /// Measured length of each step.
    #[arg(long, value_parser = duration, default_value = rpcbench::defaults::STEP_TEXT, help_heading = "Search")]
    pub step: Duration,
    /// Warmup of each step: sent at the step's rate, not measured.
    #[arg(long, value_parser = duration, default_value = rpcbench::defaults::STEP_WARMUP_TEXT, help_heading = "Search")]
    pub warmup: Duration,
    /// Pause between steps, so that one step's backlog does not spill into the next.
    #[arg(long, value_parser = duration, default_value = rpcbench::defaults::STEP_COOLDOWN_TEXT, help_heading = "Search")]
    pub cooldown: Duration,
    /// The most connections a step opens to keep up with its rate; with --search connections,
    /// the most connections tried (also capped by the open-file limit).
    #[arg(long, default_value_t = rpcbench::defaults::MAX_CONNECTIONS, help_heading = "Load")]
    pub max_connections: usize,
    /// Worker threads [default: one per core].
    #[arg(long, help_heading = "Load")]
    pub threads: Option<usize>,

    #[command(flatten)]
    pub http: HttpArgs,

    #[command(flatten)]
    pub monitor: MonitorArgs,

    #[command(flatten)]
    pub heads: crate::args::heads::HeadsFlags,
    /// A reference node whose head the target's is measured against (with --heads; implies
    /// it), repeatable: lag is behind the highest head seen across the target and these, so
    /// with the target alone falling behind the chain does not show. Polled plainly: none of
    /// the target's headers are sent to it. Without it, a scenario's other [[targets]] are the
    /// references.
    #[arg(long, value_name = "URL", help_heading = "Heads")]
    pub heads_ref: Vec<String>,

    #[command(flatten)]
    pub metrics: crate::args::metrics::MetricsArgs,

    /// Report format.
    #[arg(short, long, value_parser = crate::args::format::FormatParser::<CapacityFormat>::new(), default_value = "text", value_name = "FORMAT", help_heading = "Output")]
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

/// What a capacity search varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SearchOver {
    /// The offered rate of open-loop steps.
    Rate,
    /// The connections of closed-loop steps.
    Connections,
}

impl CapacityArgs {
    /// Whether the search is over connections (`--search connections`, or the old switch
    /// `--connections`).
    fn over_connections(&self) -> bool {
        self.search == SearchOver::Connections || self.connections_switch
    }

    /// The flags that go only with the other kind of search, refused by name.
    fn check_search_flags(&self) -> Result<(), ConfigError> {
        let (kind, misplaced) = match self.over_connections() {
            true => (
                "--search connections (--connections)",
                [("--start-rate", self.start_rate.is_some()), ("--max-rate", self.max_rate.is_some())],
            ),
            false => {
                ("--search rate", [("--start-connections", self.start_connections.is_some()), ("", false)])
            }
        };
        match misplaced.iter().find(|(_, given)| *given) {
            Some((flag, _)) if self.over_connections() => {
                Err(ConfigError::new(*flag, format!("a rate search's flag: it goes without {kind}")))
            }
            Some((flag, _)) => Err(ConfigError::new(
                *flag,
                "only goes with a search over connections: --search connections (formerly --connections)",
            )),
            None => Ok(()),
        }
    }

    /// The flag groups that plan the request, the target and how to reach it: no load or length
    /// of their own (each step sets them), no thresholds (the SLO judges the steps).
    fn run_flags(&self) -> RunFlags {
        RunFlags {
            target: self.target.clone(),
            scenario: self.scenario.clone(),
            request: self.request.clone(),
            load: LoadArgs { threads: self.threads, ..LoadArgs::default() },
            length: LengthArgs::default(),
            http: self.http.clone(),
            thresholds: Vec::new(),
            quiet: self.quiet,
        }
    }
}

/// The nodes whose heads the target's is measured against with `--heads`, besides any
/// `--heads-ref`: a scenario's other `[[targets]]`, each with its own settings and headers.
pub type HeadReferences = Vec<(String, RunConfig)>;

/// The request every step sends, the search settings, validated, and the scenario's other
/// targets as head references ([`scenario_references`]).
pub fn to_settings(
    args: &CapacityArgs,
) -> Result<(RunConfig, CapacitySettings, HeadReferences), ConfigError> {
    args.check_search_flags()?;
    let slo = Slo::parse(&args.slo).map_err(|err| ConfigError::new("--slo", err.to_string()))?;
    let plan = crate::plan::to_plan(&args.run_flags())?;
    let heads_on = args.heads.heads || !args.heads_ref.is_empty();
    if plan.targets.len() > 1 && !heads_on {
        return Err(ConfigError::new(
            "--url",
            format!(
                "the scenario names {} targets; a search runs against one: give it with --url, or add --heads to search the first ('{}') and follow the others' heads as its reference nodes",
                plan.targets.len(),
                plan.targets[0].0
            ),
        ));
    }
    let mut targets = plan.targets.into_iter();
    let (_, config) = targets.next().expect("a plan has a target");
    let references = scenario_references(args, &config, targets.collect())?;
    let mut settings = if args.over_connections() {
        let start = args.start_connections.unwrap_or(rpcbench::defaults::START_CONNECTIONS);
        CapacitySettings::connections(slo, start, args.max_connections)
    } else {
        CapacitySettings::new(slo)
    };
    let start_rate = args.start_rate.unwrap_or(rpcbench::defaults::START_RATE);
    let max_rate = args.max_rate.unwrap_or(rpcbench::defaults::MAX_RATE);
    settings.bounds = SearchBounds::new(start_rate, max_rate, args.precision);
    settings.connection_bounds.precision = args.precision;
    settings.step = args.step;
    settings.warmup = args.warmup;
    settings.cooldown = args.cooldown;
    settings.max_connections = args.max_connections;
    settings.monitor_pids = args.monitor.resolve()?;
    settings.validate()?;
    Ok((config, settings, references))
}

/// The reference nodes a scenario gives the head monitor: its targets after the first when
/// the search runs against the first (`others`, each with the settings and headers the
/// scenario gives it), or, when `--url` replaced the scenario's targets, those of its
/// `[[targets]]` whose URL is not the one searched (each with its own headers only: the
/// shared ones and `-H` go to the URL given). None with `--heads-ref` (the references given
/// replace them) or without a scenario.
fn scenario_references(
    args: &CapacityArgs,
    searched: &RunConfig,
    others: HeadReferences,
) -> Result<HeadReferences, ConfigError> {
    if !args.heads_ref.is_empty() {
        return Ok(Vec::new());
    }
    if !others.is_empty() || args.scenario.url.is_none() || !crate::plan::is_scenario(&args.target) {
        return Ok(others);
    }
    let path = std::path::Path::new(&args.target);
    let listed = rpcbench::scenario::ScenarioDraft::load(path)
        .and_then(|draft| draft.listed_targets())
        .map_err(|err| ConfigError::new(path.display().to_string(), err.to_string()))?;
    Ok(listed
        .into_iter()
        .filter(|listed| listed.target != searched.target)
        .map(|listed| {
            let mut config = searched.clone();
            config.target = listed.target;
            config.headers = listed.headers;
            (listed.name, config)
        })
        .collect())
}

pub fn run(args: CapacityArgs) -> ExitCode {
    let (mut config, settings, references) = match to_settings(&args) {
        Ok(all) => all,
        // The target did not answer while being sampled: a failure at run time, not bad usage.
        Err(err) if err.setting == crate::plan::SAMPLING => return output::failure(err),
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
        if let Some(Err(err)) = path.as_deref().map(|path| crate::output::check_file_path(flag, path)) {
            return output::usage_error(err);
        }
    }
    let stop = StopHandle::new();
    crate::signals::stop_on_interrupt(stop.clone());
    if args.connections_switch {
        eprintln!("rpcbench: note: --connections of capacity is now spelled --search connections");
    }
    if !args.quiet {
        let start = if args.over_connections() {
            format!(
                "closed-loop steps of {} (+{} warmup) from {} connections up to {}",
                rpcbench::format_duration(settings.step),
                rpcbench::format_duration(settings.warmup),
                settings.connection_bounds.start,
                settings.connection_bounds.max
            )
        } else {
            format!(
                "steps of {} (+{} warmup) from {}/s",
                rpcbench::format_duration(settings.step),
                rpcbench::format_duration(settings.warmup),
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
    let heads_live: Vec<rpcbench::metrics::LiveMetrics> = dashboard_live.iter().cloned().collect();
    let dashboard = dashboard_live.and_then(|live| {
        let header = crate::live_dashboard::DashboardHeader {
            title: format!("capacity {}", config.target.redacted()),
            load: format!("capacity search, {}, SLO {}", config.workload.label(), settings.slo),
            planned: None,
        };
        crate::live_dashboard::LiveDashboard::start(header, vec![(String::new(), live)], stop.clone())
    });
    let heads_on = args.heads.heads || !args.heads_ref.is_empty();
    if heads_on && !references.is_empty() && !quiet {
        let names: Vec<&str> = references.iter().map(|(name, _)| name.as_str()).collect();
        eprintln!(
            "  heads: lag behind the highest head across the target and the scenario's other target(s) {} (followed, no load)",
            names.join(", ")
        );
    }
    let mut followed: Vec<(String, &RunConfig)> = vec![(config.target.redacted(), &config)];
    followed.extend(references.iter().map(|(name, reference)| (name.clone(), reference)));
    let heads = match args.heads.start_with_references(heads_on, &followed, &args.heads_ref, &heads_live) {
        Ok(heads) => heads,
        Err(err) => {
            drop(dashboard);
            return output::usage_error(err);
        }
    };
    let result = search_following_heads(&config, &settings, &stop, heads.as_ref(), |step| {
        if !quiet {
            eprintln!("{}", crate::progress::capacity_step_line(step));
        }
        // Said even when quiet: a step whose connections failed says nothing else about why.
        for line in step.connect_causes.describe().lines() {
            eprintln!("rpcbench: step {}: {line}", step.step);
        }
    });
    drop(dashboard);
    let heads = heads.map(rpcbench::heads::HeadMonitor::stop);
    let (mut report, steps) = match result {
        Ok(both) => both,
        Err(EngineError::Config(err)) => return output::usage_error(ConfigError::from(err)),
        // As for `run`: more connections than the open-file limit allows is bad usage.
        Err(EngineError::TooManyConnections(err)) => return output::usage_error(ConfigError::from(err)),
        Err(err) => return output::failure(err),
    };
    report.heads = heads;
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
    crate::output::emit(&render_capacity(&file.report, &file, args.format), args.output.as_deref(), quiet)
}
