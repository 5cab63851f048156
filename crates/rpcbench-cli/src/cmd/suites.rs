//! `rpcbench suites`: the built-in suites, one line each.

use std::process::ExitCode;

use crate::output;

pub fn run() -> ExitCode {
    let width = rpcbench::plan::suites::SUITES.iter().map(|suite| suite.name.len()).max().unwrap_or(0);
    let mut text = String::new();
    for suite in rpcbench::plan::suites::SUITES {
        text.push_str(&format!("{:width$}  {}\n", suite.name, suite.description));
    }
    text.push_str("\nRun one with: rpcbench run URL --suite NAME [flags]\n");
    output::print_stdout(&text)
}
