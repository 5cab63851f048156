//! `rpcbench run`: plans the run from its flags, then runs the plan with a progress bar on a
//! terminal and Ctrl-C handling, and prints the report.

use std::process::ExitCode;

use crate::args::RunArgs;
use crate::output;
use crate::plan::{to_plan, RunFlags, SAMPLING};

pub fn run(args: RunArgs) -> ExitCode {
    let plan = match to_plan(&RunFlags::from(&args)) {
        Ok(plan) => plan,
        // The target did not answer while being sampled: a failure at run time, not bad usage.
        Err(err) if err.setting == SAMPLING => return output::failure(err),
        Err(err) => return output::usage_error(err),
    };
    crate::runner::run_plan(&args, plan)
}
