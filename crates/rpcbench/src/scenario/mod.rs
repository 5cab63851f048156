//! Scenario files: a workload described once in TOML and run anywhere with
//! `rpcbench run scenario.toml`. A scenario names the target, the load, a weighted mix of
//! calls whose params may refer to named generators (`"{slot}"`), and thresholds. Every key
//! is checked: an unknown key or a bad value is reported as `file:line:col: message`.
//!
//! ```toml
//! [target]
//! url = "http://127.0.0.1:8899"
//!
//! [load]
//! connections = 64
//! duration = "10s"
//!
//! [generators]
//! slot = { range = [1000, 2000] }
//!
//! [[call]]
//! method = "getBlock"
//! params = ["{slot}", { encoding = "json", transactionDetails = "full" }]
//! weight = 3
//!
//! [[call]]
//! method = "getSlot"
//!
//! thresholds = ["p99 < 500ms", "errors < 0.1%", "getBlock: p99 < 800ms"]
//! ```
//! (`thresholds` goes before the first table in a real file, as TOML requires.)
//!
//! Instead of `[target] url`, a scenario may list several targets; `[target]` then holds
//! the settings they share (timeouts, TLS, headers). The scenario runs against each in turn
//! with the same load and the same parameter sequence, a cool-down between (`[load]
//! cooldown`), and the first is the baseline of the comparison:
//!
//! ```toml
//! [[targets]]
//! name = "agave"
//! url = "http://127.0.0.1:8899"
//!
//! [[targets]]
//! name = "relay"
//! url = "http://127.0.0.1:8900"
//! headers = { "x-api-key" = "..." }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use toml::Spanned;

use crate::engine::config::{Arrivals, Length, Load, RunConfig, Target, TlsOptions};
use crate::engine::stages::Stage;
use crate::jsonrpc::CheckMode;
use crate::plan::sample::{Pools, SampleChain, SampleOptions, ETHEREUM_POOLS, SOLANA_POOLS};
use crate::settings::HeaderProblem;
use crate::thresholds::Threshold;
use crate::transport::HttpMethod;
use crate::util::units::{parse_duration, parse_rate, parse_size};
use crate::workload::{Call, Generator, HttpBody, HttpRequestSpec, ParamValue, TemplatePiece, Workload};

mod calls;
mod place;
mod resolve;
mod schema;
#[cfg(test)]
mod tests;

use calls::*;
use resolve::error_at;
use schema::*;

pub use place::key_of;

/// A scenario file that cannot be used: where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line (0 when the whole file is at fault).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path.display(), self.message)
        } else {
            write!(f, "{}:{}:{}: {}", self.path.display(), self.line, self.column, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

/// A loaded scenario: the run's configuration (not yet validated, so that command-line flags can
/// override it first) and its thresholds.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The configuration the file describes, bound to its first target.
    pub config: RunConfig,
    /// Conditions the run must meet (against each target).
    pub thresholds: Vec<Threshold>,
    /// Every target, in the file's order: the first is the one in `config` and the baseline of
    /// comparisons. A file with a single `[target] url` has one, named after its host.
    pub targets: Vec<ScenarioTarget>,
    /// Pause between two targets' runs.
    pub cooldown: Duration,
    /// How many of `config.headers` are `[target] headers`, shared by every target (the rest
    /// are the first target's own).
    shared_headers: usize,
    /// Calls left out because a pool they draw from is empty on this node.
    pub left_out: Vec<LeftOutCall>,
}

/// A `[[call]]` left out of the mix because a pool it draws from is empty on the sampled node
/// (a young dev chain has no transactions, a node without contracts no tokens): the other calls
/// run, and this is said on stderr and in no figure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOutCall {
    /// The call's name (`name`, else its method or HTTP request line).
    pub call: String,
    /// The generator it draws on.
    pub generator: String,
    /// The empty pool.
    pub pool: String,
    /// The chain and the blocks (or slots) sampled, e.g. `ethereum blocks 0..=0`.
    pub sampled: String,
}

impl fmt::Display for LeftOutCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "call '{}' left out: its generator '{}' draws from pool '{}', which is empty: the node had none in {}",
            self.call, self.generator, self.pool, self.sampled
        )
    }
}

/// One target of a scenario: a name, the URL and the headers added for it alone.
#[derive(Debug, Clone)]
pub struct ScenarioTarget {
    /// The name shown in comparisons.
    pub name: String,
    /// Where to send the requests.
    pub target: Target,
    /// Headers for this target, on top of `[target] headers`.
    pub headers: Vec<(String, String)>,
}

/// The pause between two targets' runs when the scenario does not give one.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(1);

impl Scenario {
    /// The run against each target: the scenario's configuration with the target's URL and
    /// headers. The first is [`Scenario::config`] itself.
    pub fn configs(&self) -> Vec<(String, RunConfig)> {
        self.targets
            .iter()
            .map(|target| {
                let mut config = self.config.clone();
                config.target = target.target.clone();
                config.headers.truncate(self.shared_headers);
                config.headers.extend(target.headers.iter().cloned());
                (target.name.clone(), config)
            })
            .collect()
    }
}

/// What [`ScenarioDraft::pools_needed`] lists when a generator is relative to the head.
pub const HEAD: &str = "head";

/// Turns a byte offset into a 1-based line and a 1-based column counted in characters.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    (line, before[line_start..].chars().count() + 1)
}

impl Scenario {
    /// Reads and checks a scenario file (one whose generators draw on no pools).
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        ScenarioDraft::load(path)?.resolve(None, None)
    }

    /// Checks a scenario's text; `path` names it in errors. A scenario whose generators draw
    /// from pools needs [`ScenarioDraft::resolve`] with the pools instead.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ScenarioError> {
        ScenarioDraft::parse(text, path)?.resolve(None, None)
    }
}

/// A scenario read and checked but not yet bound to a URL and to sampled pools: it says which
/// pools it needs ([`ScenarioDraft::pools_needed`]) and how to sample them, and
/// [`ScenarioDraft::resolve`] turns it into a [`Scenario`]. Reading stays pure: sampling or
/// reading a pools file is the caller's business (see [`crate::plan::prepare`]).
#[derive(Debug)]
pub struct ScenarioDraft {
    text: String,
    path: PathBuf,
    file: File,
}

impl ScenarioDraft {
    /// Reads and checks a scenario file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text =
            crate::util::files::read_text_limited(path, crate::util::files::MAX_SCENARIO).map_err(|err| {
                ScenarioError {
                    path: path.to_path_buf(),
                    line: 0,
                    column: 0,
                    message: format!("cannot read the scenario: {err}"),
                }
            })?;
        Self::parse(&text, path)
    }

    /// Checks a scenario's text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ScenarioError> {
        let draft = Self {
            text: text.to_string(),
            path: path.to_path_buf(),
            file: toml::from_str(text).map_err(|err| {
                let span = err.span().unwrap_or(0..0);
                error_at(text, path, span, err.message().trim().to_string())
            })?,
        };
        let chain = draft.sample_chain()?;
        let known: Vec<&str> = match chain {
            Some(chain) => chain.pools().to_vec(),
            None => ETHEREUM_POOLS.iter().chain(SOLANA_POOLS).copied().collect(),
        };
        for (name, spec) in &draft.file.generators {
            if let Some((text, _)) = spec.get_ref().head_range() {
                parse_head_range(text)
                    .map_err(|message| draft.at(spec.span(), format!("generator '{name}': {message}")))?;
            }
            if let Some(pool) = &spec.get_ref().pool {
                if !known.contains(&pool.as_str()) {
                    return Err(draft.at(
                        spec.span(),
                        format!("generator '{name}': no pool named '{pool}' (pools: {})", known.join(", ")),
                    ));
                }
            }
        }
        Ok(draft)
    }

    /// `[source] replay`: the file read (relative to the scenario's folder); its errors name
    /// the replayed file's own place, or the key's when the file cannot be read at all.
    fn replay_source(&self) -> Result<Option<crate::replay::ReadReplay>, ScenarioError> {
        use crate::replay::ReplayFormat;
        let Some(source) = &self.file.source else { return Ok(None) };
        let source = source.get_ref();
        let format = match source.from.as_ref() {
            None => None,
            Some(from) => Some(match from.get_ref().as_str() {
                "traffic" => ReplayFormat::Traffic,
                "vegeta" => ReplayFormat::Vegeta,
                "bodies" => ReplayFormat::Bodies,
                other => {
                    return Err(
                        self.at(from.span(), format!("from: '{other}' is not traffic, vegeta or bodies"))
                    )
                }
            }),
        };
        let folder = self.path.parent().unwrap_or(Path::new("."));
        let path = folder.join(source.replay.get_ref());
        let bad_lines = match source.skip_bad_lines {
            true => crate::traffic::BadLines::Skip,
            false => crate::traffic::BadLines::Refuse,
        };
        crate::replay::read_file(&path, format, bad_lines, &[]).map(Some).map_err(|err| match err {
            crate::replay::ReplayError::Line { path, line, column, message } => {
                ScenarioError { path, line, column, message }
            }
            other => self.at(source.replay.span(), format!("replay: {other}")),
        })
    }

    fn at(&self, span: Range<usize>, message: String) -> ScenarioError {
        error_at(&self.text, &self.path, span, message)
    }

    /// The URL the file gives (the first of `[[targets]]`), if any.
    pub fn url(&self) -> Option<&str> {
        match self.file.targets.first() {
            Some(entry) => Some(entry.get_ref().url.get_ref().as_str()),
            None => self.file.target.url.as_ref().map(|url| url.get_ref().as_str()),
        }
    }

    /// How many targets the file names.
    pub fn target_count(&self) -> usize {
        self.file.targets.len().max(1)
    }

    /// The file this scenario comes from (a name such as `suite:solana-rpc` for built-ins).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pools the generators draw from (sampling is needed only when this is not empty).
    pub fn pools_needed(&self) -> Vec<String> {
        let mut names: std::collections::BTreeSet<String> =
            self.file.generators.values().filter_map(|spec| spec.get_ref().pool.clone()).collect();
        if self.file.generators.values().any(|spec| spec.get_ref().head_range().is_some()) {
            // Not a pool: the head itself, which sampling finds.
            names.insert(HEAD.to_string());
        }
        names.into_iter().collect()
    }

    fn sample_chain(&self) -> Result<Option<SampleChain>, ScenarioError> {
        match self.file.sample.as_ref().and_then(|sample| sample.get_ref().chain.as_ref()) {
            Some(chain) => {
                chain.get_ref().parse().map(Some).map_err(|message| self.at(chain.span(), message))
            }
            None => Ok(None),
        }
    }

    /// How to sample, from `[sample]` (the chain is detected when not given).
    pub fn sample_options(&self) -> Result<SampleOptions, ScenarioError> {
        let mut options = SampleOptions { chain: self.sample_chain()?, ..SampleOptions::default() };
        if let Some(sample) = &self.file.sample {
            if let Some(window) = sample.get_ref().window {
                options.window = window.0;
            }
            if let Some(timeout) = sample.get_ref().timeout {
                options.timeout = timeout.0;
            }
        }
        Ok(options)
    }

    /// The pools file `[sample] cache` names, relative to the scenario's directory.
    pub fn cache(&self) -> Option<PathBuf> {
        let cache = self.file.sample.as_ref()?.get_ref().cache.clone()?;
        Some(match self.path.parent() {
            Some(dir) if cache.is_relative() => dir.join(cache),
            _ => cache,
        })
    }
}
