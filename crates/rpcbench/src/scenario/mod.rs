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

use std::collections::BTreeMap;
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
use crate::sample::{Pools, SampleChain, SampleOptions, ETHEREUM_POOLS, SOLANA_POOLS};
use crate::settings::HeaderProblem;
use crate::thresholds::Threshold;
use crate::transport::HttpMethod;
use crate::units::{parse_duration, parse_rate, parse_size};
use crate::workload::{Call, Generator, HttpBody, HttpRequestSpec, ParamValue, TemplatePiece, Workload};

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

/// A duration written as a string (`"10s"`), checked while the file is read.
#[derive(Debug, Clone, Copy)]
struct DurationValue(Duration);

impl<'de> Deserialize<'de> for DurationValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_duration(&text).map(DurationValue).map_err(D::Error::custom)
    }
}

/// A rate: a number or a string such as `"50/s"`.
#[derive(Debug, Clone, Copy)]
struct RateValue(f64);

impl<'de> Deserialize<'de> for RateValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        let text = match Raw::deserialize(deserializer)? {
            Raw::Number(number) => number.to_string(),
            Raw::Text(text) => text,
        };
        parse_rate(&text).map(RateValue).map_err(D::Error::custom)
    }
}

/// A byte size written as a string (`"10MB"`) or a number.
#[derive(Debug, Clone, Copy)]
struct SizeValue(u64);

impl<'de> Deserialize<'de> for SizeValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Number(number) => Ok(SizeValue(number)),
            Raw::Text(text) => parse_size(&text).map(SizeValue).map_err(D::Error::custom),
        }
    }
}

/// A count that must be at least one.
#[derive(Debug, Clone, Copy)]
struct Positive(u64);

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = u64::deserialize(deserializer)?;
        if value == 0 {
            return Err(D::Error::custom("must be at least 1"));
        }
        Ok(Positive(value))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    thresholds: Vec<Spanned<String>>,
    #[serde(default)]
    target: TargetSection,
    /// Several targets, each run in turn with the same load and parameters.
    #[serde(default)]
    targets: Vec<Spanned<TargetEntry>>,
    #[serde(default)]
    sample: Option<Spanned<SampleSection>>,
    #[serde(default)]
    load: LoadSection,
    #[serde(default)]
    generators: BTreeMap<String, Spanned<GeneratorSpec>>,
    #[serde(default, rename = "call")]
    calls: Option<Spanned<Vec<CallSection>>>,
    /// Recorded requests to replay instead of a mix of calls.
    #[serde(default)]
    source: Option<Spanned<SourceSection>>,
    #[serde(default, rename = "stage")]
    stages: Vec<Spanned<StageSection>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StageSection {
    connections: Option<u64>,
    rate: Option<RateValue>,
    duration: DurationValue,
    #[serde(default)]
    ramp: Option<DurationValue>,
}

/// `[sample]`: how pools are filled from the target.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SampleSection {
    chain: Option<Spanned<String>>,
    cache: Option<PathBuf>,
    window: Option<Positive>,
    timeout: Option<DurationValue>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetSection {
    url: Option<Spanned<String>>,
    headers: Option<Spanned<BTreeMap<String, String>>>,
    timeout: Option<DurationValue>,
    connect_timeout: Option<DurationValue>,
    keepalive: Option<bool>,
    insecure: Option<bool>,
    cacert: Option<PathBuf>,
    max_body: Option<SizeValue>,
    check: Option<CheckValue>,
    fixed_id: Option<u64>,
}

/// `[[targets]]`: one of several targets. Transport settings come from `[target]`; headers
/// are added to `[target]`'s.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetEntry {
    name: Option<Spanned<String>>,
    url: Spanned<String>,
    headers: Option<Spanned<BTreeMap<String, String>>>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum CheckValue {
    Scan,
    Full,
}

/// `[source]`: a file of requests replayed instead of a mix (`rpcbench replay`'s options).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceSection {
    /// The file, relative to the scenario file.
    replay: Spanned<PathBuf>,
    /// `traffic`, `vegeta` or `bodies` (default: told by its first line).
    from: Option<Spanned<String>>,
    /// The recorded pace times this factor (`"2x"`, 0.5).
    speed: Option<Spanned<SpeedValue>>,
    /// Start again at the end.
    #[serde(default, rename = "loop")]
    looped: bool,
    /// Compare each answer's digest with the recorded one.
    #[serde(default)]
    check_responses: bool,
    /// Skip lines that do not parse.
    #[serde(default)]
    skip_bad_lines: bool,
}

/// A replay speed written as `"2x"`, `"0.5x"` or a number: a positive factor.
#[derive(Debug, Clone, Copy)]
struct SpeedValue(f64);

impl<'de> Deserialize<'de> for SpeedValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        let value = match Raw::deserialize(deserializer)? {
            Raw::Number(number) => Some(number),
            Raw::Text(text) => text.trim().trim_end_matches(['x', 'X']).parse::<f64>().ok(),
        };
        match value {
            Some(speed) if speed.is_finite() && speed > 0.0 => Ok(SpeedValue(speed)),
            _ => Err(D::Error::custom("speed: must be a positive factor such as 0.5x, 1x or 2x")),
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum ArrivalsValue {
    Uniform,
    Poisson,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadSection {
    connections: Option<Spanned<Positive>>,
    rate: Option<Spanned<RateValue>>,
    arrivals: Option<ArrivalsValue>,
    max_connections: Option<Positive>,
    duration: Option<DurationValue>,
    requests: Option<Positive>,
    warmup: Option<DurationValue>,
    seed: Option<u64>,
    threads: Option<Positive>,
    /// Pause between two targets' runs.
    cooldown: Option<DurationValue>,
    /// JSON-RPC calls per HTTP request (a batch).
    batch: Option<Spanned<u64>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct GeneratorSpec {
    range: Option<[u64; 2]>,
    hex_range: Option<[u64; 2]>,
    choice: Option<Vec<toml::Value>>,
    random_hex: Option<usize>,
    random_base58: Option<usize>,
    pool: Option<String>,
    /// Block numbers or slots relative to the sampled head: `"head-1000..head"`.
    head: Option<String>,
    /// The same written as `0x` hex quantities (Ethereum block numbers).
    head_hex: Option<String>,
}

impl GeneratorSpec {
    /// The head-relative range, if this generator has one: (text, written as hex).
    fn head_range(&self) -> Option<(&str, bool)> {
        match (&self.head, &self.head_hex) {
            (Some(text), None) => Some((text, false)),
            (None, Some(text)) => Some((text, true)),
            _ => None,
        }
    }
}

/// Parses `head-N..head-M` (either end may be plain `head`) into the offsets back from the
/// head of the low and the high end.
fn parse_head_range(text: &str) -> Result<(u64, u64), String> {
    let expected = || format!("'{text}': expected a range relative to the head such as \"head-1000..head\"");
    let offset = |end: &str| -> Result<u64, String> {
        let end = end.trim();
        if end == "head" {
            return Ok(0);
        }
        let back = end
            .strip_prefix("head")
            .map(str::trim)
            .and_then(|rest| rest.strip_prefix('-'))
            .ok_or_else(expected)?;
        back.trim().parse::<u64>().map_err(|_| expected())
    };
    let (low, high) = text.split_once("..").ok_or_else(expected)?;
    let (low, high) = (offset(low)?, offset(high)?);
    if low < high {
        return Err(format!("'{text}': the range is empty (its start is after its end)"));
    }
    Ok((low, high))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallSection {
    name: Option<String>,
    /// A JSON-RPC call's method.
    method: Option<Spanned<String>>,
    params: Option<Spanned<toml::Value>>,
    weight: Option<Spanned<u32>>,
    /// A plain HTTP call instead: `"GET /block/{block}"`.
    http: Option<Spanned<String>>,
    /// An HTTP call's body: a string (text, `{generator}` replaced) or a table/array (JSON).
    body: Option<Spanned<toml::Value>>,
    /// An HTTP call's own headers.
    headers: Option<Spanned<BTreeMap<String, String>>>,
    /// `"json"`: a 2xx answer must carry JSON.
    expect: Option<Spanned<String>>,
}

/// Turns a byte offset into a 1-based line and column.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(offset, |newline| offset - newline - 1) + 1;
    (line, column)
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
/// reading a pools file is the caller's business (see [`crate::prepare`]).
#[derive(Debug)]
pub struct ScenarioDraft {
    text: String,
    path: PathBuf,
    file: File,
}

impl ScenarioDraft {
    /// Reads and checks a scenario file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = crate::files::read_text_limited(path, crate::files::MAX_SCENARIO).map_err(|err| {
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
        crate::replay::read_file(&path, format, bad_lines, &[]).map(Some).map_err(|err| {
            match err.place.rsplit_once(':').and_then(|(rest, column)| {
                let (file, line) = rest.rsplit_once(':')?;
                Some((file.to_string(), line.parse::<usize>().ok()?, column.parse::<usize>().ok()?))
            }) {
                Some((file, line, column)) => {
                    ScenarioError { path: PathBuf::from(file), line, column, message: err.message }
                }
                None => self.at(source.replay.span(), format!("replay: {}: {}", err.place, err.message)),
            }
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

    /// Builds the scenario: `url` replaces the file's (one of them is needed), `pools` feeds
    /// the generators that draw from pools.
    pub fn resolve(&self, url: Option<&str>, pools: Option<&Pools>) -> Result<Scenario, ScenarioError> {
        let text = self.text.as_str();
        let file = &self.file;
        let at = |span: Range<usize>, message: String| self.at(span, message);

        let targets = self.targets(url)?;
        let target = targets[0].target.clone();
        let mut generators = BTreeMap::new();
        for (name, spec) in &file.generators {
            let built = match (&spec.get_ref().pool, spec.get_ref().head_range()) {
                (Some(pool), _) => pool_generator(name, pool, spec.get_ref(), pools),
                (None, Some((text, hex))) => {
                    let window = self.sample_options().map(|options| options.window).unwrap_or(u64::MAX);
                    head_generator(name, text, hex, spec.get_ref(), pools, window)
                }
                (None, None) => generator(name, spec.get_ref()),
            };
            generators.insert(name.clone(), built.map_err(|message| at(spec.span(), message))?);
        }

        let mut replay = self.replay_source()?;
        let workload = match (&replay, &file.calls) {
            (Some(_), Some(calls)) => {
                return Err(at(
                    calls.span(),
                    "a scenario with [source] replay sends the recorded requests: no [[call]]".into(),
                ))
            }
            (Some(read), None) => read.replay.workload(),
            (None, Some(calls)) if !calls.get_ref().is_empty() => {
                let mut built = Vec::new();
                for call in calls.get_ref() {
                    built.push(self.build_call(call, &generators)?);
                }
                Workload::new(built).map_err(|err| at(calls.span(), err.0))?
            }
            (None, calls) => {
                let span = calls.as_ref().map_or(0..0, Spanned::span);
                return Err(at(span, "a scenario needs at least one [[call]] (or a [source] replay)".into()));
            }
        };

        let mut config = RunConfig::new(target, workload);
        let section = &file.target;
        config.headers = self.checked_headers(&section.headers)?;
        let shared_headers = config.headers.len();
        config.headers.extend(targets[0].headers.iter().cloned());
        if let Some(timeout) = section.timeout {
            config.timeout = timeout.0;
        }
        if let Some(timeout) = section.connect_timeout {
            config.connect_timeout = timeout.0;
        }
        config.keepalive = section.keepalive.unwrap_or(true);
        config.tls =
            TlsOptions { insecure: section.insecure.unwrap_or(false), ca_file: section.cacert.clone() };
        if let Some(max_body) = section.max_body {
            config.max_body = max_body.0;
        }
        config.fixed_id = section.fixed_id;
        config.check = match section.check {
            Some(CheckValue::Full) => CheckMode::Full,
            _ => CheckMode::Scan,
        };

        let load = &file.load;
        config.load = match (&load.connections, &load.rate) {
            (Some(connections), Some(_)) if load.max_connections.is_some() => {
                return Err(at(
                    connections.span(),
                    "with a rate, give connections (opened at the start and held) or max_connections (opened as the rate needs), not both".into(),
                ))
            }
            (Some(connections), Some(rate)) => {
                // As wrk2 -c N -R R: N connections opened at the start, the rate paced across them.
                config.hold_connections = true;
                Load::Open {
                    rate: rate.get_ref().0,
                    arrivals: match load.arrivals {
                        Some(ArrivalsValue::Poisson) => Arrivals::Poisson,
                        _ => Arrivals::Uniform,
                    },
                    max_connections: connections.get_ref().0 as usize,
                }
            }
            (_, Some(rate)) => Load::Open {
                rate: rate.get_ref().0,
                arrivals: match load.arrivals {
                    Some(ArrivalsValue::Poisson) => Arrivals::Poisson,
                    _ => Arrivals::Uniform,
                },
                max_connections: load.max_connections.map_or(1024, |m| m.0 as usize),
            },
            (connections, None) => {
                Load::Closed { connections: connections.as_ref().map_or(50, |c| c.get_ref().0 as usize) }
            }
        };
        if !file.stages.is_empty() {
            let first = &file.stages[0];
            let open = first.get_ref().rate.is_some();
            if let Some(level) =
                load.connections.as_ref().map(Spanned::span).or(load.rate.as_ref().map(Spanned::span))
            {
                return Err(at(level, "with [[stage]] tables, give the load's levels in the stages".into()));
            }
            let mut stages = Vec::new();
            for stage in &file.stages {
                let section = stage.get_ref();
                let level = match (section.connections, section.rate, open) {
                    (Some(connections), None, false) => connections as f64,
                    (None, Some(rate), true) => rate.0,
                    (None, None, _) => return Err(at(stage.span(), "a stage needs connections or rate".into())),
                    _ => {
                        return Err(at(
                            stage.span(),
                            "every stage gives the same kind of level: connections (closed loop) or rate (open loop)"
                                .into(),
                        ))
                    }
                };
                let ramp = section.ramp.map_or(Duration::ZERO, |ramp| ramp.0);
                if ramp > section.duration.0 {
                    return Err(at(stage.span(), "the ramp must fit in the stage's duration".into()));
                }
                stages.push(Stage { level, duration: section.duration.0, ramp });
            }
            let most = stages.iter().map(|stage| stage.level).fold(0.0, f64::max);
            config.load = match config.load {
                Load::Open { arrivals, max_connections, .. } => {
                    Load::Open { rate: most, arrivals, max_connections }
                }
                Load::Closed { .. } if open => Load::Open {
                    rate: most,
                    arrivals: match load.arrivals {
                        Some(ArrivalsValue::Poisson) => Arrivals::Poisson,
                        _ => Arrivals::Uniform,
                    },
                    max_connections: load.max_connections.map_or(1024, |m| m.0 as usize),
                },
                Load::Closed { .. } => Load::Closed { connections: (most.ceil() as usize).max(1) },
            };
            config.stages = stages;
            if load.duration.is_some() {
                return Err(at(
                    find_key(text, "duration"),
                    "with [[stage]] tables the run lasts as long as its stages".into(),
                ));
            }
        }
        config.length = match (load.duration, load.requests) {
            _ if !config.stages.is_empty() => Length { duration: None, requests: load.requests.map(|r| r.0) },
            (None, None) => Length { duration: Some(Duration::from_secs(10)), requests: None },
            (duration, requests) => {
                Length { duration: duration.map(|d| d.0), requests: requests.map(|r| r.0) }
            }
        };
        if let Some(warmup) = load.warmup {
            config.warmup = warmup.0;
        }
        if let Some(seed) = load.seed {
            config.seed = seed;
        }
        if let Some(threads) = load.threads {
            config.threads = threads.0 as usize;
        }
        if let Some(batch) = &load.batch {
            let most = crate::protocol::batch::MAX_BATCH as u64;
            if *batch.get_ref() == 0 || *batch.get_ref() > most {
                return Err(at(batch.span(), format!("batch: must be from 1 to {most} calls")));
            }
            if config.workload.has_http_calls() && *batch.get_ref() > 1 {
                return Err(at(batch.span(), "batch: batches carry JSON-RPC calls, not HTTP calls".into()));
            }
            config.batch = *batch.get_ref() as usize;
        }

        let thresholds = file
            .thresholds
            .iter()
            .map(|spanned| {
                Threshold::parse(spanned.get_ref()).map_err(|err| {
                    // Point inside the string: past the opening quote, at the offset of the fault.
                    let start = spanned.span().start + 1 + err.offset;
                    at(start..start, format!("threshold: {}", err.message))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let (Some(read), Some(source)) = (replay.take(), &file.source) {
            let source = source.get_ref();
            let mut replay = read.replay;
            replay.check_responses = source.check_responses;
            if replay.check_responses && replay.entries().iter().all(|entry| entry.digest.is_none()) {
                return Err(at(
                    find_key(text, "check_responses"),
                    "check_responses: this file has no recorded responses (only a traffic file has)".into(),
                ));
            }
            replay.set_looped(source.looped);
            let load_key = match (&load.rate, &load.connections) {
                (Some(_), _) => Some("[load] rate"),
                (_, Some(_)) => Some("[load] connections"),
                _ => None,
            };
            let speed_span = source.speed.as_ref().map_or(source.replay.span(), Spanned::span);
            replay
                .pace(source.speed.as_ref().map(|speed| speed.get_ref().0), load_key)
                .map_err(|err| at(speed_span, format!("speed: {}", err.message)))?;
            if !file.stages.is_empty() {
                return Err(at(file.stages[0].span(), "a replay has no [[stage]] tables".into()));
            }
            let (duration, requests) = (load.duration, load.requests);
            let load = config.load.clone();
            let mut replayed = RunConfig::for_replay(replay, config.target.clone());
            if load_key.is_some() {
                replayed.load = load;
            }
            if duration.is_some() || requests.is_some() {
                replayed.length = config.length;
            }
            replayed.bound_to_one_pass();
            config.load = replayed.load;
            config.length = replayed.length;
            config.replay = replayed.replay;
        }
        let cooldown = load.cooldown.map_or(DEFAULT_COOLDOWN, |cooldown| cooldown.0);
        Ok(Scenario { config, thresholds, targets, cooldown, shared_headers })
    }

    /// The targets: `url` (from the command line) replaces the file's; otherwise `[target] url`
    /// or the `[[targets]]` list, one of which is needed.
    fn targets(&self, url: Option<&str>) -> Result<Vec<ScenarioTarget>, ScenarioError> {
        let file = &self.file;
        let whole_file = |message: &str| ScenarioError {
            path: self.path.clone(),
            line: 0,
            column: 0,
            message: message.to_string(),
        };
        if let (Some(single), Some(_)) = (&file.target.url, file.targets.first()) {
            return Err(self.at(
                single.span(),
                "give the URL either as [target] url or in [[targets]], not both".into(),
            ));
        }
        if let Some(url) = url {
            let target = Target::parse(url).map_err(|err| whole_file(&format!("URL: {}", err.message())))?;
            return Ok(vec![ScenarioTarget {
                name: default_target_name(&target),
                target,
                headers: Vec::new(),
            }]);
        }
        if let Some(url) = &file.target.url {
            let target = Target::parse(url.get_ref()).map_err(|err| self.at(url.span(), err.message()))?;
            return Ok(vec![ScenarioTarget {
                name: default_target_name(&target),
                target,
                headers: Vec::new(),
            }]);
        }
        if file.targets.is_empty() {
            return Err(whole_file(
                "no URL: give one on the command line, as [target] url or as [[targets]] in the scenario",
            ));
        }
        let mut targets: Vec<ScenarioTarget> = Vec::with_capacity(file.targets.len());
        for entry in &file.targets {
            let entry_ref = entry.get_ref();
            let target = Target::parse(entry_ref.url.get_ref())
                .map_err(|err| self.at(entry_ref.url.span(), err.message()))?;
            let (name, span) = match &entry_ref.name {
                Some(name) if name.get_ref().trim().is_empty() => {
                    return Err(self.at(name.span(), "a target's name cannot be empty".into()))
                }
                Some(name) => (name.get_ref().clone(), name.span()),
                None => (default_target_name(&target), entry.span()),
            };
            if targets.iter().any(|seen| seen.name == name) {
                return Err(self.at(
                    span,
                    format!("two targets are named '{name}': give each [[targets]] a distinct name"),
                ));
            }
            let headers = self.checked_headers(&entry_ref.headers)?;
            targets.push(ScenarioTarget { name, target, headers });
        }
        Ok(targets)
    }
}

impl ScenarioDraft {
    /// A `headers` table as (name, value) pairs, each checked as the run checks `-H` headers,
    /// a bad one named at its place in the file (not as the CLI's `--header`).
    fn checked_headers(
        &self,
        headers: &Option<Spanned<BTreeMap<String, String>>>,
    ) -> Result<Vec<(String, String)>, ScenarioError> {
        let Some(headers) = headers else { return Ok(Vec::new()) };
        for (name, value) in headers.get_ref() {
            let (valid_name, problem) = match crate::settings::header_problem(name, value) {
                None => (true, None),
                Some(HeaderProblem::BadName) => {
                    (false, Some("is not a valid header name (visible ASCII characters other than ':')"))
                }
                Some(HeaderProblem::LineBreak) => (true, Some("has a line break in its value")),
                Some(HeaderProblem::SetByRpcbench) => (true, Some("is set by rpcbench")),
            };
            if let Some(problem) = problem {
                let shown = if valid_name { name.as_str() } else { "(not shown: it may hold a secret)" };
                return Err(self.at(headers.span(), format!("header '{shown}' {problem}")));
            }
        }
        Ok(headers.get_ref().iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }
}

/// A target's name when the file gives none: its host and port (never the path, which may
/// hold a key).
fn default_target_name(target: &Target) -> String {
    format!("{}:{}", target.host, target.port)
}

fn error_at(text: &str, path: &Path, span: Range<usize>, message: String) -> ScenarioError {
    let (line, column) = if span == (0..0) && text.is_empty() { (0, 0) } else { line_col(text, span.start) };
    ScenarioError { path: path.to_path_buf(), line, column, message }
}

/// What [`ScenarioDraft::pools_needed`] lists when a generator is relative to the head.
pub const HEAD: &str = "head";

/// A generator of block numbers or slots relative to the sampled head.
fn head_generator(
    name: &str,
    text: &str,
    hex: bool,
    spec: &GeneratorSpec,
    pools: Option<&Pools>,
    window: u64,
) -> Result<Generator, String> {
    let others = [spec.range.is_some(), spec.hex_range.is_some(), spec.choice.is_some()]
        .into_iter()
        .chain([spec.random_hex.is_some(), spec.random_base58.is_some()])
        .filter(|&given| given)
        .count();
    if others > 0 {
        return Err(format!("generator '{name}' has more than one kind; give exactly one"));
    }
    let (back_low, back_high) =
        parse_head_range(text).map_err(|message| format!("generator '{name}': {message}"))?;
    let Some(pools) = pools else {
        return Err(format!("generator '{name}' is relative to the head, but the target was not sampled"));
    };
    // A sample that stopped short of its window met the start of the node's history (a pruned
    // node): the range shrinks to what the node has. A full window says nothing of older blocks.
    let sampled = pools.head.saturating_sub(pools.oldest).saturating_add(1);
    let floor = if sampled < window { pools.oldest.min(pools.head) } else { 0 };
    let low = pools.head.saturating_sub(back_low).max(floor);
    let high = pools.head.saturating_sub(back_high).max(low);
    Ok(if hex { Generator::HexQuantityRange { low, high } } else { Generator::IntRange { low, high } })
}

/// A generator drawing uniformly from a sampled pool.
fn pool_generator(
    name: &str,
    pool: &str,
    spec: &GeneratorSpec,
    pools: Option<&Pools>,
) -> Result<Generator, String> {
    if spec.range.is_some()
        || spec.hex_range.is_some()
        || spec.choice.is_some()
        || spec.random_hex.is_some()
        || spec.random_base58.is_some()
    {
        return Err(format!("generator '{name}' has more than one kind; give exactly one"));
    }
    let Some(pools) = pools else {
        return Err(format!("generator '{name}' draws from pool '{pool}', but no pools were sampled"));
    };
    match pools.get(pool) {
        None => Err(format!(
            "generator '{name}': a {} node has no pool '{pool}' (pools: {})",
            pools.chain,
            pools.chain.pools().join(", ")
        )),
        Some([]) => Err(format!(
            "generator '{name}' draws from pool '{pool}', which is empty: the {} node had none in blocks {}..={} (a chain without transactions?)",
            pools.chain, pools.oldest, pools.head
        )),
        Some(values) => Ok(Generator::Choice(values.to_vec())),
    }
}

/// The span of the first line that starts a table or key named `key`, for errors about it.
fn find_key(text: &str, key: &str) -> Range<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with(&format!("[{key}")) || trimmed.starts_with(key) {
            let start = offset + (line.len() - trimmed.len());
            return start..start;
        }
        offset += line.len();
    }
    0..0
}

fn generator(name: &str, spec: &GeneratorSpec) -> Result<Generator, String> {
    let mut found = Vec::new();
    if let Some([low, high]) = spec.range {
        found.push(Generator::IntRange { low, high });
    }
    if let Some([low, high]) = spec.hex_range {
        found.push(Generator::HexQuantityRange { low, high });
    }
    if let Some(values) = &spec.choice {
        let values = values
            .iter()
            .map(|value| serde_json::to_value(value).map_err(|err| format!("generator '{name}': {err}")))
            .collect::<Result<Vec<_>, _>>()?;
        found.push(Generator::Choice(values));
    }
    if let Some(bytes) = spec.random_hex {
        found.push(Generator::RandomHex(bytes));
    }
    if let Some(bytes) = spec.random_base58 {
        found.push(Generator::RandomBase58(bytes));
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(format!(
            "generator '{name}' needs one of range, hex_range, choice, random_hex, random_base58, pool, head, head_hex"
        )),
        _ => Err(format!("generator '{name}' has more than one kind; give exactly one")),
    }
}

/// Converts TOML params to a template, replacing `"{name}"` strings with generators.
impl ScenarioDraft {
    /// One `[[call]]`: a JSON-RPC call (`method`, `params`) or a plain HTTP call (`http`,
    /// `body`, `headers`, `expect`), with its errors at the key at fault.
    fn build_call(
        &self,
        call: &CallSection,
        generators: &BTreeMap<String, Generator>,
    ) -> Result<Call, ScenarioError> {
        let at = |span: Range<usize>, message: String| self.at(span, message);
        let weight = call.weight.as_ref().map_or(1, |w| *w.get_ref());
        let weight_span = call.weight.as_ref().map(Spanned::span);
        match (&call.method, &call.http) {
            (Some(method), None) => {
                for (key, present) in [
                    ("body", call.body.as_ref().map(Spanned::span)),
                    ("headers", call.headers.as_ref().map(Spanned::span)),
                    ("expect", call.expect.as_ref().map(Spanned::span)),
                ] {
                    if let Some(span) = present {
                        return Err(at(
                            span,
                            format!("{key} goes with an HTTP call (http = \"GET /path\"), not with method"),
                        ));
                    }
                }
                let params = match &call.params {
                    Some(params) => {
                        Some(param_value(params.get_ref(), generators).map_err(|m| at(params.span(), m))?)
                    }
                    None => None,
                };
                let name = call.name.clone().unwrap_or_else(|| method.get_ref().clone());
                let span = weight_span.unwrap_or(method.span());
                Call::new(name, method.get_ref(), params.as_ref(), weight).map_err(|err| at(span, err.0))
            }
            (None, Some(http)) => {
                if let Some(params) = &call.params {
                    return Err(at(
                        params.span(),
                        "params go with a JSON-RPC call (method); an HTTP call has a body".into(),
                    ));
                }
                let (method_name, path) = http.get_ref().trim().split_once(' ').ok_or_else(|| {
                    at(
                        http.span(),
                        format!(
                            "'{}': expected \"METHOD /path\", such as \"GET /block/{{n}}\"",
                            http.get_ref()
                        ),
                    )
                })?;
                let method = HttpMethod::parse(method_name.trim()).ok_or_else(|| {
                    let known: Vec<&str> = HttpMethod::ALL.iter().map(|m| m.as_str()).collect();
                    at(http.span(), format!("'{method_name}' is not an HTTP method ({})", known.join(", ")))
                })?;
                let path = template_pieces(path.trim(), generators).map_err(|m| at(http.span(), m))?;
                let body = match &call.body {
                    None => HttpBody::Empty,
                    Some(body) => match body.get_ref() {
                        toml::Value::String(text) => {
                            HttpBody::Text(template_pieces(text, generators).map_err(|m| at(body.span(), m))?)
                        }
                        value => {
                            HttpBody::Json(param_value(value, generators).map_err(|m| at(body.span(), m))?)
                        }
                    },
                };
                let expect_json = match &call.expect {
                    None => false,
                    Some(expect) if expect.get_ref() == "json" => true,
                    Some(expect) => {
                        return Err(at(
                            expect.span(),
                            format!("expect: '{}' is not known (\"json\")", expect.get_ref()),
                        ))
                    }
                };
                let headers = call
                    .headers
                    .as_ref()
                    .map(|headers| headers.get_ref().iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    .unwrap_or_default();
                let spec = HttpRequestSpec { method, path, headers, body, expect_json };
                let span = weight_span.unwrap_or(http.span());
                Call::http(call.name.clone(), &spec, weight).map_err(|err| at(span, err.0))
            }
            (Some(method), Some(_)) => {
                Err(at(method.span(), "a call has either method (JSON-RPC) or http, not both".into()))
            }
            (None, None) => Err(at(
                self.file.calls.as_ref().map_or(0..0, Spanned::span),
                "a [[call]] needs method (JSON-RPC) or http (\"GET /path\")".into(),
            )),
        }
    }
}

/// Splits a template (`/block/{block}`) into text and generated pieces; `{{` and `}}` are
/// literal braces.
fn template_pieces(
    text: &str,
    generators: &BTreeMap<String, Generator>,
) -> Result<Vec<TemplatePiece>, String> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(open) = rest.find(['{', '}']) {
        literal.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        if rest[open..].starts_with("{{") || rest[open..].starts_with("}}") {
            literal.push_str(&rest[open..open + 1]);
            rest = &rest[open + 2..];
            continue;
        }
        if rest.as_bytes()[open] == b'}' {
            return Err(format!("'{text}': a '}}' without its '{{' (write '}}}}' for a brace)"));
        }
        let close = after.find('}').ok_or_else(|| format!("'{text}': a '{{' without its '}}'"))?;
        let name = &after[..close];
        let generator = generators
            .get(name)
            .ok_or_else(|| format!("'{text}': no generator named '{name}' (define it under [generators])"))?;
        if !literal.is_empty() {
            pieces.push(TemplatePiece::Text(std::mem::take(&mut literal)));
        }
        pieces.push(TemplatePiece::Generated(generator.clone()));
        rest = &after[close + 1..];
    }
    literal.push_str(rest);
    if !literal.is_empty() || pieces.is_empty() {
        pieces.push(TemplatePiece::Text(literal));
    }
    Ok(pieces)
}

fn param_value(value: &toml::Value, generators: &BTreeMap<String, Generator>) -> Result<ParamValue, String> {
    Ok(match value {
        toml::Value::String(text) if text.starts_with('{') && text.ends_with('}') && text.len() > 2 => {
            let name = &text[1..text.len() - 1];
            match generators.get(name) {
                Some(generator) => ParamValue::Generated(generator.clone()),
                None => return Err(format!("no generator named '{name}' (define it under [generators])")),
            }
        }
        toml::Value::Array(items) => ParamValue::Array(
            items.iter().map(|item| param_value(item, generators)).collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(table) => ParamValue::Object(
            table
                .iter()
                .map(|(key, item)| Ok((key.clone(), param_value(item, generators)?)))
                .collect::<Result<_, String>>()?,
        ),
        toml::Value::Datetime(_) => return Err("dates are not JSON: write them as strings".into()),
        other => ParamValue::Fixed(serde_json::to_value(other).map_err(|err| err.to_string())?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
thresholds = ["p99 < 500ms", "getBlock: errors < 1%"]

[target]
url = "http://127.0.0.1:8899/"
headers = { "X-Test" = "1" }
timeout = "2s"

[load]
rate = "500/s"
arrivals = "poisson"
duration = "3s"
seed = 9

[generators]
slot = { range = [100, 200] }
account = { choice = ["A", "B"] }

[[call]]
method = "getBlock"
params = ["{slot}", { encoding = "json", rewards = false }]
weight = 3

[[call]]
name = "balance"
method = "getBalance"
params = ["{account}"]
"#;

    #[test]
    fn a_good_scenario_becomes_a_run_configuration() {
        let scenario = Scenario::parse(GOOD, Path::new("good.toml")).unwrap();
        let config = &scenario.config;
        assert!(config.validate().is_ok());
        assert_eq!(
            config.load,
            Load::Open { rate: 500.0, arrivals: Arrivals::Poisson, max_connections: 1024 }
        );
        assert_eq!(config.length.duration, Some(Duration::from_secs(3)));
        assert_eq!(config.timeout, Duration::from_secs(2));
        assert_eq!(config.seed, 9);
        assert_eq!(config.headers, vec![("X-Test".to_string(), "1".to_string())]);
        let names: Vec<&str> = config.workload.calls().iter().map(|c| c.name()).collect();
        assert_eq!(names, ["getBlock", "balance"]);
        assert_eq!(config.workload.calls()[0].weight(), 3);
        assert_eq!(scenario.thresholds.len(), 2);
        assert_eq!(scenario.thresholds[1].scope(), Some("getBlock"));
    }

    fn error_of(text: &str) -> String {
        Scenario::parse(text, Path::new("s.toml")).unwrap_err().to_string()
    }

    #[test]
    fn mistakes_are_reported_with_file_line_and_column() {
        let base = "[target]\nurl = \"http://127.0.0.1:1/\"\n";
        let call = "[[call]]\nmethod = \"getSlot\"\n";
        let cases = [
            (format!("{base}[load]\nconections = 5\n{call}"), "s.toml:4:1:", "unknown field `conections`"),
            (format!("{base}[load]\nduration = \"10x\"\n{call}"), "s.toml:4:12:", "expected a duration"),
            (format!("{base}[load]\nconnections = 0\n{call}"), "s.toml:4:15:", "at least 1"),
            (
                format!("{base}[load]\nconnections = 5\nrate = 10\nmax_connections = 8\n{call}"),
                "s.toml:4:15:",
                "not both",
            ),
            (format!("{base}{call}params = [\"{{nope}}\"]\n"), "s.toml:5:10:", "no generator named 'nope'"),
            (format!("{base}{call}weight = 0\n"), "s.toml:5:10:", "weight"),
            (format!("thresholds = [\"p99 < soon\"]\n{base}{call}"), "s.toml:1:22:", "expected a duration"),
            (
                "[target]\nurl = \"ftp://x/\"\n[[call]]\nmethod = \"m\"\n".to_string(),
                "s.toml:2:7:",
                "scheme 'ftp'",
            ),
            (base.to_string(), "s.toml:", "needs at least one [[call]] (or a [source] replay)"),
            ("[target\n".to_string(), "s.toml:1:8:", ""),
        ];
        for (text, location, message) in cases {
            let error = error_of(&text);
            assert!(error.starts_with(location), "expected {location} in: {error}\n---\n{text}");
            assert!(error.contains(message), "expected '{message}' in: {error}");
        }
    }
}

#[cfg(test)]
mod target_tests {
    use super::*;

    const TWO: &str = r#"
[target]
timeout = "2s"
headers = { "x-shared" = "1" }

[load]
connections = 4
duration = "1s"
cooldown = "250ms"

[[targets]]
name = "fast"
url = "http://127.0.0.1:1/"
headers = { "x-first" = "a" }

[[targets]]
url = "http://127.0.0.1:2/v3/0123456789abcdef"
headers = { "x-second" = "b" }

[[call]]
method = "getSlot"
"#;

    fn header_names(config: &RunConfig) -> Vec<&str> {
        config.headers.iter().map(|(name, _)| name.as_str()).collect()
    }

    #[test]
    fn each_target_gets_the_shared_settings_and_its_own_headers() {
        let scenario = Scenario::parse(TWO, Path::new("s.toml")).unwrap();
        assert_eq!(scenario.cooldown, Duration::from_millis(250));
        let configs = scenario.configs();
        assert_eq!(configs.len(), 2);
        assert_eq!(configs[0].0, "fast");
        // Unnamed: host and port, never the path with its key.
        assert_eq!(configs[1].0, "127.0.0.1:2");
        assert_eq!(configs[0].1.target.port, 1);
        assert_eq!(configs[1].1.target.port, 2);
        assert_eq!(header_names(&configs[0].1), ["x-shared", "x-first"]);
        assert_eq!(header_names(&configs[1].1), ["x-shared", "x-second"]);
        assert_eq!(header_names(&scenario.config), ["x-shared", "x-first"]);
        for (_, config) in &configs {
            assert_eq!(config.timeout, Duration::from_secs(2));
            assert_eq!(config.load, Load::Closed { connections: 4 });
        }
        let draft = ScenarioDraft::parse(TWO, Path::new("s.toml")).unwrap();
        assert_eq!(draft.url(), Some("http://127.0.0.1:1/"));
        assert_eq!(draft.target_count(), 2);
    }

    #[test]
    fn a_url_from_the_command_line_replaces_every_target() {
        let draft = ScenarioDraft::parse(TWO, Path::new("s.toml")).unwrap();
        let scenario = draft.resolve(Some("http://127.0.0.1:3/"), None).unwrap();
        let configs = scenario.configs();
        assert_eq!(configs.len(), 1);
        assert_eq!(configs[0].1.target.port, 3);
        assert_eq!(header_names(&configs[0].1), ["x-shared"]);
    }

    #[test]
    fn a_single_url_is_one_target_named_after_its_host() {
        let text = "[target]\nurl = \"http://127.0.0.1:8899/\"\n[[call]]\nmethod = \"getSlot\"\n";
        let scenario = Scenario::parse(text, Path::new("s.toml")).unwrap();
        assert_eq!(scenario.targets.len(), 1);
        assert_eq!(scenario.targets[0].name, "127.0.0.1:8899");
        assert_eq!(scenario.cooldown, DEFAULT_COOLDOWN);
    }

    #[test]
    fn target_mistakes_are_located() {
        let call = "[[call]]\nmethod = \"getSlot\"\n";
        let entry = |name: &str, url: &str| format!("[[targets]]\nname = \"{name}\"\nurl = \"{url}\"\n");
        let cases = [
            (
                format!(
                    "[target]\nurl = \"http://127.0.0.1:1/\"\n{}{call}",
                    entry("a", "http://127.0.0.1:2/")
                ),
                "s.toml:2:7:",
                "not both",
            ),
            (
                format!("{}{}{call}", entry("a", "http://127.0.0.1:1/"), entry("a", "http://127.0.0.1:2/")),
                "s.toml:5:8:",
                "two targets are named 'a'",
            ),
            (format!("{}{call}", entry("a", "ftp://x/")), "s.toml:3:7:", "scheme 'ftp'"),
            (format!("{}{call}", entry(" ", "http://127.0.0.1:1/")), "s.toml:2:8:", "cannot be empty"),
            (
                format!("[[targets]]\nurl = \"http://127.0.0.1:1/\"\nport = 1\n{call}"),
                "s.toml:3:1:",
                "unknown field `port`",
            ),
            (call.to_string(), "s.toml:", "no URL"),
        ];
        for (text, location, message) in cases {
            let error = Scenario::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
            assert!(error.starts_with(location), "expected {location} in: {error}\n---\n{text}");
            assert!(error.contains(message), "expected '{message}' in: {error}");
        }
    }
}

#[cfg(test)]
mod head_tests {
    use super::*;

    #[test]
    fn head_ranges_parse_into_offsets() {
        assert_eq!(parse_head_range("head-1000..head"), Ok((1000, 0)));
        assert_eq!(parse_head_range("head - 20 .. head-5"), Ok((20, 5)));
        assert_eq!(parse_head_range("head..head"), Ok((0, 0)));
        for bad in ["1000..head", "head-5..head-10", "head-x..head", "head+5..head", "head-5"] {
            assert!(parse_head_range(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_head_range_becomes_a_range_below_the_sampled_head() {
        let text = "[target]\nurl = \"http://127.0.0.1:1/\"\n[generators]\nblock = { head_hex = \"head-100..head\" }\n[[call]]\nmethod = \"eth_getBlockByNumber\"\nparams = [\"{block}\", false]\n";
        let draft = ScenarioDraft::parse(text, Path::new("s.toml")).unwrap();
        assert_eq!(draft.pools_needed(), vec![HEAD.to_string()]);
        let pools = Pools {
            chain: SampleChain::Ethereum,
            chain_id: None,
            head: 5000,
            oldest: 4950,
            head_margin: 0,
            pools: Default::default(),
        };
        let scenario = draft.resolve(None, Some(&pools)).unwrap();
        let request = scenario.config.workload.sample_request(0);
        let block = request["params"][0].as_str().unwrap();
        let number = u64::from_str_radix(block.trim_start_matches("0x"), 16).unwrap();
        // The sample stopped at 4950, short of its 200-block window: the node has nothing older,
        // and the range shrinks to what it has.
        assert!((4950..=5000).contains(&number), "{block}");
        let full_node = Pools { oldest: 4801, ..pools.clone() };
        let scenario = draft.resolve(None, Some(&full_node)).unwrap();
        let mut lowest = u64::MAX;
        let workload = &scenario.config.workload;
        let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(3);
        for id in 0..400 {
            let mut body = Vec::new();
            workload.write_body(0, id, &mut rng, &mut body);
            let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let text = value["params"][0].as_str().unwrap().trim_start_matches("0x").to_string();
            lowest = lowest.min(u64::from_str_radix(&text, 16).unwrap());
        }
        // A full 200-block window says nothing of older blocks: the range is kept whole.
        assert!((4900..4950).contains(&lowest), "lowest {lowest}");
        let bad = text.replace("head-100..head", "head-1..head-9");
        let error = ScenarioDraft::parse(&bad, Path::new("s.toml")).unwrap_err().to_string();
        assert!(error.starts_with("s.toml:4:9:") && error.contains("the range is empty"), "{error}");
    }
}

#[cfg(test)]
mod stage_tests {
    use super::*;

    #[test]
    fn stages_become_a_staged_run() {
        let text = r#"
[target]
url = "http://127.0.0.1:1/"
[[call]]
method = "eth_blockNumber"
[[stage]]
connections = 50
duration = "5m"
ramp = "1m"
[[stage]]
connections = 100
duration = "5m"
ramp = "1m"
"#;
        let scenario = Scenario::parse(text, Path::new("s.toml")).unwrap();
        let config = scenario.config;
        assert!(config.validate().is_ok(), "{:?}", config.validate());
        assert_eq!(config.load, Load::Closed { connections: 100 });
        assert_eq!(config.stages.len(), 2);
        assert_eq!(config.measured_duration(), Some(Duration::from_secs(600)));
    }

    #[test]
    fn mixed_or_conflicting_stages_are_refused_where_they_are() {
        let base = "[target]\nurl = \"http://127.0.0.1:1/\"\n[[call]]\nmethod = \"m\"\n";
        let cases = [
            (format!("{base}[[stage]]\nrate = 5\nduration = \"1s\"\n[[stage]]\nconnections = 5\nduration = \"1s\"\n"), "s.toml:8:1:", "same kind"),
            (format!("{base}[[stage]]\nduration = \"1s\"\n"), "s.toml:5:1:", "connections or rate"),
            (format!("{base}[[stage]]\nrate = 5\nduration = \"1s\"\nramp = \"2s\"\n"), "s.toml:5:1:", "ramp must fit"),
        ];
        for (text, location, message) in cases {
            let error = Scenario::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
            assert!(error.starts_with(location) && error.contains(message), "{error}\n---\n{text}");
        }
    }

    #[test]
    fn a_bad_header_is_named_by_file_line_col_not_by_the_cli_flag() {
        let text = "[target]\nurl = \"http://127.0.0.1:8545\"\nheaders = { \"Bad Name\" = \"x\" }\n[[call]]\nmethod = \"x\"\n";
        let error = Scenario::parse(text, Path::new("s.toml")).unwrap_err().to_string();
        assert!(error.starts_with("s.toml:3:11:") && error.contains("not a valid header name"), "{error}");
        assert!(!error.contains("--header") && !error.contains("Bad Name"), "{error}");
        let text = "[target]\nurl = \"http://127.0.0.1:8545\"\nheaders = { Content-Length = \"3\" }\n[[call]]\nmethod = \"x\"\n";
        let error = Scenario::parse(text, Path::new("s.toml")).unwrap_err().to_string();
        assert!(error.starts_with("s.toml:3:") && error.contains("set by rpcbench"), "{error}");
    }

    #[test]
    fn http_calls_and_batches_come_from_the_scenario() {
        let text = r#"
[target]
url = "http://127.0.0.1:8545"

[load]
connections = 2
batch = 10

[generators]
block = { range = [1, 100] }
hash = { random_hex = 32 }

[[call]]
method = "eth_getBlockByNumber"
params = ["{block}", false]
"#;
        let scenario = Scenario::parse(text, Path::new("s.toml")).unwrap();
        assert_eq!(scenario.config.batch, 10);
        let rest = r#"
[target]
url = "http://127.0.0.1:8545"

[generators]
block = { range = [1, 100] }
hash = { random_hex = 32 }

[[call]]
http = "GET /block/{block}"
expect = "json"

[[call]]
name = "tx"
http = "POST /call?to={hash}"
body = { data = "{hash}" }
headers = { Accept = "application/json" }
"#;
        let scenario = Scenario::parse(rest, Path::new("s.toml")).unwrap();
        let calls = scenario.config.workload.calls();
        assert_eq!(calls[0].name(), "GET /block/{range}");
        assert!(calls[0].is_http() && calls[0].expects_json());
        assert_eq!(calls[1].name(), "tx");
        assert_eq!(scenario.config.batch, 1);
    }

    #[test]
    fn bad_http_calls_and_batches_are_named_by_file_line_col() {
        let base = "[target]\nurl = \"http://127.0.0.1:8545\"\n[generators]\nn = { range = [1, 2] }\n";
        for (tail, place, words) in [
            ("[[call]]\nhttp = \"FETCH /x\"\n", "s.toml:6:8:", "not an HTTP method"),
            ("[[call]]\nhttp = \"GET /block/{nope}\"\n", "s.toml:6:8:", "no generator named 'nope'"),
            ("[[call]]\nhttp = \"GET\"\n", "s.toml:6:8:", "METHOD /path"),
            ("[[call]]\nmethod = \"x\"\nbody = \"y\"\n", "s.toml:7:8:", "HTTP call"),
            ("[[call]]\nhttp = \"GET /\"\nexpect = \"xml\"\n", "s.toml:7:10:", "expect"),
            ("[load]\nbatch = 0\n[[call]]\nmethod = \"x\"\n", "s.toml:6:9:", "batch"),
            ("[load]\nbatch = 2\n[[call]]\nhttp = \"GET /\"\n", "s.toml:6:9:", "not HTTP calls"),
        ] {
            let text = format!("{base}{tail}");
            let error = Scenario::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
            assert!(error.starts_with(place) && error.contains(words), "{tail}: {error}");
        }
    }

    #[test]
    fn a_replay_source_takes_the_place_of_the_mix() {
        let dir = std::env::temp_dir().join(format!("rpcbench-scenario-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let header = crate::traffic::TrafficHeader::new("http://127.0.0.1:1/", &[]);
        let mut text = serde_json::to_string(&header).unwrap() + "\n";
        for (offset, method) in [(0, "getSlot"), (500_000, "getHealth"), (1_000_000, "getSlot")] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}"}}"#);
            let entry = crate::traffic::TrafficEntry::for_request(offset, body.as_bytes());
            text += &(serde_json::to_string(&entry).unwrap() + "\n");
        }
        std::fs::write(dir.join("t.jsonl"), &text).unwrap();
        let scenario_path = dir.join("s.toml");
        let base = "[target]\nurl = \"http://127.0.0.1:1\"\n";
        let scenario = |extra: &str| {
            let text = format!("{base}{extra}");
            std::fs::write(&scenario_path, &text).unwrap();
            ScenarioDraft::load(&scenario_path).and_then(|draft| draft.resolve(None, None))
        };

        let replayed = scenario("[source]\nreplay = \"t.jsonl\"\nspeed = \"2x\"\n").unwrap();
        let config = &replayed.config;
        assert!(config.validate().is_ok(), "{:?}", config.validate());
        let names: Vec<&str> = config.workload.calls().iter().map(|c| c.name()).collect();
        assert_eq!(names, ["getSlot", "getHealth"]);
        assert_eq!(config.length.requests, Some(3), "one pass");
        let schedule = config.replay.as_ref().and_then(|replay| replay.schedule.clone()).unwrap();
        assert_eq!(schedule.offset_of(2), Some(Duration::from_millis(500)));
        assert!(matches!(config.load, Load::Open { .. }));

        let at_rate =
            scenario("[load]\nrate = 100\nduration = \"5s\"\n[source]\nreplay = \"t.jsonl\"\nloop = true\n");
        let config = at_rate.unwrap().config;
        assert_eq!(
            config.load,
            Load::Open { rate: 100.0, arrivals: Arrivals::Uniform, max_connections: 1024 }
        );
        assert_eq!(config.length, Length { duration: Some(Duration::from_secs(5)), requests: None });
        assert!(config.replay.as_ref().unwrap().schedule.is_none());

        let errors = [
            ("[source]\nreplay = \"t.jsonl\"\nspeed = \"fast\"\n", "s.toml:5:9"),
            ("[load]\nconnections = 4\n[source]\nreplay = \"t.jsonl\"\nspeed = 2\n", "s.toml:7:9: speed: "),
            ("[source]\nreplay = \"missing.jsonl\"\n", "s.toml:4:10: replay: "),
            ("[source]\nreplay = \"t.jsonl\"\n[[call]]\nmethod = \"getSlot\"\n", "no [[call]]"),
            ("[source]\nreplay = \"t.jsonl\"\nfrom = \"pcap\"\n", "s.toml:5:8"),
        ];
        for (extra, expected) in errors {
            let error = scenario(extra).unwrap_err().to_string();
            assert!(error.contains(expected), "{extra}: {error}");
        }
        // A line of the replayed file is named by its own place.
        std::fs::write(dir.join("t.jsonl"), text.replace("\"getHealth\"", "getHealth")).unwrap();
        let error = scenario("[source]\nreplay = \"t.jsonl\"\n").unwrap_err().to_string();
        assert!(error.contains("t.jsonl:3:"), "{error}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
