//! `rpcbench completions SHELL` and `rpcbench man`: the shell completion scripts and the roff
//! man page, generated from the clap definition (so they never fall behind the flags) and
//! printed to standard output for packagers to install.

use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::args::Cli;
use crate::output;

/// Options of `rpcbench completions`.
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Prints the completion script of `args.shell`.
pub fn completions(args: &CompletionsArgs) -> ExitCode {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "rpcbench", &mut script);
    output::print_raw(&script)
}

/// Prints the man page.
pub fn man() -> ExitCode {
    let mut page = Vec::new();
    match clap_mangen::Man::new(Cli::command()).render(&mut page) {
        Ok(()) => output::print_raw(&page),
        Err(err) => output::failure(format!("cannot render the man page: {err}")),
    }
}
