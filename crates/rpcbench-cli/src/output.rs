//! Writing to standard output and error: a closed pipe (`rpcbench … | head`) is not an error,
//! usage errors print one line naming the flag at fault, and control characters (which a
//! server's answer may carry into a report or an error) are written as visible escapes.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use crate::fields::ConfigError;
use rpcbench::escape_controls;
use rpcbench::results::write_atomically;

/// Exit status for bad usage (as clap uses).
pub const EXIT_USAGE: u8 = 2;
/// Exit status for a failure at run time.
pub const EXIT_FAILURE: u8 = 1;

/// Writes the text to standard output, control characters but line feeds escaped; a broken
/// pipe is success.
pub fn print_stdout(text: &str) -> ExitCode {
    let text = escape_controls(text);
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: cannot write the report: {err}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// Writes bytes to standard output as they are (a completion script, a man page); a broken
/// pipe is success.
pub fn print_raw(bytes: &[u8]) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: cannot write to standard output: {err}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// Prints a usage error and returns the usage exit status.
pub fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {}", escape_controls(&message.to_string()));
    ExitCode::from(EXIT_USAGE)
}

/// Prints a run-time error and returns the failure exit status.
pub fn failure(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {}", escape_controls(&message.to_string()));
    ExitCode::from(EXIT_FAILURE)
}

/// Prints a command-line parsing error with URLs and keys it quotes redacted (clap echoes the
/// arguments it rejects), and returns clap's exit status. Help and version print as usual.
pub fn clap_error(err: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => err.exit(),
        _ => {
            let rendered = err.render().to_string();
            eprint!("{}", rpcbench::redact_text(&rendered));
            ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(EXIT_USAGE))
        }
    }
}

/// Writes `text` to `out` atomically, or to standard output (no `out`, or `-`), control
/// characters escaped.
pub fn emit(text: &str, out: Option<&Path>, quiet: bool) -> ExitCode {
    match out {
        None => print_stdout(text),
        Some(path) if is_stdout(path) => print_stdout(text),
        Some(path) => match write_atomically(path, rpcbench::escape_controls(text).as_bytes()) {
            Ok(()) => {
                if !quiet {
                    eprintln!("rpcbench: wrote {}", path.display());
                }
                ExitCode::SUCCESS
            }
            Err(err) => failure(format!("cannot write {}: {err}", path.display())),
        },
    }
}

/// Writes a file made whole (`merge -o FILE`), or to standard output for `-`; a broken pipe is
/// success there. The error names the file.
pub fn write_file_or_stdout(path: &Path, text: &str) -> Result<(), String> {
    if is_stdout(path) {
        let mut stdout = std::io::stdout().lock();
        return match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
            Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(format!("cannot write to standard output: {err}"))
            }
            _ => Ok(()),
        };
    }
    write_atomically(path, text.as_bytes()).map_err(|err| format!("cannot write {}: {err}", path.display()))
}

/// How an output path is named in a message: `standard output` for `-`.
pub fn output_name(path: &Path) -> String {
    if is_stdout(path) {
        "standard output".to_string()
    } else {
        path.display().to_string()
    }
}

/// Whether an output path is `-`: standard output, as the tools users know take it.
fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Checks, before a run, that `flag` (`--save`, `--output`) can write `path`: its folder exists
/// and it is not a folder itself (a run of minutes must not end in "cannot save").
pub fn check_file_path(flag: &str, path: &std::path::Path) -> Result<(), ConfigError> {
    if flag == "--output" && is_stdout(path) {
        return Ok(());
    }
    let flag = format!("{flag} {}", path.display());
    if path.is_dir() {
        return Err(ConfigError::new(flag, "is a folder"));
    }
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => std::path::Path::new("."),
    };
    if !folder.is_dir() {
        return Err(ConfigError::new(flag, format!("the folder {} does not exist", folder.display())));
    }
    Ok(())
}
