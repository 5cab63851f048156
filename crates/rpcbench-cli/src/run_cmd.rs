//! `rpcbench run`: builds a `RunConfig` from the arguments, runs it with a progress bar on a
//! terminal and Ctrl-C handling, and prints the report.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use rpcbench::engine::config::{
    Arrivals, ConfigError, HttpVersion, Length, Load, RunConfig, Target, TlsOptions,
};
use rpcbench::engine::{EngineError, Progress, Run, Slice};
use rpcbench::jsonrpc::{CheckMode, RequestTemplate};
use rpcbench::monitor::Monitor;
use rpcbench::overhead::OverheadReport;
use rpcbench::prepare::{prepare, Access, PoolSource, PrepareError};
use rpcbench::proxy::{Proxy, ProxyOptions};
use rpcbench::report::{render_text, RunReport};
use rpcbench::results::{ResultsFile, SavedRun};
use rpcbench::scenario::{Scenario, ScenarioDraft, ScenarioError};
use rpcbench::thresholds::Threshold;
use rpcbench::transport::HttpMethod;
use rpcbench::workload::{Call, HttpBody, HttpRequestSpec, TemplatePiece, Workload};

use crate::args::{ArrivalsArg, CheckArg, OnRateLimitArg, OutputFormat, RunArgs};
use crate::output;

/// Whether the run's target is a scenario file rather than a URL.
fn is_scenario(target: &str) -> bool {
    !target.contains("://") && (target.ends_with(".toml") || std::path::Path::new(target).is_file())
}

/// What `rpcbench run` will do: one run per target (a scenario may name several), in turn.
#[derive(Debug)]
pub struct RunPlan {
    /// Each target's name and validated configuration; the first is the baseline.
    pub targets: Vec<(String, RunConfig)>,
    /// Conditions each run must meet.
    pub thresholds: Vec<Threshold>,
    /// Pause between two targets' runs.
    pub cooldown: Duration,
}

/// Turns the arguments into the configuration of the first (usually the only) target and the
/// thresholds the run must meet.
pub fn to_config(args: &RunArgs) -> Result<(RunConfig, Vec<Threshold>), ConfigError> {
    let mut plan = to_plan(args)?;
    let (_, config) = plan.targets.swap_remove(0);
    Ok((config, plan.thresholds))
}

/// Turns the arguments (and the scenario file, if one is given) into validated configurations,
/// one per target, and the thresholds the runs must meet.
pub fn to_plan(args: &RunArgs) -> Result<RunPlan, ConfigError> {
    let single = |config: RunConfig| {
        let name = format!("{}:{}", config.target.host, config.target.port);
        vec![(name, config)]
    };
    let (targets, thresholds, cooldown) = if let Some(path) = &args.request.targets_file {
        if !args.target.is_empty() {
            return Err(ConfigError::new("--targets", "the targets file names the URLs: leave out TARGET"));
        }
        if args.scenario.suite.is_some() || args.scenario.url.is_some() || args.scenario.pools.is_some() {
            return Err(ConfigError::new("--targets", "goes without --suite, --url and --pools"));
        }
        let targets = rpcbench::targets::read(path).map_err(targets_error)?;
        let (target, workload) = rpcbench::targets::workload(&targets, path).map_err(targets_error)?;
        let mut config = RunConfig::new(target, workload);
        config.load = Load::Closed { connections: 50 };
        (single(config), Vec::new(), Duration::ZERO)
    } else if args.target.is_empty() {
        return Err(ConfigError::new(
            "TARGET",
            "give the endpoint's URL or a scenario file (or --targets FILE)",
        ));
    } else if let Some(name) = &args.scenario.suite {
        if args.scenario.url.is_some() {
            return Err(ConfigError::new("--url", "with --suite, the URL is the positional TARGET"));
        }
        if is_scenario(&args.target) {
            return Err(ConfigError::new("--suite", "runs against a URL, not a scenario file"));
        }
        Target::parse(&args.target)?;
        let suite = rpcbench::suites::find(name).ok_or_else(|| {
            let names: Vec<&str> = rpcbench::suites::SUITES.iter().map(|suite| suite.name).collect();
            ConfigError::new("--suite", format!("no suite named '{name}' (suites: {})", names.join(", ")))
        })?;
        let draft = suite.draft().map_err(scenario_error)?;
        let scenario = prepare_scenario(args, &draft, Some(&args.target))?;
        (scenario.configs(), scenario.thresholds, scenario.cooldown)
    } else if is_scenario(&args.target) {
        if args.request.method.is_some()
            || args.request.body.is_some()
            || args.request.body_file.is_some()
            || args.request.http.is_some()
        {
            return Err(ConfigError::new("--method", "a scenario file defines its own calls"));
        }
        if let Some(url) = &args.scenario.url {
            Target::parse(url).map_err(|e| ConfigError::new("--url", e.message))?;
        }
        let path = std::path::Path::new(&args.target);
        let draft = ScenarioDraft::load(path).map_err(|err| match targets_hint(path) {
            Some(hint) => hint,
            None => scenario_error(err),
        })?;
        let scenario = prepare_scenario(args, &draft, args.scenario.url.as_deref())?;
        (scenario.configs(), scenario.thresholds, scenario.cooldown)
    } else {
        if args.scenario.url.is_some() {
            return Err(ConfigError::new("--url", "only goes with a scenario file"));
        }
        if args.scenario.pools.is_some() {
            return Err(ConfigError::new("--pools", "only goes with a scenario file or a suite"));
        }
        let target = Target::parse(&args.target)?;
        if let Some(method) = &args.request.http {
            let workload = http_workload(args, method, &target)?;
            let mut config = RunConfig::new(target, workload);
            config.load = Load::Closed { connections: 50 };
            return finish_plan(args, single(config), Vec::new(), Duration::ZERO);
        }
        let request = if let Some(method) = &args.request.method {
            let params = match &args.request.params {
                Some(text) => Some(
                    serde_json::from_str::<serde_json::Value>(text)
                        .map_err(|err| ConfigError::new("--params", format!("not valid JSON: {err}")))?,
                ),
                None => None,
            };
            if method.trim().is_empty() {
                return Err(ConfigError::new("--method", "the method name is empty"));
            }
            RequestTemplate::from_method(method, params.as_ref())
                .map_err(|err| ConfigError::new("--params", err.0))?
        } else if let Some(body) = &args.request.body {
            RequestTemplate::from_body(body).map_err(|err| ConfigError::new("--body", err.0))?
        } else if let Some(path) = &args.request.body_file {
            let flag = format!("--body-file {}", path.display());
            let text = rpcbench::files::read_text_limited(path, rpcbench::files::MAX_BODY)
                .map_err(|err| ConfigError::new(&flag, err.to_string()))?;
            RequestTemplate::from_body(&text).map_err(|err| ConfigError::new(&flag, err.0))?
        } else {
            return Err(ConfigError::new(
                "--method",
                "one of --method, --body or --body-file is required (or give a scenario file)",
            ));
        };
        let mut config = RunConfig::new(target, request);
        config.load = Load::Closed { connections: 50 };
        (single(config), Vec::new(), Duration::ZERO)
    };
    finish_plan(args, targets, thresholds, cooldown)
}

/// Checks a run's arguments as `run` would, without sampling a node or reading a file that
/// exists only where the run will happen (a pod's scenario, suite pools, targets or body file):
/// `k8s-job` checks the run it wraps this way before any pod is started.
pub(crate) fn check_offline(args: &RunArgs) -> Result<(), ConfigError> {
    let from_files = args.scenario.suite.is_some()
        || args.scenario.pools.is_some()
        || args.request.targets_file.is_some()
        || args.request.body_file.is_some()
        || args.target.ends_with(".toml");
    if !from_files {
        return to_plan(args).map(drop);
    }
    // The URL the run will load, wherever it is given.
    let url = match (&args.scenario.url, args.target.ends_with(".toml")) {
        (Some(url), _) => Some(("--url", url.as_str())),
        (None, false) if !args.target.is_empty() => Some(("TARGET", args.target.as_str())),
        _ => None,
    };
    let target = match url {
        Some((flag, url)) => Target::parse(url).map_err(|err| ConfigError::new(flag, err.message))?,
        None => Target::parse("http://127.0.0.1:1/")?,
    };
    let stand_in =
        RequestTemplate::from_method("stand_in", None).map_err(|err| ConfigError::new("--method", err.0))?;
    let mut config = RunConfig::new(target, stand_in);
    config.load = Load::Closed { connections: 50 };
    apply_flags(args, &mut config)?;
    config.validate()?;
    for (index, text) in args.thresholds.iter().enumerate() {
        Threshold::parse(text)
            .map_err(|err| ConfigError::new(format!("--threshold #{}", index + 1), err.message))?;
    }
    Ok(())
}

/// A vegeta targets file given where a scenario is read (`run FILE` without `--targets`): the
/// error says so instead of quoting TOML's complaint about its first line.
fn targets_hint(path: &std::path::Path) -> Option<ConfigError> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path).ok()?.take(4096).read_to_end(&mut head).ok()?;
    rpcbench::targets::looks_like_targets(&String::from_utf8_lossy(&head)).then(|| {
        ConfigError::new(
            "TARGET",
            format!(
                "{} is a vegeta targets file (METHOD URL lines), not a scenario: give it as --targets {0}",
                path.display()
            ),
        )
    })
}

/// A plain HTTP request to the URL (`--http METHOD`, with `--body`/`--body-file` as its body).
fn http_workload(args: &RunArgs, method: &str, target: &Target) -> Result<Workload, ConfigError> {
    let method = HttpMethod::parse(method).ok_or_else(|| {
        let known: Vec<&str> = HttpMethod::ALL.iter().map(|m| m.as_str()).collect();
        ConfigError::new("--http", format!("'{method}' is not an HTTP method ({})", known.join(", ")))
    })?;
    let body = if let Some(body) = &args.request.body {
        HttpBody::Raw(body.clone().into_bytes())
    } else if let Some(path) = &args.request.body_file {
        let flag = format!("--body-file {}", path.display());
        HttpBody::Raw(
            rpcbench::files::read_limited(path, rpcbench::files::MAX_BODY)
                .map_err(|err| ConfigError::new(&flag, err.to_string()))?,
        )
    } else {
        HttpBody::Empty
    };
    let spec = HttpRequestSpec {
        method,
        path: vec![TemplatePiece::Text(target.path_and_query.clone())],
        headers: Vec::new(),
        body,
        expect_json: false,
    };
    let call = Call::http(None, &spec, 1).map_err(|err| ConfigError::new("--http", err.0))?;
    Workload::new(vec![call]).map_err(|err| ConfigError::new("--http", err.0))
}

/// Applies the flags to every target's configuration, validates them, and parses the
/// thresholds.
pub(crate) fn finish_plan(
    args: &RunArgs,
    targets: Vec<(String, RunConfig)>,
    mut thresholds: Vec<Threshold>,
    cooldown: Duration,
) -> Result<RunPlan, ConfigError> {
    let several = targets.len() > 1;
    let mut checked = Vec::with_capacity(targets.len());
    for (name, mut config) in targets {
        // A setting that fails for the second target says which target it is.
        let named = |err: ConfigError| match several {
            true => {
                ConfigError { setting: format!("target '{name}': {}", err.setting), message: err.message }
            }
            false => err,
        };
        let scaling = apply_flags(args, &mut config).map_err(named)?;
        if let (Some(scaling), true) = (scaling, checked.is_empty()) {
            eprintln!("rpcbench: {}", stage_scaling_note(args, &scaling));
        }
        // A replay without --loop sends each request once, whatever -d says.
        config.bound_to_one_pass();
        config.validate().map_err(named)?;
        checked.push((name, config));
    }
    for (index, text) in args.thresholds.iter().enumerate() {
        let threshold = Threshold::parse(text)
            .map_err(|err| ConfigError::new(format!("--threshold #{}", index + 1), err.message))?;
        thresholds.push(threshold);
    }
    // A threshold on a call the run does not make would be judged on nothing after the whole
    // load: refused before it starts.
    for threshold in &thresholds {
        let Some(scope) = threshold.scope() else { continue };
        for (_, config) in &checked {
            let calls = config.workload.calls();
            if !calls.iter().any(|call| call.name() == scope || call.method() == scope) {
                let known: Vec<&str> = calls.iter().map(|call| call.name()).collect();
                return Err(ConfigError::new(
                    format!("threshold '{}'", threshold.text()),
                    format!("the run makes no call named '{scope}' (calls: {})", known.join(", ")),
                ));
            }
        }
    }
    Ok(RunPlan { targets: checked, thresholds, cooldown })
}

/// Where a scenario file sets `key` (`FILE:LINE:COL` of its value), for errors found after
/// the file was read (the open-file limit, checked when the run starts).
fn scenario_key_place(path: &std::path::Path, key: &str) -> Option<String> {
    let text = rpcbench::files::read_text_limited(path, rpcbench::files::MAX_SCENARIO).ok()?;
    text.lines().enumerate().find_map(|(index, line)| {
        let rest = line.trim_start().strip_prefix(key)?;
        let value = rest.trim_start().strip_prefix('=')?;
        let column = line.len() - value.trim_start().len() + 1;
        Some(format!("{}:{}:{column}", path.display(), index + 1))
    })
}

/// A targets file's error, named by its place (`FILE:LINE:COL`).
fn targets_error(err: rpcbench::targets::TargetsError) -> ConfigError {
    let message = err.message.clone();
    let place = err.to_string();
    let setting = place.strip_suffix(&format!(": {message}")).unwrap_or(&place).to_string();
    ConfigError::new(format!("--targets {setting}"), message)
}

/// Checks, before a run, that `flag` (`--save`, `--output`) can write `path`: its folder exists
/// and it is not a folder itself (a run of minutes must not end in "cannot save").
pub(crate) fn check_file_path(flag: &str, path: &std::path::Path) -> Result<(), ConfigError> {
    let flag = format!("{flag} {}", path.display());
    if path.is_dir() {
        return Err(ConfigError::new(flag, "is a folder"));
    }
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => std::path::Path::new("."),
    };
    if !folder.is_dir() {
        return Err(ConfigError::new(flag, format!("the folder {} does not exist", folder.display())));
    }
    Ok(())
}

/// The setting named by errors of sampling the target.
pub(crate) const SAMPLING: &str = "sampling";

fn scenario_error(err: ScenarioError) -> ConfigError {
    let location = if err.line == 0 {
        err.path.display().to_string()
    } else {
        format!("{}:{}:{}", err.path.display(), err.line, err.column)
    };
    ConfigError::new(location, err.message)
}

/// Binds a scenario to its URL and fills its pools (from the pools file, or by sampling the
/// target), saying on standard error what was sampled.
fn prepare_scenario(
    args: &RunArgs,
    draft: &ScenarioDraft,
    url: Option<&str>,
) -> Result<Scenario, ConfigError> {
    let progress = rpcbench::sample::SampleProgress::new();
    let access = Access {
        headers: parse_headers(&args.http.headers)?,
        insecure: args.http.insecure,
        ca_file: args.http.cacert.clone(),
        progress: Some(progress.clone()),
        sample_blocks: args.scenario.sample_blocks,
        behind_head: args.scenario.behind_head,
    };
    let ticker = crate::progress::Ticker::start(args.quiet, sampling_message(progress));
    let prepared = prepare(draft, url, args.scenario.pools.as_deref(), &access).map_err(|err| match err {
        PrepareError::Scenario(err) => scenario_error(err),
        PrepareError::Sample(err) => ConfigError::new(SAMPLING, err.0),
        // A bad pools file is bad usage (exit 2), not a failure of the target.
        PrepareError::PoolsFile(err) => ConfigError::new("--pools", err.0),
    });
    drop(ticker);
    let prepared = prepared?;
    if let (Some(pools), false) = (&prepared.pools, args.quiet) {
        let from = match &prepared.source {
            PoolSource::Cache(path) => format!("read from {}", path.display()),
            PoolSource::Sampled(Some(path)) => format!("sampled, saved to {}", path.display()),
            PoolSource::Sampled(None) | PoolSource::NotNeeded => "sampled".to_string(),
        };
        let margin = match (pools.head_margin, pools.chain) {
            (0, _) => String::new(),
            (margin, rpcbench::sample::SampleChain::Solana) => {
                format!(", {margin} slots behind the head {}", pools.head + margin)
            }
            (margin, rpcbench::sample::SampleChain::Ethereum) => {
                format!(", {margin} blocks behind the head {}", pools.head + margin)
            }
        };
        eprintln!(
            "rpcbench: pools {from} ({} {}..={}{margin}): {}",
            pools.chain,
            pools.oldest,
            pools.head,
            pools.summary()
        );
    }
    Ok(prepared.scenario)
}

/// The progress line of sampling: blocks looked at out of the window, and the calls per second
/// over the last reading.
fn sampling_message(progress: rpcbench::sample::SampleProgress) -> impl FnMut(Duration) -> String + Send {
    let mut last = (Duration::ZERO, 0);
    move |elapsed| {
        let seen = progress.snapshot();
        let (then, calls_then) = std::mem::replace(&mut last, (elapsed, seen.calls));
        let seconds = (elapsed - then).as_secs_f64();
        let rate = if seconds > 0.0 { (seen.calls - calls_then) as f64 / seconds } else { 0.0 };
        match seen.window {
            0 => "sampling the target: finding its head".to_string(),
            window => format!("sampling the target: {}/{window} blocks, {rate:.0} requests/s", seen.blocks),
        }
    }
}

/// What a run's stages became under -d or --stage-scale, for the user.
fn stage_scaling_note(args: &RunArgs, scaling: &rpcbench::engine::stages::StageScaling) -> String {
    let why = match args.duration {
        Some(_) => "-d",
        None => "--stage-scale",
    };
    format!(
        "{why}: the stages ({} in all) scaled by {} to {}, their levels unchanged",
        rpcbench::units::format_duration(scaling.from),
        (scaling.factor * 10_000.0).round() / 10_000.0,
        rpcbench::units::format_duration(scaling.to)
    )
}

/// Flags given on the command line override the scenario (or the defaults). A load flag
/// replaces a scenario's stages with a constant load; -d fits the stages to its length, and
/// --stage-scale multiplies their durations (returned: how they were scaled).
fn apply_flags(
    args: &RunArgs,
    config: &mut RunConfig,
) -> Result<Option<rpcbench::engine::stages::StageScaling>, ConfigError> {
    let mut scaling = None;
    if let Some(factor) = args.stage_scale {
        if config.stages.is_empty() || args.rate.is_some() || args.connections.is_some() {
            return Err(ConfigError::new(
                "--stage-scale",
                "only applies to a run with stages (a scenario's or suite's), without --rate or -c",
            ));
        }
        if args.duration.is_some() {
            return Err(ConfigError::new(
                "--stage-scale",
                "give -d (the stages fitted to it) or --stage-scale, not both",
            ));
        }
        let (stages, scaled) =
            rpcbench::engine::stages::scale_stages(&config.stages, factor).ok_or_else(|| {
                ConfigError::new(
                    "--stage-scale",
                    "must be a positive number that leaves every stage 1ms or longer",
                )
            })?;
        config.stages = stages;
        scaling = Some(scaled);
    }
    if args.rate.is_some() || args.connections.is_some() {
        config.stages.clear();
    } else if let (Some(duration), false) = (args.duration, config.stages.is_empty()) {
        // The same shape in the time given, rather than the last stage's level held flat.
        let (stages, scaled) = rpcbench::engine::stages::fit_stages(&config.stages, duration)
            .ok_or_else(|| ConfigError::new("-d", "too short for the stages (each must last 1ms or more)"))?;
        config.stages = stages;
        scaling = Some(scaled);
    }
    let arrivals = args.arrivals.map(|arrivals| match arrivals {
        ArrivalsArg::Uniform => Arrivals::Uniform,
        ArrivalsArg::Poisson => Arrivals::Poisson,
    });
    if let Some(rate) = args.rate {
        let (old_arrivals, old_max) = match &config.load {
            Load::Open { arrivals, max_connections, .. } => (*arrivals, *max_connections),
            Load::Closed { .. } => (Arrivals::Uniform, 1024),
        };
        if args.connections.is_some() && args.max_connections.is_some() {
            return Err(ConfigError::new(
                "--max-connections",
                "give -c N (N connections held open, the rate paced across them) or --max-connections N (opened as the rate needs), not both",
            ));
        }
        // `--rate R -c N`: N connections opened at the start and held, as wrk2 -c N -R R;
        // `--max-connections N`: opened as the rate needs (a scenario's choice stands otherwise).
        if args.connections.is_some() {
            config.hold_connections = true;
        } else if args.max_connections.is_some() {
            config.hold_connections = false;
        }
        config.load = Load::Open {
            rate,
            arrivals: arrivals.unwrap_or(old_arrivals),
            max_connections: args.connections.or(args.max_connections).unwrap_or(old_max),
        };
    } else if let Some(connections) = args.connections {
        config.load = Load::Closed { connections };
    } else if let Load::Open { arrivals: current, max_connections, .. } = &mut config.load {
        if let Some(arrivals) = arrivals {
            *current = arrivals;
        }
        if let Some(max) = args.max_connections {
            *max_connections = max;
        }
    } else if args.arrivals.is_some() || args.max_connections.is_some() {
        let flag = if args.arrivals.is_some() { "--arrivals" } else { "--max-connections" };
        return Err(ConfigError::new(flag, "only applies to an open-loop run (--rate)"));
    }
    match (args.duration, args.requests) {
        (None, None) => {}
        // Fitted stages set the length themselves.
        (_, requests) if scaling.is_some() => config.length = Length { duration: None, requests },
        (duration, requests) => config.length = Length { duration, requests },
    }
    if let Some(warmup) = args.warmup {
        config.warmup = warmup;
    }
    config.headers.extend(parse_headers(&args.http.headers)?);
    if let Some(timeout) = args.http.timeout {
        config.timeout = timeout;
    }
    if let Some(timeout) = args.http.connect_timeout {
        config.connect_timeout = timeout;
    }
    if args.http.no_keepalive {
        config.keepalive = false;
    }
    if args.http.insecure || args.http.cacert.is_some() {
        config.tls = TlsOptions {
            insecure: args.http.insecure || config.tls.insecure,
            ca_file: args.http.cacert.clone().or(config.tls.ca_file.take()),
        };
    }
    if let Some(threads) = args.threads {
        if threads == 0 {
            return Err(ConfigError::new("--threads", "must be at least 1"));
        }
        config.threads = threads;
    }
    if let Some(max_body) = args.http.max_body {
        config.max_body = max_body;
    }
    if let Some(check) = args.http.check {
        config.check = match check {
            CheckArg::Scan => CheckMode::Scan,
            CheckArg::Full => CheckMode::Full,
        };
    }
    if !args.http.rate_limit_code.is_empty() {
        config.rate_limits = rpcbench::rate_limit::RateLimitRules::with_codes(&args.http.rate_limit_code);
    }
    config.on_rate_limit = match args.http.on_rate_limit {
        OnRateLimitArg::Continue => rpcbench::rate_pause::OnRateLimit::Continue,
        OnRateLimitArg::Backoff => rpcbench::rate_pause::OnRateLimit::Backoff,
        OnRateLimitArg::RespectRetryAfter => rpcbench::rate_pause::OnRateLimit::RespectRetryAfter,
    };
    if let Some(seed) = args.seed {
        config.seed = seed;
    }
    if args.http.fixed_id.is_some() {
        config.fixed_id = args.http.fixed_id;
    }
    if let Some(batch) = args.request.batch {
        config.batch = batch;
    }
    if args.http.h2c {
        config.http = HttpVersion::H2c;
    } else if args.http.http2 {
        config.http = HttpVersion::Http2;
    }
    if let Some(streams) = args.http.streams {
        config.streams = streams;
    }
    if let Some(in_flight) = args.http.in_flight {
        config.in_flight = in_flight;
    }
    if let Some(shard) = shard_of(args)? {
        config.shard = shard;
    }
    if let Some(text) = &args.start_at {
        config.start_at = Some(parse_start_at(text)?);
    }
    Ok(scaling)
}

/// `--shard I/N` (1-based), or `--shards N` with the index from `JOB_COMPLETION_INDEX`.
fn shard_of(args: &RunArgs) -> Result<Option<Slice>, ConfigError> {
    if let Some(text) = &args.shard {
        let parsed = text
            .split_once('/')
            .and_then(|(i, n)| Some((i.trim().parse::<usize>().ok()?, n.trim().parse::<usize>().ok()?)));
        return match parsed {
            Some((index, count)) if count > 0 && (1..=count).contains(&index) => {
                Ok(Some(Slice { index: index - 1, count }))
            }
            _ => Err(ConfigError::new(
                "--shard",
                format!("'{text}' is not I/N with I from 1 to N (shard 2 of 4 is 2/4)"),
            )),
        };
    }
    let index = std::env::var("JOB_COMPLETION_INDEX").ok();
    // In an Indexed Job the shard count may come from the environment too.
    let from_env =
        || index.as_ref().and(std::env::var("RPCBENCH_SHARDS").ok()).and_then(|n| n.trim().parse().ok());
    let Some(count) = args.shards.or_else(from_env) else { return Ok(None) };
    match (count, index.as_deref().map(str::trim).map(str::parse::<usize>)) {
        (0, _) => Err(ConfigError::new("--shards", "must be at least 1")),
        (_, Some(Ok(index))) if index < count => Ok(Some(Slice { index, count })),
        (_, Some(_)) => Err(ConfigError::new(
            "--shards",
            format!("JOB_COMPLETION_INDEX is not an index from 0 to {}", count - 1),
        )),
        (_, None) => Err(ConfigError::new(
            "--shards",
            "needs JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job); elsewhere use --shard I/N",
        )),
    }
}

/// How far ahead `--start-at` may be: a later time is a slip (milliseconds for seconds), and
/// the run would wait silently for it.
const MAX_START_AHEAD: Duration = Duration::from_secs(7 * 86_400);

/// `--start-at`: unix seconds, or an RFC 3339 time in UTC (`2026-11-23T10:00:00Z`, offsets as
/// `+01:00` too).
fn parse_start_at(text: &str) -> Result<std::time::SystemTime, ConfigError> {
    use std::time::{Duration, UNIX_EPOCH};
    let invalid = || {
        ConfigError::new(
            "--start-at",
            format!("'{text}' is not unix seconds or an RFC 3339 time such as 2026-11-23T10:00:00Z"),
        )
    };
    let text = text.trim();
    // Seconds that no clock holds (1e20) are refused, not a panic.
    let instant = |seconds: f64| {
        Duration::try_from_secs_f64(seconds.max(0.0)).ok().and_then(|since| UNIX_EPOCH.checked_add(since))
    };
    let at = match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => instant(seconds).ok_or_else(invalid)?,
        Ok(_) => return Err(invalid()),
        Err(_) => instant(rpcbench::units::parse_rfc3339(text).ok_or_else(invalid)?).ok_or_else(invalid)?,
    };
    let now = std::time::SystemTime::now();
    if let Ok(ahead) = at.duration_since(now) {
        if ahead > MAX_START_AHEAD {
            return Err(ConfigError::new(
                "--start-at",
                format!(
                    "'{text}' is {:.0} days from now; give a time within {} days",
                    ahead.as_secs_f64() / 86_400.0,
                    MAX_START_AHEAD.as_secs() / 86_400
                ),
            ));
        }
    }
    if let Ok(behind) = now.duration_since(at) {
        if behind > Duration::from_secs(5) {
            eprintln!(
                "rpcbench: warning: --start-at {text} is {:.0} s in the past; starting now",
                behind.as_secs_f64()
            );
        }
    }
    Ok(at)
}

/// The `-H` values as (name, value) pairs. A malformed one is not echoed: it may hold a key.
pub(crate) fn parse_headers(raw: &[String]) -> Result<Vec<(String, String)>, ConfigError> {
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
    let plan = match to_plan(&args) {
        Ok(plan) => plan,
        // The target did not answer while being sampled: a failure at run time, not bad usage.
        Err(err) if err.setting == SAMPLING => return output::failure(err),
        Err(err) => return output::usage_error(err),
    };
    run_plan(&args, plan)
}

/// Runs a validated plan as `run` does (`replay` builds its own plan and runs it here): the
/// progress bar, Ctrl-C, monitoring, live metrics, thresholds, the report and `--save`.
pub(crate) fn run_plan(args: &RunArgs, mut plan: RunPlan) -> ExitCode {
    if plan.targets.len() > 1 {
        return crate::run_targets::run(args, plan);
    }
    for (flag, path) in [("--save", &args.save), ("--output", &args.output)] {
        if let Some(Err(err)) = path.as_deref().map(|path| check_file_path(flag, path)) {
            return output::usage_error(err);
        }
    }
    let (_, mut config) = plan.targets.swap_remove(0);
    let thresholds = plan.thresholds;
    let monitor_pids = match args.monitor.resolve() {
        Ok(pids) => pids,
        Err(err) => return output::usage_error(err),
    };
    // Serves until the command ends.
    let dashboard_wanted = crate::live_dashboard::wanted(args.quiet, args.metrics.no_tui);
    let (_metrics_server, dashboard_live) =
        match crate::live_dashboard::attach(&args.metrics, &mut config, dashboard_wanted) {
            Ok(both) => both,
            Err(err) => return output::usage_error(err),
        };
    let run = match Run::new(config.clone()) {
        Ok(run) => run,
        Err(EngineError::Config(err)) => return output::usage_error(err),
        // Names --connections or --max-connections (or the scenario's key where it was set)
        // and the open-file limit.
        Err(EngineError::TooManyConnections(err)) => {
            let flag_given = match err.setting {
                "--connections" => args.connections.is_some(),
                _ => args.max_connections.is_some(),
            };
            let key = if err.setting == "--connections" { "connections" } else { "max_connections" };
            let place = (!flag_given && is_scenario(&args.target))
                .then(|| scenario_key_place(std::path::Path::new(&args.target), key))
                .flatten();
            return match place {
                Some(place) => {
                    let message = err.to_string();
                    let message = message.strip_prefix(&format!("{}: ", err.setting)).unwrap_or(&message);
                    output::usage_error(ConfigError::new(place, message.to_string()))
                }
                None => output::usage_error(err),
            };
        }
        Err(err) => return output::failure(err),
    };
    if args.via_proxy {
        return via_proxy(args, config, run);
    }
    crate::signals::stop_on_interrupt(run.stop_handle());
    let header = crate::live_dashboard::DashboardHeader::of_run("run", &config);
    let dashboard = dashboard_live.and_then(|live| {
        crate::live_dashboard::LiveDashboard::start(header, vec![(String::new(), live)], run.stop_handle())
    });
    let show_progress = dashboard.is_none() && !args.quiet && std::io::stderr().is_terminal();
    let finished = Arc::new(AtomicBool::new(false));
    let progress_thread =
        show_progress.then(|| spawn_progress(run.progress(), config.length, config.warmup, finished.clone()));
    let started = SystemTime::now();
    let monitor = (!monitor_pids.is_empty()).then(|| Monitor::start(&monitor_pids));
    let heads = match args.heads.start(args.heads.heads, &[(config.target.redacted(), &config)]) {
        Ok(heads) => heads,
        Err(err) => return output::usage_error(err),
    };
    let result = run.execute();
    if let Some(dashboard) = dashboard {
        dashboard.finish();
    }
    let target_resources = monitor.map(Monitor::stop);
    let heads = heads.map(rpcbench::heads::HeadMonitor::stop);
    finished.store(true, Ordering::SeqCst);
    if let Some(thread) = progress_thread {
        thread.join().ok();
    }
    let record = match result {
        Ok(record) => record,
        Err(err) => return output::failure(err),
    };
    let mut report = RunReport::new(&config, &record);
    // Why connections failed, one example per kind, before the report (a failed run says
    // nothing else about it), with what to try.
    for line in record.connect_causes.describe().lines() {
        eprintln!("rpcbench: {line}");
    }
    report.thresholds = thresholds.iter().map(|threshold| threshold.evaluate(&report)).collect();
    let breached = report.thresholds.iter().any(|result| !result.passed);
    report.target_resources.clone_from(&target_resources);
    report.heads.clone_from(&heads);
    let text = match args.format {
        OutputFormat::Text => render_text(&report),
        OutputFormat::Json => report.to_json() + "\n",
        OutputFormat::Markdown => {
            let mut file = ResultsFile::from_run(&config, &record, started);
            file.heads.clone_from(&heads);
            match SavedRun::new(file, "run") {
                Ok(run) => rpcbench::report::render_markdown(&[run]),
                Err(err) => return output::failure(format!("cannot render Markdown: {err}")),
            }
        }
    };
    // Saved before printing, so that a closed pipe or a second Ctrl-C loses nothing.
    let saved = args.save.as_ref().map(|path| {
        let mut file = ResultsFile::from_run(&config, &record, started);
        file.target_resources = target_resources;
        file.heads = heads;
        file.thresholds.clone_from(&report.thresholds);
        file.save(path)
    });
    let status = crate::report_cmd::emit(&text, args.output.as_deref(), args.quiet);
    let status = match (saved, &args.save) {
        (Some(Err(err)), _) => return output::failure(format!("cannot save the results: {err}")),
        (Some(Ok(())), Some(path)) if !args.quiet => {
            eprintln!("rpcbench: results saved to {}", path.display());
            status
        }
        _ => status,
    };
    if breached {
        return ExitCode::from(output::EXIT_FAILURE);
    }
    if report.requests.responded == 0 && report.requests.total == 0 && shard_has_nothing_to_do(&config) {
        // A shard whose share is nothing (-n 1 over 2 shards) did its part: its pod succeeds.
        if !args.quiet {
            eprintln!(
                "rpcbench: note: shard {}/{} has no share of this run's requests or connections: nothing to do",
                config.shard.index + 1,
                config.shard.count
            );
        }
        return status;
    }
    if report.requests.responded == 0 {
        // A dead target is not a run: the report says so first, and the exit status too.
        if !args.quiet {
            eprintln!("rpcbench: no request got a response from the target");
        }
        return ExitCode::from(output::EXIT_FAILURE);
    }
    status
}

/// Whether this shard's share of the run is nothing: of its request count, or of a closed
/// loop's connections.
fn shard_has_nothing_to_do(config: &RunConfig) -> bool {
    let shard = config.shard;
    let no_requests = config.length.requests.is_some_and(|n| shard.share(n) == 0);
    let no_connections =
        matches!(config.load, Load::Closed { connections } if shard.share(connections as u64) == 0);
    shard.count > 1 && (no_requests || no_connections)
}

/// `run --via-proxy`: the run as configured, then the same through an in-process proxy in
/// front of the target, and the overhead table of the two.
fn via_proxy(args: &RunArgs, config: RunConfig, direct: Run) -> ExitCode {
    let mut options = ProxyOptions::new(([127, 0, 0, 1], 0).into(), config.target.clone());
    options.tls = config.tls.clone();
    options.connect_timeout = config.connect_timeout;
    options.upstream_timeout = config.timeout;
    options.max_body_bytes = usize::try_from(config.max_body).unwrap_or(usize::MAX);
    options.upstream_connections = match config.load {
        Load::Closed { connections } => connections.max(1),
        _ => options.upstream_connections,
    };
    let proxy = match Proxy::start(options) {
        Ok(proxy) => proxy,
        Err(err) => return output::failure(format!("--via-proxy: {err}")),
    };
    let mut proxied_config = config.clone();
    proxied_config.target = match Target::parse(&proxy.url()) {
        Ok(target) => target,
        Err(err) => return output::failure(format!("--via-proxy: {err}")),
    };
    let proxied = match Run::new(proxied_config.clone()) {
        Ok(run) => run,
        Err(err) => return output::failure(format!("--via-proxy: {err}")),
    };
    let mut reports = Vec::with_capacity(2);
    for (label, run, config) in [("direct", direct, &config), ("through the proxy", proxied, &proxied_config)]
    {
        crate::signals::stop_on_interrupt(run.stop_handle());
        if !args.quiet {
            eprintln!("rpcbench: running {label}");
        }
        match run.execute() {
            Ok(record) => reports.push(RunReport::new(config, &record)),
            Err(err) => return output::failure(err),
        }
    }
    let stats = proxy.stop();
    let table = OverheadReport::new(&reports[0], &reports[1], &stats);
    let text = match args.format {
        OutputFormat::Text => table.render_text(),
        OutputFormat::Json => table.to_json() + "\n",
        OutputFormat::Markdown => table.render_markdown(),
    };
    let status = crate::report_cmd::emit(&text, args.output.as_deref(), args.quiet);
    if reports.iter().any(|report| report.requests.responded == 0) {
        if !args.quiet {
            eprintln!("rpcbench: no request got a response from the target");
        }
        return ExitCode::from(output::EXIT_FAILURE);
    }
    status
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
