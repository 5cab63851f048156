//! `rpcbench compare NAME=URL NAME=URL ...`: the same workload against each target in
//! interleaved rounds (`--rounds`, the order rotated or shuffled; or all at once with
//! `--simultaneous`), with a cool-down between runs, then one table with ratios against the
//! first target and a verdict per figure with its 95% interval (`--tie` band). The workload
//! is one request (`--method`, `--body`), a built-in suite (`--suite`) or a scenario file
//! (`--scenario`, its mix and stages; without NAME=URL, the file's own `[[targets]]`). Each
//! target's processes can be sampled during its run (`--monitor-pid NAME=PID`,
//! `--monitor-cmd NAME=COMM`), which adds their CPU, memory, disk and connections to the
//! table. With `--equal`, no load: identical requests to every target and the responses that
//! differ.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::fields::ConfigError;
use rpcbench::client::Endpoint;
use rpcbench::compare::{
    check_equal, render_equal_markdown, render_equal_text, CompareTarget, EqualOptions, FieldPath,
};
use rpcbench::defaults::ROUNDS as DEFAULT_ROUNDS;
use rpcbench::engine::config::{HttpVersion, Scheme, Target};
use rpcbench::engine::StopHandle;
use rpcbench::field::Field;
use rpcbench::results::SavedRun;
use rpcbench::rounds::{run_rounds, RoundsPlan};
use rpcbench::verdict::RoundOrder;

use crate::args::{
    duration, parse_targets, rate, ArrivalsArg, HttpArgs, LengthArgs, LoadArgs, RequestArgs, ScenarioArgs,
};
use crate::comparison_output::{comparison_failure, progress_printer, say_what_was_not_run};
use crate::output;
use crate::output::emit;
use crate::plan::{RunFlags, RunPlan};
use crate::render::{render, ReportFormat};

/// Options of `rpcbench compare`.
#[derive(clap::Args, Debug)]
#[command(
    group = clap::ArgGroup::new("request").required(true).args(["method", "body", "body_file", "suite", "scenario", "replay"]),
    after_help = "Examples:
  rpcbench compare a=http://127.0.0.1:8899 b=http://127.0.0.1:8900 -m getSlot -c 32 -d 30s
  rpcbench compare a=http://127.0.0.1:8545 b=http://127.0.0.1:8546 --equal -m eth_getBlockByNumber -p '[\"latest\",false]' --ignore-field result.timestamp
  rpcbench compare a=http://127.0.0.1:8545 b=http://127.0.0.1:8546 --replay traffic.jsonl
  rpcbench compare go=http://127.0.0.1:8545 node=http://127.0.0.1:8546 --suite ethereum-dapp --monitor-pid go=4242 --monitor-pid node=4343 -f markdown -o study.md
  rpcbench compare --scenario relays.toml --monitor-cmd go=relay-go   (the file's own [[targets]])"
)]
pub struct CompareArgs {
    /// Targets as NAME=URL, two or more; the first is the baseline of the ratios. With
    /// --scenario they may be left out: the file's `[[targets]]` are compared.
    #[arg(required_unless_present = "scenario", value_name = "NAME=URL")]
    pub targets: Vec<String>,

    #[command(flatten)]
    pub request: RequestArgs,
    /// Run a built-in suite (its mix and stages) against each target (`rpcbench suites` lists
    /// them).
    #[arg(long, conflicts_with_all = ["method", "body", "body_file", "scenario", "equal"], help_heading = "Request")]
    pub suite: Option<String>,
    /// Run a scenario file (its mix and stages) against each target; NAME=URL targets replace
    /// the file's URL, and without them the file's own `[[targets]]` are compared.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["method", "body", "body_file", "equal"], help_heading = "Request")]
    pub scenario: Option<PathBuf>,
    /// With --suite or --scenario: the pools file, used instead of sampling the first target if
    /// it exists, else written after sampling. The pools sampled from the first target serve
    /// every target, so that each gets the same parameter sequence.
    #[arg(long, value_name = "FILE", help_heading = "Request")]
    pub pools: Option<PathBuf>,
    #[arg(help = format!("With --suite or --scenario: blocks (Solana: slots) back from the head that sampling looks at [default: {}, or the scenario's [sample] window]. Sampling stops 5 blocks (32 slots) short of the first target's head, so that targets behind it have the values", rpcbench::defaults::SAMPLE_BLOCKS), long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000), help_heading = "Request")]
    pub sample_blocks: Option<u64>,

    /// Replay this recorded traffic file (or vegeta targets file, or file of bodies) against
    /// every target: at the recorded pace unless --rate or -c is given, once through.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["equal", "suite", "scenario"], help_heading = "Request")]
    pub replay: Option<PathBuf>,

    #[arg(help = format!("Closed loop: connections sending back to back [default: {}]", rpcbench::defaults::CONNECTIONS), short, long, conflicts_with = "rate", help_heading = "Load")]
    pub connections: Option<usize>,
    /// Open loop: requests per second.
    #[arg(short, long, value_parser = rate, help_heading = "Load")]
    pub rate: Option<f64>,
    /// Open loop: spacing of arrivals.
    #[arg(long, value_enum, default_value_t = ArrivalsArg::Uniform, requires = "rate", help_heading = "Load")]
    pub arrivals: ArrivalsArg,
    /// Open loop: the most connections opened to keep up with the rate.
    #[arg(long, default_value_t = rpcbench::defaults::MAX_CONNECTIONS, requires = "rate", help_heading = "Load")]
    pub max_connections: usize,
    /// Worker threads [default: one per core].
    #[arg(long, help_heading = "Load")]
    pub threads: Option<usize>,
    #[arg(help = format!("Measured duration per target [default: {}, unless --requests is given]", rpcbench::defaults::DURATION_TEXT), short, long, value_parser = duration, help_heading = "Length")]
    pub duration: Option<Duration>,
    /// Number of measured requests per target.
    #[arg(short = 'n', long, help_heading = "Length")]
    pub requests: Option<u64>,
    /// Time before measurement, before every round of every target [default: the scenario's
    /// before each target's first round and 200ms before its later ones (warm by then), else
    /// 200ms with rounds, 0 with one].
    #[arg(long, value_parser = duration, help_heading = "Length")]
    pub warmup: Option<Duration>,
    /// Pause between two runs [default: 1s, or the scenario's `[load] cooldown`; with rounds at
    /// most 200ms].
    #[arg(long, value_parser = duration, help_heading = "Length")]
    pub cooldown: Option<Duration>,

    #[arg(help = format!("Rounds: the targets take turns this many times, each round a share of the length after its own warm-up, the order rotated every round (A B, then B A); the verdicts' intervals come from the spread of the rounds [default: {}; 1 for a load of stages or a replay, which run whole in each round]", rpcbench::defaults::ROUNDS), long, value_parser = clap::value_parser!(u32).range(1..=1000), help_heading = "Rounds and verdicts")]
    pub rounds: Option<u32>,
    #[arg(help = format!("Adaptive rounds: look at the verdicts after every --rounds rounds and go on while any is \"not enough data\", up to N rounds (each as long as the first; every interval then widened for the looks, O'Brien-Fleming, so the one reported stays a 95% interval) [default: {} times --rounds with a duration; --rounds with -n, a load of stages or a replay]", rpcbench::defaults::ROUND_BUDGET_FACTOR), long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4000), help_heading = "Rounds and verdicts")]
    pub max_rounds: Option<u32>,
    /// Shuffle each round's order from the seed instead of rotating it.
    #[arg(long, conflicts_with = "simultaneous", help_heading = "Rounds and verdicts")]
    pub shuffle: bool,
    /// Run all targets at once in each round, each on its own share of the worker threads
    /// (for providers behind the same network; unfair when the generator's CPU is the limit,
    /// as the targets share it).
    #[arg(long, help_heading = "Rounds and verdicts")]
    pub simultaneous: bool,
    /// The tie band: a figure whose whole 95% interval lies within this of the baseline
    /// either way is "no difference" (e.g. 3% or 0.5%).
    #[arg(long, value_name = "PCT", default_value = rpcbench::defaults::TIE_TEXT, value_parser = tie_band, help_heading = "Rounds and verdicts")]
    pub tie: f64,
    /// The tie band of p95 and p99: a loaded node's tail moves more from round to round than
    /// its throughput or median, so it gets a band of its own (e.g. 10%, or 3% to hold the
    /// tail to --tie's band).
    #[arg(long, value_name = "PCT", default_value = rpcbench::defaults::TAIL_TIE_TEXT, value_parser = tie_band, help_heading = "Rounds and verdicts")]
    pub tail_tie: f64,
    /// Each round and target draws its own parameter sequence from the same pools (the seed
    /// varied), so that no target gets requests a response cache has just seen.
    #[arg(long, help_heading = "Rounds and verdicts")]
    pub vary_params: bool,

    #[command(flatten)]
    pub heads: crate::args::heads::HeadsFlags,
    /// No head monitor, even though the targets are chain nodes (it is on by default when the
    /// workload calls a chain's methods).
    #[arg(long, conflicts_with = "heads", help_heading = "Heads")]
    pub no_heads: bool,

    #[command(flatten)]
    pub http: HttpArgs,

    /// No load: send identical requests to every target and report the responses that differ
    /// (exit status 1 if any do).
    #[arg(long, help_heading = "Equality")]
    pub equal: bool,
    /// Rounds of the equality check, one request to each target per round.
    #[arg(long, default_value_t = 20, requires = "equal", help_heading = "Equality")]
    pub equal_rounds: u32,
    /// A response field left out of the equality check, such as result.context.slot
    /// (repeatable; `*` matches any key or index).
    #[arg(long, value_name = "PATH", requires = "equal", help_heading = "Equality")]
    pub ignore_field: Vec<String>,

    /// Sample target NAME's process PID from /proc during its run: CPU, memory, disk I/O and
    /// TCP connections (repeatable, also for several processes of one target; Linux).
    #[arg(long = "monitor-pid", value_name = "NAME=PID", help_heading = "Target process")]
    pub monitor_pids: Vec<String>,
    /// Sample every process named COMM (/proc/PID/comm, e.g. geth) during target NAME's run
    /// (repeatable).
    #[arg(long = "monitor-cmd", value_name = "NAME=COMM", help_heading = "Target process")]
    pub monitor_cmds: Vec<String>,

    /// Output format.
    #[arg(short, long, value_parser = crate::args::format::FormatParser::<ReportFormat>::new(), default_value = "text", value_name = "FORMAT", help_heading = "Output")]
    pub format: ReportFormat,
    /// Write the output to this file (atomically) instead of standard output.
    #[arg(short, long, value_name = "FILE", value_parser = crate::args::output_file, help_heading = "Output")]
    pub output: Option<PathBuf>,
    /// Speak HTTP/2 to target NAME only (repeatable): cleartext with prior knowledge for an
    /// http:// URL, TLS with ALPN h2 for https://; --streams applies to these targets. Compares
    /// HTTP/1.1 with HTTP/2 on one endpoint in one command: h1=URL h2=URL --h2-for h2.
    #[arg(long = "h2-for", value_name = "NAME", conflicts_with_all = ["h2c", "http2"], help_heading = "HTTP")]
    pub h2_for: Vec<String>,
    /// Also save each target's results file as DIR/NAME.json.
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    pub save_dir: Option<PathBuf>,
    /// No progress lines.
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,
    /// No live dashboard on a terminal: print the progress lines instead.
    #[arg(long = "no-tui", help_heading = "Output")]
    pub no_tui: bool,
}

/// A tie band, `3%` or `3`, as a share (0.03): at least 0, below 100%.
fn tie_band(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(percent) if percent.is_finite() && (0.0..100.0).contains(&percent) => Ok(percent / 100.0),
        _ => Err(format!("'{text}' is not a tie band such as 3% (0 to below 100%)")),
    }
}

impl CompareArgs {
    /// The flag groups that plan target `name`'s run.
    fn run_flags(&self, name: &str, url: &str) -> RunFlags {
        let mut http = self.http.clone();
        if !self.h2_for.is_empty() {
            let secure = url.trim_start().to_ascii_lowercase().starts_with("https:");
            let wants_h2 = self.h2_for.iter().any(|chosen| chosen == name);
            http.h2c = wants_h2 && !secure;
            http.http2 = wants_h2 && secure;
            if !wants_h2 {
                http.streams = None;
            }
        }
        RunFlags {
            target: match &self.scenario {
                Some(path) => path.display().to_string(),
                None => url.to_string(),
            },
            scenario: ScenarioArgs {
                url: self.scenario.as_ref().map(|_| url.to_string()),
                suite: self.suite.clone(),
                pools: self.pools.clone(),
                sample_blocks: self.sample_blocks,
                // The other targets may be a few blocks behind the first: sample what they
                // have too.
                behind_head: true,
            },
            request: self.request.clone(),
            load: LoadArgs {
                connections: self.connections,
                rate: self.rate,
                // Open-loop settings only go with a rate.
                arrivals: self.rate.map(|_| self.arrivals),
                max_connections: self.rate.map(|_| self.max_connections),
                threads: self.threads,
                seed: Some(1),
                ..LoadArgs::default()
            },
            length: LengthArgs {
                duration: self.duration,
                requests: self.requests,
                stage_scale: None,
                warmup: self.warmup,
            },
            http,
            thresholds: Vec::new(),
            // Says what sampling a suite's or scenario's pools found, unless quiet.
            quiet: self.quiet,
        }
    }
}

/// Target `run`'s configuration replaying `replay`: paced by its recorded offsets unless the
/// load flags say otherwise, the flags applied as `run` applies them.
fn replayed_config(
    run: &RunFlags,
    mut replay: rpcbench::replay::Replay,
) -> Result<rpcbench::engine::config::RunConfig, ConfigError> {
    let load_flag = match (run.load.rate.is_some(), run.load.connections.is_some()) {
        (true, _) => Some(Field::Rate),
        (_, true) => Some(Field::Connections),
        _ => None,
    };
    replay.pace(None, load_flag)?;
    let config = rpcbench::engine::config::RunConfig::for_replay(replay, Target::parse(&run.target)?);
    let mut plan =
        crate::plan::finish_plan(run, vec![(run.target.clone(), config)], Vec::new(), Duration::ZERO)?;
    Ok(plan.targets.swap_remove(0).1)
}

/// A file name from a target name.
fn file_name(name: &str) -> String {
    let clean: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    format!("{clean}.json")
}

/// With `--h2-for`, HTTP/2 for the targets it names (cleartext for http://, TLS for https://,
/// with `--streams`) and HTTP/1.1 for the others.
fn choose_protocol(args: &CompareArgs, name: &str, config: &mut rpcbench::engine::config::RunConfig) {
    if args.h2_for.is_empty() {
        return;
    }
    let secure = config.target.scheme == Scheme::Https;
    let wants_h2 = args.h2_for.iter().any(|chosen| chosen == name);
    config.http = match (wants_h2, secure) {
        (false, _) => HttpVersion::Http1,
        (true, false) => HttpVersion::H2c,
        (true, true) => HttpVersion::Http2,
    };
    // --streams is for the HTTP/2 targets only.
    config.streams = if wants_h2 { args.http.streams.unwrap_or(config.streams) } else { 1 };
}

/// Each target's name and validated configuration, in order. One request builds a
/// configuration per NAME=URL; a suite or scenario is prepared once, against the first target
/// (its pools sampled there), and the others get the same configuration with their own URL, so
/// that every target sees the same mix, stages and parameter sequence. A scenario without
/// NAME=URL targets brings its own `[[targets]]`.
fn target_configs(
    args: &CompareArgs,
    replay: Option<&rpcbench::replay::Replay>,
) -> Result<RunPlan, ConfigError> {
    if args.targets.is_empty() {
        // Only with --scenario (clap requires targets otherwise): the file's own targets.
        let path = args.scenario.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        let mut run_args = args.run_flags("", "");
        run_args.scenario.url = None;
        let plan = crate::plan::to_plan(&run_args)?;
        if plan.targets.len() < 2 {
            return Err(ConfigError::new(
                format!("--scenario {path}"),
                "the file names one target: give two or more NAME=URL to compare, or list [[targets]] in it",
            ));
        }
        let names: Vec<&str> = plan.targets.iter().map(|(name, _)| name.as_str()).collect();
        if let Some(unknown) = args.h2_for.iter().find(|chosen| !names.contains(&chosen.as_str())) {
            return Err(ConfigError::new(
                format!("--h2-for {unknown}"),
                format!("no target has that name (targets: {})", names.join(", ")),
            ));
        }
        let mut targets = Vec::with_capacity(plan.targets.len());
        for (name, mut config) in plan.targets {
            choose_protocol(args, &name, &mut config);
            config
                .validate()
                .map_err(ConfigError::from)
                .map_err(|err| ConfigError::new(format!("target '{name}': {}", err.setting), err.message))?;
            targets.push((name, config));
        }
        return Ok(RunPlan {
            targets,
            thresholds: plan.thresholds,
            cooldown: args.cooldown.unwrap_or(plan.cooldown),
        });
    }
    let targets = parse_targets(&args.targets).map_err(|message| ConfigError::new("NAME=URL", message))?;
    if let Some(unknown) = args.h2_for.iter().find(|chosen| !targets.iter().any(|(name, _)| name == *chosen))
    {
        return Err(ConfigError::new(format!("--h2-for {unknown}"), "no target has that name"));
    }
    if args.suite.is_none() && args.scenario.is_none() {
        let configs = targets
            .iter()
            .map(|(name, url)| {
                let config = match replay {
                    Some(replay) => replayed_config(&args.run_flags(name, url), replay.clone()),
                    None => crate::plan::to_config(&args.run_flags(name, url)).map(|(config, _)| config),
                };
                config.map(|config| (name.clone(), config))
            })
            .collect::<Result<_, _>>()?;
        let cooldown = args.cooldown.unwrap_or(rpcbench::scenario::DEFAULT_COOLDOWN);
        return Ok(RunPlan { targets: configs, thresholds: Vec::new(), cooldown });
    }
    let (first_name, first_url) = &targets[0];
    let mut plan = crate::plan::to_plan(&args.run_flags(first_name, first_url))?;
    let (_, first) = plan.targets.swap_remove(0);
    let mut configs = vec![(first_name.clone(), first.clone())];
    for (name, url) in &targets[1..] {
        let named =
            |err: ConfigError| ConfigError::new(format!("target '{name}': {}", err.setting), err.message);
        let mut config = first.clone();
        config.target = Target::parse(url).map_err(|err| named(err.into()))?;
        choose_protocol(args, name, &mut config);
        config.validate().map_err(|err| named(err.into()))?;
        configs.push((name.clone(), config));
    }
    Ok(RunPlan {
        targets: configs,
        thresholds: plan.thresholds,
        cooldown: args.cooldown.unwrap_or(plan.cooldown),
    })
}

pub fn run(args: CompareArgs) -> ExitCode {
    if args.pools.is_some() && args.suite.is_none() && args.scenario.is_none() {
        return output::usage_error("--pools: only goes with --suite or --scenario");
    }
    if let Some(Err(err)) =
        args.output.as_deref().map(|path| crate::output::check_file_path("--output", path))
    {
        return output::usage_error(err);
    }
    let stop = StopHandle::new();
    crate::signals::stop_on_interrupt(stop.clone());
    if args.equal {
        let targets = match parse_targets(&args.targets) {
            Ok(targets) => targets,
            Err(message) => return output::usage_error(message),
        };
        if !args.monitor_pids.is_empty() || !args.monitor_cmds.is_empty() {
            return output::usage_error(
                "--monitor-pid/--monitor-cmd: the equality check runs no load to monitor",
            );
        }
        return run_equal(&args, &targets, &stop);
    }
    let replay = match &args.replay {
        None => None,
        Some(path) => match rpcbench::replay::read_file(path, None, rpcbench::traffic::BadLines::Refuse, &[])
        {
            Ok(read) => {
                if !args.quiet {
                    read.notes.iter().for_each(|note| eprintln!("rpcbench: {note}"));
                }
                Some(read.replay)
            }
            Err(err) => return output::usage_error(err),
        },
    };
    let RunPlan { targets: configs, thresholds, cooldown } = match target_configs(&args, replay.as_ref()) {
        Ok(plan) => plan,
        Err(err) => return output::usage_error(err),
    };
    let names: Vec<&str> = configs.iter().map(|(name, _)| name.as_str()).collect();
    let monitors = match crate::args::monitor::per_target(&names, &args.monitor_pids, &args.monitor_cmds) {
        Ok(monitors) => monitors,
        Err(err) => return output::usage_error(err),
    };
    // A load of stages, and a replay (the file is the length), run whole in each round.
    let whole = args.replay.is_some() || configs.iter().any(|(_, config)| !config.stages.is_empty());
    let rounds = args.rounds.unwrap_or(if whole { 1 } else { DEFAULT_ROUNDS });
    // A round sends at least one request: -n N splits into at most N rounds, so that exactly N
    // requests are sent (said when it lowers the rounds asked for).
    let fewest = configs.iter().filter_map(|(_, config)| config.length.requests).min();
    let rounds = match fewest {
        Some(requests) if !whole && u64::from(rounds) > requests => {
            let fitted = u32::try_from(requests.max(1)).unwrap_or(u32::MAX);
            if args.rounds.is_some() {
                eprintln!("rpcbench: --rounds {rounds}: -n {requests} gives {fitted} round(s) of at least one request");
            }
            fitted
        }
        _ => rounds,
    };
    // Adaptive rounds need rounds of a duration: a request count is split exactly.
    let adaptive = !whole && fewest.is_none();
    let max_rounds =
        match args.max_rounds {
            Some(_) if !adaptive => return output::usage_error(ConfigError::new(
                "--max-rounds",
                "goes with a duration (-d): a request count, a load of stages and a replay run fixed rounds",
            )),
            Some(most) if most < rounds => {
                return output::usage_error(ConfigError::new(
                    "--max-rounds",
                    format!("must be at least --rounds ({rounds})"),
                ))
            }
            Some(most) => most,
            None if adaptive => rounds.saturating_mul(rpcbench::defaults::ROUND_BUDGET_FACTOR),
            None => rounds,
        };
    let mut compare_targets: Vec<CompareTarget> = configs
        .into_iter()
        .zip(monitors)
        .map(|((name, mut config), monitor_pids)| {
            // Each round has its own warm-up: the one given, else a short one.
            if rounds > 1 && !whole && args.warmup.is_none() && config.warmup.is_zero() {
                config.warmup = rpcbench::defaults::ROUND_WARMUP;
            }
            CompareTarget { name, config, monitor_pids }
        })
        .collect();
    // Runs of rounds are short: the pause between two of them too, unless given.
    let cooldown = match args.cooldown {
        None if rounds > 1 => cooldown.min(rpcbench::defaults::ROUND_COOLDOWN),
        _ => cooldown,
    };
    let order = match (args.simultaneous, args.shuffle) {
        (true, _) => RoundOrder::Simultaneous,
        (false, true) => RoundOrder::Shuffled,
        (false, false) => RoundOrder::Rotated,
    };
    let plan = RoundsPlan {
        rounds,
        order,
        cooldown,
        tie: args.tie,
        tail_tie: args.tail_tie,
        vary_params: args.vary_params,
        whole_rounds: whole,
        max_rounds,
        // A --warmup given holds for every round; the scenario's, for each target's first.
        later_warmup: (args.warmup.is_none() && !whole).then_some(rpcbench::defaults::ROUND_WARMUP),
    };
    if let Some(dir) = &args.save_dir {
        if let Err(err) = std::fs::create_dir_all(dir) {
            return output::usage_error(format!("--save-dir {}: {err}", dir.display()));
        }
    }
    let first = &compare_targets[0].config;
    if !args.quiet {
        let length = match (first.length.duration, first.length.requests) {
            (Some(d), _) => rpcbench::format_duration(d),
            (None, Some(n)) => format!("{n} requests"),
            (None, None) => String::new(),
        };
        eprintln!(
            "rpcbench compare: {} against {} targets, {} each in {} round(s){}, {} warm-up per round{}, {} cool-down",
            first.workload.label(),
            compare_targets.len(),
            length,
            rounds,
            if plan.looks() > 1 { format!(" (more, up to {}, while a verdict is undecided)", plan.budget()) } else { String::new() },
            rpcbench::format_duration(first.warmup),
            match plan.later_warmup.filter(|later| *later < first.warmup) {
                Some(later) => format!(" ({} after a target's first)", rpcbench::format_duration(later)),
                None => String::new(),
            },
            rpcbench::format_duration(cooldown)
        );
        if order == RoundOrder::Simultaneous {
            eprintln!(
                "rpcbench compare: --simultaneous: the targets share this machine's CPU and network, each on its own worker threads; a target is only measured fairly while the generator is not the limit"
            );
        }
    }
    let quiet = args.quiet;
    let chain = first.workload.calls().iter().any(|call| rpcbench::heads::is_chain_method(call.method()));
    let heads_on = args.heads.heads || (chain && !args.no_heads);
    // One live store per target (simultaneous runs must not share one), shown on a terminal.
    let mut dashboard_stores = Vec::new();
    let dashboard = crate::live_dashboard::wanted(quiet, args.no_tui)
        .then(|| {
            let mut header =
                crate::live_dashboard::DashboardHeader::of_run("compare", &compare_targets[0].config);
            let names: Vec<&str> = compare_targets.iter().map(|target| target.name.as_str()).collect();
            (header.title, header.planned) = (format!("compare {}", names.join(", ")), None);
            let sources: Vec<_> = compare_targets
                .iter_mut()
                .map(|target| {
                    let live = rpcbench::metrics::LiveMetrics::new();
                    target.config.publish_to(live.clone());
                    (target.name.clone(), live)
                })
                .collect();
            dashboard_stores = sources.iter().map(|(_, live)| live.clone()).collect();
            crate::live_dashboard::LiveDashboard::start(header, sources, stop.clone())
        })
        .flatten();
    // The head monitor publishes each target's lag into the dashboard's stores.
    let heads_targets: Vec<(String, &rpcbench::engine::config::RunConfig)> =
        compare_targets.iter().map(|t| (t.name.clone(), &t.config)).collect();
    let heads = match args.heads.start(heads_on, &heads_targets, &dashboard_stores) {
        Ok(heads) => heads,
        Err(err) => return output::usage_error(err),
    };
    let result = run_rounds(&compare_targets, &plan, &stop, progress_printer(&compare_targets, quiet));
    drop(dashboard);
    let heads = heads.map(rpcbench::heads::HeadMonitor::stop);
    let mut runs: Vec<SavedRun> = match result {
        Ok(runs) => runs,
        Err(err) => return comparison_failure(err, quiet),
    };
    // A suite's or scenario's thresholds hold for each target, as in `run`: judged, shown in
    // each run's report and saved file, and a breach exits 1.
    let mut breached = false;
    for run in &mut runs {
        run.report.thresholds = thresholds.iter().map(|threshold| threshold.evaluate(&run.report)).collect();
        run.file.thresholds.clone_from(&run.report.thresholds);
        breached |= run.report.thresholds.iter().any(|result| !result.passed);
    }
    // Each run keeps its own row of the heads (its lags against every target's heads).
    if let Some(heads) = &heads {
        for (run, row) in runs.iter_mut().zip(heads.split()) {
            run.report.heads = Some(row.clone());
            run.file.heads = Some(row);
        }
    }
    say_what_was_not_run(&compare_targets, &runs, &stop);
    if runs.is_empty() {
        return output::failure("interrupted before the first run finished");
    }
    if let Some(dir) = &args.save_dir {
        for run in &runs {
            let path = dir.join(file_name(&run.label));
            if let Err(err) = run.file.save(&path) {
                return output::failure(format!("cannot save the results: {err}"));
            }
        }
        if !quiet {
            eprintln!("rpcbench: results saved in {}", dir.display());
        }
    }
    let text = render(&runs, args.format, true);
    let status = emit(&text, args.output.as_deref(), quiet);
    if breached {
        let failed: Vec<String> = runs
            .iter()
            .flat_map(|run| {
                run.report
                    .thresholds
                    .iter()
                    .filter(|r| !r.passed)
                    .map(move |r| format!("{}: {} (was {})", run.label, r.threshold, r.actual))
            })
            .collect();
        eprintln!("rpcbench: threshold(s) breached: {}", failed.join("; "));
        return ExitCode::from(output::EXIT_FAILURE);
    }
    status
}

fn run_equal(args: &CompareArgs, targets: &[(String, String)], stop: &StopHandle) -> ExitCode {
    if matches!(args.format, ReportFormat::Html | ReportFormat::Csv) {
        return output::usage_error("--format: the equality check renders as text, json or markdown");
    }
    if args.equal_rounds == 0 {
        return output::usage_error("--equal-rounds: must be at least 1");
    }
    let mut ignore = Vec::new();
    for text in &args.ignore_field {
        match FieldPath::parse(text) {
            Ok(path) => ignore.push(path),
            Err(message) => return output::usage_error(format!("--ignore-field: {message}")),
        }
    }
    // The request, whichever way it was given.
    let (workload, timeout) = match crate::plan::to_config(&args.run_flags(&targets[0].0, &targets[0].1)) {
        Ok((config, _)) => (config.workload, config.timeout),
        Err(err) => return output::usage_error(err),
    };
    let request = workload.sample_request(0);
    let method = request.get("method").and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
    let params = request.get("params").cloned();
    let options = EqualOptions { rounds: args.equal_rounds, ignore, timeout };
    if !args.quiet {
        eprintln!(
            "rpcbench compare --equal: {} x {} round(s) against {} targets",
            method,
            options.rounds,
            targets.len()
        );
    }
    // Each target with the headers and TLS settings of a load run.
    let mut endpoints = Vec::with_capacity(targets.len());
    for (name, url) in targets {
        let config = match crate::plan::to_config(&args.run_flags(name, url)) {
            Ok((config, _)) => config,
            Err(err) => return output::usage_error(err),
        };
        match Endpoint::from_config(&config, config.timeout) {
            Ok(endpoint) => endpoints.push((name.clone(), endpoint)),
            Err(err) => return output::failure(format!("target '{name}': {err}")),
        }
    }
    let report = check_equal(&endpoints, &method, params.as_ref(), &options, stop);
    let text = match args.format {
        ReportFormat::Json => report.to_json() + "\n",
        ReportFormat::Markdown => render_equal_markdown(&report),
        _ => render_equal_text(&report),
    };
    let status = emit(&text, args.output.as_deref(), args.quiet);
    if status != ExitCode::SUCCESS {
        return status;
    }
    if report.all_equal() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(output::EXIT_FAILURE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_name_equals_url() {
        let ok =
            parse_targets(&["a=http://127.0.0.1:1/".into(), "b=http://127.0.0.1:2/?k=v".into()]).unwrap();
        assert_eq!(ok[1], ("b".to_string(), "http://127.0.0.1:2/?k=v".to_string()));
        for (bad, expected) in [
            (vec!["http://127.0.0.1:1/", "b=http://127.0.0.1:2/"], "expected NAME=URL"),
            (vec!["a=http://127.0.0.1:1/"], "at least two"),
            (vec!["a=http://127.0.0.1:1/", "a=http://127.0.0.1:2/"], "used twice"),
            (vec!["a=ftp://x/", "b=http://127.0.0.1:2/"], "target 'a'"),
        ] {
            let texts: Vec<String> = bad.iter().map(|s| s.to_string()).collect();
            let err = parse_targets(&texts).unwrap_err();
            assert!(err.contains(expected), "{bad:?}: {err}");
        }
        assert_eq!(file_name("fast node/1"), "fast_node_1.json");
    }
}
