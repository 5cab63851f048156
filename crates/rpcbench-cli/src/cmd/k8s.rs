//! `rpcbench k8s-job --shards N --image IMAGE -- run URL ...`: prints the Kubernetes manifests
//! that run `rpcbench run ...` split over N pods (an Indexed Job), every pod starting at one
//! instant, and a Job that merges their results files, so that nobody edits YAML by hand.
//! `-- tx URL ...` splits a transaction run the same way; its keys come from a Secret
//! (`--key-secret`) mounted in the pods, never from the manifests. An API key in the URL or
//! an Authorization header comes from a Secret too (`--env-secret`, the run naming its keys as
//! `$NAME`); a run that would show one in the manifests exits 2.

use std::process::ExitCode;

use std::time::{Duration, SystemTime};

use crate::fields::ConfigError;
use rpcbench::k8s::{is_dns_label, SplitRunJob};

use crate::args::tx::TxArgs;
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
    /// A `tx` run's keys: the Kubernetes Secret mounted read-only at /keys in every shard's
    /// pod; the run names its file there (`-- tx URL --key-file /keys/senders.txt`). The keys
    /// never appear in the manifests.
    #[arg(long, value_name = "SECRET")]
    pub key_secret: Option<String>,
    /// A Kubernetes Secret whose keys become environment variables of every shard's pod, for
    /// what must not be in the manifests: the run names them as `$NAME` or `${NAME}` (in single
    /// quotes here: `-- run '$RPC_URL' -H 'Authorization: Bearer ${TOKEN}'`) and the pod's shell
    /// expands them. The run is checked here with stand-ins: a word that is one reference for
    /// a URL, a reference inside a word for a plain word. Without it, `$` is literal text.
    #[arg(long, value_name = "SECRET")]
    pub env_secret: Option<String>,
    /// `run` or `tx` and its arguments, after `--`: what each pod runs its share of.
    #[arg(last = true, required = true, value_name = "RUN")]
    pub run: Vec<String>,
}

/// The command a line of words after `--` gives, parsed by the whole command line's parser.
#[derive(Debug)]
pub enum WrappedRun {
    /// `run URL ...`.
    Run(Box<RunArgs>),
    /// `tx URL ...`.
    Tx(Box<TxArgs>),
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
fn check_run(words: &[String], parse: ParseRunWords) -> Result<WrappedRun, String> {
    let run = match parse(words) {
        Ok(Some(WrappedRun::Run(run))) => *run,
        Ok(Some(WrappedRun::Tx(tx))) => return check_tx(*tx).map(|tx| WrappedRun::Tx(Box::new(tx))),
        Ok(None) => return Err("RUN: give the run after '--': -- run URL ... or -- tx URL ...".to_string()),
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
    Ok(WrappedRun::Run(Box::new(run)))
}

/// Checks a `tx` run as far as this machine can: the flags k8s-job sets, the URL, and that
/// no key would be written into the manifests (a key file or keypair must be a file of the
/// key Secret, under /keys).
fn check_tx(tx: TxArgs) -> Result<TxArgs, String> {
    let set_here = [
        ("--save", tx.save.is_some()),
        ("--shard", tx.shard.is_some()),
        ("--shards", tx.shards.is_some()),
        ("--start-at", tx.start_at.is_some()),
    ];
    if let Some((flag, _)) = set_here.iter().find(|(_, given)| *given) {
        return Err(format!("RUN: {flag} is set by k8s-job itself"));
    }
    if tx.mnemonic.is_some() {
        return Err(format!(
            "RUN: --mnemonic would write the phrase into the manifests; put the keys in a key file in a Secret (--key-secret) and give --key-file {}/FILE",
            rpcbench::k8s::KEY_MOUNT
        ));
    }
    let in_secret = |path: &std::path::Path| path.starts_with(rpcbench::k8s::KEY_MOUNT);
    let files = tx
        .key_file
        .iter()
        .map(|path| ("--key-file", path))
        .chain(tx.solana.keypair.iter().map(|path| ("--keypair", path)));
    for (flag, path) in files {
        if !in_secret(path) {
            return Err(format!(
                "RUN: {flag} {}: the pods read keys from the key Secret: give --key-secret and a file under {}",
                path.display(),
                rpcbench::k8s::KEY_MOUNT
            ));
        }
    }
    // Parsed, not resolved: the pods reach the node, this machine may not.
    rpcbench::engine::config::Target::parse(&tx.url)
        .map_err(|err| format!("RUN (the tx after '--'): URL: {}", err.message()))?;
    Ok(tx)
}

/// How long a tx run sends and then waits for inclusions, at most as its flags say.
fn tx_length(tx: &TxArgs) -> Duration {
    let sending = if tx.stages.is_empty() {
        tx.duration.unwrap_or(UNKNOWN_RUN_LENGTH)
    } else {
        tx.stages.iter().map(|stage| stage.duration).sum()
    };
    sending + tx.inclusion_timeout + tx.grace.unwrap_or_default()
}

/// The merge Job's deadline when none is given: until the start, then the run, then slack.
fn merge_deadline(wrapped: &WrappedRun, start_at: SystemTime) -> Duration {
    let until_start = start_at.duration_since(SystemTime::now()).unwrap_or_default();
    let length = match wrapped {
        WrappedRun::Tx(tx) => tx_length(tx),
        WrappedRun::Run(run) => {
            let length = match (run.length.duration, run.length.requests) {
                (Some(duration), _) => duration,
                (None, None) if !run.target.ends_with(".toml") && run.scenario.suite.is_none() => {
                    Duration::from_secs(10)
                }
                _ => UNKNOWN_RUN_LENGTH,
            };
            run.length.warmup.unwrap_or_default() + length
        }
    };
    let seconds = until_start + length + MERGE_SLACK;
    // Whole seconds, as Kubernetes takes them.
    Duration::from_secs(seconds.as_secs_f64().ceil() as u64)
}

/// The whole command line's parser, given by `main`: the run a line of words gives (`run URL
/// ...` or `tx URL ...`), `None` for another command.
pub type ParseRunWords = fn(&[String]) -> Result<Option<WrappedRun>, clap::Error>;

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
    if !matches!(args.run.first().map(String::as_str), Some("run" | "tx")) {
        return output::usage_error(ConfigError::new(
            "RUN",
            "give the run after '--': -- run URL ... or -- tx URL ...",
        ));
    }
    let references = args.env_secret.is_some();
    if let Some(name) = args.env_secret.as_deref().filter(|name| !is_dns_label(name)) {
        return output::usage_error(ConfigError::new(
            "--env-secret",
            format!("'{name}': must be lower-case letters, digits and '-', at most 52 characters"),
        ));
    }
    if let Some(shown) = rpcbench::k8s::literal_secret(&args.run, references) {
        return output::usage_error(format!(
            "RUN: '{shown}' holds a secret, which the manifests would show to anyone who can read the Jobs: \
             put it in a Kubernetes Secret (kubectl create secret generic rpc --from-literal=RPC_URL=...) \
             and name it: k8s-job --env-secret rpc ... -- run '$RPC_URL' ..."
        ));
    }
    // Without an env Secret the pods would read '$NAME' literally.
    let referring = args.run.iter().find(|word| !rpcbench::k8s::references(word).is_empty());
    if let (false, Some(word)) = (references, referring) {
        return output::usage_error(ConfigError::new(
            "--env-secret",
            format!(
                "the run names '{}' from the environment: give the Secret that holds it",
                rpcbench::redact_text(word)
            ),
        ));
    }
    // Checked here with stand-ins for what the pods will read from the env Secret.
    let checked: Vec<String> = if references {
        args.run.iter().map(|word| rpcbench::k8s::stand_in_for_check(word)).collect()
    } else {
        args.run.clone()
    };
    let run = match check_run(&checked, parse) {
        Ok(run) => run,
        Err(message) => return output::usage_error(message),
    };
    let is_tx = matches!(run, WrappedRun::Tx(_));
    match &args.key_secret {
        Some(_) if !is_tx => {
            return output::usage_error(ConfigError::new("--key-secret", "only a tx run has keys to mount"))
        }
        Some(name) if !is_dns_label(name) => {
            return output::usage_error(ConfigError::new(
                "--key-secret",
                "must be lower-case letters, digits and '-', at most 52 characters",
            ))
        }
        None if matches!(&run, WrappedRun::Tx(tx) if tx.key_file.is_some() || !tx.solana.keypair.is_empty()) => {
            return output::usage_error(ConfigError::new(
                "--key-secret",
                format!(
                    "the tx run reads its keys under {}: name the Secret that holds them",
                    rpcbench::k8s::KEY_MOUNT
                ),
            ))
        }
        _ => {}
    }
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
        // The merge judges the fleet's figures in the grammar of the run's kind.
        let parsed = if is_tx {
            rpcbench::report::tx::TxThreshold::parse(threshold).map(drop).map_err(|err| err.to_string())
        } else {
            rpcbench::thresholds::Threshold::parse(threshold).map(drop).map_err(|err| err.to_string())
        };
        if let Err(err) = parsed {
            return output::usage_error(ConfigError::new("--threshold", err));
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
        key_secret: args.key_secret,
        env_secret: args.env_secret,
        storage: args.storage,
        merge_deadline_seconds: deadline.as_secs(),
    };
    output::print_stdout(&job.render())
}
