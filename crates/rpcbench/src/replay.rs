//! Replaying real traffic: the requests of a recorded traffic file ([`crate::traffic`]), of a
//! vegeta targets file or of a file of JSON-RPC bodies (ethspam's output), sent body for body
//! in file order through the ordinary engine. A [`Replay`] is a workload and a schedule: the
//! engine hands ticket i of the run to request i of the file (`Draw::ticket`), and the
//! [`RecordedSchedule`] paces ticket i at its recorded offset divided by the speed (or the run
//! paces it at a fixed rate, or sends back to back in closed loop).
//!
//! Each request is reported under a call named after what it carries: its method for a single
//! JSON-RPC call, `batch(eth_call x3)` for a batch of one method, `batch(mixed x5)` for a batch
//! of several, `GET /block/{n}` for a plain HTTP request of a targets file, `other` for a body
//! that is not JSON-RPC. As in the proxy's table there are at most 256 rows: the first distinct
//! names (of up to 128 bytes) get one each and the rest share an exact `other methods` row. With response checks on, an answer whose digest
//! ([`crate::traffic::response_digest`], with the recording's ignored fields) differs from the
//! recorded one counts as the invalid kind `changed_response` of its call.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::field::{Field, SettingError};
use crate::plan::targets::HttpTarget;
use crate::settings::Target;
use crate::traffic::{methods_of, TrafficFile, MAX_METHOD_KEYS, OTHER_METHODS_KEY};
use crate::transport::HttpMethod;
use crate::util::json_path::FieldPath;
use crate::workload::{Call, Workload};

/// A replay that cannot be built: a file (or one of its lines) at fault, or a setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayError {
    /// The file as a whole.
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// One line of the file.
    Line {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// The column, from 1.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A setting of the replay (its speed, the fields left out of digests).
    Setting(SettingError),
}

impl ReplayError {
    fn file(path: &Path, message: impl Into<String>) -> Self {
        Self::File { path: path.to_path_buf(), message: message.into() }
    }

    fn line(path: &Path, line: usize, column: usize, message: impl Into<String>) -> Self {
        Self::Line { path: path.to_path_buf(), line, column, message: message.into() }
    }
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::File { path, message } => write!(f, "{}: {message}", path.display()),
            ReplayError::Line { path, line, column, message } => {
                write!(f, "{}:{line}:{column}: {message}", path.display())
            }
            ReplayError::Setting(err) => err.fmt(f),
        }
    }
}

impl From<SettingError> for ReplayError {
    fn from(err: SettingError) -> Self {
        Self::Setting(err)
    }
}

impl std::error::Error for ReplayError {}

/// A plain HTTP request of a targets file, sent as it is instead of a POST to the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayHttp {
    /// The method.
    pub method: HttpMethod,
    /// Path and query.
    pub path: Vec<u8>,
    /// Header lines, each `Name: value\r\n`.
    pub headers: Vec<u8>,
}

/// One request to replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayEntry {
    /// The body, sent byte for byte.
    pub body: Vec<u8>,
    /// The index of its call (its name) in [`Replay::workload`].
    pub call: usize,
    /// The recorded response's digest, when the source has one.
    pub digest: Option<String>,
    /// A plain HTTP request (a targets file's line that is not a JSON-RPC POST); `None`: a POST
    /// of the body to the target URL.
    pub http: Option<ReplayHttp>,
}

/// When each request of a recording is due: its recorded offset (from the first request)
/// divided by the speed; with `looped`, the sequence starts again one mean gap after its last
/// request.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedSchedule {
    /// The recorded offsets in microseconds, from the first request, never decreasing.
    pub offsets_us: Arc<[u64]>,
    /// `offset / speed` is the intended send time: 2.0 replays twice as fast.
    pub speed: f64,
    /// Start again at the end.
    pub looped: bool,
}

impl RecordedSchedule {
    /// The schedule of `offsets` (as recorded, microseconds; made relative to the first and
    /// never decreasing) at `speed`.
    pub fn new(offsets: &[u64], speed: f64, looped: bool) -> Self {
        let first = offsets.first().copied().unwrap_or(0);
        let mut latest = 0;
        let offsets_us = offsets
            .iter()
            .map(|offset| {
                latest = latest.max(offset.saturating_sub(first));
                latest
            })
            .collect();
        Self { offsets_us, speed, looped }
    }

    /// How far apart two passes of a looped schedule start, in recorded microseconds: the last
    /// offset plus the mean gap (one second for a single request, one microsecond at least).
    pub fn period_us(&self) -> u64 {
        let n = self.offsets_us.len() as u64;
        let last = self.offsets_us.last().copied().unwrap_or(0);
        let mean_gap = if n > 1 { last / (n - 1) } else { 1_000_000 };
        (last + mean_gap).max(1)
    }

    /// The intended send time of ticket `index` of the whole run, from the start; `None` past
    /// the end of a schedule that does not loop.
    pub fn offset_of(&self, index: u64) -> Option<std::time::Duration> {
        let n = self.offsets_us.len() as u64;
        if n == 0 {
            return None;
        }
        let recorded_us = if index < n {
            self.offsets_us[index as usize]
        } else if self.looped {
            let pass = index / n;
            self.offsets_us[(index % n) as usize].saturating_add(pass.saturating_mul(self.period_us()))
        } else {
            return None;
        };
        let nanos = (recorded_us as f64 * 1000.0 / self.speed).round();
        Some(std::time::Duration::from_nanos(nanos.min(u64::MAX as f64) as u64))
    }

    /// The mean rate of the schedule, requests per second (for sizing connections).
    pub fn mean_rate(&self) -> f64 {
        let period = self.period_us() as f64 / 1e6 / self.speed;
        (self.offsets_us.len() as f64 / period).clamp(1.0, 10_000_000.0)
    }
}

/// The requests of a replay, in file order, and how to judge their answers.
#[derive(Debug, Clone)]
pub struct Replay {
    entries: Vec<ReplayEntry>,
    names: Vec<String>,
    offsets_us: Option<Vec<u64>>,
    /// The fields left out of response digests (the recording's).
    ignore: Vec<FieldPath>,
    /// Compare each answer's digest with the recorded one.
    pub check_responses: bool,
    /// Paced by the recorded offsets at this speed (open loop); `None`: paced by the run's
    /// load (a fixed rate, or closed loop).
    pub schedule: Option<RecordedSchedule>,
    /// Start the sequence again at its end (bounded by the run's length); without it the run
    /// ends when every request has been answered.
    pub looped: bool,
}

/// The name of the call a body makes in reports.
pub fn call_name(body: &[u8]) -> String {
    let methods = methods_of(body);
    let is_batch = crate::jsonrpc::first_byte(body) == Some(b'[');
    match (is_batch, methods.as_slice()) {
        (false, [method]) if !method.is_empty() => method.clone(),
        (true, [first, rest @ ..]) if rest.iter().all(|method| method == first) => {
            format!("batch({first} x{})", methods.len())
        }
        (true, [_, ..]) => format!("batch(mixed x{})", methods.len()),
        _ => "other".to_string(),
    }
}

/// The calls a replay reports under, as the proxy's table: at most [`MAX_METHOD_KEYS`] rows,
/// the first distinct names in file order each with its own; later names, and names over
/// [`MAX_CALL_NAME`] bytes, share the exact [`OTHER_METHODS_KEY`] row. So a file of ever new
/// method names cannot make a histogram per name, and each name is found in one hash lookup.
#[derive(Debug, Default)]
struct CallNames {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

/// The longest call name with a row of its own.
const MAX_CALL_NAME: usize = 128;

impl CallNames {
    /// The call index of `name`, adding it (or the shared row) when new.
    fn index(&mut self, name: String) -> usize {
        if let Some(&index) = self.index.get(&name) {
            return index;
        }
        let name = if self.index.len() < MAX_METHOD_KEYS && name.len() <= MAX_CALL_NAME {
            name
        } else if let Some(&other) = self.index.get(OTHER_METHODS_KEY) {
            return other;
        } else {
            OTHER_METHODS_KEY.to_string()
        };
        self.names.push(name.clone());
        self.index.insert(name, self.names.len() - 1);
        self.names.len() - 1
    }
}

/// A request read from a file: its body, its recorded digest, its HTTP request line (a targets
/// file's plain request) and its call's name.
type ReadRequest = (Vec<u8>, Option<String>, Option<ReplayHttp>, String);

impl Replay {
    fn build(
        requests: Vec<ReadRequest>,
        offsets_us: Option<Vec<u64>>,
        ignore: Vec<FieldPath>,
        place: &Path,
    ) -> Result<Self, ReplayError> {
        if requests.is_empty() {
            return Err(ReplayError::file(place, "no request in the file: nothing to replay"));
        }
        let mut names = CallNames::default();
        let entries = requests
            .into_iter()
            .map(|(body, digest, http, name)| ReplayEntry { body, call: names.index(name), digest, http })
            .collect();
        let names = names.names;
        Ok(Self { entries, names, offsets_us, ignore, check_responses: false, schedule: None, looped: false })
    }

    /// The requests of a traffic file, with their offsets and recorded digests.
    pub fn from_traffic(file: &TrafficFile, path: &Path) -> Result<Self, ReplayError> {
        let ignore = file
            .header
            .ignored_paths()
            .map_err(|message| ReplayError::line(path, 1, 1, format!("ignored_fields: {message}")))?;
        let mut requests = Vec::with_capacity(file.entries.len());
        for entry in &file.entries {
            // Checked when the file was read.
            let body = entry.body_bytes().unwrap_or_default();
            let name = call_name(&body);
            requests.push((body, Some(entry.response_hash.clone()), None, name));
        }
        let offsets = file.entries.iter().map(|entry| entry.offset_us).collect();
        Self::build(requests, Some(offsets), ignore, path)
    }

    /// The lines of a file of JSON-RPC bodies (one JSON value per line, blank lines skipped),
    /// as ethspam writes them; a line that is not JSON is named by `path:line:column`.
    pub fn from_bodies(text: &str, path: &Path) -> Result<Self, ReplayError> {
        let mut requests = Vec::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            if let Err(error) = serde_json::from_str::<&serde_json::value::RawValue>(line) {
                return Err(ReplayError::line(
                    path,
                    index + 1,
                    error.column().max(1),
                    format!("not a JSON-RPC body: {error}"),
                ));
            }
            let body = line.trim().as_bytes().to_vec();
            let name = call_name(&body);
            requests.push((body, None, None, name));
        }
        Self::build(requests, None, Vec::new(), path)
    }

    /// The requests of a vegeta targets file, in file order: a POST whose body is JSON-RPC is
    /// sent as a body to the run's URL, named by its method; anything else is sent as the
    /// plain HTTP request it is, named by method and path (`GET /block/{n}`).
    pub fn from_targets(targets: &[HttpTarget], path: &Path) -> Result<Self, ReplayError> {
        let mut requests = Vec::with_capacity(targets.len());
        for target in targets {
            let at = |message: String| ReplayError::line(path, target.line, 1, message);
            let parsed = Target::parse(&target.url).map_err(|err| at(err.message()))?;
            let jsonrpc = target.method == HttpMethod::Post
                && target.headers.iter().all(|(name, _)| name.eq_ignore_ascii_case("content-type"))
                && !methods_of(&target.body).is_empty();
            if jsonrpc {
                let name = call_name(&target.body);
                requests.push((target.body.clone(), None, None, name));
                continue;
            }
            let mut headers = Vec::new();
            for (name, value) in &target.headers {
                if crate::settings::header_problem(name, value).is_some() {
                    return Err(at(format!("the header '{name}' cannot be sent as it is")));
                }
                headers.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
            }
            let name =
                format!("{} {}", target.method, crate::plan::targets::path_label(&parsed.path_and_query));
            let http =
                ReplayHttp { method: target.method, path: parsed.path_and_query.into_bytes(), headers };
            requests.push((target.body.clone(), None, Some(http), name));
        }
        Self::build(requests, None, Vec::new(), path)
    }

    /// The requests, in file order.
    pub fn entries(&self) -> &[ReplayEntry] {
        &self.entries
    }

    /// How many requests one pass sends.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no request (never true of a built replay).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The fields left out of response digests.
    pub fn ignored_fields(&self) -> &[FieldPath] {
        &self.ignore
    }

    /// Whether the source has recorded offsets (a traffic file) that a speed can scale.
    pub fn has_offsets(&self) -> bool {
        self.offsets_us.is_some()
    }

    /// Paces the replay by its recorded offsets at `speed` (open loop).
    pub fn pace_at_speed(&mut self, speed: f64) -> Result<(), ReplayError> {
        let offsets = self.offsets_us.as_ref().ok_or_else(|| no_offsets(""))?;
        self.schedule = Some(RecordedSchedule::new(offsets, speed, self.looped));
        Ok(())
    }

    /// Sets whether the sequence starts again at its end (for a schedule too).
    pub fn set_looped(&mut self, looped: bool) {
        self.looped = looped;
        if let Some(schedule) = &mut self.schedule {
            schedule.looped = looped;
        }
    }

    /// The entry ticket `index` of the run sends.
    #[inline]
    pub fn entry_for(&self, index: u64) -> &ReplayEntry {
        &self.entries[(index % self.entries.len() as u64) as usize]
    }

    /// The workload the run reports under: one call per name, in order of first appearance.
    pub fn workload(&self) -> Workload {
        let calls = self
            .names
            .iter()
            .map(|name| Call::new(name.clone(), name, None, 1).expect("a name is never empty"))
            .collect();
        Workload::new(calls).expect("names are unique and at least one")
    }

    /// Paces the replay as its settings say: a speed scales the recorded offsets (a traffic
    /// file's default, 1x); a fixed rate or a closed loop (`rate_or_connections`: the
    /// [`Field::Rate`] or [`Field::Connections`] the run was given) leaves the pacing to the
    /// run. A speed with either, or on a file without offsets, is refused.
    pub fn pace(
        &mut self,
        speed: Option<f64>,
        rate_or_connections: Option<Field>,
    ) -> Result<(), ReplayError> {
        match (speed, rate_or_connections) {
            (Some(_), Some(load)) => {
                let err = SettingError::mentioning(
                    Field::Speed,
                    "paces by the recorded offsets: it goes without {}",
                    &[load],
                );
                return Err(err.into());
            }
            (Some(_), None) if !self.has_offsets() => return Err(no_offsets(" (vegeta targets, bodies)")),
            _ => {}
        }
        match speed.or((rate_or_connections.is_none() && self.has_offsets()).then_some(1.0)) {
            Some(speed) => self.pace_at_speed(speed),
            None => Ok(()),
        }
    }

    /// How many of one pass's requests each call makes, in the workload's order.
    pub fn counts(&self) -> Vec<(String, u64)> {
        let mut counts: Vec<(String, u64)> = self.names.iter().map(|name| (name.clone(), 0)).collect();
        for entry in &self.entries {
            counts[entry.call].1 += 1;
        }
        counts
    }
}

/// What kind of file a replay reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayFormat {
    /// A recorded traffic file (offsets, bodies, digests).
    Traffic,
    /// A vegeta targets file (no offsets).
    Vegeta,
    /// One JSON-RPC body per line, as ethspam writes them (no offsets).
    Bodies,
}

impl ReplayFormat {
    /// The kind of a file by its first non-blank line: a traffic header, JSON (bodies), or
    /// else a vegeta targets file.
    pub fn detect(text: &str) -> ReplayFormat {
        let first = text.lines().find(|line| !line.trim().is_empty()).unwrap_or("").trim();
        if first.starts_with('{') && first.contains(crate::traffic::TRAFFIC_FORMAT) {
            ReplayFormat::Traffic
        } else if first.starts_with('{') || first.starts_with('[') {
            ReplayFormat::Bodies
        } else {
            ReplayFormat::Vegeta
        }
    }
}

/// A replay read from a file, and what the reader has to say about it (a cut last line,
/// skipped lines), one note per line, for standard error.
#[derive(Debug, Clone)]
pub struct ReadReplay {
    /// The replay.
    pub replay: Replay,
    /// Notes about the file.
    pub notes: Vec<String>,
}

/// Reads `path` as `format` (detected when `None`). `ignore_fields` must each be among the
/// fields the recording left out of its digests: the recorded digests cannot be narrowed
/// further at replay. Errors name `file:line:col` where a line is at fault.
pub fn read_file(
    path: &Path,
    format: Option<ReplayFormat>,
    bad_lines: crate::traffic::BadLines,
    ignore_fields: &[String],
) -> Result<ReadReplay, ReplayError> {
    let whole = |message: String| ReplayError::file(path, message);
    let bytes = crate::util::files::read_limited(path, crate::util::files::MAX_TRAFFIC)
        .map_err(|err| whole(err.to_string()))?;
    let format = format
        .unwrap_or_else(|| ReplayFormat::detect(&String::from_utf8_lossy(&bytes[..bytes.len().min(4096)])));
    if format != ReplayFormat::Traffic && !ignore_fields.is_empty() {
        return Err(
            SettingError::new(Field::IgnoredFields, "goes with a traffic file's recorded digests").into()
        );
    }
    let mut notes = Vec::new();
    let replay = match format {
        ReplayFormat::Traffic => {
            let file = TrafficFile::parse(&bytes, path, bad_lines).map_err(|err| match err {
                crate::traffic::TrafficError::Line { path, line, column, message } => {
                    ReplayError::Line { path, line, column, message }
                }
                other => whole(other.to_string()),
            })?;
            for field in ignore_fields {
                let wanted = FieldPath::parse(field).map_err(|message| {
                    SettingError::new(Field::IgnoredFields, format!("'{field}': {message}"))
                })?;
                if !file.header.ignored_fields.iter().any(|known| known == wanted.as_str()) {
                    let ignored = match file.header.ignored_fields.is_empty() {
                        true => "nothing".to_string(),
                        false => file.header.ignored_fields.join(", "),
                    };
                    let escaped = field.replace('{', "{{").replace('}', "}}");
                    let template = format!(
                        "'{escaped}': the recorded digests include it (the recording ignored: {}): record with {{}} \
                         {escaped} to leave it out",
                        ignored.replace('{', "{{").replace('}', "}}")
                    );
                    return Err(SettingError::mentioning(
                        Field::IgnoredFields,
                        &template,
                        &[Field::IgnoredFields],
                    )
                    .into());
                }
            }
            if let Some(line) = file.cut_last_line {
                notes.push(format!(
                    "{}:{line}: the last line was cut (a recorder stopped while writing it); replaying the {} \
                     complete lines",
                    path.display(),
                    file.entries.len()
                ));
            }
            if !file.skipped.is_empty() {
                let shown: Vec<String> = file.skipped.iter().take(5).map(|s| s.line.to_string()).collect();
                let more = if file.skipped.len() > 5 { ", …" } else { "" };
                notes.push(format!(
                    "{}: skipped {} line(s) that do not parse (line {}{more})",
                    path.display(),
                    file.skipped.len(),
                    shown.join(", ")
                ));
            }
            Replay::from_traffic(&file, path)?
        }
        ReplayFormat::Bodies => {
            let text = String::from_utf8(bytes).map_err(|_| whole("not UTF-8 text".into()))?;
            Replay::from_bodies(&text, path)?
        }
        ReplayFormat::Vegeta => {
            let text = String::from_utf8(bytes).map_err(|_| whole("not UTF-8 text".into()))?;
            let targets = crate::plan::targets::parse(&text, path, |body| {
                crate::util::files::read_limited(body, crate::plan::targets::MAX_BODY_FILE)
                    .map_err(|err| err.to_string())
            })
            .map_err(|err| match err.line {
                0 => ReplayError::File { path: err.path, message: err.message },
                line => ReplayError::Line { path: err.path, line, column: err.column, message: err.message },
            })?;
            Replay::from_targets(&targets, path)?
        }
    };
    Ok(ReadReplay { replay, notes })
}

/// The refusal of a speed for a file without recorded offsets (`which` says what such files are).
fn no_offsets(which: &str) -> ReplayError {
    let template = format!("this file has no recorded offsets{which}: use {{}} R or closed loop ({{}} N)");
    SettingError::mentioning(Field::Speed, &template, &[Field::Rate, Field::Connections]).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_or_traffic_file_over_the_limit_is_refused_naming_the_file_and_the_limit() {
        // A sparse file one byte over the limit: refused from its size, nothing read.
        let dir = std::env::temp_dir().join(format!("rpcbench-replay-limit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("huge.jsonl");
        std::fs::File::create(&path).unwrap().set_len(crate::util::files::MAX_TRAFFIC + 1).unwrap();
        let err = read_file(&path, None, crate::traffic::BadLines::Refuse, &[]).unwrap_err();
        let ReplayError::File { path: at, message } = &err else { panic!("not the file at fault: {err}") };
        assert_eq!(at, &path);
        assert!(message.contains("larger than 512 MiB"), "{err}");
        let err = crate::traffic::TrafficFile::read(&path, crate::traffic::BadLines::Refuse).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(&path.display().to_string()) && text.contains("larger than 512 MiB"),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_file_of_ever_new_method_names_gets_at_most_256_rows_with_an_exact_other_row() {
        let mut text = String::new();
        for index in 0..20_000 {
            text += &format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m{index}\"}}\n");
        }
        // A name over 128 bytes shares the row even before the table is full.
        let long = "x".repeat(129);
        text = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"{long}\"}}\n{text}");
        text += "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m3\"}\n";
        let replay = Replay::from_bodies(&text, Path::new("names.jsonl")).unwrap();
        let counts = replay.counts();
        assert_eq!(counts.len(), MAX_METHOD_KEYS, "255 named rows and the shared one");
        assert_eq!(counts[0], (OTHER_METHODS_KEY.to_string(), 1 + 20_000 - 255));
        assert_eq!(counts[1], ("m0".to_string(), 1));
        assert_eq!(counts.iter().find(|(name, _)| name == "m3").unwrap().1, 2, "a known name keeps its row");
        assert_eq!(counts.iter().map(|(_, count)| count).sum::<u64>(), 20_002, "every request in one row");
        assert_eq!(replay.workload().calls().len(), MAX_METHOD_KEYS);
    }

    #[test]
    fn the_kind_of_file_is_told_by_its_first_line() {
        assert_eq!(
            ReplayFormat::detect("{\"format\":\"rpcbench-traffic\",\"version\":1}\n"),
            ReplayFormat::Traffic
        );
        assert_eq!(
            ReplayFormat::detect("\n{\"jsonrpc\":\"2.0\",\"method\":\"eth_blockNumber\"}\n"),
            ReplayFormat::Bodies
        );
        assert_eq!(ReplayFormat::detect("POST http://127.0.0.1:8545/\n@body.json\n"), ReplayFormat::Vegeta);
    }

    #[test]
    fn calls_are_named_by_what_they_carry() {
        assert_eq!(call_name(br#"{"jsonrpc":"2.0","id":1,"method":"eth_call"}"#), "eth_call");
        assert_eq!(
            call_name(br#"[{"id":1,"method":"eth_call"},{"id":2,"method":"eth_call"}]"#),
            "batch(eth_call x2)"
        );
        assert_eq!(
            call_name(br#"[{"id":1,"method":"a"},{"id":2,"method":"b"},{"id":3,"method":"a"}]"#),
            "batch(mixed x3)"
        );
        assert_eq!(call_name(b"hello"), "other");
        // An empty method name is no call name (a workload's calls are named).
        assert_eq!(call_name(br#"{"id":1,"method":""}"#), "other");
    }

    #[test]
    fn schedules_scale_by_speed_and_loop_one_mean_gap_after_the_last() {
        let us = |d: Option<std::time::Duration>| d.map(|d| d.as_micros() as u64);
        let offsets = [5_000, 5_000, 105_000, 305_000];
        let once = RecordedSchedule::new(&offsets, 1.0, false);
        assert_eq!(
            (0..5).map(|i| us(once.offset_of(i))).collect::<Vec<_>>(),
            [Some(0), Some(0), Some(100_000), Some(300_000), None]
        );
        let double = RecordedSchedule::new(&offsets, 2.0, false);
        assert_eq!(
            (0..4).map(|i| us(double.offset_of(i))).collect::<Vec<_>>(),
            [Some(0), Some(0), Some(50_000), Some(150_000)]
        );
        let half = RecordedSchedule::new(&offsets, 0.5, true);
        // Period: 300 ms + a mean gap of 100 ms = 400 ms recorded, 800 ms at half speed.
        assert_eq!(
            (3..7).map(|i| us(half.offset_of(i))).collect::<Vec<_>>(),
            [Some(600_000), Some(800_000), Some(800_000), Some(1_000_000)]
        );
        // An edited file whose offsets go back keeps the schedule from going back.
        let edited = RecordedSchedule::new(&[0, 50, 20, 60], 1.0, false);
        assert_eq!(&*edited.offsets_us, &[0, 50, 50, 60]);
    }

    #[test]
    fn an_empty_source_is_refused() {
        let error = Replay::from_bodies("\n\n", Path::new("b.jsonl")).unwrap_err();
        assert!(error.to_string().contains("nothing to replay"), "{error}");
        let error = Replay::from_bodies("{\"method\":\"a\"}\n{oops\n", Path::new("b.jsonl")).unwrap_err();
        assert!(error.to_string().starts_with("b.jsonl:2:2: "), "{error}");
    }

    #[test]
    fn entries_keep_file_order_and_group_by_name() {
        let text = "{\"id\":1,\"method\":\"a\"}\n{\"id\":2,\"method\":\"b\"}\n{\"id\":3,\"method\":\"a\"}\n";
        let replay = Replay::from_bodies(text, Path::new("b")).unwrap();
        assert_eq!(replay.counts(), [("a".to_string(), 2), ("b".to_string(), 1)]);
        assert_eq!(replay.entries().iter().map(|e| e.call).collect::<Vec<_>>(), [0, 1, 0]);
        assert_eq!(replay.entry_for(4).body, br#"{"id":2,"method":"b"}"#);
    }
}
