//! `rpcbench completions SHELL` and `rpcbench man`: the shell completion scripts and the roff
//! man page, generated from the clap definition (so they never fall behind the flags) and
//! printed to standard output for packagers to install.

use std::process::ExitCode;

use clap_complete::Shell;

use crate::output;

/// Options of `rpcbench completions`.
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Prints the completion script of `args.shell`.
pub fn completions(args: &CompletionsArgs, mut command: clap::Command) -> ExitCode {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "rpcbench", &mut script);
    output::print_raw(&script)
}

/// Options of `rpcbench man`.
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// A subcommand whose page to print (`run` gives rpcbench-run(1)) [default: the top page].
    #[arg(value_name = "SUBCOMMAND")]
    pub subcommand: Option<String>,
}

/// Prints the top man page, or a subcommand's (the pages the top page names, rpcbench-run(1)
/// and the others).
pub fn man(args: &ManArgs, mut command: clap::Command) -> ExitCode {
    command.build();
    let page = match &args.subcommand {
        None => clap_mangen::Man::new(command),
        Some(name) => {
            let Some(sub) = command.find_subcommand(name) else {
                let names: Vec<&str> = command.get_subcommands().map(|sub| sub.get_name()).collect();
                return output::usage_error(format!(
                    "SUBCOMMAND: no subcommand '{name}' (subcommands: {})",
                    names.join(", ")
                ));
            };
            // The page's name and synopsis are `rpcbench-run`, as the top page refers to it (a
            // one-off string for the life of this short command).
            let title: &'static str = Box::leak(format!("rpcbench-{}", sub.get_name()).into_boxed_str());
            clap_mangen::Man::new(sub.clone().name(title).bin_name(title.replacen('-', " ", 1)))
        }
    };
    let mut out = Vec::new();
    match page.render(&mut out) {
        Ok(()) => output::print_raw(&out),
        Err(err) => output::failure(format!("cannot render the man page: {err}")),
    }
}
