//! `rpcbench k8s-job --shards N --image IMAGE -- run URL ...`: prints the Kubernetes manifests
//! that run `rpcbench run ...` split over N pods (an Indexed Job), every pod starting at one
//! instant, and a Job that merges their results files, so that nobody edits YAML by hand.

use std::process::ExitCode;

use std::time::{Duration, SystemTime};

use crate::fields::ConfigError;
use rpcbench::k8s::{is_dns_label, SplitRunJob};

use crate::args::RunArgs;
use crate::output;
use crate::plan::RunFlags;

/// Options of `rpcbench k8s-job`.
#[derive(clap::Args, Debug)]
pub struct K8sJobArgs {
    /// Pods, one shard each.
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// The container image with the rpcbench binary (deploy/k8s/Containerfile builds one).
    #[arg(long)]
    pub image: String,
    /// The name of the Jobs and of the results volume.
    #[arg(long, default_value = "rpcbench")]
    pub name: String,
    /// When every shard starts (RFC 3339 or unix seconds) [default: two minutes from now, for
    /// the pods to be scheduled].
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// A condition on the whole fleet's figures, judged by the merge Job (repeatable).
    #[arg(long = "threshold")]
    pub thresholds: Vec<String>,
    /// The results volume's size.
    #[arg(long, default_value = "1Gi")]
    pub storage: String,
    /// How long the merge Job may wait for the shards' files before it fails, counted from
    /// when it is applied [default: the time until --start-at, the run's warmup and -d (an hour
    /// when the run gives no -d), and 10 minutes].
    #[arg(long, value_name = "DURATION", value_parser = crate::args::duration)]
    pub merge_deadline: Option<Duration>,
    /// `run` and its arguments, after `--`: what each pod runs its share of.
    #[arg(last = true, required = true, value_name = "RUN")]
    pub run: Vec<String>,
}

/// The most pods of one split run: the merge Job names every shard's file on one command line,
/// which must stay well under the kernel's 128 KiB limit for one argument.
const MAX_SHARDS: u32 = 1000;

/// What the merge Job allows beyond the run itself: pods to be scheduled, images pulled, the
/// results written and merged.
const MERGE_SLACK: Duration = Duration::from_secs(600);

/// The length assumed for a run that gives no `-d` (a request count, a scenario's stages).
const UNKNOWN_RUN_LENGTH: Duration = Duration::from_secs(3600);

/// Parses the run after `--` with `run`'s own parser and checks it as `run` would (without
/// sampling the node, which the pods will reach and this machine may not).
fn check_run(words: &[String], parse: ParseRunWords) -> Result<RunArgs, String> {
    let run = match parse(words) {
        Ok(Some(run)) => run,
        Ok(None) => return Err("RUN: give the run after '--': -- run URL ...".to_string()),
        Err(err) => {
            let rendered = rpcbench::redact_text(&err.render().to_string());
            let first = rendered.lines().next().unwrap_or_default();
            let reason = first.strip_prefix("error: ").unwrap_or(first);
            return Err(format!("RUN (the run after '--'): {reason}"));
        }
    };
    let set_here = [
        ("--save", run.save.is_some()),
        ("--shard", run.load.shard.is_some()),
        ("--shards", run.load.shards.is_some()),
        ("--start-at", run.load.start_at.is_some()),
    ];
    if let Some((flag, _)) = set_here.iter().find(|(_, given)| *given) {
        return Err(format!("RUN: {flag} is set by k8s-job itself"));
    }
    crate::plan::check_offline(&RunFlags::from(&run))
        .map_err(|err| format!("RUN (the run after '--'): {err}"))?;
    Ok(run)
}

/// The merge Job's deadline when none is given: until the start, then the run, then slack.
fn merge_deadline(run: &RunArgs, start_at: SystemTime) -> Duration {
    let until_start = start_at.duration_since(SystemTime::now()).unwrap_or_default();
    let length = match (run.length.duration, run.length.requests) {
        (Some(duration), _) => duration,
        (None, None) if !run.target.ends_with(".toml") && run.scenario.suite.is_none() => {
            Duration::from_secs(10)
        }
        _ => UNKNOWN_RUN_LENGTH,
    };
    let seconds = until_start + run.length.warmup.unwrap_or_default() + length + MERGE_SLACK;
    // Whole seconds, as Kubernetes takes them.
    Duration::from_secs(seconds.as_secs_f64().ceil() as u64)
}

/// The whole command line's parser, given by `main`: the run a line of words gives (`run URL
/// ...`), `None` for another command.
pub type ParseRunWords = fn(&[String]) -> Result<Option<RunArgs>, clap::Error>;

pub fn run(args: K8sJobArgs, parse: ParseRunWords) -> ExitCode {
    if args.shards == 0 || args.shards > MAX_SHARDS {
        return output::usage_error(ConfigError::new("--shards", format!("must be from 1 to {MAX_SHARDS}")));
    }
    if !is_dns_label(&args.name) {
        return output::usage_error(ConfigError::new(
            "--name",
            "must be lower-case letters, digits and '-', at most 52 characters",
        ));
    }
    if args.run.first().map(String::as_str) != Some("run") {
        return output::usage_error(ConfigError::new("RUN", "give the run after '--': -- run URL ..."));
    }
    let run = match check_run(&args.run, parse) {
        Ok(run) => run,
        Err(message) => return output::usage_error(message),
    };
    let start_at = args.start_at.clone().unwrap_or_else(|| {
        let at = SystemTime::now() + Duration::from_secs(120);
        rpcbench::rfc3339(at)
    });
    let unix = rpcbench::parse_rfc3339(&start_at).or_else(|| start_at.parse::<f64>().ok());
    let Some(start) = unix
        .filter(|seconds| seconds.is_finite())
        .and_then(|seconds| Duration::try_from_secs_f64(seconds.max(0.0)).ok())
        .and_then(|since| std::time::UNIX_EPOCH.checked_add(since))
    else {
        return output::usage_error(ConfigError::new(
            "--start-at",
            format!("'{start_at}' is not unix seconds or an RFC 3339 time"),
        ));
    };
    let deadline = args.merge_deadline.unwrap_or_else(|| merge_deadline(&run, start));
    if deadline.as_secs() == 0 {
        return output::usage_error(ConfigError::new("--merge-deadline", "must be at least one second"));
    }
    let mut merge_args = Vec::new();
    for threshold in &args.thresholds {
        if let Err(err) = rpcbench::thresholds::Threshold::parse(threshold) {
            return output::usage_error(ConfigError::new("--threshold", err.to_string()));
        }
        merge_args.extend(["--threshold".to_string(), threshold.clone()]);
    }
    let job = SplitRunJob {
        name: args.name,
        image: args.image,
        shards: args.shards,
        start_at,
        run_args: args.run,
        merge_args,
        storage: args.storage,
        merge_deadline_seconds: deadline.as_secs(),
    };
    output::print_stdout(&job.render())
}
