//! `rpcbench replay FILE URL`: reads a recorded traffic file (or, with `--from`, a vegeta
//! targets file or a file of JSON-RPC bodies) into a `Replay`, builds the run's configuration
//! from it and `run`'s flags, and runs it with `run`'s own plumbing (progress, Ctrl-C, live
//! metrics, thresholds, report formats, `--save`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use rpcbench::engine::config::{ConfigError, Target};
use rpcbench::replay::{Replay, ReplayFormat};
use rpcbench::traffic::BadLines;

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

/// The replay the file holds, its lines checked; its notes (a cut last line, skipped lines)
/// said on standard error.
fn read_replay(args: &ReplayArgs) -> Result<Replay, ConfigError> {
    let format = args.from.map(|from| match from {
        ReplayFrom::Traffic => ReplayFormat::Traffic,
        ReplayFrom::Vegeta => ReplayFormat::Vegeta,
        ReplayFrom::Bodies => ReplayFormat::Bodies,
    });
    let bad_lines = if args.skip_bad_lines { BadLines::Skip } else { BadLines::Refuse };
    let read = rpcbench::replay::read_file(&args.file, format, bad_lines, &args.ignore_fields)
        .map_err(|err| ConfigError::new(err.place, err.message))?;
    if !args.run.quiet {
        for note in &read.notes {
            eprintln!("rpcbench: {note}");
        }
    }
    Ok(read.replay)
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
    let mut replay = read_replay(args)?;
    if args.check_responses && replay.entries().iter().all(|entry| entry.digest.is_none()) {
        return Err(ConfigError::new(
            "--check-responses",
            "this file has no recorded responses to compare with (only a traffic file has)",
        ));
    }
    replay.check_responses = args.check_responses;
    replay.set_looped(args.looped);
    let rate_or_connections = match (run.rate.is_some(), run.connections.is_some()) {
        (true, _) => Some("--rate"),
        (_, true) => Some("--connections"),
        _ => None,
    };
    replay.pace(args.speed, rate_or_connections).map_err(|err| ConfigError::new(err.place, err.message))?;
    if replay.schedule.is_some() && run.arrivals.is_some() {
        return Err(ConfigError::new(
            "--arrivals",
            "a replay at its recorded pace has the recorded arrivals",
        ));
    }
    let config = replay.into_config(target);
    let name = format!("{}:{}", config.target.host, config.target.port);
    finish_plan(run, vec![(name, config)], Vec::new(), Duration::ZERO)
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
}
