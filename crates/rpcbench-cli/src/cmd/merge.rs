//! `rpcbench merge FILE... -o FILE`: merges the results files of shards of one workload
//! (the same target, method, request, load and length, run side by side, or the shards of a
//! run split with `--shard`) into one, losslessly. Files that do not belong together, a
//! missing shard (without `--partial`) or a shard given twice are refused with exit status 2,
//! naming the file. `--threshold` judges the merged figures (exit 1 on a breach).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::fields::ConfigError;
use rpcbench::report::subscribe::{
    is_subscribe_report, merge_subscribe_reports, SubscribeReport, SubscribeThreshold,
};
use rpcbench::results::{merge_shards, ResultsError, ResultsFile};
use rpcbench::thresholds::Threshold;

use crate::output;

/// Options of `rpcbench merge`.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Results files of the shards.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The merged results file to write (`-`: standard output).
    #[arg(short, long, value_name = "FILE", value_parser = crate::args::output_file)]
    pub output: PathBuf,
    /// Merge the shards that are there when some of a split run's are missing.
    #[arg(long)]
    pub partial: bool,
    /// A condition the merged figures must meet (repeatable), as for `run`; a breach exits 1.
    #[arg(long = "threshold")]
    pub thresholds: Vec<String>,
    /// No progress line while the files are read.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Counts the files read for the progress line ("files read n of m"), shown on a terminal.
fn reading_progress(quiet: bool, total: usize) -> (Arc<AtomicUsize>, crate::progress::Ticker) {
    let read = Arc::new(AtomicUsize::new(0));
    let counter = read.clone();
    let ticker = crate::progress::Ticker::start(quiet, move |_| {
        format!("merge: files read {} of {total}", counter.load(Ordering::Relaxed))
    });
    (read, ticker)
}

/// Subscription reports (`subscribe --save`) merged into one.
fn run_subscribe(args: &MergeArgs) -> ExitCode {
    let mut thresholds = Vec::new();
    for (index, text) in args.thresholds.iter().enumerate() {
        match SubscribeThreshold::parse(text) {
            Ok(threshold) => thresholds.push(threshold),
            Err(message) => return output::usage_error(format!("--threshold #{}: {message}", index + 1)),
        }
    }
    let mut parts = Vec::with_capacity(args.files.len());
    let (read, ticker) = reading_progress(args.quiet, args.files.len());
    for path in &args.files {
        match SubscribeReport::load(path) {
            Ok(report) => parts.push((path.clone(), report)),
            Err(message) => {
                drop(ticker);
                return output::usage_error(message);
            }
        }
        read.fetch_add(1, Ordering::Relaxed);
    }
    drop(ticker);
    let mut merged = match merge_subscribe_reports(&parts) {
        Ok(merged) => merged,
        Err(message) => return output::usage_error(message),
    };
    let passed = merged.judge(&thresholds);
    if let Err(err) = output::write_file_or_stdout(&args.output, &merged.to_json()) {
        return output::failure(err);
    }
    eprintln!(
        "rpcbench: merged {} subscription report(s), {} subscriptions and {} notifications, into {}",
        parts.len(),
        merged.subscriptions,
        merged.notifications,
        output::output_name(&args.output)
    );
    for verdict in &merged.thresholds {
        let mark = if verdict.passed { "pass" } else { "FAIL" };
        eprintln!("rpcbench: {mark} {} (actual {})", verdict.threshold, verdict.actual);
    }
    if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The saved reports of a sharded `tx` run (`tx --shard I/N --save`) merged into one.
fn run_tx(args: &MergeArgs) -> ExitCode {
    use rpcbench::report::tx::{read_tx_report, TxThreshold};
    let mut thresholds = Vec::new();
    for (index, text) in args.thresholds.iter().enumerate() {
        match TxThreshold::parse(text) {
            Ok(threshold) => thresholds.push(threshold),
            Err(message) => return output::usage_error(format!("--threshold #{}: {message}", index + 1)),
        }
    }
    let mut parts = Vec::with_capacity(args.files.len());
    for path in &args.files {
        match read_tx_report(path) {
            Ok(report) => parts.push((path.clone(), report)),
            Err(err) => return output::usage_error(err),
        }
    }
    let mut merged = match rpcbench::report::tx_merge::merge_tx_reports(&parts) {
        Ok(merged) => merged,
        Err(err) => return output::usage_error(err),
    };
    let verdicts: Vec<_> = thresholds.iter().map(|threshold| threshold.judge(&merged)).collect();
    let passed = verdicts.iter().all(|verdict| verdict.passed);
    merged["thresholds"] = serde_json::json!(verdicts);
    let text = serde_json::to_string_pretty(&merged).expect("the report serializes") + "\n";
    if let Err(err) = output::write_file_or_stdout(&args.output, &text) {
        return output::failure(err);
    }
    eprintln!(
        "rpcbench: merged {} tx report(s), {} transactions sent, into {}",
        parts.len(),
        merged["sent"],
        output::output_name(&args.output)
    );
    for verdict in &verdicts {
        let mark = if verdict.passed { "pass" } else { "FAIL" };
        eprintln!("rpcbench: {mark} {} (actual {})", verdict.threshold, verdict.actual);
    }
    if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

pub fn run(args: MergeArgs) -> ExitCode {
    if args.files.iter().any(|path| rpcbench::report::tx::is_tx_report(path)) {
        return run_tx(&args);
    }
    if args.files.iter().any(|path| is_subscribe_report(path)) {
        return run_subscribe(&args);
    }
    let mut thresholds = Vec::new();
    for (index, text) in args.thresholds.iter().enumerate() {
        match Threshold::parse(text) {
            Ok(threshold) => thresholds.push(threshold),
            Err(err) => {
                return output::usage_error(ConfigError::new(
                    format!("--threshold #{}", index + 1),
                    err.to_string(),
                ))
            }
        }
    }
    let mut files = Vec::with_capacity(args.files.len());
    let (read, ticker) = reading_progress(args.quiet, args.files.len());
    for path in &args.files {
        match ResultsFile::load(path) {
            Ok(file) => files.push((path.clone(), file)),
            Err(err) => {
                drop(ticker);
                return output::usage_error(err);
            }
        }
        read.fetch_add(1, Ordering::Relaxed);
    }
    drop(ticker);
    let mut merged = match merge_shards(&files, args.partial) {
        Ok(merged) => merged,
        Err(err @ ResultsError::Io { .. }) => return output::failure(err),
        Err(err) => return output::usage_error(err),
    };
    // Thresholds judge the whole fleet's figures, and their verdicts go into the merged file.
    if !thresholds.is_empty() {
        let report = match merged.to_report() {
            Ok(report) => report,
            Err(message) => return output::failure(message),
        };
        merged.thresholds = thresholds.iter().map(|threshold| threshold.evaluate(&report)).collect();
    }
    if let Err(err) = output::write_file_or_stdout(&args.output, &merged.to_json()) {
        return output::failure(err);
    }
    eprintln!(
        "rpcbench: merged {} shard(s), {} requests of {}, into {}",
        merged.shards(),
        merged.total_requests(),
        merged.method_names(),
        output::output_name(&args.output)
    );
    let mut breached = false;
    for verdict in &merged.thresholds {
        let mark = if verdict.passed { "pass" } else { "FAIL" };
        eprintln!("rpcbench: {mark} {} (actual {})", verdict.threshold, verdict.actual);
        breached |= !verdict.passed;
    }
    if breached {
        return ExitCode::from(output::EXIT_FAILURE);
    }
    ExitCode::SUCCESS
}
