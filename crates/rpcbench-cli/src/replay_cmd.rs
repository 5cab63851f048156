//! `rpcbench replay FILE URL`: reads a recorded traffic file (or, with `--from`, a vegeta
//! targets file or a file of JSON-RPC bodies) into a `Replay`, builds the run's configuration
//! from it and `run`'s flags, and runs it with `run`'s own plumbing (progress, Ctrl-C, live
//! metrics, thresholds, report formats, `--save`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use rpcbench::engine::config::{Arrivals, ConfigError, Length, Load, RunConfig, Target};
use rpcbench::replay::Replay;
use rpcbench::traffic::{BadLines, TrafficFile, TRAFFIC_FORMAT};

use crate::args::RunArgs;
use crate::output;
use crate::run_cmd::{finish_plan, run_plan};

/// What kind of file is replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReplayFrom {
    /// A traffic file recorded by `rpcbench proxy --record` (offsets, bodies, digests).
    Traffic,
    /// A vegeta targets file (no offsets: --rate or closed loop).
    Vegeta,
    /// One JSON-RPC body per line, as ethspam writes them (no offsets: --rate or closed loop).
    Bodies,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The file to replay: a recorded traffic file, or with --from a vegeta targets file or a
    /// file of JSON-RPC bodies.
    pub file: PathBuf,

    /// What FILE is [default: a traffic file when its first line is a traffic header, else a
    /// file of bodies when it is JSON, else a vegeta targets file].
    #[arg(long, value_enum, help_heading = "Replay")]
    pub from: Option<ReplayFrom>,
    /// Replay at the recorded pace times this factor (0.5x, 1x, 2x) [default: 1x for a traffic
    /// file, unless --rate or -c is given].
    #[arg(long, value_name = "FACTOR", value_parser = speed, allow_negative_numbers = true, help_heading = "Replay")]
    pub speed: Option<f64>,
    /// Start the sequence again at its end (offsets go on from the last one plus the mean gap),
    /// until -d or -n; without it the run ends when every request has been answered.
    #[arg(long = "loop", help_heading = "Replay")]
    pub looped: bool,
    /// Compare each response's digest with the recorded one; changed answers count per call as
    /// the invalid kind changed_response.
    #[arg(long, help_heading = "Replay")]
    pub check_responses: bool,
    /// A field left out of the comparison; the recording must have left it out of its digests
    /// too (record with --ignore-field PATH).
    #[arg(long = "ignore-field", value_name = "PATH", help_heading = "Replay")]
    pub ignore_fields: Vec<String>,
    /// Skip the lines of a traffic file that do not parse (say which) instead of refusing it.
    #[arg(long, help_heading = "Replay")]
    pub skip_bad_lines: bool,

    #[command(flatten)]
    pub run: RunArgs,
}

/// `--speed`: a positive factor, `2x`, `0.5x` or `2`.
fn speed(text: &str) -> Result<f64, String> {
    let number = text.trim().strip_suffix(['x', 'X']).unwrap_or(text.trim());
    match number.parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 => Ok(value),
        _ => Err(format!("'{text}' is not a positive speed factor such as 0.5x, 1x or 2x")),
    }
}

pub fn run(args: ReplayArgs) -> ExitCode {
    let plan = match to_plan(&args) {
        Ok(plan) => plan,
        Err(err) => return output::usage_error(err),
    };
    run_plan(&args.run, plan)
}

/// The kind of `text` when `--from` is not given: its first non-blank line tells.
fn detect(text: &str) -> ReplayFrom {
    let first = text.lines().find(|line| !line.trim().is_empty()).unwrap_or("").trim();
    if first.starts_with('{') && first.contains(TRAFFIC_FORMAT) {
        ReplayFrom::Traffic
    } else if first.starts_with('{') || first.starts_with('[') {
        ReplayFrom::Bodies
    } else {
        ReplayFrom::Vegeta
    }
}

/// The replay the file holds, its lines checked; notes on standard error for a cut last line
/// and skipped lines.
pub fn read_replay(
    path: &Path,
    from: Option<ReplayFrom>,
    bad_lines: BadLines,
    ignore_fields: &[String],
    quiet: bool,
) -> Result<Replay, ConfigError> {
    let file_error = |message: String| ConfigError::new(path.display().to_string(), message);
    let bytes = rpcbench::files::read_limited(path, u64::MAX).map_err(|err| file_error(err.to_string()))?;
    let from = from.unwrap_or_else(|| detect(&String::from_utf8_lossy(&bytes[..bytes.len().min(4096)])));
    if from != ReplayFrom::Traffic && !ignore_fields.is_empty() {
        return Err(ConfigError::new("--ignore-field", "goes with a traffic file's recorded digests"));
    }
    match from {
        ReplayFrom::Traffic => {
            let file = TrafficFile::parse(&bytes, path, bad_lines).map_err(|err| match err {
                rpcbench::traffic::TrafficError::Line { path, line, column, message } => {
                    ConfigError::new(format!("{}:{line}:{column}", path.display()), message)
                }
                other => file_error(other.to_string()),
            })?;
            for field in ignore_fields {
                let wanted = rpcbench::compare::FieldPath::parse(field)
                    .map_err(|message| ConfigError::new(format!("--ignore-field {field}"), message))?;
                if !file.header.ignored_fields.iter().any(|known| known == wanted.as_str()) {
                    return Err(ConfigError::new(
                        format!("--ignore-field {field}"),
                        format!(
                            "the recorded digests include it (the recording ignored: {}): record with \
                             --ignore-field {field} to leave it out",
                            match file.header.ignored_fields.is_empty() {
                                true => "nothing".to_string(),
                                false => file.header.ignored_fields.join(", "),
                            }
                        ),
                    ));
                }
            }
            if let (Some(line), false) = (file.cut_last_line, quiet) {
                eprintln!(
                    "rpcbench: {}:{line}: the last line was cut (a recorder stopped while writing it); \
                     replaying the {} complete lines",
                    path.display(),
                    file.entries.len()
                );
            }
            if !file.skipped.is_empty() && !quiet {
                let shown: Vec<String> = file.skipped.iter().take(5).map(|s| s.line.to_string()).collect();
                let more = if file.skipped.len() > 5 { ", …" } else { "" };
                eprintln!(
                    "rpcbench: {}: skipped {} line(s) that do not parse (line {}{more})",
                    path.display(),
                    file.skipped.len(),
                    shown.join(", ")
                );
            }
            Replay::from_traffic(&file, path).map_err(|err| ConfigError::new(err.place, err.message))
        }
        ReplayFrom::Bodies => {
            let text = String::from_utf8(bytes).map_err(|_| file_error("not UTF-8 text".into()))?;
            Replay::from_bodies(&text, path).map_err(|err| ConfigError::new(err.place, err.message))
        }
        ReplayFrom::Vegeta => {
            let text = String::from_utf8(bytes).map_err(|_| file_error("not UTF-8 text".into()))?;
            let targets = rpcbench::targets::parse(&text, path, |body| {
                rpcbench::files::read_limited(body, rpcbench::targets::MAX_BODY_FILE)
                    .map_err(|err| err.to_string())
            })
            .map_err(|err| {
                let place = if err.line == 0 {
                    err.path.display().to_string()
                } else {
                    format!("{}:{}:{}", err.path.display(), err.line, err.column)
                };
                ConfigError::new(place, err.message)
            })?;
            Replay::from_targets(&targets, path).map_err(|err| ConfigError::new(err.place, err.message))
        }
    }
}

/// How a replay is paced, from its flags: a speed scales the recorded offsets (a traffic
/// file's default); `--rate` and `-c` pace it as `run` does.
pub fn pace(
    replay: &mut Replay,
    speed: Option<f64>,
    rate_given: bool,
    connections_given: bool,
) -> Result<(), ConfigError> {
    if speed.is_some() && (rate_given || connections_given) {
        let flag = if rate_given { "--rate" } else { "--connections" };
        return Err(ConfigError::new(
            "--speed",
            format!("paces by the recorded offsets: it goes without {flag}"),
        ));
    }
    if speed.is_some() && !replay.has_offsets() {
        return Err(ConfigError::new(
            "--speed",
            "this file has no recorded offsets (vegeta targets, bodies): use --rate R or closed loop (-c N)",
        ));
    }
    let speed = speed.or((!rate_given && !connections_given && replay.has_offsets()).then_some(1.0));
    if let Some(speed) = speed {
        replay.pace_at_speed(speed).map_err(|err| ConfigError::new(err.place, err.message))?;
    }
    Ok(())
}

/// The run's configuration for `replay` against `target`: open loop at the recorded pace, or
/// closed loop (50 connections, as `run`) until a flag says otherwise; one pass of the file
/// unless it loops (10 s then, as `run`).
pub fn config_for(target: Target, replay: Replay) -> RunConfig {
    let mut config = RunConfig::new(target, replay.workload());
    config.load = match &replay.schedule {
        Some(schedule) => {
            Load::Open { rate: schedule.mean_rate(), arrivals: Arrivals::Uniform, max_connections: 1024 }
        }
        None => Load::Closed { connections: 50 },
    };
    config.length = match replay.looped {
        true => Length { duration: Some(Duration::from_secs(10)), requests: None },
        false => Length { duration: None, requests: Some(replay.len() as u64) },
    };
    config.replay = Some(Arc::new(replay));
    config
}

/// Without `--loop`, a run sends each request once at most: its count is the file's (or a
/// smaller `-n`), whatever `-d` says.
pub fn bound_to_one_pass(config: &mut RunConfig) {
    let Some(replay) = &config.replay else { return };
    if replay.looped {
        return;
    }
    let one_pass = replay.len() as u64;
    config.length.requests = Some(config.length.requests.map_or(one_pass, |n| n.min(one_pass)));
}

fn to_plan(args: &ReplayArgs) -> Result<crate::run_cmd::RunPlan, ConfigError> {
    let run = &args.run;
    let request = &run.request;
    let not_with = [
        ("--method", request.method.is_some()),
        ("--body", request.body.is_some()),
        ("--body-file", request.body_file.is_some()),
        ("--http", request.http.is_some()),
        ("--targets", request.targets_file.is_some()),
        ("--batch", request.batch.is_some()),
        ("--suite", run.scenario.suite.is_some()),
        ("--url", run.scenario.url.is_some()),
        ("--pools", run.scenario.pools.is_some()),
    ];
    if let Some((flag, _)) = not_with.iter().find(|(_, given)| *given) {
        return Err(ConfigError::new(*flag, "a replay sends the file's requests: it goes without this flag"));
    }
    if run.target.is_empty() {
        return Err(ConfigError::new("URL", "give the endpoint's URL after the file"));
    }
    let target = Target::parse(&run.target)?;
    let bad_lines = if args.skip_bad_lines { BadLines::Skip } else { BadLines::Refuse };
    let mut replay = read_replay(&args.file, args.from, bad_lines, &args.ignore_fields, run.quiet)?;
    if args.check_responses && replay.entries().iter().all(|entry| entry.digest.is_none()) {
        return Err(ConfigError::new(
            "--check-responses",
            "this file has no recorded responses to compare with (only a traffic file has)",
        ));
    }
    replay.check_responses = args.check_responses;
    replay.set_looped(args.looped);
    pace(&mut replay, args.speed, run.rate.is_some(), run.connections.is_some())?;
    if replay.schedule.is_some() && run.arrivals.is_some() {
        return Err(ConfigError::new(
            "--arrivals",
            "a replay at its recorded pace has the recorded arrivals",
        ));
    }
    let config = config_for(target, replay);
    let name = format!("{}:{}", config.target.host, config.target.port);
    let mut plan = finish_plan(run, vec![(name, config)], Vec::new(), Duration::ZERO)?;
    for (_, config) in &mut plan.targets {
        bound_to_one_pass(config);
        config.validate()?;
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds_are_positive_factors() {
        assert_eq!(speed("2x"), Ok(2.0));
        assert_eq!(speed("0.5x"), Ok(0.5));
        assert_eq!(speed("1"), Ok(1.0));
        for bad in ["0", "-1", "fast", "0x", "inf", ""] {
            assert!(speed(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_kind_of_file_is_told_by_its_first_line() {
        assert_eq!(detect("{\"format\":\"rpcbench-traffic\",\"version\":1}\n"), ReplayFrom::Traffic);
        assert_eq!(detect("\n{\"jsonrpc\":\"2.0\",\"method\":\"eth_blockNumber\"}\n"), ReplayFrom::Bodies);
        assert_eq!(detect("POST http://127.0.0.1:8545/\n@body.json\n"), ReplayFrom::Vegeta);
    }
}
