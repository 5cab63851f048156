//! `rpcbench merge FILE... -o OUT`: merges the results files of shards of one workload
//! (the same target, method, request, load and length, run side by side) into one,
//! losslessly. Files that do not belong together are refused with exit status 2, naming the
//! file.

use std::path::PathBuf;
use std::process::ExitCode;

use rpcbench::results::{merge, ResultsError, ResultsFile};

use crate::output;

/// Options of `rpcbench merge`.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Results files of the shards.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The merged results file to write.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
}

pub fn run(args: MergeArgs) -> ExitCode {
    let mut files = Vec::with_capacity(args.files.len());
    for path in &args.files {
        match ResultsFile::load(path) {
            Ok(file) => files.push((path.clone(), file)),
            Err(err) => return output::usage_error(err),
        }
    }
    let merged = match merge(&files) {
        Ok(merged) => merged,
        Err(err @ ResultsError::Io { .. }) => return output::failure(err),
        Err(err) => return output::usage_error(err),
    };
    if let Err(err) = merged.save(&args.output) {
        return output::failure(err);
    }
    eprintln!(
        "rpcbench: merged {} shard(s), {} requests of {}, into {}",
        merged.shards(),
        merged.total_requests(),
        merged.method_names(),
        args.output.display()
    );
    ExitCode::SUCCESS
}
