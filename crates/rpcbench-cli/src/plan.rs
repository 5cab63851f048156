//! The one place the command line becomes the library's plan: groups of flags (`args`) ->
//! validated `RunConfig`s, one per target, and the thresholds they must meet. `run`, `replay`,
//! `compare`, `capacity` and `k8s-job` all build their runs here, from the groups they flatten.

use std::time::Duration;

use crate::fields::ConfigError;
use rpcbench::engine::config::{Arrivals, HttpVersion, Length, Load, RunConfig, Target, TlsOptions};
use rpcbench::engine::Slice;
use rpcbench::plan::prepare::{prepare, Access, PoolSource, PrepareError};
use rpcbench::scenario::{Scenario, ScenarioDraft, ScenarioError};
use rpcbench::thresholds::Threshold;
use rpcbench::workload::{Call, HttpBody, HttpRequestSpec, TemplatePiece, Workload};
use rpcbench::HttpMethod;
use rpcbench::{CheckMode, RequestTemplate};

use crate::args::{
    ArrivalsArg, CheckArg, HttpArgs, LengthArgs, LoadArgs, OnRateLimitArg, RequestArgs, RunArgs, ScenarioArgs,
};

/// The flag groups a run is planned from: what `run` gives, and what `compare` and `capacity`
/// give of it (their own load and length, no thresholds).
#[derive(Debug, Clone, Default)]
pub struct RunFlags {
    /// The endpoint, or a scenario file.
    pub target: String,
    /// A scenario's URL, a suite, the pools file.
    pub scenario: ScenarioArgs,
    /// What to send when no scenario or suite says it.
    pub request: RequestArgs,
    /// How hard to load.
    pub load: LoadArgs,
    /// For how long.
    pub length: LengthArgs,
    /// How to reach the target.
    pub http: HttpArgs,
    /// `--threshold` conditions.
    pub thresholds: Vec<String>,
    /// No progress lines (sampling says what it found unless quiet).
    pub quiet: bool,
}

impl From<&RunArgs> for RunFlags {
    fn from(args: &RunArgs) -> Self {
        RunFlags {
            target: args.target.clone(),
            scenario: args.scenario.clone(),
            request: args.request.clone(),
            load: args.load.clone(),
            length: args.length.clone(),
            http: args.http.clone(),
            thresholds: args.thresholds.clone(),
            quiet: args.quiet,
        }
    }
}

/// Whether the run's target is a scenario file rather than a URL.
pub(crate) fn is_scenario(target: &str) -> bool {
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
pub fn to_config(args: &RunFlags) -> Result<(RunConfig, Vec<Threshold>), ConfigError> {
    let mut plan = to_plan(args)?;
    let (_, config) = plan.targets.swap_remove(0);
    Ok((config, plan.thresholds))
}

/// Turns the arguments (and the scenario file, if one is given) into validated configurations,
/// one per target, and the thresholds the runs must meet.
pub fn to_plan(args: &RunFlags) -> Result<RunPlan, ConfigError> {
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
        let targets = rpcbench::plan::targets::read(path).map_err(targets_error)?;
        let (target, workload) = rpcbench::plan::targets::workload(&targets, path).map_err(targets_error)?;
        let config = RunConfig::new(target, workload);
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
        let suite = rpcbench::plan::suites::find(name).ok_or_else(|| {
            let names: Vec<&str> = rpcbench::plan::suites::SUITES.iter().map(|suite| suite.name).collect();
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
            Target::parse(url).map_err(|e| ConfigError::new("--url", e.message()))?;
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
            let config = RunConfig::new(target, workload);
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
            let text = rpcbench::read_text_limited(path, rpcbench::MAX_BODY)
                .map_err(|err| ConfigError::new(&flag, err.to_string()))?;
            RequestTemplate::from_body(&text).map_err(|err| ConfigError::new(&flag, err.0))?
        } else {
            return Err(ConfigError::new(
                "--method",
                "one of --method, --body or --body-file is required (or give a scenario file)",
            ));
        };
        let config = RunConfig::new(target, request);
        (single(config), Vec::new(), Duration::ZERO)
    };
    finish_plan(args, targets, thresholds, cooldown)
}

/// Checks a run's arguments as `run` would, without sampling a node or reading a file that
/// exists only where the run will happen (a pod's scenario, suite pools, targets or body file):
/// `k8s-job` checks the run it wraps this way before any pod is started.
pub fn check_offline(args: &RunFlags) -> Result<(), ConfigError> {
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
        Some((flag, url)) => Target::parse(url).map_err(|err| ConfigError::new(flag, err.message()))?,
        None => Target::parse("http://127.0.0.1:1/")?,
    };
    let stand_in =
        RequestTemplate::from_method("stand_in", None).map_err(|err| ConfigError::new("--method", err.0))?;
    let mut config = RunConfig::new(target, stand_in);
    apply_flags(args, &mut config)?;
    config.validate()?;
    for (index, text) in args.thresholds.iter().enumerate() {
        Threshold::parse(text)
            .map_err(|err| ConfigError::new(format!("--threshold #{}", index + 1), err.to_string()))?;
    }
    Ok(())
}

/// A vegeta targets file given where a scenario is read (`run FILE` without `--targets`): the
/// error says so instead of quoting TOML's complaint about its first line.
fn targets_hint(path: &std::path::Path) -> Option<ConfigError> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path).ok()?.take(4096).read_to_end(&mut head).ok()?;
    rpcbench::plan::targets::looks_like_targets(&String::from_utf8_lossy(&head)).then(|| {
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
fn http_workload(args: &RunFlags, method: &str, target: &Target) -> Result<Workload, ConfigError> {
    let method = HttpMethod::parse(method).ok_or_else(|| {
        let known: Vec<&str> = HttpMethod::ALL.iter().map(|m| m.as_str()).collect();
        ConfigError::new("--http", format!("'{method}' is not an HTTP method ({})", known.join(", ")))
    })?;
    let body = if let Some(body) = &args.request.body {
        HttpBody::Raw(body.clone().into_bytes())
    } else if let Some(path) = &args.request.body_file {
        let flag = format!("--body-file {}", path.display());
        HttpBody::Raw(
            rpcbench::read_limited(path, rpcbench::MAX_BODY)
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
pub fn finish_plan(
    args: &RunFlags,
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
        config.validate().map_err(|err| named(err.into()))?;
        checked.push((name, config));
    }
    for (index, text) in args.thresholds.iter().enumerate() {
        let threshold = Threshold::parse(text)
            .map_err(|err| ConfigError::new(format!("--threshold #{}", index + 1), err.to_string()))?;
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

/// A targets file's error, named by its place (`FILE:LINE:COL`).
fn targets_error(err: rpcbench::plan::targets::TargetsError) -> ConfigError {
    let message = err.message.clone();
    let place = err.to_string();
    let setting = place.strip_suffix(&format!(": {message}")).unwrap_or(&place).to_string();
    ConfigError::new(format!("--targets {setting}"), message)
}

/// The setting named by errors of sampling the target.
pub const SAMPLING: &str = "sampling";

pub(crate) fn scenario_error(err: ScenarioError) -> ConfigError {
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
    args: &RunFlags,
    draft: &ScenarioDraft,
    url: Option<&str>,
) -> Result<Scenario, ConfigError> {
    let progress = rpcbench::plan::sample::SampleProgress::new();
    let access = Access {
        headers: parse_headers(&args.http.headers)?,
        insecure: args.http.tls.insecure,
        ca_file: args.http.tls.cacert.clone(),
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
        err @ PrepareError::GrpcTarget { .. } => match &args.scenario.suite {
            Some(_) => ConfigError::new("--suite", err.to_string()),
            None => ConfigError::new(draft.path().display().to_string(), err.to_string()),
        },
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
            (margin, rpcbench::plan::sample::SampleChain::Solana) => {
                format!(", {margin} slots behind the head {}", pools.head + margin)
            }
            (margin, rpcbench::plan::sample::SampleChain::Ethereum) => {
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
    // Said even with -q: what is measured is not what the file asks for.
    for left_out in &prepared.scenario.left_out {
        eprintln!("rpcbench: warning: {left_out}");
    }
    Ok(prepared.scenario)
}

/// The progress line of sampling: blocks looked at out of the window, and the calls per second
/// over the last reading.
fn sampling_message(
    progress: rpcbench::plan::sample::SampleProgress,
) -> impl FnMut(Duration) -> String + Send {
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
fn stage_scaling_note(args: &RunFlags, scaling: &rpcbench::engine::stages::StageScaling) -> String {
    let why = match args.length.duration {
        Some(_) => "-d",
        None => "--stage-scale",
    };
    format!(
        "{why}: the stages ({} in all) scaled by {} to {}, their levels unchanged",
        rpcbench::format_duration(scaling.from),
        (scaling.factor * 10_000.0).round() / 10_000.0,
        rpcbench::format_duration(scaling.to)
    )
}

/// Flags given on the command line override the scenario (or the defaults). A load flag
/// replaces a scenario's stages with a constant load; -d fits the stages to its length, and
/// --stage-scale multiplies their durations (returned: how they were scaled).
fn apply_flags(
    args: &RunFlags,
    config: &mut RunConfig,
) -> Result<Option<rpcbench::engine::stages::StageScaling>, ConfigError> {
    let mut scaling = None;
    if let Some(factor) = args.length.stage_scale {
        if config.stages.is_empty() || args.load.rate.is_some() || args.load.connections.is_some() {
            return Err(ConfigError::new(
                "--stage-scale",
                "only applies to a run with stages (a scenario's or suite's), without --rate or -c",
            ));
        }
        if args.length.duration.is_some() {
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
    if args.load.rate.is_some() || args.load.connections.is_some() {
        config.stages.clear();
    } else if let (Some(duration), false) = (args.length.duration, config.stages.is_empty()) {
        // The same shape in the time given, rather than the last stage's level held flat.
        let (stages, scaled) = rpcbench::engine::stages::fit_stages(&config.stages, duration)
            .ok_or_else(|| ConfigError::new("-d", "too short for the stages (each must last 1ms or more)"))?;
        config.stages = stages;
        scaling = Some(scaled);
    }
    let arrivals = args.load.arrivals.map(|arrivals| match arrivals {
        ArrivalsArg::Uniform => Arrivals::Uniform,
        ArrivalsArg::Poisson => Arrivals::Poisson,
    });
    if let Some(rate) = args.load.rate {
        let (old_arrivals, old_max) = match &config.load {
            Load::Open { arrivals, max_connections, .. } => (*arrivals, *max_connections),
            Load::Closed { .. } => (Arrivals::Uniform, rpcbench::defaults::MAX_CONNECTIONS),
        };
        if args.load.connections.is_some() && args.load.max_connections.is_some() {
            return Err(ConfigError::new(
                "--max-connections",
                "give -c N (N connections held open, the rate paced across them) or --max-connections N (opened as the rate needs), not both",
            ));
        }
        // `--rate R -c N`: N connections opened at the start and held, as wrk2 -c N -R R;
        // `--max-connections N`: opened as the rate needs (a scenario's choice stands otherwise).
        if args.load.connections.is_some() {
            config.hold_connections = true;
        } else if args.load.max_connections.is_some() {
            config.hold_connections = false;
        }
        config.load = Load::Open {
            rate,
            arrivals: arrivals.unwrap_or(old_arrivals),
            max_connections: args.load.connections.or(args.load.max_connections).unwrap_or(old_max),
        };
    } else if let Some(connections) = args.load.connections {
        config.load = Load::Closed { connections };
    } else if let Load::Open { arrivals: current, max_connections, .. } = &mut config.load {
        if let Some(arrivals) = arrivals {
            *current = arrivals;
        }
        if let Some(max) = args.load.max_connections {
            *max_connections = max;
        }
    } else if args.load.arrivals.is_some() || args.load.max_connections.is_some() {
        let flag = if args.load.arrivals.is_some() { "--arrivals" } else { "--max-connections" };
        return Err(ConfigError::new(flag, "only applies to an open-loop run (--rate)"));
    }
    match (args.length.duration, args.length.requests) {
        (None, None) => {}
        // Fitted stages set the length themselves.
        (_, requests) if scaling.is_some() => config.length = Length { duration: None, requests },
        (duration, requests) => config.length = Length { duration, requests },
    }
    if let Some(warmup) = args.length.warmup {
        config.warmup = warmup;
    }
    config.headers.extend(parse_headers(&args.http.headers)?);
    if let Some(token) = &args.http.x_token {
        config.x_token = Some(token.clone());
    }
    if let Some(timeout) = args.http.timeout {
        config.timeout = timeout;
    }
    if let Some(timeout) = args.http.connect_timeout {
        config.connect_timeout = timeout;
    }
    if args.http.no_keepalive {
        config.keepalive = false;
    }
    if args.http.tls.insecure || args.http.tls.cacert.is_some() {
        config.tls = TlsOptions {
            insecure: args.http.tls.insecure || config.tls.insecure,
            ca_file: args.http.tls.cacert.clone().or(config.tls.ca_file.take()),
        };
    }
    if let Some(threads) = args.load.threads {
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
        config.rate_limits = rpcbench::RateLimitRules::with_codes(&args.http.rate_limit_code);
    }
    config.on_rate_limit = match args.http.on_rate_limit {
        OnRateLimitArg::Continue => rpcbench::OnRateLimit::Continue,
        OnRateLimitArg::Backoff => rpcbench::OnRateLimit::Backoff,
        OnRateLimitArg::RespectRetryAfter => rpcbench::OnRateLimit::RespectRetryAfter,
    };
    if let Some(seed) = args.load.seed {
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
    if let Some(text) = &args.load.start_at {
        config.start_at = Some(parse_start_at(text)?);
    }
    Ok(scaling)
}

/// `--shard I/N` (1-based), or `--shards N` with the index from `JOB_COMPLETION_INDEX`.
fn shard_of(args: &RunFlags) -> Result<Option<Slice>, ConfigError> {
    if let Some(text) = &args.load.shard {
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
    let Some(count) = args.load.shards.or_else(from_env) else { return Ok(None) };
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
        Err(_) => instant(rpcbench::parse_rfc3339(text).ok_or_else(invalid)?).ok_or_else(invalid)?,
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
pub fn parse_headers(raw: &[String]) -> Result<Vec<(String, String)>, ConfigError> {
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

/// The engine run of `rpcbench tx` on either chain: `method` (the chain's send call) open loop
/// at `--rate` or through the `--stage` rates, over at most 64 connections (Ethereum's command
/// raises the cap from the rate: `rpcbench::tx::headroom`), for `-d`/`-n`
/// (10 s when neither is given; the stages' total with stages), each request allowed
/// `--timeout`. The chain's command adds its sends (`tx_sends` or `solana_sends`).
pub fn tx_config(args: &crate::args::tx::TxArgs, method: &str) -> Result<RunConfig, ConfigError> {
    let target = Target::parse(&args.url).map_err(|err| ConfigError::new("URL", err.message()))?;
    let template =
        RequestTemplate::from_method(method, None).map_err(|err| ConfigError::new("URL", err.0))?;
    let mut config = RunConfig::new(target, template);
    let rate = match (args.rate, args.stages.is_empty()) {
        (Some(_), false) => return Err(ConfigError::new("--stage", "give stages or --rate, not both")),
        (Some(rate), true) => rate,
        (None, false) => args.stages.iter().map(|stage| stage.level).fold(0.0, f64::max),
        (None, true) => return Err(ConfigError::new("--rate", "give a rate (or --stage DURATION:RATE)")),
    };
    if !args.stages.is_empty() && args.duration.is_some() {
        return Err(ConfigError::new("--stage", "give stages or --duration, not both"));
    }
    if args.requests == Some(0) {
        return Err(ConfigError::new("--requests", "must be at least 1"));
    }
    // A zero wait would drop every transaction at once, poll the node without a pause, or
    // give up funding before a block could carry it: never what was meant.
    let waits = [
        ("--inclusion-timeout", Some(args.inclusion_timeout)),
        ("--poll", args.poll),
        ("--fund-timeout", Some(args.fund_timeout)),
    ];
    if let Some((flag, _)) = waits.iter().find(|(_, wait)| wait.is_some_and(|wait| wait.is_zero())) {
        return Err(ConfigError::new(*flag, "must be longer than zero"));
    }
    config.load = Load::Open {
        rate,
        arrivals: Arrivals::Uniform,
        max_connections: rpcbench::defaults::MAX_CONNECTIONS.min(64),
    };
    config.stages = args.stages.clone();
    config.length = match (args.duration, args.requests, args.stages.is_empty()) {
        (None, None, true) => Length { duration: Some(rpcbench::defaults::DURATION), requests: None },
        (duration, requests, _) => Length { duration, requests },
    };
    config.timeout = args.timeout;
    config.headers = parse_headers(&args.headers)?;
    let shard = RunFlags {
        load: LoadArgs { shard: args.shard.clone(), shards: args.shards, ..LoadArgs::default() },
        ..RunFlags::default()
    };
    if let Some(slice) = shard_of(&shard)? {
        config.shard = slice;
    }
    if let Some(text) = &args.start_at {
        config.start_at = Some(parse_start_at(text)?);
    }
    config.validate()?;
    Ok(config)
}

/// How many transactions this shard of a `tx` run sends at most: its share of the count, else
/// of the rate (or the stages' rates) over its length. The mainnet guard's cost estimate and
/// the signers' counts are for this many.
pub fn tx_planned_sends(config: &RunConfig) -> u64 {
    if let Some(requests) = config.length.requests {
        return config.shard.share(requests);
    }
    let seconds = config.measured_duration().map_or(0.0, |d| d.as_secs_f64());
    let sends = match (config.level_curve(), &config.load) {
        (Some(curve), _) => curve.count_at(seconds + config.warmup.as_secs_f64()),
        (None, Load::Open { rate, .. }) => rate * seconds,
        (None, Load::Closed { .. }) => 0.0,
    };
    (sends / config.shard.count as f64).ceil() as u64
}
