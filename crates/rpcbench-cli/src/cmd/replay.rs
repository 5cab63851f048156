//! `rpcbench replay FILE URL`: reads a recorded traffic file (or, with `--from`, a vegeta
//! targets file or a file of JSON-RPC bodies) into a `Replay`, builds the run's configuration
//! from it and `run`'s flags, and runs it with `run`'s own plumbing (progress, Ctrl-C, live
//! metrics, thresholds, report formats, `--save`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use rpcbench::engine::config::Target;
use rpcbench::field::Field;

use crate::fields::ConfigError;
use rpcbench::replay::{Replay, ReplayFormat};
use rpcbench::traffic::BadLines;

use crate::args::RunArgs;
use crate::output;
use crate::plan::{finish_plan, RunFlags};
use crate::runner::run_plan;

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
    // An empty file is said to be empty, not blamed for lacking what one kind of file has.
    if std::fs::metadata(&args.file).is_ok_and(|meta| meta.is_file() && meta.len() == 0) {
        return Err(ConfigError::new(
            args.file.display().to_string(),
            "the file is empty: nothing to replay (record traffic with `rpcbench record`, or give a vegeta \
             targets file or a file of JSON-RPC bodies)",
        ));
    }
    let read = rpcbench::replay::read_file(&args.file, format, bad_lines, &args.ignore_fields)?;
    if !args.run.quiet {
        for note in &read.notes {
            eprintln!("rpcbench: {note}");
        }
    }
    Ok(read.replay)
}

fn to_plan(args: &ReplayArgs) -> Result<crate::plan::RunPlan, ConfigError> {
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
    let rate_or_connections = match (run.load.rate.is_some(), run.load.connections.is_some()) {
        (true, _) => Some(Field::Rate),
        (_, true) => Some(Field::Connections),
        _ => None,
    };
    replay.pace(args.speed, rate_or_connections)?;
    if replay.schedule.is_some() && run.load.arrivals.is_some() {
        return Err(ConfigError::new(
            "--arrivals",
            "a replay at its recorded pace has the recorded arrivals",
        ));
    }
    if let Some(schedule) = &replay.schedule {
        let plan = SchedulePlan::of(&schedule.offsets_us, schedule.speed);
        check_schedule(&plan, schedule.looped, run.length.duration, run.quiet)?;
    }
    let config = rpcbench::engine::config::RunConfig::for_replay(replay, target);
    let name = format!("{}:{}", config.target.host, config.target.port);
    finish_plan(&RunFlags::from(run), vec![(name, config)], Vec::new(), Duration::ZERO)
}

/// The longest a replay at its recorded pace may take without `-d`: a longer one is an absurd
/// offset or speed (`--speed 1e-300`) that would wait silently for centuries.
const MAX_REPLAY_SPAN: Duration = Duration::from_secs(24 * 3600);

/// A gap between two recorded requests longer than this is said before the run: the run waits
/// through it without sending.
const LONG_GAP: Duration = Duration::from_secs(60);

/// What a recorded schedule at a speed will take: its span, and its longest gap (after which
/// request, 1-based).
#[derive(Debug, Clone, Copy, PartialEq)]
struct SchedulePlan {
    recorded_span_s: f64,
    speed: f64,
    span_s: f64,
    longest_gap_s: f64,
    gap_after: usize,
}

impl SchedulePlan {
    fn of(offsets_us: &[u64], speed: f64) -> Self {
        let recorded_span_s = offsets_us.last().copied().unwrap_or(0) as f64 / 1e6;
        let (gap_after, gap_us) = offsets_us
            .windows(2)
            .enumerate()
            .map(|(index, pair)| (index + 1, pair[1].saturating_sub(pair[0])))
            .max_by_key(|&(_, gap)| gap)
            .unwrap_or((0, 0));
        Self {
            recorded_span_s,
            speed,
            span_s: recorded_span_s / speed,
            longest_gap_s: gap_us as f64 / 1e6 / speed,
            gap_after,
        }
    }
}

/// Refuses a replay whose recorded span at its speed is longer than `-d` allows (or, without
/// `-d`, than [`MAX_REPLAY_SPAN`]), with the numbers; warns about a gap longer than
/// [`LONG_GAP`]. A looped replay is bounded by its run's length and only warned about.
fn check_schedule(
    plan: &SchedulePlan,
    looped: bool,
    duration: Option<Duration>,
    quiet: bool,
) -> Result<(), ConfigError> {
    let limit = duration.unwrap_or(MAX_REPLAY_SPAN);
    let allowed = if duration.is_some() { "-d" } else { "a replay without -d (24 h)" };
    // A span that is not a number (0 / 0) counts as too long.
    let too_long = plan.span_s.is_nan() || plan.span_s > limit.as_secs_f64();
    if !looped && too_long {
        let needed = plan.recorded_span_s / limit.as_secs_f64();
        return Err(ConfigError::new(
            "--speed",
            format!(
                "the recording spans {} and at speed {}x the replay would take {}, longer than {allowed} allows                  ({}): give --speed {}x or more, a longer -d, or --rate R to send at a fixed rate",
                seconds(plan.recorded_span_s),
                plan.speed,
                seconds(plan.span_s),
                seconds(limit.as_secs_f64()),
                (needed * 1000.0).ceil() / 1000.0,
            ),
        ));
    }
    if !quiet && plan.longest_gap_s > LONG_GAP.as_secs_f64() {
        eprintln!(
            "rpcbench: warning: at speed {}x the recording has a gap of {} after request {}: the replay \
             sends nothing for that long",
            plan.speed,
            seconds(plan.longest_gap_s),
            plan.gap_after
        );
    }
    Ok(())
}

/// Seconds for a message: `12.5 s`, `3.2 h`, `4.1e+290 years`.
fn seconds(value: f64) -> String {
    match value {
        v if !v.is_finite() => "forever".to_string(),
        v if v < 3600.0 => format!("{v:.1} s"),
        v if v < 86_400.0 * 365.0 => format!("{:.1} h", v / 3600.0),
        v => format!("{:.3e} years", v / (86_400.0 * 365.25)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_longer_than_its_run_can_last_is_refused_with_the_numbers() {
        let offsets = [0, 1_000_000, 2_000_000, 10_000_000];
        // 10 s recorded at 1e-300x: refused, not centuries of silence.
        let absurd = SchedulePlan::of(&offsets, 1e-300);
        let err = check_schedule(&absurd, false, None, true).unwrap_err();
        assert_eq!(err.setting, "--speed");
        assert!(err.message.contains("spans 10.0 s") && err.message.contains("years"), "{}", err.message);
        // 10 s at 0.5x is 20 s: longer than -d 15s, within -d 30s.
        let slow = SchedulePlan::of(&offsets, 0.5);
        let err = check_schedule(&slow, false, Some(Duration::from_secs(15)), true).unwrap_err();
        assert!(
            err.message.contains("would take 20.0 s") && err.message.contains("--speed 0.667x"),
            "{}",
            err.message
        );
        assert!(check_schedule(&slow, false, Some(Duration::from_secs(30)), true).is_ok());
        // A looped replay is bounded by its run.
        assert!(check_schedule(&absurd, true, Some(Duration::from_secs(1)), true).is_ok());
        // An absurd recorded offset at 1x: more than a day.
        let far = SchedulePlan::of(&[0, 5, u64::MAX / 2], 1.0);
        assert!(check_schedule(&far, false, None, true).is_err());
        assert_eq!((slow.gap_after, slow.longest_gap_s), (3, 16.0));
    }

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
