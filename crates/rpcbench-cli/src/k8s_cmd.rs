//! `rpcbench k8s-job --shards N --image IMAGE -- run URL ...`: prints the Kubernetes manifests
//! that run `rpcbench run ...` split over N pods (an Indexed Job), every pod starting at one
//! instant, and a Job that merges their results files, so that nobody edits YAML by hand.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use rpcbench::engine::config::ConfigError;
use rpcbench::k8s::{is_dns_label, SplitRunJob};

use crate::output;

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
    /// `run` and its arguments, after `--`: what each pod runs its share of.
    #[arg(last = true, required = true, value_name = "RUN")]
    pub run: Vec<String>,
}

pub fn run(args: K8sJobArgs) -> ExitCode {
    if args.shards == 0 {
        return output::usage_error(ConfigError::new("--shards", "must be at least 1"));
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
    if let Some(flag) =
        args.run.iter().find(|arg| ["--shard", "--shards", "--start-at", "--save"].contains(&arg.as_str()))
    {
        return output::usage_error(ConfigError::new("RUN", format!("{flag} is set by k8s-job itself")));
    }
    let start_at = args.start_at.clone().unwrap_or_else(|| {
        let at = SystemTime::now() + Duration::from_secs(120);
        rpcbench::units::rfc3339(at)
    });
    if rpcbench::units::parse_rfc3339(&start_at).is_none() && start_at.parse::<f64>().is_err() {
        return output::usage_error(ConfigError::new(
            "--start-at",
            format!("'{start_at}' is not unix seconds or an RFC 3339 time"),
        ));
    }
    let mut merge_args = Vec::new();
    for threshold in &args.thresholds {
        if let Err(err) = rpcbench::thresholds::Threshold::parse(threshold) {
            return output::usage_error(ConfigError::new("--threshold", err.message));
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
    };
    output::print_stdout(&job.render())
}
