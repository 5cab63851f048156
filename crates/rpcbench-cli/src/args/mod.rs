//! The low floor of the command line: what the user typed, one `clap::Args` group per concern
//! (what to send, load, length, HTTP and TLS, the run's whole flag set, monitoring, live
//! metrics, the head monitor, client caps), and the value parsers they share. Commands flatten
//! the groups they use; `plan` turns groups into the library's plan. Nothing here imports a
//! command or the plan.

use std::path::PathBuf;
use std::time::Duration;

pub mod caps;
pub mod format;
pub mod heads;
pub mod http;
pub mod load;
pub mod metrics;
pub mod monitor;
pub mod request;
pub mod run;
pub mod tls;
pub mod tx;

pub use http::{CheckArg, HttpArgs, OnRateLimitArg};
pub use load::{ArrivalsArg, LengthArgs, LoadArgs};
pub use request::{RequestArgs, ScenarioArgs};
pub use run::{OutputFormat, RunArgs};

pub fn duration(text: &str) -> Result<Duration, String> {
    rpcbench::parse_duration(text).map_err(|err| err.to_string())
}

pub(crate) fn size(text: &str) -> Result<u64, String> {
    rpcbench::parse_size(text).map_err(|err| err.to_string())
}

/// The value of `-o/--output FILE`: a file name, but not a bare format name (`-o json`), which
/// is refused with the flag to use instead.
pub fn output_file(text: &str) -> Result<PathBuf, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("expected a file name".to_string());
    }
    // A report format given to `-o` is a slip from the days when `-o` chose the format.
    let lowercase = trimmed.to_ascii_lowercase();
    if <format::Format as clap::ValueEnum>::value_variants().iter().any(|format| format.name() == lowercase) {
        return Err(format!(
            "'{trimmed}' is a format, and -o/--output names the file to write: use -f {trimmed} \
             for the format (or -o ./{trimmed} for a file of that name)"
        ));
    }
    Ok(PathBuf::from(text))
}

pub fn rate(text: &str) -> Result<f64, String> {
    rpcbench::parse_rate(text).map_err(|err| err.to_string())
}

/// `Name: value`, or `None`. Parsed after clap rather than by a value parser: clap echoes an
/// invalid value in its error, and a header is where API keys live.
pub fn header(text: &str) -> Option<(String, String)> {
    match text.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => {
            Some((name.trim().to_string(), value.trim().to_string()))
        }
        _ => None,
    }
}

/// `NAME=URL`, checked.
pub fn parse_targets(texts: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut targets: Vec<(String, String)> = Vec::new();
    for text in texts {
        let shown = rpcbench::redact_url(text);
        let Some((name, url)) =
            text.split_once('=').filter(|(name, _)| !name.is_empty() && !name.contains('/'))
        else {
            return Err(format!("target '{shown}': expected NAME=URL, such as fast=http://127.0.0.1:8899"));
        };
        if let Err(err) = rpcbench::engine::config::Target::parse(url) {
            return Err(format!("target '{name}': {}", err.message()));
        }
        if targets.iter().any(|(seen, _)| seen == name) {
            return Err(format!("target '{name}': the name is used twice"));
        }
        targets.push((name.to_string(), url.to_string()));
    }
    if targets.len() < 2 {
        return Err("NAME=URL: a comparison needs at least two targets".into());
    }
    Ok(targets)
}
